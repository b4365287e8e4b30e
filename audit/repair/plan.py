"""The work list: every unit a text correction can repair, with its findings, its current
text and its English source, like the reference toolkit's pending corrections
("required_for").

From a scanned release (its `findings` and `status` tables), the blocking and review
findings of rows of the chosen statuses, each on the unit its `unit` column names, are kept
when a text correction can change them (their check's `fix` is not "none": a language
assignment, the context's shape, inherited or release-level defects are not). A paragraph
whose sentence count is wrong (a check whose `fix` is "paragraph") becomes one paragraph
unit that takes its sentences' findings and the supporting facts pointing past it: its fix
is the whole paragraph, one text per source sentence. A context unit is listed once however many views hold it (`views`,
`view_ids`).

`template` turns the list into a corrections file pre-filled with each unit's current text
and digest, for a vendor to edit (corrections.py documents the format).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ..checks import registry
from ..engine.scan import ScanResult
from ..io.digests import text_sha256
from ..io.units import CONTEXT_UNITS, CORRECTABLE_UNITS, ROW_UNITS, paragraph_text
from ..sql.macros import among
from ..sql.safe import literal, strings

STATUSES = ("quarantined", "review_required")
FINDING = pa.struct([("check", pa.string()), ("severity", pa.string()),
                     ("sentence_index", pa.int32()), ("detail", pa.string()),
                     ("evidence", pa.string())])
SCHEMA = pa.schema([
    ("unit", pa.string()), ("id", pa.string()), ("source_split", pa.string()),
    ("source_id", pa.string()), ("paragraph_id", pa.string()),
    ("sentence_index", pa.int32()), ("language", pa.string()), ("views", pa.int32()),
    ("view_ids", pa.list_(pa.string())), ("status", pa.string()), ("severity", pa.string()),
    ("required_for", pa.list_(pa.string())), ("findings", pa.list_(FINDING)),
    ("text", pa.string()), ("source_text", pa.string()),
    ("sentences", pa.list_(pa.string())), ("source_sentences", pa.list_(pa.string())),
    ("old_sha256", pa.string()),
])
_RANK = "CASE {} WHEN 'blocking' THEN 2 WHEN 'review' THEN 1 ELSE 0 END"
_STATUS_RANK = "CASE {} WHEN 'quarantined' THEN 2 WHEN 'review_required' THEN 1 ELSE 0 END"


def _fixed_by(*fixes: str) -> list[str]:
    """The checks whose findings a correction of their unit, or of their paragraph, can
    change (`Check.fix`)."""
    return sorted(c.name for c in registry.REGISTRY if c.fix in fixes)


def _placed(statuses: tuple[str, ...], checks: tuple[str, ...]) -> str:
    """Blocking and review findings of rows of those statuses, on their repair units."""
    wanted = f"AND list_contains({strings(checks)}, f.\"check\")" if checks else ""
    return f"""
        CREATE OR REPLACE TEMP TABLE plan_found AS
        SELECT f."row" AS rid, v.ctx, f."check", f.severity, f.paragraph_id,
               f.sentence_index, f.detail, f.evidence, s.status, f.unit
        FROM findings f JOIN status s ON s."row" = f."row" JOIN views v ON v.rid = f."row"
        WHERE f.severity IN ('blocking', 'review') AND list_contains({strings(statuses)},
              s.status) AND list_contains({strings(_fixed_by("unit", "paragraph"))},
              f."check") {wanted};
        CREATE OR REPLACE TEMP TABLE plan_whole AS
        SELECT DISTINCT ctx, paragraph_id FROM plan_found
        WHERE list_contains({strings(_fixed_by("paragraph"))}, "check");
        CREATE OR REPLACE TEMP TABLE plan_units AS
        SELECT p.*, CASE
            WHEN p.unit IN ('question', 'answer', 'title') THEN p.unit
            WHEN w.ctx IS NOT NULL AND p.unit IN ('sentence', 'paragraph', 'fact')
              THEN 'paragraph'
            WHEN p.unit IN ('sentence', 'paragraph') THEN p.unit END AS repair_unit
        FROM plan_found p LEFT JOIN plan_whole w USING (ctx, paragraph_id);
    """


_GROUPED = f"""
WITH u AS (
    SELECT *, CASE WHEN repair_unit IN ('question', 'answer') THEN rid END AS owner,
           CASE WHEN repair_unit = 'sentence' THEN sentence_index END AS k
    FROM plan_units WHERE repair_unit IS NOT NULL),
