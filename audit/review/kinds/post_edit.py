"""Post-editing in Label Studio (issue 21, loop item 2): the repair plan's units pushed as
editable tasks, and each submission pulled back as correction records.

Push (`post_edit_batch`). One task per unit of `repair plan` (repair/plan.py), routed by its
language to one editor who reads it (routing.route, size=1; the project is
"<batch> · <language> · annotator 1"), right to left for ar / fa / ur. The task shows where
the unit is, its findings (a table, and the current text with each finding's evidence
marked, built through audit/render.py) and one block per English source sentence: the
English beside the current translation pre-filled in an editable text area. A blank text
gets an empty area. A paragraph gets one area per source sentence: its sentences in order,
an empty area where it has too few, and its surplus joined (by a space) into the last area
where it has too many, so the edit comes back aligned. The editor picks a reason
(REASONS) or "fine as it is". The batch folder keeps the plan
(plan.parquet) and the release's files and content digests (release.json).

Pull (`record_corrections`, called by pull.pull as the kind's `corrections`). The latest version of each item's
annotation by its editor becomes a correction (repair/corrections.Correction) unless it is
"fine as it is" or every area holds the text it was pre-filled with (Label Studio submits
a pre-filled area even when untouched, so "unchanged" is judged against the task, not the
result). A correction's origin is the batch, project, task and annotation; its author the
editor. Its `proposed` row (located and verified against the release, with edit distance
and TER: repair/apply.propose) is appended to the batch's repair workspace: `<batch>/record/`,
the record `repair apply` reads and writes, so pulling twice appends nothing. When an editor
changes a submission after a pull, the proposal of the earlier version is superseded: a
`rejected` row says so, and only the latest version is applied.

Apply (`batch_corrections`): the proposals of a batch's record for one release, less the
superseded ones, for `repair apply RELEASE --from-batch BATCH_DIR` and the Repair page
(which lists a review workspace's batches of its release: `batches_of`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from ...io.model import Release
from ...io.release import open_release
from ...io.units import paragraph_text
from ...languages import BY_CODE, UNKNOWN_CODE
from ...repair import record
from ...repair.corrections import Correction
from ...repair.record import Origin, Workspace
from ...reports import render
from .. import routing
from ..batches import ReviewBatch, content_id
from ..configs import REPEATED, Control, LabelConfig
from ..inputs import Spec, relative, scanned
from ..schemas import ITEM_SCHEMA
from ..workspace import Workspace as BatchFiles
from ..workspace import batch_dir, batches
from .base import ReviewKind

PLAN_FILE, RELEASE_FILE = "plan.parquet", "release.json"
FINE = "fine as it is"
REASONS = ("mistranslation", "untranslated", "truncated", "number", "placeholder",
           "wrong language", "other", FINE)
FORM = LabelConfig(
    "post_edit",
    {"reason": Control("Choices", "where", REASONS),
     f"text_{REPEATED}": Control("TextArea", f"english_{REPEATED}")},
    ("item_id", "where", "findings_html", "sentences"),
    extra_tags=frozenset({"HyperText", "Repeater"}),
    # Where its data may enter besides a whole `$field` in a <Text value>:
    # (tag, attribute) -> the one value allowed there.
    data_attributes={("HyperText", "value"): "$findings_html",
                     ("Repeater", "on"): "$sentences",
                     ("Text", "value"): f"$sentences[{REPEATED}].english",
                     ("TextArea", "value"): f"$sentences[{REPEATED}].text"},
    css=(render.TEXT_CSS,), repeats_on="sentences")
SUPERSEDER = "post-edit pull"
FINDINGS_HEADER = ["check", "severity", "sentence", "detail"]


# ------------------------------------------------------------------------- push

def item_id(unit: dict) -> str:
    """A unit's item id: its kind, split, row id, paragraph and sentence."""
    parts = (unit["unit"], unit["source_split"], unit["id"], unit["paragraph_id"],
             unit["sentence_index"])
    return ":".join(str(part) for part in parts if part is not None)


def _prefill(text: str | None) -> str:
    return "" if text is None or not text.strip() else text


