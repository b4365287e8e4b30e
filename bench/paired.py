"""Benchmark the paired human evidence (audit/review/kinds/paired.py): ΔH (Eq. 37) with a
2,000-replicate source-clustered bootstrap over 7,405 sources.

    .venv/bin/python bench/paired.py

Synthetic scores (seeded, so every run times the same table): 7,405 sources (the
validation split), each with 2 to 6 matched units (about 29,600) over the 23 target
languages, each unit rated on both versions by 2 reviewers (about 59,200 paired ratings),
adequacy old 1-5 and new = old + a shift in {-1, 0, +1} clipped to 1-5, plus the three
preservation flags. Timed: delta_h() (overall and per language, Holm) and, separately,
preservation() (three flags, McNemar, overall and per language); best of 3.
Target (issue 13): < 5 s for the 2,000-replicate clustered bootstrap over 7,405 sources.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.languages import CODES  # noqa: E402
from audit.review.kinds import paired  # noqa: E402

SEED = 20261201
SOURCES = 7405
REVIEWERS = 2
N_BOOT = 2000
TARGETS = tuple(code for code in CODES if code != "en")


def synthesise(n_sources: int = SOURCES, seed: int = SEED) -> pa.Table:
    """paired.SCORES_SCHEMA rows: one per (unit, reviewer)."""
    rng = np.random.default_rng(seed)
    units_per_source = rng.integers(2, 7, n_sources)
    n_units = int(units_per_source.sum())
    source = np.repeat(np.arange(n_sources), units_per_source)
    language = rng.integers(0, len(TARGETS), n_units)
    unit = np.repeat(np.arange(n_units), REVIEWERS)
    h_old = rng.integers(1, 6, n_units * REVIEWERS)
    h_new = np.clip(h_old + rng.integers(-1, 2, h_old.size), 1, 5)
    columns = {
        "pair_id": pa.array([f"pair-{u:08d}" for u in unit]),
        "source_id": pa.array([f"s{s:05d}" for s in source[unit]]),
        "unit": pa.array(np.array(["paragraph", "question", "answer"])[unit % 3]),
        "language": pa.array(np.array(TARGETS)[language[unit]]),
        "reviewer": pa.array([f"r{r}" for r in np.tile(np.arange(REVIEWERS), n_units)]),
        "h_old": pa.array(h_old), "h_new": pa.array(h_new),
    }
    for flag in paired.FLAGS:
        old = rng.random(h_old.size) < 0.9
        columns[f"{flag}_old"] = pa.array(old)
        columns[f"{flag}_new"] = pa.array(np.where(rng.random(h_old.size) < 0.05, ~old, old))
    return pa.table(columns).cast(paired.SCORES_SCHEMA)


def best_of(runs: int, call) -> tuple[float, object]:
    timings, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        timings.append(time.perf_counter() - start)
    return min(timings), result


def main() -> None:
    scores = synthesise()
    units = len(set(scores.column("pair_id").to_pylist()))
    print(f"{SOURCES:,} sources, {units:,} matched units, {scores.num_rows:,} paired ratings, "
          f"{N_BOOT:,} replicates")
    seconds, result = best_of(3, lambda: paired.delta_h(scores, N_BOOT, seed=0))
    overall = result["overall"]
    print(f"delta_h        {seconds:6.2f} s   ΔH = {overall['estimate']:+.4f} "
          f"[{overall['ci'][0]:+.4f}, {overall['ci'][1]:+.4f}], "
          f"{len(result['by_language'])} languages   (target < 5 s)")
    seconds, _ = best_of(3, lambda: paired.preservation(scores, N_BOOT, seed=0))
    print(f"preservation   {seconds:6.2f} s   3 flags, overall and per language")


if __name__ == "__main__":
    main()
