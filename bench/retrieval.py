"""Benchmark: `retrieval` on the demo files and on a MAPLE-sized run (2,100 queries over 210
papers, 100 documents each = 210,000 run lines), each in a fresh process under three numba
cache states, printing the same figures for each and whether they are identical.

    .venv/bin/python bench/retrieval.py

Cache states (NUMBA_CACHE_DIR pointing at a new directory): cold (empty), warm (filled by
ranx's kernels on the same files, when ranx is installed), mixed (the warm cache with the
specialisations for the files' document-id length deleted: the state in which ranx
returned the run's lists in another query order, issue 26). Timed: the CLI end to end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO / "tests"))       # the cache states, built as the test builds them
import numba_cache  # noqa: E402

DEMO = REPO / "data" / "evaluation_demo"
ASPECTS = ("motivation", "method", "experiment-result")



def maple_sized(work: Path) -> tuple[Path, Path, Path]:
    """210 papers × 10 queries; query j of paper p finds its paper at position 1 + (7p + 3j)
    mod 40 (beyond 100 never), scores strictly decreasing with a tie at every fifth line."""
    queries, qrels, run = ["qid paper aspect"], [], []
    for p in range(210):
        paper = f"P{p:04d}"
        for j in range(10):
            qid = f"{paper}-{j}"
            queries.append(f"{qid} {paper} {ASPECTS[j % 3]}")
            qrels.append(f"{qid} 0 {paper} 1")
            at = 1 + (7 * p + 3 * j) % 40
            run += [f"{qid} Q0 {paper if r == at else f'N{r:04d}'} {r} {100 - r + (r % 5 == 0)}"
                    f".0 bench" for r in range(1, 101)]
    paths = [work / "queries.tsv", work / "qrels.txt", work / "run.txt"]
    for path, lines in zip(paths, (queries, qrels, run)):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths[1], paths[2], paths[0]


def child(cache: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return done


def figures(name: str, qrels: Path, run: Path, queries: Path, work: Path) -> None:
    cache = work / f"cache-{name}"
    cache.mkdir()
    doc_length = len(qrels.read_text(encoding="utf-8").split()[2])
    printed = {}
    for state in ("cold", "warm", "mixed"):
        if state == "warm" and find_spec("ranx"):
            child(cache, "-c", numba_cache.RANX_WARM, qrels, run)
        if state == "mixed" and find_spec("ranx"):
            child(cache, "-c", numba_cache.STRIP, cache, f"UnicodeCharSeq({doc_length})")
        started = time.perf_counter()
        done = child(cache, "-m", "audit", "retrieval", qrels, run, "--queries", queries,
                     "--k", "5,10,20", "--n-boot", "2000")
        seconds = time.perf_counter() - started
        printed[state] = done.stdout
        any_aspect = {int(line.split()[1][1:]): line.split()[3] for line in done.stdout
                      .splitlines() if line.split()[2] == "any_aspect"}
        coverage = {int(line.split()[1][1:]): line.split()[3] for line in done.stdout
                    .splitlines() if line.split()[2] == "aspect_coverage"}
        print(f"{name}, {state} numba cache: AnyAspect@5/10/20 "
              f"{' / '.join(any_aspect[k] for k in (5, 10, 20))}, AspectCoverage@5/10/20 "
              f"{' / '.join(coverage[k] for k in (5, 10, 20))}; CLI wall {seconds:.1f} s",
              flush=True)
    same = len(set(printed.values())) == 1
    print(f"{name}: the three outputs are {'identical' if same else 'DIFFERENT'} "
          f"({len(printed['cold'].splitlines())} metric lines each)", flush=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    source = "ranx kernels" if find_spec("ranx") else "nothing (ranx not installed)"
    print(f"warm and mixed caches hold {source}", flush=True)
    figures("demo (265 queries, 30 papers)", DEMO / "maple-qrels.txt", DEMO / "maple-run-a.txt",
            DEMO / "maple-queries.tsv", work)
    figures("MAPLE-sized (2,100 queries, 210 papers, 210,000 lines)", *maple_sized(work), work)


if __name__ == "__main__":
    main()
