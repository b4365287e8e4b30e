"""Benchmark the review loop's analysis side: agreement and reports over 5,520 annotations.

    .venv/bin/python bench/review.py

The synthetic review mirrors the paper's translation-audit design (Table 10): 460 source
instances x (4 paragraphs + 1 question + 1 answer) = 2,760 units balanced over the 23 target
languages, each rated by two bilingual annotators on the seven translation criteria, with a
third annotator adjudicating 90% of the items in disagreement (so the reports also meet
unresolved labels). Agreement is realistic, not perfect: ratings are a latent quality plus
annotator noise, yes/no labels flip now and then, and consequences are sometimes misjudged
(seeded, so every run times the same table).

Timed: agreement() (2,000 source-clustered bootstrap replicates per statistic) plus
all_reports() (2,000 replicates per mean and rate), from the pulled table to pyarrow tables.
Target: < 5 s. Push/pull timings are measured elsewhere; main() prints only this figure.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.languages import CODES  # noqa: E402
from audit.review import agreement as ag  # noqa: E402
from audit.review import reports  # noqa: E402

SEED = 20261130
SOURCES = 460
UNITS = ("paragraph",) * 4 + ("question", "answer")
TARGETS = tuple(code for code in CODES if code != "en")


def synthesise(n_sources: int = SOURCES, seed: int = SEED) -> pa.Table:
    """Two initial annotations per unit on every criterion, adjudication where they differ."""
    rng = np.random.default_rng(seed)
    n = n_sources * len(UNITS)
    item = np.arange(n)
    language = np.array(TARGETS)[item % len(TARGETS)]
    truth = {
        "adequacy": rng.choice(5, n, p=[0.02, 0.05, 0.13, 0.35, 0.45]),
        "fluency": rng.choice(5, n, p=[0.01, 0.04, 0.15, 0.40, 0.40]),
        **{c: rng.choice(2, n, p=[0.08, 0.92]) for c in reports.PRESERVATION},
        "consequence": rng.choice(4, n, p=[0.70, 0.15, 0.10, 0.05]),
    }
    columns: dict[str, list] = {name: [] for name in ag.REQUIRED}
    stamp = dt.datetime(2026, 11, 30, 12, 0)

    def add(criterion: str, labels: tuple[str, ...], codes: np.ndarray, who: np.ndarray,
            role: str, rows: np.ndarray, slot: int) -> None:
        columns["item_id"] += [f"u{i:05d}" for i in rows]
        columns["cluster_id"] += [f"s{i // len(UNITS):04d}" for i in rows]
        columns["kind"] += ["translation"] * len(rows)
        columns["language"] += language[rows].tolist()
        columns["unit"] += [UNITS[i % len(UNITS)] for i in rows]
        columns["setting"] += [None] * len(rows)
        columns["annotator"] += who.tolist()
        columns["role"] += [role] * len(rows)
        columns["criterion"] += [criterion] * len(rows)
        columns["value"] += [labels[c] for c in codes]
        columns["annotation_id"] += (rows * 3 + slot - 1).tolist()   # one id per annotation
        columns["updated_at"] += [stamp] * len(rows)

    adjudicated = rng.random(n) < 0.9   # the third annotator has not finished the queue
    for criterion, scale in ag.CRITERIA["translation"].items():
        k = len(scale.labels)
        given = []
        for slot in (1, 2):
            if scale.ordinal:   # latent rating +- 1 with probability 0.3
                noise = rng.choice([-1, 0, 1], n, p=[0.15, 0.70, 0.15])
                codes = np.clip(truth[criterion] + noise, 0, k - 1)
            else:               # occasionally a different category
                slip = rng.random(n) < (0.05 if k == 2 else 0.15)
                codes = np.where(slip, rng.integers(0, k, n), truth[criterion])
            given.append(codes)
            add(criterion, scale.labels, codes, np.char.add(language, f"-{slot}"), "initial",
                item, slot)
        differ = item[(given[0] != given[1]) & adjudicated]
        add(criterion, scale.labels, truth[criterion][differ],
            np.char.add(language[differ], "-3"), "adjudication", differ, 3)
    return pa.table(columns)


def run(table: pa.Table) -> tuple[float, float]:
    """Wall and CPU seconds of agreement + all reports (CPU time is the figure to trust on a
    shared machine: it does not count time spent waiting for a core)."""
    wall, cpu = time.perf_counter(), time.process_time()
    ag.agreement(table)
    reports.all_reports(table)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    table = synthesise()
    initial = table.filter(pc.equal(table["role"], "initial"))
    annotations = len(set(zip(initial["item_id"].to_pylist(), initial["annotator"].to_pylist())))
    wall, cpu = run(table)
    print(f"agreement and reports over {annotations:,} annotations: {wall:.2f} s "
          f"({cpu:.2f} s CPU; target < 5 s)")


if __name__ == "__main__":
    main()