g AS (
    SELECT repair_unit AS unit, owner, ctx,
           CASE WHEN repair_unit IN ('question', 'answer') THEN NULL ELSE paragraph_id END
             AS paragraph_id, k,
           min(rid) AS rid, count(DISTINCT rid)::INTEGER AS n_rows,
           max({_STATUS_RANK.format('status')}) AS status_rank,
           max({_RANK.format('severity')}) AS rank,
           list_sort(list_distinct(list("check"))) AS required_for,
           list_distinct(list({{'check': "check", 'severity': severity,
                                'sentence_index': sentence_index, 'detail': detail,
                                'evidence': evidence}})) AS findings
    FROM u GROUP BY ALL)
SELECT g.*, v.id, v.source_split, v.source_id, v.question, v.answer, v.source_question,
       v.source_answer, v.question_language, v.answer_language
FROM g JOIN views v ON v.rid = g.rid
"""


def work_list(scanned: ScanResult, statuses: tuple[str, ...] = STATUSES,
              checks: tuple[str, ...] = (), languages: tuple[str, ...] = ()) -> pa.Table:
    """The units to repair (SCHEMA) of a scanned release, of rows with these statuses,
    optionally only those with a finding of these checks or in these languages."""
    con = scanned.cursor()
    con.execute(_placed(tuple(statuses), tuple(checks)))
    if scanned.release.layout.has("aligned"):
        try:
            return _mapped(scanned, con, languages)
        finally:
            con.close()
    groups = con.sql(_GROUPED).to_arrow_table().to_pylist()
    ctxs = sorted({g["ctx"] for g in groups if g["unit"] not in ROW_UNITS})
    wanted = among(con, ctxs, pa.int32())
    contexts = dict(con.sql(f"SELECT ctx, candidates FROM contexts WHERE ctx IN {wanted}"
                            ).fetchall())
    view_ids = dict(con.sql(f"SELECT ctx, list(id ORDER BY rid) FROM views WHERE ctx IN "
                            f"{wanted} GROUP BY ctx").fetchall())
    con.close()
    rows = [_row(g, contexts, view_ids) for g in groups]
    rows = [r for r in rows if not languages or r["language"] in languages]
    rows.sort(key=lambda r: (r["language"] or "", CORRECTABLE_UNITS.index(r["unit"]), r["id"],
                             r["paragraph_id"] or "",
                             -1 if r["sentence_index"] is None else r["sentence_index"]))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _mapped(scanned: ScanResult, con, languages: tuple[str, ...]) -> pa.Table:
    """A mapped release's work list: each text or answer column of a row with a finding a
    correction can change, its text beside the source language's (`language` is the row's;
    `id` and `language` name it in a correction)."""
    layout: Any = scanned.release.layout
    columns = [(i, c.name) for i, c in enumerate(layout.values) if c.role in ("text", "answer")]
    if not columns:
        return SCHEMA.empty_table()
    texts = " ".join(f"WHEN {literal(name)} THEN v.v{i}" for i, name in columns)
    sources = " ".join(f"WHEN {literal(name)} THEN v.s{i}" for i, name in columns)
    rows = con.sql(f"""
        SELECT p.unit, v.id, NULL::VARCHAR AS source_split, v.id AS source_id,
               NULL::VARCHAR AS paragraph_id, NULL::INTEGER AS sentence_index,
               v.language, 1 AS views, [v.id] AS view_ids,
               CASE max({_STATUS_RANK.format('p.status')}) WHEN 2 THEN 'quarantined'
                    WHEN 1 THEN 'review_required' ELSE 'accepted' END AS status,
               CASE max({_RANK.format('p.severity')}) WHEN 2 THEN 'blocking'
                    WHEN 1 THEN 'review' ELSE 'info' END AS severity,
               list_sort(list_distinct(list(p."check"))) AS required_for,
               list_distinct(list({{'check': p."check", 'severity': p.severity,
                                    'sentence_index': p.sentence_index, 'detail': p.detail,
                                    'evidence': p.evidence}})) AS findings,
               CASE p.unit {texts} END AS text, CASE p.unit {sources} END AS source_text
        FROM plan_found p JOIN raw_views v USING (rid)
        WHERE p.unit IN {strings(name for _, name in columns)}
        GROUP BY ALL ORDER BY v.language, p.unit, v.id""").to_arrow_table().to_pylist()
    order = {name: k for k, (_, name) in enumerate(columns)}
    rows = [{**r, "findings": sorted(r["findings"], key=lambda f: (f["check"], f["detail"] or "")),
             "sentences": None, "source_sentences": None,
             "old_sha256": text_sha256(r["text"] or "")}
            for r in rows if not languages or r["language"] in languages]
    rows.sort(key=lambda r: (r["language"], order[r["unit"]], r["id"]))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _row(g: dict, contexts: dict, view_ids: dict) -> dict:
    row = {"unit": g["unit"], "id": g["id"], "source_split": g["source_split"],
           "source_id": g["source_id"], "paragraph_id": g["paragraph_id"],
           "sentence_index": g["k"], "status": ("accepted", "review_required",
                                                "quarantined")[g["status_rank"]],
           "severity": ("info", "review", "blocking")[g["rank"]],
           "required_for": g["required_for"],
           "findings": sorted(g["findings"], key=lambda f: (f["check"], f["sentence_index"]
                                                           if f["sentence_index"] is not None
                                                           else -1, f["detail"] or "")),
           "sentences": None, "source_sentences": None}
    if g["unit"] in ROW_UNITS:
        row.update(language=g[f"{g['unit']}_language"], views=1, view_ids=[g["id"]],
                   text=g[g["unit"]], source_text=g[f"source_{g['unit']}"])
    else:
        paragraph = next(p for p in contexts[g["ctx"]] if p["paragraph_id"] == g["paragraph_id"])
        sentences, source = list(paragraph["sentences"]), list(paragraph["source_sentences"])
        row.update(language=paragraph["language_code"], view_ids=view_ids[g["ctx"]],
                   views=len(view_ids[g["ctx"]]))
        if g["unit"] == "title":
            row.update(text=paragraph["title"], source_text=paragraph["source_title"])
        elif g["unit"] == "sentence":
            k = g["k"]
            row.update(text=sentences[k], source_text=source[k] if k < len(source) else None)
        else:
            row.update(text=paragraph_text(sentences),
                       source_text=paragraph_text(source), sentences=sentences,
                       source_sentences=source)
    row["old_sha256"] = text_sha256(row["text"])
    return row


def summary(plan: pa.Table) -> dict:
    """Counts of the work list per unit kind, language and check."""
    rows = plan.to_pylist()
    count = lambda key: {k: sum(1 for r in rows if key(r) == k)
                         for k in sorted({key(r) for r in rows})}
    checks: dict[str, int] = {}
    for r in rows:
        for check in r["required_for"]:
            checks[check] = checks.get(check, 0) + 1
    return {"units": len(rows), "views": sum(r["views"] for r in rows),
            "per_unit": count(lambda r: r["unit"]),
            "per_language": count(lambda r: r["language"]),
            "per_check": dict(sorted(checks.items()))}


def template(plan: pa.Table, by_language: bool = False) -> list[str]:
    """A corrections file (JSON lines) with each unit's current text and digest: edit the
    text (or sentences), give a reason; lines left as they are are refused as unchanged.
    `by_language`: a mapped release's, whose rows are named by id and language."""
    out = []
    for r in plan.to_pylist():
        line = {"id": r["id"], "source_split": r["source_split"], "unit": r["unit"],
                "old_sha256": r["old_sha256"], "reason": "", "author": ""}
        if by_language:
            line = {"id": r["id"], "language": r["language"], "unit": r["unit"],
                    "old_sha256": r["old_sha256"], "text": r["text"], "reason": "",
                    "author": ""}
            out.append(json.dumps(line, ensure_ascii=False))
            continue
        if r["unit"] in CONTEXT_UNITS:
            line["paragraph_id"] = r["paragraph_id"]
        if r["unit"] == "sentence":
            line["sentence_index"] = r["sentence_index"]
        if r["unit"] == "paragraph":
            line["sentences"] = r["sentences"]
        else:
            line["text"] = r["text"]
        out.append(json.dumps(line, ensure_ascii=False))
    return out