def areas(unit: dict) -> list[dict]:
    """One {"english", "text"} per English source sentence (module docstring)."""
    if unit["unit"] != "paragraph":
        return [{"english": unit["source_text"] or "", "text": _prefill(unit["text"])}]
    english, current = list(unit["source_sentences"]), list(unit["sentences"])
    n = max(len(english), 1)
    if len(current) > n:
        current = current[:n - 1] + [" ".join(s.strip() for s in current[n - 1:])]
    current += [""] * (n - len(current))
    return [{"english": english[k] if k < len(english) else "", "text": _prefill(current[k])}
            for k in range(n)]


def _where(unit: dict) -> str:
    language = unit["language"] or UNKNOWN_CODE
    name = BY_CODE[language].name if language in BY_CODE else language
    parts = [unit["unit"], f"row {unit['id']}"]
    if unit["paragraph_id"] is not None:
        parts.append(f"paragraph {unit['paragraph_id']}")
    if unit["sentence_index"] is not None:
        parts.append(f"sentence {unit['sentence_index']}")
    parts += [f"{name} ({language})", f"{unit['views']} view(s)"]
    return " · ".join(parts)


def findings_html(unit: dict) -> str:
    """The findings as a table, then the current text with their evidence marked (a blank
    one says so); every outside string escaped by audit/render.py."""
    rows = [[render.text(f["check"]), render.text(f["severity"]),
             render.text(f["sentence_index"]), render.text(f["detail"])]
            for f in unit["findings"]]
    marks = tuple(f["evidence"] for f in unit["findings"] if f["evidence"])
    texts = unit["sentences"] if unit["unit"] == "paragraph" else [unit["text"]]
    return render.block(render.table(FINDINGS_HEADER, rows),
                        render.strong("Current translation"),
                        *(render.paragraph(t, unit["language"], evidence=marks)
                          if t and t.strip() else render.missing("(blank)") for t in texts))


def payload(unit: dict, batch_id: str) -> dict:
    """The task data of one unit (FORM.fields plus the batch id)."""
    return {"item_id": item_id(unit), "batch_id": batch_id, "where": _where(unit),
            "findings_html": findings_html(unit), "sentences": areas(unit)}


def read_plan(path: Path) -> pa.Table:
    """A work list written by `repair plan --out DIR` (its plan.parquet)."""
    from ...repair.plan import SCHEMA
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as error:
        raise InputError(path, f"unreadable ({type(error).__name__})",
                         expected="plan.parquet of `repair plan --out DIR`") from None
    missing = [name for name in SCHEMA.names if name not in table.column_names]
    if missing:
        raise InputError(path, f"no column {missing[0]}",
                         expected="plan.parquet of `repair plan --out DIR`")
    return table.select(SCHEMA.names).cast(SCHEMA)


def _verify(plan: pa.Table, release: Release, where: Path | str) -> None:
    """Every unit located in the release with the text its digest names (else the
    InputError of corrections.locate, naming the plan's row and id)."""
    from ...repair.corrections import locate
    locate(release, [Correction(
        row_id=r["id"], unit=r["unit"], paragraph_id=r["paragraph_id"],
        sentence_index=r["sentence_index"], old_sha256=r["old_sha256"], new_text=r["text"],
        reason="", author="plan", origin=Origin("file", file=str(where), line=k),
        source_split=r["source_split"]) for k, r in enumerate(plan.to_pylist(), 1)])


def post_edit_batch(plan: pa.Table, release: Release, batch_id: str | None = None,
                    where: Path | str = "plan") -> ReviewBatch:
    """A post-edit batch of these work-list units (plan.SCHEMA) of `release`, each
    verified against it (`where`: the plan's file, for messages); the group is the unit's
    language, the cluster its source."""
    rows = plan.to_pylist()
    ids = [item_id(r) for r in rows]
    if len(set(ids)) != len(ids):
        raise InputError(where, "a unit is listed twice", expected="each unit once")
    _verify(plan, release, where)
    batch_id = batch_id or content_id(KIND.name, ids)
    tasks = [payload(r, batch_id) for r in rows]
    items = pa.Table.from_pylist([
        {"item_id": i, "cluster_id": r["source_id"] or r["id"], "kind": KIND.annotation,
         "language": r["language"], "unit": r["unit"], "setting": None, "source_a": None,
         "source_b": None, "group": routing.group_of([r["language"] or UNKNOWN_CODE])}
        for i, r in zip(ids, rows)], schema=ITEM_SCHEMA)
    files = {"files": [str(p) for p in release.paths], "content": release.content}
    return ReviewBatch(batch_id, FORM.name, items, tasks, plan=plan, release=files)


