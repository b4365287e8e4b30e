"""Benchmark: the functions the Browse page calls, on the 553,584-view real-text release
(bench/realtext.py) — facet counts plus one page of 50 results for 20 filter combinations.

    .venv/bin/python bench/browse.py

Target: p95 < 200 ms per browse request. (bench/pages.py times every page in a browser.)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import realtext  # noqa: E402

from audit.analysis import browse  # noqa: E402
from audit.engine import scan  # noqa: E402
from audit.io import release  # noqa: E402

COMBINATIONS = [
    {}, {"question_language": "fa"}, {"question_language": "fa,ur,ar"},
    {"gold_language": "th"}, {"gold_language": "ja,zh", "gold_mode": "all"},
    {"distractor_language": "ko"}, {"stratum": "S2"}, {"stratum": "S3,S4"},
    {"script_relation": "same-script"}, {"role_condition": "three-language"},
    {"pair_relation": "same-language"}, {"k_c_min": "6", "k_c_max": "8"},
    {"question_type": "comparison"}, {"status": "quarantined"},
    {"check": "blank_sentence"}, {"question_language": "de", "stratum": "S4"},
    {"gold_language": "fr", "status": "accepted", "question_type": "bridge"},
    {"check": "exact_source_copy", "question_language": "es"},
    {"split": "validation", "k_c_min": "9"},
    {"question_language": "hi", "gold_language": "bn", "distractor_language": "ur"},
]


def browse_figures() -> None:
    info = realtext.release("plus")
    started = time.perf_counter()
    result = scan.run(release.open_release(info["release"], [f"validation={info['source']}"]))
    browse.build_index(result)
    print(f"scan + browse index of {result.release.rows:,} rows: "
          f"{time.perf_counter() - started:.1f} s")
    times = []
    for params in COMBINATIONS:
        filters = browse.Filters.from_query(params)
        t = time.perf_counter()
        page = browse.search(result, filters)
        times.append(time.perf_counter() - t)
        print(f"  {page.total:>8,} rows  {times[-1] * 1000:7.1f} ms  {params}")
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
    print(f"browse: facet counts + 50 results, {len(times)} filters: "
          f"p50 {statistics.median(times) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms")


if __name__ == "__main__":
    browse_figures()
