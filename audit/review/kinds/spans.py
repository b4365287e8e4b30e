"""The error-span kind (issue 46): ESA and MQM in Label Studio, pre-filled from the checks.

Task: a sampled translation unit (paragraph, question or answer; a mapped release's column),
its English source beside it. The annotator selects each error in the translation and gives
it a severity (ESA: minor | major; MQM: minor | major | critical, and a category per region
from the batch's typology), marks something left out on the "[missing]" token appended to
the translation, then gives one 0-100 score. Spec keys (`options`):

    protocol = "esa"            # "esa" | "mqm"
    prefill = "findings"        # "findings": the scan's findings on a unit that point at a
                                #   place become pre-filled regions (ESA-AI); "none"
    typology = [...]            # MQM: the categories offered (default TYPOLOGY)
    mqm_weights = {minor = 1, major = 5, critical = 25}   # the MQM penalty's weights

Pre-filled regions (prefill.parquet, spans.PREFILL_SCHEMA plus the text): a review or
blocking finding on the unit (its row, and its paragraph, question or answer) at its
evidence inside its sentence, else at its sentence, its title line, or the whole question or
answer (`locate`); a finding that names no place (a paragraph's language, a structural
fault) is not pre-filled. Severity: major (MQM: critical for a blocking finding). Each
region's id names it, and Label Studio keeps a kept region's id, so the pull tells kept,
changed and deleted apart (spans.prefill_fates).

Offsets are characters (code points) of the shown text: Label Studio's Text object counts
them so (measured: a region after an astral character lands where Python's index says). The
pull refuses a region whose text is not the shown text at its offsets.

Pull: each annotation becomes two rows of the annotation table: `spans` (its regions as JSON:
id, start, end, severity, category, text) and `esa_score`; `tables()` turns the latest
version of each into spans.SPAN_SCHEMA / SCORE_SCHEMA rows and computes every report
(audit/review/spans.py). Adjudication: the items whose two initial span sets or scores
disagree (spans.span_queue) go to an adjudicator with both sets pre-filled, unnamed; the
adjudicator's spans and score are final.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Mapping, Sequence

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ...analysis.stats import SEED
from ...engine.scan import ScanResult
from ...errors import InputError
from ...reports.render import chart_label
from .. import sampling, spans
from ..batches import ReviewBatch
from ..charts import Chart, bars, error_bars
from ..configs import SPAN_TAGS, Control, LabelConfig
from ..inputs import Spec
from ..workspace import Workspace
from . import translation
from .base import Adjudication, ReviewKind

PROTOCOLS = ("esa", "mqm")
PREFILLS = ("none", "findings")
SEVERITIES = {"esa": ("minor", "major"), "mqm": ("minor", "major", "critical")}
TYPOLOGY = ("accuracy/mistranslation", "accuracy/omission", "accuracy/addition",
            "accuracy/untranslated", "fluency/grammar", "fluency/spelling", "terminology",
            "locale/number format", "other")
MISSING = "[missing]"
FIELDS = ("item_id", "unit", "language", "source_text", "translation_text")
PREDICTOR = "checks"         # the model_version of the pre-filled regions
DEFAULTS = {"protocol": "esa", "prefill": "findings", "typology": list(TYPOLOGY),
            "mqm_weights": dict(spans.MQM_WEIGHTS)}
# A finding that holds a row back is a major error at least; MQM calls a blocking one
# critical.
PREFILL_SEVERITY = {"esa": {"blocking": "major", "review": "major"},
                    "mqm": {"blocking": "critical", "review": "major"}}
PREFILL_FILE = "prefill.parquet"
PREFILL_TABLE = pa.schema([*spans.PREFILL_SCHEMA, ("text", pa.string())])


def _form(protocol: str, adjudication: bool) -> LabelConfig:
    controls = {"severity": Control("Labels", "translation", SEVERITIES[protocol]),
                "esa_score": Control("Number", "translation", bounds=(0, 100))}
    if protocol == "mqm":
        controls["category"] = Control("Choices", "translation", TYPOLOGY, per_region=True)
    name = f"translation_{protocol}" + ("_adjudication" if adjudication else "")
    return LabelConfig(name, controls, FIELDS, extra_tags=SPAN_TAGS)


FORMS = {(protocol, adjudication): _form(protocol, adjudication)
         for protocol in PROTOCOLS for adjudication in (False, True)}


def forms_for(settings: Mapping) -> tuple[LabelConfig, LabelConfig]:
    """The review and adjudication configs of a batch: its protocol's, offering its
    typology (MQM)."""
    protocol = settings.get("protocol", DEFAULTS["protocol"])
    review, twin = FORMS[protocol, False], FORMS[protocol, True]
    if protocol == "mqm":
        typology = tuple(settings.get("typology") or TYPOLOGY)
        review, twin = (f.with_choices("category", typology) for f in (review, twin))
    return review, twin


# ------------------------------------------------------------------------- spec options

def options(raw: Mapping, path: Path) -> dict:
    """The batch settings of this kind's spec keys, each checked (InputError naming it)."""
    settings = {**DEFAULTS, **{k: raw[k] for k in DEFAULTS if k in raw}}

    def check(ok: object, key: str, expected: str) -> None:
        if not ok:
            raise InputError(path, repr(settings[key]), where=key, expected=expected)

    check(settings["protocol"] in PROTOCOLS, "protocol", " or ".join(map(repr, PROTOCOLS)))
    check(settings["prefill"] in PREFILLS, "prefill", " or ".join(map(repr, PREFILLS)))
    typology = settings["typology"]
    check(isinstance(typology, list) and typology and len(set(typology)) == len(typology)
          and all(isinstance(t, str) and t.strip() and len(t) <= 80 for t in typology),
          "typology", "a list of distinct category names (at most 80 characters each)")
    check("typology" not in raw or settings["protocol"] == "mqm", "typology",
          "a typology only with protocol = \"mqm\"")
    weights = settings["mqm_weights"]
    check(isinstance(weights, dict) and set(weights) == set(spans.SEVERITIES) and all(
        isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0
        for w in weights.values()), "mqm_weights",
        "a table of non-negative weights for minor, major and critical")
    settings["mqm_weights"] = {k: float(v) for k, v in weights.items()}
    return settings


