"""The preservation checks against the human flags (issue 22): where a translation or paired
review batch holds answer / entity preservation labels, how well answer_not_in_evidence and
bridge_entity_lost agree with them.

A reviewed paragraph unit says "no" to answer_preserved or entities_preserved when the
annotators' final label says so (agreed or adjudicated; unresolved labels are left out);
the check "fires" on it when the scan of the release has a finding of the check on that
paragraph of that row (an instance unit: on any of the row's paragraphs). Per criterion,
unit and severity (review findings only; review and info together): the judged units, the
human "no"s, the check's firings, both, precision = both / fired and recall = both / human
"no", each with a Wilson 95 % interval. entities_preserved is about every entity and number
of the unit, bridge_entity_lost about one entity: its recall against that flag is a lower
bound of what it is meant to catch, and the table says so.

Which units count: those of the batch drawn from this very release. A translation batch's
item id names the release row and paragraph; a paired batch's version key names each
item's version and the release item behind it, and only the version whose release files
(their SHA-256s, in the manifest) are this release's counts. An item whose row or paragraph
this release lacks, or whose text differs from what the annotators read (another release
with the same ids), is left out and counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa

from ..analysis import stats
from ..engine.scan import ScanResult
from . import sampling
from .workspace import batch_dir

CRITERIA = {"answer_preserved": "answer_not_in_evidence",
            "entities_preserved": "bridge_entity_lost"}
UNITS = ("paragraph", "instance")
LEVELS = {"review": ("review",), "review or info": ("review", "info")}
SCHEMA = pa.schema([
    ("criterion", pa.string()), ("check", pa.string()), ("unit", pa.string()),
    ("severity", pa.string()), ("units", pa.int64()), ("human_no", pa.int64()),
    ("fired", pa.int64()), ("both", pa.int64()),
    ("precision", pa.float64()), ("precision_low", pa.float64()),
    ("precision_high", pa.float64()), ("recall", pa.float64()), ("recall_low", pa.float64()),
    ("recall_high", pa.float64()), ("left_out", pa.int64()), ("note", pa.string()),
])


def against_humans(final: pa.Table | pl.DataFrame, result: ScanResult, batch_id: str,
                   workspace: Path | None = None) -> pa.Table:
    """The table above (SCHEMA) for one batch's final labels and a scan of its release."""
    labels = (pl.from_arrow(final) if isinstance(final, pa.Table) else final).filter(
        (pl.col("kind") == "translation") & pl.col("criterion").is_in(list(CRITERIA))
        & pl.col("unit").is_in(list(UNITS)) & pl.col("value").is_in(["yes", "no"]))
    units, left_out = _release_units(sorted(set(labels["item_id"].to_list())), result,
                                     batch_id, workspace)
    fired = _fired(result)
    rows = []
    for criterion, check in CRITERIA.items():
        for unit in UNITS:
            judged = [(units[r["item_id"]], r["value"] == "no") for r in labels.filter(
                (pl.col("criterion") == criterion) & (pl.col("unit") == unit)).to_dicts()
                if r["item_id"] in units]
            for level, severities in LEVELS.items():
                rows.append(_row(criterion, check, unit, level, judged, fired, severities,
                                 left_out))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _row(criterion: str, check: str, unit: str, level: str, judged: list, fired: dict,
         severities: tuple[str, ...], left_out: int) -> dict:
    flags = [(lost, any(s in severities for s in fired.get((check, *where), ())))
             for where, lost in judged]
    human = sum(lost for lost, _ in flags)
    hits = sum(hit for _, hit in flags)
    both = sum(lost and hit for lost, hit in flags)
    precision = _share(both, hits)
    recall = _share(both, human)
    notes = []
    if not judged:
        notes.append("no judged unit of this batch is in this release")
    elif not hits:
        notes.append("the check fired on no judged unit: precision undefined")
    if judged and not human:
        notes.append("no human 'no': recall undefined")
    if criterion == "entities_preserved":
        notes.append("the human flag covers every entity and number, the check one bridge "
                     "entity: its recall is a lower bound")
    return {"criterion": criterion, "check": check, "unit": unit, "severity": level,
            "units": len(judged), "human_no": human, "fired": hits, "both": both,
            "precision": precision[0], "precision_low": precision[1],
            "precision_high": precision[2], "recall": recall[0], "recall_low": recall[1],
            "recall_high": recall[2], "left_out": left_out, "note": "; ".join(notes) or None}


