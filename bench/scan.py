"""Benchmark: full structural scan of a 23,066-row V1.1-shaped release and of a 553,584-row
XHotpotQA+-shaped one (24 question-language views per source sharing one context).

    .venv/bin/python bench/scan.py            # builds the releases once under bench/data/

The structural scan runs every check but the language-compliance ones (bench/langid.py
measures those). Each release is tiled from the bundled demo release with DuckDB (new ids, view languages,
re-computed record hashes) and scanned in a child process, so peak RSS is the scan's own.
Prints the check-pass time of the 18 reference flags alone, then rows/s, seconds (check pass
and total) and peak RSS of the full structural scan. Targets: 23,066 rows ≤ 0.5 s of
check time; 553,584 views < 30 s with peak RSS < 4 GiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit import hashing, readers, registry  # noqa: E402
from audit.languages import LANGUAGES  # noqa: E402
from audit.workspace import DEMO_RELEASE  # noqa: E402

DATA = REPO / "bench" / "data"
# The structural scan: language ID has its own benchmark (bench/langid.py).
LANGUAGE_CHECKS = ("script_mismatch", "language_mismatch")


def build(target: Path, sources: int, views: int) -> Path:
    """Tile the demo rows up to `sources` source records × `views` views per source."""
    if target.exists():
        return target
    target.mkdir(parents=True)
    demo = readers.open_release(DEMO_RELEASE)
    con = demo.con
    languages = ", ".join(f"('{i}', '{lang.code}', '{lang.name}')"
                          for i, lang in enumerate(LANGUAGES))
    base = con.sql("SELECT count(*) FROM raw_release WHERE source_split = 'validation'"
                   ).fetchall()[0][0]
    # One tiled source per (demo row, copy); with views > 1 each source gets 24 views that
    # share its context and differ in question language, as in XHotpotQA+.
    con.execute(f"""
        CREATE TABLE tiled AS
        SELECT * REPLACE (
                 printf('%s-%06d-%02d', id, copy, view) AS id,
                 printf('%s-%06d', source_id, copy) AS source_id,
                 CASE WHEN {views} > 1 THEN v.code ELSE question_language END
                   AS question_language,
                 CASE WHEN {views} > 1 THEN v.name ELSE question_language_name END
                   AS question_language_name,
                 (row_number() OVER () - 1)::INTEGER AS release_position)
        FROM (SELECT * EXCLUDE (rid) FROM raw_release WHERE source_split = 'validation') r,
             range(({sources} + {base} - 1) // {base}) c(copy),
             (VALUES {languages}) v(view_index, code, name),
             LATERAL (SELECT v.view_index::INTEGER AS view) w
        WHERE w.view < {views}
        QUALIFY row_number() OVER (PARTITION BY view ORDER BY copy, r.release_position)
                <= {sources}
    """)
    json_sql = hashing.canonical_json_sql(con.sql("SELECT * FROM tiled LIMIT 0").to_arrow_table(
    ).schema, "v1.1")
    con.execute(f"""COPY (SELECT * EXCLUDE (j) REPLACE ({hashing.sha256_of_json('j')} AS
                    record_sha256) FROM (SELECT *, {json_sql} AS j FROM tiled raw))
                    TO '{target}/validation-00000.parquet'
                    (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)""")
    return target


def measure(release: Path, skip: tuple[str, ...]) -> dict:
    """Scan in a child process without the `skip` checks; report timings and peak RSS."""
    code = ("import json,sys,time;from audit import readers,scan;t=time.perf_counter();"
            "r=scan.run(readers.open_release(sys.argv[1]),skip=frozenset(sys.argv[2:]));"
            "print(json.dumps({'rows':r.summary['rows'],'checks':r.summary['seconds']['checks'],"
            "'scan':r.summary['seconds']['total'],'wall':time.perf_counter()-t,"
            "'findings':sum(r.summary['check_counts'].values())}))")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run([sys.executable, "-c", code, str(release), *skip], cwd=REPO,
                          capture_output=True, text=True, check=True)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    figures = json.loads(done.stdout)
    figures["peak_rss_gib"] = max(peak_kib, before) / 2**20
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sources", type=int, default=23_066)
    parser.add_argument("--views", type=int, default=24)
    parser.add_argument("--only", choices=("release", "plus"))
    args = parser.parse_args()
    not_reference = tuple(c.name for c in registry.REGISTRY if not c.reference)
    jobs = {"release": (args.sources, 1), "plus": (args.sources, args.views)}
    for name, (sources, views) in jobs.items():
        if args.only and args.only != name:
            continue
        started = time.perf_counter()
        path = build(DATA / f"{name}_{sources}x{views}", sources, views)
        built = time.perf_counter() - started
        # The reference toolkit's own flags only (its per-record rebuild: ~10 s at 23k).
        f = measure(path, not_reference)
        print(f"{name:8} {f['rows']:>9,} rows  18 reference flags: check pass "
              f"{f['checks']:6.2f} s  scan {f['scan']:6.2f} s", flush=True)
        f = measure(path, LANGUAGE_CHECKS)
        print(f"{name:8} {f['rows']:>9,} rows  check pass {f['checks']:6.2f} s  "
              f"scan {f['scan']:6.2f} s  wall {f['wall']:6.2f} s  "
              f"{f['rows'] / f['scan']:>10,.0f} rows/s  peak RSS {f['peak_rss_gib']:.2f} GiB  "
              f"findings {f['findings']:,}  (build {built:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
