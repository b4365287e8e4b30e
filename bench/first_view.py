"""Benchmark (issue 49): the first view of a release opened for the first time — seconds from
opening it to its first (structural) result and to its full result, staged
(audit/engine/staged.py), beside the plain scan the workbench ran before.

    .venv/bin/python bench/first_view.py [--only real|plus] [--mode staged|plain|browser]
                                         [--runs N]

Releases (bench/realtext.py, built once under bench/data/): `real` 990 sources × 24 views =
23,760 rows of real text; `plus` 23,066 × 24 = 553,584 views (XHotpotQA+), each with its
HotpotQA validation source. Every run is a child process of its own with an empty cache
directory (nothing remembered, no signal cached), its modules imported before the clock
starts, as in a workbench that is already serving:

- `staged`: open the release, the structural checks and their browse index (the first
  view), then the full scan on its thread and its browse index (the full result);
- `plain`: open the release, the full scan and its browse index, as the workbench did;
- `browser`: the workbench served (`streamlit run app.py`, bench/pages.py) and its
  Overview opened in Chromium, first on the bundled demo (the pages' imports; its scan
  complete), then on the release: seconds from asking for the page to the status counts
  marked partial and the findings by check (or "No findings.") drawn (the first view), and
  to the full counts (the page reruns by itself); then the same page loaded again, its scan
  in memory: what any page load costs whatever the release (Streamlit's start in the tab,
  the page's run, the drawing). The page marks these moments on its own clock.

A staged or plain run also gives the peak RSS of the process it ran in (the workbench's).
Targets: 23,760 rows, first view within 2 s; XHotpotQA+, within 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import realtext  # noqa: E402

MODES = ("staged", "plain", "browser")


def staged_run(release: str, source: str) -> dict:
    from audit.analysis import browse
    from audit.engine import policy, staged
    from audit.io import release as readers

    shown = []          # the status counts of each result as the workbench gets it

    def ready(result, language) -> None:
        browse.build_index(result, language)
        shown.append(result.summary["status_counts"])

    started = time.perf_counter()
    scan = staged.start(lambda: readers.open_release(release, [f"validation={source}"],
                                                     remember_later=True),
                        policy.DEFAULT, ready=ready)
    first = time.perf_counter() - started
    scan.complete()
    return {"first": first, "full": time.perf_counter() - started,
            "status": {"first view": shown[0], "full": shown[-1]}}


def plain_run(release: str, source: str) -> dict:
    from audit.analysis import browse
    from audit.engine import policy, store
    from audit.io import release as readers

    started = time.perf_counter()
    result, language = store.scanned(readers.open_release(release, [f"validation={source}"]),
                                     policy.DEFAULT)
    browse.build_index(result, language)
    return {"first": None, "full": time.perf_counter() - started,
            "status": result.summary["status_counts"]}


# Installed in every page the tab opens: marks the page's own clock (ms since its navigation
# began) when its first view and its full result are drawn. Playwright's waits poll every
# 500 ms once a wait has lasted ~0.3 s, so timing its waits overstated a first view by up to
# half a second.
MARKS = """(() => {
  const marks = window.__marks = {};
  const drawn = (label) => [...document.querySelectorAll('[data-testid="stMetricLabel"]')]
    .some((e) => e.textContent.trim() === label);
  const findings = () => document.querySelector('table.xtable') !== null ||
    [...document.querySelectorAll('[data-testid="stAlert"]')]
      .some((e) => e.textContent.includes('No findings.'));
  new MutationObserver(() => {
    if (!findings()) return;
    if (!('partial' in marks) && drawn('accepted (partial)')) marks.partial = performance.now();
    if (!('complete' in marks) && drawn('accepted')) marks.complete = performance.now();
  }).observe(document, {subtree: true, childList: true, characterData: true});
})()"""


def browser_run(release: str, source: str) -> dict:
    from playwright.sync_api import sync_playwright

    import pages

    def seconds_to(tab, mark: str, asked: float) -> float:
        """Seconds from `asked` (the epoch when the page was asked for) to the page's mark."""
        tab.wait_for_function(f"() => window.__marks && '{mark}' in window.__marks",
                              timeout=1_800_000)
        drawn = tab.evaluate(f"performance.timeOrigin + window.__marks['{mark}']") / 1000
        return drawn - asked

    proc, url = pages.start_app()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                                 args=pages.FLAGS)
            tab = browser.new_page(viewport={"width": 1280, "height": 800})
            tab.add_init_script(MARKS)
            tab.goto(url)                       # the pages' imports: the demo, scanned
            seconds_to(tab, "complete", time.time())
            asked = time.time()
            tab.goto(f"{url}/?release={release}&source_validation={source}")
            first = seconds_to(tab, "partial", asked)
            full = seconds_to(tab, "complete", asked)   # rerun by the page itself, no click
            # Read once the rerun has ended: until then the partial counts are still drawn.
            tab.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
                timeout=1_800_000)
            values = tab.get_by_test_id("stMetric").all_inner_texts()
            asked = time.time()                 # the same page again, its scan in memory
            tab.reload()
            again = seconds_to(tab, "complete", asked)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"first": first, "full": full, "again": again,
            "status": [" ".join(v.split()) for v in values]}