def build(spec: Spec) -> ReviewBatch:
    """The units of the spec's plan (else the release's whole work list) as a post-edit
    batch; a plan not made from this release is refused, naming its line and row."""
    from ...repair import plan as repair
    if spec.plan is None:
        result = scanned(spec, spec.release, spec.sources)
        return post_edit_batch(repair.work_list(result), result.release, spec.batch)
    path = relative(spec, spec.plan)
    path = path / PLAN_FILE if path.is_dir() else path
    units = read_plan(path)
    release = open_release(relative(spec, spec.release), spec.sources or None)
    return post_edit_batch(units, release, spec.batch, path)


# ------------------------------------------------------------------------- pull

@dataclass(frozen=True)
class Recorded:
    """What a pull made of the batch's submissions."""

    submissions: int      # items with an annotation by their editor
    corrections: int      # of them with an edited text (not "fine as it is")
    fine: int             # marked "fine as it is"
    unchanged: int        # submitted with every area as pre-filled
    appended: int         # record rows new to the batch's workspace
    workspace: Path


def repair_workspace(batch_id: str, workspace: Path | None = None) -> Workspace:
    """The batch's repair workspace: its folder (the record under record/)."""
    return Workspace(batch_dir(batch_id, workspace))


def _plan(folder: Path) -> dict[str, dict]:
    path = folder / PLAN_FILE
    if not path.is_file():
        raise InputError(path, "no repair plan recorded", expected="a post-edit batch's push")
    return {item_id(r): r for r in pq.read_table(path).to_pylist()}


def _latest(table: pa.Table) -> dict[str, list[dict]]:
    """item -> the rows of its editor's latest annotation version."""
    frame = pl.from_arrow(table).filter(pl.col("role") == "initial")
    last = (frame.sort("updated_at", "annotation_id").group_by("item_id")
            .agg(pl.col("annotation_id").last(), pl.col("updated_at").last()))
    out: dict[str, list[dict]] = {}
    for row in frame.join(last, on=["item_id", "annotation_id", "updated_at"]).to_dicts():
        out.setdefault(row["item_id"], []).append(row)
    return out


def _correction(unit: dict, task: dict, rows: list[dict], batch_id: str
                ) -> Correction | str:
    """The correction one submission makes, or why it makes none ("fine", "unchanged")."""
    values = {r["criterion"]: r["value"] for r in rows}
    if values.get("reason") in (None, FINE):
        return "fine"
    prefilled = [area["text"] for area in task["sentences"]]
    edited = [values.get(f"text_{k}") or "" for k in range(len(prefilled))]
    if edited == prefilled:
        return "unchanged"
    first = rows[0]
    paragraph = unit["unit"] == "paragraph"
    return Correction(
        row_id=unit["id"], unit=unit["unit"], paragraph_id=unit["paragraph_id"],
        sentence_index=unit["sentence_index"], old_sha256=unit["old_sha256"],
        new_text=paragraph_text(edited) if paragraph else edited[0],
        reason=values["reason"], author=first["annotator"],
        origin=Origin(KIND.name, batch=batch_id, project=first["project_id"],
                      task=first["task_id"], annotation=first["annotation_id"]),
        source_split=unit["source_split"], sentences=tuple(edited) if paragraph else None)


def opened_release(folder: Path) -> Release:
    """The release a post-edit batch was drawn from, refused when its files changed."""
    path = folder / RELEASE_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(path, "missing or unreadable",
                         expected="a post-edit batch's release.json") from None
    files = [Path(f) for f in recorded["files"]]
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise InputError(missing[0], "the batch's release file is gone",
                         expected="the release the batch was pushed from")
    release = open_release(files[0], files=files)
    if release.content != recorded["content"]:
        release.con.close()
        raise InputError(files[0], "the release changed since the batch was pushed",
                         expected=f"files with SHA-256 {', '.join(recorded['content'])}")
    return release