# ------------------------------------------------------------------------- the batch

def shown(translation_text: str) -> str:
    """The translation as the task shows it: the text, then the omission token."""
    return f"{translation_text} {MISSING}"


def payload(texts: Mapping[str, str], batch_id: str, form: LabelConfig) -> dict:
    """From one entry of sampling.unit_texts()."""
    return form.payload(item_id=texts["item_id"], batch_id=batch_id, unit=texts["unit"],
                        language=texts["language"], source_text=texts["source_text"],
                        translation_text=shown(texts["translation_text"]))


def build(spec: Spec) -> ReviewBatch:
    """The spec's release scanned and sampled as a translation batch is; each unit's
    findings pre-filled when the spec asks."""
    result, sample = translation.sampled(spec)
    return span_batch(result, sample, spec.batch or f"{KIND.name}-{sample.batch_id}",
                      dict(spec.options) or dict(DEFAULTS))


def span_batch(result: ScanResult, sample: sampling.Batch, batch_id: str,
               settings: Mapping) -> ReviewBatch:
    """The span batch of sampled units: tasks, items, and pre-filled regions when the
    settings ask."""
    form = forms_for(settings)[0]
    texts = sampling.unit_texts(result.release, sample.units)
    tasks = [payload(t, batch_id, form) for t in texts]
    prefill = (prefilled(result, sample.units, tasks, settings["protocol"])
               if settings["prefill"] == "findings" else PREFILL_TABLE.empty_table())
    return ReviewBatch(batch_id, form.name, translation.unit_items(sample.units, KIND.annotation),
                       tasks, manifest=sample.manifest, settings=dict(settings),
                       tables={PREFILL_FILE: prefill},
                       predictions=predictions(prefill))


_FINDINGS_QUERY = """
SELECT f."row" AS rid, f.check, f.severity, f.unit, f.paragraph_id, f.sentence_index,
       f.evidence
FROM findings f
WHERE f.severity IN ('review', 'blocking') AND f."row" IN (SELECT rid FROM _span_units)
ORDER BY f."row", f.check, f.unit, f.paragraph_id, f.sentence_index, f.evidence
"""