def child(mode: str, release: str, source: str) -> dict:
    """One run in a child process with an empty cache directory."""
    with tempfile.TemporaryDirectory(prefix="bench-first-view-") as cache:
        env = {**os.environ, "AUDIT_CACHE_DIR": cache, "PYTHONPATH": str(REPO),
               "AUDIT_DATA_ROOTS": os.pathsep.join([str(REPO / "data"), str(HERE / "data")])}
        done = subprocess.run([sys.executable, __file__, "--child", mode, release, source],
                              cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{mode} run failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def in_child(mode: str, release: str, source: str) -> None:
    # Imported before the clock starts: a serving workbench has them.
    from audit.analysis import browse  # noqa: F401
    from audit.engine import scan, staged, store  # noqa: F401
    from audit.io import release as readers  # noqa: F401
    run = {"staged": staged_run, "plain": plain_run, "browser": browser_run}[mode]
    done = run(release, source)
    # The peak RSS of the process the scan ran in: the workbench's (the browser mode's
    # scan runs in the app, another process).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({**done, "peak_gib": None if mode == "browser" else peak}))


def seconds(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "—"
    each = ", ".join(f"{v:.2f}" for v in known)
    return f"{statistics.median(known):6.2f} s ({each})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("real", "plus"), action="append")
    parser.add_argument("--mode", choices=MODES, action="append")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        in_child(*args.child)
        return
    for name in args.only or ["real"]:
        info = realtext.release(name)
        print(f"{name}: {info['rows']:,} rows; empty cache, median of {args.runs} runs "
              "(each in a fresh process); seconds from opening the release", flush=True)
        print(f"  {'':8} {'first view':<30} {'full result':<30}")
        for mode in args.mode or MODES:
            runs = []
            for _ in range(args.runs):      # the machine's load: others' work skews a run
                load = os.getloadavg()[0]
                runs.append({**child(mode, info["release"], info["source"]), "load": load})
            print(f"  {mode:8} {seconds([r['first'] for r in runs]):<30} "
                  f"{seconds([r['full'] for r in runs]):<30}", flush=True)
            if mode == "browser":
                print(f"  {'':8} the same page load once the scan is in memory (Streamlit's "
                      f"own share): {seconds([r['again'] for r in runs])}", flush=True)
            if mode != "browser":
                print(f"  {'':8} peak RSS of the scanning process: "
                      f"{max(r['peak_gib'] for r in runs):.2f} GiB (the largest run)", flush=True)
            print(f"  {'':8} load average before each run: "
                  + ", ".join(f"{r['load']:.1f}" for r in runs), flush=True)
            print(f"  {'':8} status: {json.dumps(runs[-1]['status'])}", flush=True)


if __name__ == "__main__":
    main()
