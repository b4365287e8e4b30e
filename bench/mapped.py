"""All of NTREX-128 as one mapped release (examples/ntrex128.toml): 127 references of 1,997
lines beside the English source, aligned by row (253,619 text units).

    .venv/bin/python bench/mapped.py

Prints, for a cold scan (an empty cache directory of its own: no signal, unit index or
result remembered) and a warm one (the same command again: its result is remembered), the
wall time, the scan's own phases (summary.json) and the peak RSS of the scanning process.
Targets (issue 45): cold < 60 s, warm < 2 s, peak RSS < 2 GiB.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAPPING = REPO / "examples" / "ntrex128.toml"


def run(cache: Path, out: Path) -> tuple[float, float]:
    """One `scan` in a child process: (wall seconds, its peak RSS in GiB)."""
    env = {**os.environ, "AUDIT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "audit", "scan", str(MAPPING), "--out",
                           str(out)], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(done.stderr)
    # The largest of the children so far: the cold scan's, which runs first.
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        wall, rss = run(root / "cache", root / "cold")
        summary = json.loads((root / "cold" / "summary.json").read_text())
        print(f"NTREX-128 as one release: {summary['rows']:,} rows (item × language)")
        print(f"cold: {wall:.1f} s wall, peak RSS {rss:.2f} GiB; scan phases: "
              + ", ".join(f"{k} {v:.1f} s" for k, v in summary["seconds"].items()))
        for name, record in summary.get("signals", {}).items():
            print(f"  signal layer {name}: " + ", ".join(
                f"{k} {v:.1f} s" for k, v in record["seconds"].items()))
        walls = [run(root / "cache", root / f"warm{i}")[0] for i in range(3)]
        print(f"warm: {sorted(walls)[1]:.2f} s wall (median of 3)")
        counts = summary["check_counts"]
        print("findings: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