def _superseded(earlier: pa.Table, current: list[Correction], batch_id: str,
                now: str) -> list[dict]:
    """A `rejected` row for each open proposal of this batch whose annotation now proposes
    something else (a later version, or "fine as it is")."""
    latest = {c.origin.annotation: c.correction_id for c in current}
    decided = record.latest_decisions(earlier)
    rows = []
    for row in earlier.to_pylist():
        origin = row["origin"]
        if (row["action"] != "proposed" or origin["kind"] != KIND.name
                or origin["batch"] != batch_id or row["correction_id"] in decided
                or latest.get(origin["annotation"]) == row["correction_id"]):
            continue
        keep = {k: row[k] for k in ("correction_id", "release", "layout", "row_id",
                                    "source_split", "source_id", "unit", "paragraph_id",
                                    "sentence_index", "language", "views", "old_sha256",
                                    "old_text", "new_text", "new_sha256")}
        rows.append(record.make_row(
            action="rejected", created_at=now, author=SUPERSEDER, origin=Origin("decision"),
            note=f"superseded: annotation {origin['annotation']} was changed after this "
                 f"proposal", **keep))
    return rows


def record_corrections(batch_id: str, workspace: Path, table: pa.Table) -> Recorded:
    """Append the corrections of the pulled table (the batch's annotations.parquet) to the
    batch's repair workspace (module docstring); idempotent."""
    from ...repair import apply
    files = BatchFiles(batch_id, workspace)
    folder = files.folder
    plan, tasks = _plan(folder), files.tasks()
    made = {item: _correction(plan[item], tasks[item], rows, batch_id)
            for item, rows in _latest(table).items()}
    found = [c for c in made.values() if isinstance(c, Correction)]
    target = repair_workspace(batch_id, workspace)
    rows = []
    if found:
        release = opened_release(folder)
        try:
            rows = apply.propose(release, found)
        finally:
            release.con.close()
    earlier = target.read()
    rows += _superseded(earlier, found, batch_id, apply._now())
    appended = target.append(rows) if rows else 0
    outcomes = list(made.values())
    return Recorded(len(made), len(found), outcomes.count("fine"), outcomes.count("unchanged"),
                    appended, target.root)


# ------------------------------------------------------------------------- apply

def batch_corrections(folder: Path, release: Release) -> list[Correction]:
    """The open proposals of a post-edit batch's record for this release (read back as
    corrections: repair/apply.from_record), superseded ones left out."""
    from ...repair.apply import from_record
    folder = Path(folder)
    ledger = folder / "ledger.json"
    try:
        config = json.loads(ledger.read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError):
        config = None
    if config != KIND.config:
        raise InputError(ledger, "not a post-edit batch",
                         expected="the folder of a batch pushed with kind = \"post-edit\"")
    held = Workspace(folder).read()
    decided = record.latest_decisions(held)
    proposed = [r for r in held.to_pylist() if r["action"] == "proposed"]
    mine = [r for r in proposed if r["release"] == release.content
            and decided.get(r["correction_id"], {}).get("action") != "rejected"]
    if proposed and not any(r["release"] == release.content for r in proposed):
        raise InputError(folder, "its corrections were made against another release",
                         expected=f"the release with SHA-256 {', '.join(proposed[0]['release'])}")
    return [from_record(r) for r in mine]


def batches_of(release: Release, workspace: Path | None = None) -> list[dict]:
    """The post-edit batches in a review workspace pushed from this release (its files'
    content), each {"batch", "folder", "corrections"}: how many open corrections its pulls
    recorded (0 before the first pull)."""
    found = []
    for batch_id in batches(workspace):
        folder = batch_dir(batch_id, workspace)
        try:
            config = json.loads((folder / "ledger.json").read_text(encoding="utf-8"))["config"]
            content = json.loads((folder / RELEASE_FILE).read_text(encoding="utf-8"))["content"]
        except (OSError, ValueError, KeyError, TypeError):
            continue                 # not a post-edit batch, or one whose push never ended
        if config == KIND.config and content == release.content:
            found.append({"batch": batch_id, "folder": folder,
                          "corrections": len(batch_corrections(folder, release))})
    return found


KIND = ReviewKind("post-edit", FORM, "post-edit", "post-edit units", build,
                  needs=(("release", "the release whose units are post-edited"),),
                  accepts=frozenset({"plan"}), per_item=1, corrections=record_corrections)
