"""Release comparison figures (issue 13): two 553,584-view releases compared (< 60 s,
< 4 GiB), and the 2,000-replicate source-clustered bootstrap over 7,405 sources (< 5 s).

    .venv/bin/python bench/compare.py [--skip-releases]

OLD is the `heavy` benchmark release (real NTREX text, 4 sentences per context left in
English) and NEW the `plus` release (the same sources and ids, translated): the comparison
a release manager runs after a fix. Both are built once under bench/data/ (realtext.py).
Two ways are timed, each in a child process with its own peak RSS (GNU time), with a
cache of their own:
- "from remembered results": both releases were scanned before (`audit scan`), so compare
  reads their remembered findings and status (the usual path: each release is scanned when
  it arrives);
- "scanning both": no results remembered, so compare scans both releases (content caches
  warm).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import realtext  # noqa: E402

from audit.analysis import stats  # noqa: E402

PYTHON = sys.executable


def timed(command: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in GiB and stdout of one child process."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", str(peak_file),
                               *command], cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        return wall, int(peak_file.read_text().split()[-1]) / 2**20, done.stdout


def compare_releases() -> None:
    old, new = realtext.release("heavy"), realtext.release("plus")
    work = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    env = {**os.environ, "AUDIT_SCANS": str(work / "scans"),
           "AUDIT_CACHE_DIR": str(work / "cache")}
    args = [old["release"], new["release"], "--old-source", f"validation={old['source']}",
            "--new-source", f"validation={new['source']}"]
    try:
        # Warm the content caches (contexts, language ids, heuristics), then forget the
        # results that compare remembered, so the next one scans both.
        timed([PYTHON, "-m", "audit", "compare", *args, "--out", str(work / "warmup")], env)
        shutil.rmtree(work / "cache" / "results")
        wall, peak, _ = timed([PYTHON, "-m", "audit", "compare", *args,
                               "--out", str(work / "scanning")], env)
        print(f"compare, scanning both ({old['rows']:,} + {new['rows']:,} views): "
              f"{wall:.1f} s, peak RSS {peak:.2f} GiB")
        for info in (old, new):
            timed([PYTHON, "-m", "audit", "scan", info["release"], "--source",
                   f"validation={info['source']}"], env)
        wall, peak, stdout = timed([PYTHON, "-m", "audit", "compare", *args,
                                    "--out", str(work / "saved")], env)
        print(f"compare, from remembered results: {wall:.1f} s, peak RSS {peak:.2f} GiB")
        summary = json.loads(stdout)
        print(f"  sources {summary['sources']:,}; R_struct {summary['r_struct']['old']:.4f} → "
              f"{summary['r_struct']['new']:.4f}; ΔR {summary['delta_r']:+.4f} "
              f"[{summary['delta_r_ci'][0]:+.4f}, {summary['delta_r_ci'][1]:+.4f}]; "
              f"findings fixed {summary['findings']['fixed']:,}, introduced "
              f"{summary['findings']['introduced']:,}, kept {summary['findings']['kept']:,}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bootstrap(n_sources: int = 7405, n_boot: int = 2000, groups: int = 100) -> None:
    """The comparison's bootstrap as it runs: one draw of sources shared by every slice
    (overall, unit kinds, languages, checks), old / new / difference per slice."""
    rng = np.random.default_rng(0)
    counts = (rng.random((n_sources, groups)) < 0.6).astype(float)
    old = (rng.random((n_sources, groups)) < 0.1) * counts
    new = (rng.random((n_sources, groups)) < 0.08) * counts
    sums = np.stack([old, new, new - old], axis=-1)
    started = time.perf_counter()
    boot = stats.ClusterBootstrap(np.arange(n_sources), n_boot, 0, "bench")
    _, replicates = boot.ratio(sums, counts)
    stats.percentile_intervals(replicates[..., 2])
    print(f"clustered bootstrap: {n_boot:,} replicates over {n_sources:,} sources, "
          f"{groups} slices × 3 statistics: {time.perf_counter() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-releases", action="store_true",
                        help="only the bootstrap figure (no 553,584-view releases)")
    args = parser.parse_args()
    bootstrap()
    if not args.skip_releases:
        compare_releases()


if __name__ == "__main__":
    main()
