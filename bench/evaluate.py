"""Benchmark: evaluation of 553,584 predictions with every slice, contrast and interval
(2,000 replicates), and the judge reports on 5,520 rows.

    .venv/bin/python bench/evaluate.py          # builds the release once under bench/data/

The release is bench/realtext.py's 553,584-view real-text XHotpotQA+ release. Preparation,
not timed: open it, compute the language descriptors, run the scan for each row's status,
write two seeded synthetic prediction files. Timed: reading and validating the prediction files,
scoring under both protocols, all slices, contrasts, the Table 17 sensitivity and (for two
files) the paired differences — `report.evaluate` end to end. Target: < 30 s.

Judge: two seeded full-design files (2,760 rows each, the V1 and V2 profiles = 5,520 rows);
timed: validation, per language × unit statistics, the 10,000-replicate stratified
bootstrap, the unpaired V2 − V1 difference. Target: < 5 s.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))
import pyarrow.parquet as pq  # noqa: E402
import realtext  # noqa: E402

from audit.engine import scan  # noqa: E402
from audit.evaluation import predictions, report  # noqa: E402
from audit.io import release as readers  # noqa: E402
from audit.language import descriptors  # noqa: E402
from devkit.evaluation import judge_synth, synthetic  # noqa: E402


def predictions_figure(n_boot: int) -> None:
    info = realtext.release("plus")
    started = time.perf_counter()
    release = readers.open_release(info["release"], [f"validation={info['source']}"])
    table = descriptors.descriptors(release)
    result = scan.run(release)
    gold = predictions.gold(release)
    work = Path(tempfile.mkdtemp(prefix="bench-evaluate-"))
    files = [synthetic.write_predictions(release, table, work / f"{name}.jsonl", seed=seed,
                                         skill=skill)
             for name, seed, skill in (("a", 1, 0.55), ("b", 2, 0.6))]
    print(f"prepared {release.rows:,} rows in {time.perf_counter() - started:.0f} s "
          f"(descriptors, structural scan, two prediction files)", flush=True)
    for count in (1, 2):
        started = time.perf_counter()
        read = [predictions.read_predictions(f) for f in files[:count]]
        evaluation = report.evaluate(gold, table, result.status, read, n_boot=n_boot)
        seconds = time.perf_counter() - started
        print(f"evaluate {count} file(s): {release.rows:,} rows, {n_boot:,} replicates, "
              f"{evaluation.slices.num_rows:,} slice rows, {evaluation.contrasts.num_rows:,} "
              f"contrast rows: {seconds:.1f} s (target < 30 s); peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB",
              flush=True)


def judge_figure() -> None:
    from audit.evaluation.judge_report import judge_reports
    work = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    paths = [judge_synth.write(judge_synth.generate(profile), work / f"{profile}.parquet")
             for profile in ("v1", "v2")]
    started = time.perf_counter()
    reports = judge_reports([str(p) for p in paths])
    seconds = time.perf_counter() - started
    rows = sum(pq.read_metadata(p).num_rows for p in paths)
    pooled = [r["mean"] for i in range(2) for r in reports[f"statistics_{i}"].to_pylist()
              if (r["language"], r["unit"]) == ("all", "all")]
    print(f"judge reports on {rows:,} rows (validation, statistics with 10,000 replicates, "
          f"V2 − V1): {seconds:.2f} s (target < 5 s); pooled means "
          f"{pooled[0]:.3f} / {pooled[1]:.3f}", flush=True)


def cluster_figure() -> None:
    """Issue 13's figure on the shared helper: a paired 2,000-replicate source-clustered
    bootstrap of a per-source difference over 7,405 sources."""
    import numpy as np

    from audit.analysis import stats
    rng = np.random.default_rng(0)
    old = rng.random(7405) < 0.06
    new = old & (rng.random(7405) < 0.2)
    started = time.perf_counter()
    boot = stats.ClusterBootstrap(np.arange(7405), 2000, 20260810, "delta-r")
    estimate, replicates = boot.means(new.astype(float) - old.astype(float))
    low, high, _ = stats.percentile_interval(replicates[:, 0, 0])
    print(f"clustered bootstrap, 7,405 sources × 2,000 replicates: "
          f"{time.perf_counter() - started:.2f} s (issue 13 target < 5 s); "
          f"ΔR {estimate[0, 0]:+.4f} [{low:+.4f}, {high:+.4f}]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--only", choices=("predictions", "judge"))
    args = parser.parse_args()
    if args.only != "predictions":
        judge_figure()
        cluster_figure()
    if args.only != "judge":
        predictions_figure(args.n_boot)


if __name__ == "__main__":
    main()