def _share(k: int, n: int) -> tuple[float | None, float | None, float | None]:
    if not n:
        return None, None, None
    low, high = stats.wilson_interval(k, n)
    return k / n, low, high


def _fired(result: ScanResult) -> dict[tuple, set[str]]:
    """(check, row, paragraph id) and (check, row, None) → the severities of its findings."""
    rows = result.cursor().sql(
        'SELECT "check", "row", paragraph_id, list(DISTINCT severity) FROM findings '
        'WHERE "check" IN (SELECT unnest(?)) GROUP BY ALL',
        params=[list(CRITERIA.values())]).fetchall()
    out: dict[tuple, set[str]] = {}
    for check, row, paragraph, severities in rows:
        out.setdefault((check, row, paragraph), set()).update(severities)
        out.setdefault((check, row, None), set()).update(severities)
    return out


def _release_units(items: list[str], result: ScanResult, batch_id: str, workspace: Path
                   ) -> tuple[dict[str, tuple[int, str | None]], int]:
    """{item: (row, paragraph id; None for an instance)} for the items drawn from this
    release whose text is what the annotators read, and how many items were left out."""
    folder = batch_dir(batch_id, workspace)
    behind = _release_items(items, result, folder)
    con = result.cursor()
    rid_of = {i: r for i, r, n in con.sql("SELECT id, min(rid), count(*) FROM views "
                                          "GROUP BY id").fetchall() if n == 1}
    places = {}
    for item, release_item in behind.items():
        if release_item.count(":") < 2:
            continue        # not an item id of a release unit
        row_id, unit, key = release_item.rsplit(":", 2)
        head, _, tail = row_id.rpartition("@")
        rid = int(tail) if head and tail.isdigit() else rid_of.get(row_id)
        if rid is not None and unit in UNITS:
            places[item] = (rid, unit, key)
    candidates = dict(con.sql(
        "SELECT rid, list_transform(candidates, lambda c: c.paragraph_id) FROM release "
        "WHERE rid IN (SELECT unnest(?))",
        params=[sorted({rid for rid, _, _ in places.values()})]).fetchall())
    chosen = []
    for item, (rid, unit, key) in places.items():
        ids = candidates.get(rid) or []
        pid, _, position = key.partition("#")
        index = (int(position) if position.isdigit() else
                 ids.index(pid) if pid in ids else None) if unit == "paragraph" else None
        if unit == "paragraph" and (index is None or index >= len(ids)):
            continue
        chosen.append({"item_id": item, "rid": rid, "unit": unit, "candidate_index": index,
                       "language": None, "languages": []})
    shown = _task_texts(folder)
    units = {}
    if chosen:
        table = pa.Table.from_pylist(chosen, schema=pa.schema([
            ("item_id", pa.string()), ("rid", pa.int64()), ("unit", pa.string()),
            ("candidate_index", pa.int64()), ("language", pa.string()),
            ("languages", pa.list_(pa.string()))]))
        for unit, text in zip(chosen, sampling.unit_texts(result.release, table)):
            if shown.get(unit["item_id"]) == text["translation_text"]:
                index = unit["candidate_index"]
                units[unit["item_id"]] = (unit["rid"], None if index is None else
                                          candidates[unit["rid"]][index])
    return units, len(items) - len(units)


def _release_items(items: list[str], result: ScanResult, folder: Path) -> dict[str, str]:
    """{item: the release item it shows}: itself in a translation batch; in a paired
    batch, from the version key, for the version whose release files are this release's."""
    pairs = folder / "pairs.jsonl"
    if not pairs.is_file():
        return {item: item for item in items}
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    versions = {version for version, note in manifest.get("paired", {}).items()
                if isinstance(note, dict) and note.get("content") == result.release.content}
    key = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()
           if line.strip()]
    wanted = set(items)
    return {k["item_id"]: k["release_item_id"] for k in key
            if k["item_id"] in wanted and k["version"] in versions}


def _task_texts(folder: Path) -> dict[str, str]:
    """{item: the translation text its task showed}."""
    path = folder / "tasks.jsonl"
    if not path.is_file():
        return {}
    tasks = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    return {t["item_id"]: t.get("translation_text") for t in tasks}
