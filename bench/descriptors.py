"""Benchmark: language descriptors (audit/language/descriptors.py) on the real-text releases of
bench/realtext.py: 23,760 rows and 553,584 views (24 question-language views per source).

    .venv/bin/python bench/descriptors.py          # builds the releases once under bench/data/
 Each measurement runs in a child process so the peak RSS is
the descriptor pass's own (opening the release + the one query + the Arrow result), and is
repeated `--repeat` times (best and median reported). Targets: 23,066 rows ≤ 1 s; 553,584
views < 20 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))
import realtext  # noqa: E402

_CHILD = """
import json, resource, sys, time
from audit.io import release as readers
from audit.language import descriptors
t0 = time.perf_counter()
release = readers.open_release(sys.argv[1])
t1 = time.perf_counter()
table = descriptors.descriptors(release)
t2 = time.perf_counter()
release.con.register("descriptor_table", table)
print(json.dumps({"rows": table.num_rows, "open": t1 - t0, "descriptors": t2 - t1,
                  "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "strata": descriptors.counts(release.con, "descriptor_table")["stratum"]}))
"""


def measure(release: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(release)], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("real", "plus"))
    args = parser.parse_args()
    for name in ("real", "plus"):
        if args.only and args.only != name:
            continue
        path = realtext.release(name)["release"]
        runs = [measure(path) for _ in range(args.repeat)]
        seconds = [r["descriptors"] for r in runs]
        best, median = min(seconds), statistics.median(seconds)
        rows = runs[0]["rows"]
        print(f"{name:8} {rows:>9,} rows  descriptors best {best:6.2f} s  median "
              f"{median:6.2f} s  {rows / best:>10,.0f} rows/s  open "
              f"{min(r['open'] for r in runs):5.2f} s  peak RSS "
              f"{max(r['peak_rss_gib'] for r in runs):.2f} GiB  strata {runs[0]['strata']}",
              flush=True)


if __name__ == "__main__":
    main()
