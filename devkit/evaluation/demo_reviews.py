"""Synthetic human adequacy ratings for the demo judge file, in the review loop's annotation
table (audit/review/schemas.py ANNOTATION_SCHEMA), so the Judge page's calibration has
something to show before a real batch is pulled. Two "annotators" rate each unit 1–5 from a
seeded noisy function of the judge score; they differ on some units (whose score is then the
mean of the two, as the review reports do). Clearly synthetic: annotator names say so."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from audit.evaluation.judge import item_ids
from audit.io.atomic import staged_file
from audit.review.schemas import ANNOTATION_SCHEMA

ANNOTATORS = ("synthetic-annotator-1@example.org", "synthetic-annotator-2@example.org")


def annotations(judge_table: pa.Table, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    scores = np.asarray(judge_table.column("score").to_pylist(), dtype=float)
    latent = 1 + 4 * (scores / 100) ** 3 + rng.normal(0, 0.45, len(scores))
    first = np.clip(np.round(latent), 1, 5).astype(int)
    second = np.clip(first + rng.choice([-1, 0, 0, 0, 1], len(scores)), 1, 5)
    stamp = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
    rows = []
    ids = item_ids(judge_table)
    for i, (item, unit, language, instance) in enumerate(zip(
            ids, judge_table.column("unit").to_pylist(),
            judge_table.column("target_language").to_pylist(),
            judge_table.column("instance_id").to_pylist())):
        for k, (annotator, value) in enumerate(zip(ANNOTATORS, (first[i], second[i]))):
            rows.append({"item_id": item, "cluster_id": instance, "kind": "translation",
                         "language": language, "unit": unit, "setting": None,
                         "annotator": annotator, "role": "initial", "criterion": "adequacy",
                         "value": str(int(value)), "annotation_id": 2 * i + k + 1,
                         "updated_at": stamp, "source_a": None, "source_b": None,
                         "project_id": None, "task_id": None})
    return pa.Table.from_pylist(rows, schema=ANNOTATION_SCHEMA)


def write(judge_path: Path, out: Path) -> Path:
    table = annotations(pq.read_table(judge_path))
    with staged_file(Path(out)) as staging:
        pq.write_table(table, staging)
    return Path(out)