def prefilled(result: ScanResult, units: pa.Table, tasks: Sequence[dict],
              protocol: str) -> pa.Table:
    """The pre-filled regions of the sampled units (module docstring), PREFILL_TABLE."""
    with result.cursor() as con:
        con.register("_span_units", units.select(["rid"]))
        found = con.sql(_FINDINGS_QUERY).to_arrow_table().to_pylist()
    by_row: dict[int, list[dict]] = {}
    for finding in found:
        by_row.setdefault(finding["rid"], []).append(finding)
    severity = PREFILL_SEVERITY[protocol]
    rows = []
    for unit, task in zip(units.select(["rid", "unit", "paragraph_id", "language"]).to_pylist(),
                          tasks):
        text = task["translation_text"][:-len(MISSING) - 1]
        seen = set()
        for finding in by_row.get(unit["rid"], []):
            if not _on_unit(finding, unit):
                continue
            region = locate(text, unit["unit"], finding)
            key = (finding["check"], region)
            if region is None or key in seen:
                continue
            seen.add(key)
            start, end = region
            rows.append({"item_id": task["item_id"], "language": unit["language"],
                         "region_id": region_id(task["item_id"], finding["check"], region),
                         "start": start, "end": end,
                         "severity": severity[finding["severity"]],
                         "origin": finding["check"], "text": text[start:end]})
    return pa.Table.from_pylist(rows, schema=PREFILL_TABLE)


def _on_unit(finding: Mapping, unit: Mapping) -> bool:
    """Whether a finding of the unit's row is about this unit."""
    if unit["unit"] in ("question", "answer"):
        return finding["unit"] == unit["unit"]
    if unit["unit"] == "paragraph":
        return finding["paragraph_id"] == unit["paragraph_id"] and \
            finding["unit"] in ("sentence", "title")
    if unit["unit"] == "instance":
        return False
    # a mapped release's column: the checks name it as the finding's unit or paragraph
    return unit["unit"] in (finding["unit"], finding["paragraph_id"])


_SENTENCE = re.compile(r"^\[(\d+)\] ", re.M)


def locate(text: str, unit: str, finding: Mapping) -> tuple[int, int] | None:
    """Where in a unit's translated text a finding points: its evidence within its
    sentence (a paragraph's "[k] " line), its title line or the whole text, else that
    sentence, line or text; None when it names no place there."""
    within: tuple[int, int] | None = (0, len(text))
    if unit == "paragraph":
        if finding["unit"] == "title":
            within = (0, _line_end(text, 0))
        else:
            within = next(((m.end(), _line_end(text, m.end()))
                           for m in _SENTENCE.finditer(text)
                           if int(m.group(1)) == finding["sentence_index"]), None)
    if within is None or within[1] <= within[0]:
        return None
    evidence = finding.get("evidence")
    if evidence:
        at = text.find(evidence, *within)
        if at >= 0:
            return at, at + len(evidence)
    return within


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def region_id(item_id: str, check: str, region: tuple[int, int]) -> str:
    digest = hashlib.sha256(f"{item_id}\0{check}\0{region[0]}\0{region[1]}".encode())
    return f"{PREDICTOR}-{digest.hexdigest()[:12]}"


def predictions(prefill: pa.Table) -> dict[str, list[dict]]:
    """Label Studio predictions (pre-filled regions) per item."""
    out: dict[str, list[dict]] = {}
    for row in prefill.to_pylist():
        out.setdefault(row["item_id"], []).append(_region(row))
    return {item: [{"model_version": PREDICTOR, "result": result}]
            for item, result in out.items()}


def _region(row: Mapping) -> dict:
    return {"id": row["region_id"], "from_name": "severity", "to_name": "translation",
            "type": "labels", "value": {"start": row["start"], "end": row["end"],
                                        "text": row["text"], "labels": [row["severity"]]}}


# ------------------------------------------------------------------------- the pull

def parse(form: LabelConfig, result: list[dict], data: Mapping) -> tuple[dict[str, str],
                                                                          str | None]:
    """{"spans": JSON regions, "esa_score": the score} of one annotation, or a problem: a
    region outside the shown text or whose text differs from it there, an unknown severity
    or category, a score that is not 0-100, none or two."""
    text = str(data.get("translation_text") or "")
    regions: dict[str, dict] = {}
    categories: dict[str, str] = {}
    scores = []
    for entry in result:
        name, value = entry.get("from_name"), entry.get("value") or {}
        control = form.control_of(name)
        if control is None:
            return {}, f"result for unknown control {name!r}"
        if control.tag == "Number":
            scores.append(value.get("number"))
        elif control.tag == "Labels":
            problem = _region_problem(entry, value, control, text)
            if problem:
                return {}, problem
            regions[str(entry["id"])] = {"id": str(entry["id"]), "start": value["start"],
                                         "end": value["end"], "severity": value["labels"][0],
                                         "text": value["text"]}
        else:
            chosen = value.get("choices") or []
            if len(chosen) != 1 or chosen[0] not in control.choices:
                return {}, f"{name}: choices {chosen!r} (expected one of {control.choices})"
            categories[str(entry.get("id"))] = chosen[0]
    if len(scores) != 1 or not isinstance(scores[0], (int, float)) or \
            isinstance(scores[0], bool) or not 0 <= scores[0] <= 100:
        return {}, f"esa_score: {scores!r} (expected one number from 0 to 100)"
    stray = sorted(set(categories) - set(regions))
    if stray:
        return {}, f"category for regions {stray} that hold no span"
    marked = [region | {"category": categories.get(key)}
              for key, region in sorted(regions.items(), key=lambda kv: (
                  kv[1]["start"], kv[1]["end"], kv[0]))]
    return {"spans": json.dumps(marked, ensure_ascii=False, sort_keys=True),
            "esa_score": repr(float(scores[0]))}, None


