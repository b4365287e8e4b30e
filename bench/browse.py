"""Benchmark: the functions the Browse page calls, on the 553,584-view release of
bench/scan.py — facet counts plus one page of 50 results for 20 filter combinations — and
the first render of every page on the demo release.

    .venv/bin/python bench/browse.py

Targets: p95 < 200 ms per browse request; first render of each page < 3 s.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from audit import browse, readers, scan  # noqa: E402
from scan import DATA, LANGUAGE_CHECKS, build  # noqa: E402

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
    path = build(DATA / "plus_23066x24", 23_066, 24)
    started = time.perf_counter()
    result = scan.run(readers.open_release(path), skip=frozenset(LANGUAGE_CHECKS))
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


def render_figures() -> None:
    from streamlit.testing.v1 import AppTest
    for name in ("app", "1_Browse", "2_Instance", "3_Findings", "4_Mixing", "6_Export"):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
        if name != "app":
            at.switch_page(f"pages/{name}.py")
        t = time.perf_counter()
        at.run()
        print(f"first render {name:12} {time.perf_counter() - t:5.2f} s"
              + ("  (includes the demo scan)" if name == "app" else ""))


if __name__ == "__main__":
    browse_figures()
    render_figures()
