"""A pulled error-span batch planted in a review workspace without Label Studio: what a push
records (ledger with its settings, items, tasks, the pre-filled regions) and what a pull
writes (annotations.parquet: a `spans` and an `esa_score` row per annotation), for the
Annotations page's span section.

Three units, annotated by ann@example.org and bob@example.org (ESA):

    s1 de question  "Wer gründete die Firma <b>1945</b>? [missing]"
       pre-filled: "1945" major, by the check number_mismatch
       ann keeps it (its region id) and adds "Firma" minor; ESA 60
       bob deletes it, marks "<b>1945</b>" minor and the omission token major; ESA 40
       -> disputed (spans): the open item of the queue
    s2 fa answer    "کتاب 𝒳 <script>alert(1)</script> [missing]"  (an astral character)
       both mark "<script>" major; ESA 80 and 85 -> agreed
    s3 de paragraph "Titel\\n[0] Ein Satz. [missing]": nothing marked; ESA 100 and 100
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from audit.review.batches import ReviewBatch
from audit.review.kinds import spans as kind
from audit.review.schemas import ANNOTATION_SCHEMA, ITEM_SCHEMA
from audit.review.workspace import Workspace

BATCH = "spans-demo"
ANN, BOB = "ann@example.org", "bob@example.org"
UNITS = {  # item: (language, unit, English source, translation)
    "s1": ("de", "question", "Who founded the company in 1954?",
           "Wer gründete die Firma <b>1945</b>?"),
    "s2": ("fa", "answer", "The book <script>alert(1)</script>",
           "کتاب 𝒳 <script>alert(1)</script>"),
    "s3": ("de", "paragraph", "Title\n[0] One sentence.", "Titel\n[0] Ein Satz."),
}
PREFILLED = "checks-number0001"


def shown(item: str) -> str:
    return kind.shown(UNITS[item][3])


def region(item: str, id_: str, piece: str, severity: str, nth: int = 0) -> dict:
    """A region on `piece` of the item's shown text (its nth occurrence)."""
    text = shown(item)
    start = -1
    for _ in range(nth + 1):
        start = text.index(piece, start + 1)
    return {"id": id_, "start": start, "end": start + len(piece), "severity": severity,
            "category": None, "text": piece}


ANNOTATIONS = {  # (item, annotator): (regions, ESA score)
    ("s1", ANN): ([region("s1", PREFILLED, "1945", "major"),
                   region("s1", "ann-1", "Firma", "minor")], 60.0),
    ("s1", BOB): ([region("s1", "bob-1", "<b>1945</b>", "minor"),
                   region("s1", "bob-2", kind.MISSING, "major")], 40.0),
    ("s2", ANN): ([region("s2", "ann-2", "<script>", "major")], 80.0),
    ("s2", BOB): ([region("s2", "bob-3", "<script>", "major")], 85.0),
    ("s3", ANN): ([], 100.0),
    ("s3", BOB): ([], 100.0),
}


def _batch() -> ReviewBatch:
    form = kind.FORMS["esa", False]
    items = pa.Table.from_pylist([
        {"item_id": item, "cluster_id": f"row-{item}", "kind": kind.KIND.annotation,
         "language": language, "unit": unit, "group": language}
        for item, (language, unit, _, _) in UNITS.items()], schema=ITEM_SCHEMA)
    tasks = [kind.payload({"item_id": item, "unit": unit, "language": language,
                           "source_text": source, "translation_text": translation},
                          BATCH, form)
             for item, (language, unit, source, translation) in UNITS.items()]
    filled = region("s1", PREFILLED, "1945", "major")
    prefill = pa.Table.from_pylist([{
        "item_id": "s1", "language": "de", "region_id": PREFILLED, "start": filled["start"],
        "end": filled["end"], "severity": "major", "origin": "number_mismatch",
        "text": "1945"}], schema=kind.PREFILL_TABLE)
    return ReviewBatch(BATCH, form.name, items, tasks, settings=dict(kind.DEFAULTS),
                       tables={kind.PREFILL_FILE: prefill})


def _annotation_rows() -> list[dict]:
    at = dt.datetime(2025, 5, 1, 12, tzinfo=dt.timezone.utc)
    rows = []
    for number, ((item, annotator), (regions, score)) in enumerate(ANNOTATIONS.items(), 1):
        language, unit = UNITS[item][:2]
        for criterion, value in (("spans", json.dumps(regions, ensure_ascii=False)),
                                 ("esa_score", repr(score))):
            rows.append({"item_id": item, "cluster_id": f"row-{item}",
                         "kind": kind.KIND.annotation, "language": language, "unit": unit,
                         "annotator": annotator, "role": "initial", "criterion": criterion,
                         "value": value, "annotation_id": number, "updated_at": at,
                         "project_id": 1 if annotator == ANN else 2, "task_id": number})
    return rows


def plant_span_batch(root: Path) -> Path:
    """The workspace `root` holding the pulled span batch BATCH."""
    files = Workspace(BATCH, root)
    files.record(_batch())
    pq.write_table(pa.Table.from_pylist(_annotation_rows(), schema=ANNOTATION_SCHEMA),
                   files.path("annotations.parquet"))
    return root