def _region_problem(entry: Mapping, value: Mapping, control: Control, text: str) -> str | None:
    start, end, labels = value.get("start"), value.get("end"), value.get("labels") or []
    if not entry.get("id"):
        return "a region without an id"
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        return (f"region {entry['id']}: characters {start!r}-{end!r} are not within the "
                f"shown text of {len(text)} characters")
    if value.get("text") != text[start:end]:
        return (f"region {entry['id']}: its text {value.get('text')!r} is not the shown "
                f"text at {start}-{end}")
    if len(labels) != 1 or labels[0] not in control.choices:
        return f"region {entry['id']}: severity {labels!r} (expected one of {control.choices})"
    return None


def final(table: pa.Table, files: Workspace) -> pa.Table:
    """The final spans of a pulled table (spans.final_spans)."""
    marked, scored = annotated(table, files)
    return spans.final_spans(marked, scored).spans


def _latest(table: pa.Table) -> pl.DataFrame:
    """The latest version of each annotation's two rows (an edit adds a version)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.filter(pl.col("kind") == KIND.annotation).sort("updated_at").group_by(
        "item_id", "annotator", "role", "criterion", maintain_order=True).last()


_MARKER = re.compile(r"^\[\d+\]$")


def n_words(source: str) -> int:
    """Words of the English source (its sentence markers left out): MQM's denominator."""
    return max(1, sum(1 for word in source.split() if not _MARKER.match(word)))


def annotated(table: pa.Table, files: Workspace) -> tuple[pa.Table, pa.Table]:
    """(spans.SPAN_SCHEMA, spans.SCORE_SCHEMA) of the latest annotations; a span's origin
    is the check whose pre-filled region it kept (by region id)."""
    tasks = files.tasks()
    origins = {row["region_id"]: row["origin"] for row in prefill_of(files).to_pylist()}
    span_rows, score_rows = [], []
    for row in _latest(table).iter_rows(named=True):
        task = tasks[row["item_id"]]
        who = {k: row[k] for k in ("item_id", "cluster_id", "language", "annotator", "role")}
        if row["criterion"] == "esa_score":
            score_rows.append(who | {"esa_score": float(row["value"]),
                                     "n_words": n_words(task["source_text"]),
                                     "text_length": len(task["translation_text"])})
            continue
        for region in json.loads(row["value"] or "[]"):
            span_rows.append(who | {"region_id": region["id"], "start": region["start"],
                                    "end": region["end"], "severity": region["severity"],
                                    "category": region.get("category"),
                                    "origin": origins.get(region["id"]),
                                    "text": region["text"]})
    return (pa.Table.from_pylist(span_rows, schema=spans.SPAN_SCHEMA),
            pa.Table.from_pylist(score_rows, schema=spans.SCORE_SCHEMA))


def prefill_of(files: Workspace) -> pa.Table:
    path = files.path(PREFILL_FILE)
    if not path.exists():
        return PREFILL_TABLE.empty_table()
    return pq.read_table(path).cast(PREFILL_TABLE)


# ------------------------------------------------------------------------- reports

def tables(table: pa.Table, files: Workspace, n_boot: int = 2000, seed: int = SEED,
           kappa_floor: float | None = None) -> dict[str, pa.Table]:
    """Every report of a pulled span batch, by name (issue 46's numbers)."""
    marked, scored = annotated(table, files)
    weights = files.ledger().get("settings", {}).get("mqm_weights", spans.MQM_WEIGHTS)
    prefill = prefill_of(files).select(spans.PREFILL_SCHEMA.names)
    kappa = spans.char_kappa(marked, scored, n_boot, seed)
    floor = {} if kappa_floor is None else {"kappa_floor": kappa_floor}
    finals = spans.final_spans(marked, scored)
    return {
        "span_kappa": spans.floor_flags(kappa, **floor),
        "span_f1": spans.span_f1(marked, scored, n_boot, seed),
        "score_agreement": spans.score_agreement(marked, scored, n_boot, seed, weights),
        "language_scores": spans.language_scores(marked, scored, n_boot, seed, weights),
        "unit_scores": spans.unit_scores(marked, scored, weights),
        "checks_vs_people": spans.checks_vs_people(prefill, marked, scored),
        "prefill_fates": spans.prefill_fates(prefill, marked, scored),
        "added_spans": spans.added_spans(prefill, marked, scored),
        "final_spans": finals.spans,
        "final_items": finals.items,
        "span_queue": spans.span_queue(marked, scored),
    }


def adjudicate(files: Workspace, table: pa.Table) -> Adjudication:
    """The span queue; per open item its adjudication task and both initial annotators'
    regions pre-filled, unnamed (region ids by slot, in the order the names sort)."""
    marked, scored = annotated(table, files)
    queue = pl.from_arrow(spans.span_queue(marked, scored))
    assert isinstance(queue, pl.DataFrame)
    _, twin = forms_for(files.ledger().get("settings") or {})
    tasks = files.tasks()
    initial = pl.from_arrow(marked)
    assert isinstance(initial, pl.DataFrame)
    initial = initial.filter(pl.col("role") == "initial")
    payloads, prefilled_regions = {}, {}
    for row in queue.filter(pl.col("state") == "open").iter_rows(named=True):
        item = row["item_id"]
        task = tasks[item]
        payloads[item] = twin.payload(**{k: task[k] for k in ("item_id", "batch_id", *FIELDS)})
        regions = []
        for slot, annotator in enumerate(sorted(row["annotators"]), start=1):
            theirs = initial.filter(pl.col("item_id") == item, pl.col("annotator") == annotator)
            for k, span in enumerate(theirs.sort("start", "end").iter_rows(named=True)):
                regions.append(_region(span | {"region_id": f"annotator{slot}-{k}"}))
        prefilled_regions[item] = [{"model_version": "annotators", "result": regions}]
    return Adjudication(queue, payloads, prefilled_regions)


# ------------------------------------------------------------------------- charts

def _score_chart(rows: list[dict]):
    fig = bars()
    for score in ("esa", "mqm"):
        part = [r for r in rows if r["by"] == "language" and r["score"] == score]
        fig.add_bar(name=score.upper(), x=[chart_label(r["group"]) for r in part],
                    y=[r["mean"] for r in part], error_y=error_bars(part, "mean"))
    fig.update_layout(barmode="group", xaxis_title="language",
                      yaxis_title="mean ESA score (0–100) / MQM penalty per 100 words")
    return fig


def _checks_chart(rows: list[dict]):
    fig = bars()
    part = [r for r in rows if r["language"] == spans.ALL]
    fig.add_bar(name="kept (precision)", x=[chart_label(r["check"]) for r in part],
                y=[r["share_kept"] for r in part],
                error_y=_interval(part, "share_kept", "kept_low", "kept_high"))
    fig.add_bar(name="major spans proposed (recall)", x=[chart_label(r["check"]) for r in part],
                y=[r["recall"] for r in part],
                error_y=_interval(part, "recall", "recall_low", "recall_high"))
    fig.update_layout(barmode="group", yaxis_title="share (95% Wilson)", yaxis_range=[0, 1])
    return fig


def _interval(rows: list[dict], column: str, low: str, high: str) -> dict:
    return error_bars([{column: r[column], "ci_low": r[low], "ci_high": r[high]}
                       for r in rows], column)


CHARTS = {
    "language_scores": Chart("ESA score and MQM penalty by language (95% cluster bootstrap)",
                             _score_chart),
    "checks_vs_people": Chart("The checks measured against people: pre-filled spans kept, "
                              "people's major spans a check proposed", _checks_chart),
}

KIND = ReviewKind("spans", FORMS["esa", False], "spans", "error spans (ESA / MQM)", build,
                  adjudication_form=FORMS["esa", True],
                  variants=(FORMS["mqm", False], FORMS["mqm", True]),
                  accepts=frozenset(DEFAULTS), options=options, forms_for=forms_for,
                  parse=parse, final=final, adjudicate=adjudicate, tables=tables,
                  charts=CHARTS)
