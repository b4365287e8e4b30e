"""Benchmark: the workbench in a real browser (Debian chromium + Playwright) on the real-text
releases of bench/realtext.py.

    .venv/bin/python bench/pages.py [--only real|plus]

`real` (23,760 rows): Overview's first render (it scans), then the first complete render of
every page with the scan cached. `plus` (553,584 views): a scan is saved first with the CLI
(as a release manager would), then a fresh app renders Overview from that saved scan, then
every page. A render is complete when the script has finished and no element is stale or a
grey placeholder. Targets: every page < 5 s at 23,760 rows once scanned; Overview < 10 s from
a saved scan at 553,584 views.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import realtext  # noqa: E402

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
PAGES = [("/", "Release overview", "Findings by check"), ("/Browse", "Browse", "rows match"),
         ("/Instance", "Instance", "under the filter"),
         ("/Findings", "Findings", "Where a check fired"),
         ("/Mixing", "Language mixing", "Language distribution (Table 11)"),
         ("/Export", "Export", "Saved scans"),
         ("/Browse?question_language=fa,ur&stratum=S4&status=accepted", "Browse",
          "rows match")]
IDLE = ("() => !document.querySelector('[data-stale=\"true\"], [data-testid^=\"stSkeleton\"],"
        " [data-testid=\"stAppSkeleton\"], [data-testid=\"stStatusWidget\"]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app() -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "AUDIT_DATA_ROOTS": os.pathsep.join([str(HERE / "data"),
                                                              str(REPO / "data")])}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.headless", "true"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("streamlit did not start")


def render(context, url: str, heading: str, content: str) -> float:
    tab = context.new_page()
    started = time.perf_counter()
    tab.goto(url)
    tab.get_by_role("heading", name=heading).first.wait_for(timeout=600_000)
    tab.get_by_text(content).first.wait_for(timeout=600_000)
    tab.wait_for_function(IDLE, timeout=600_000)
    seconds = time.perf_counter() - started
    if tab.locator('[data-testid="stException"]').count():
        raise SystemExit(f"{url}: exception on the page")
    tab.close()
    return seconds


def measure(name: str, context) -> None:
    info = realtext.release(name)
    if name == "plus":
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "audit", "scan", info["release"], "--source",
                        f"validation={info['source']}"], cwd=REPO, check=True,
                       capture_output=True)
        print(f"{name}: saved a scan with the CLI in {time.perf_counter() - started:.1f} s",
              flush=True)
    proc, url = start_app()
    try:
        view = f"release={info['release']}&source_validation={info['source']}"
        for i, (path, heading, content) in enumerate(PAGES):
            join = "&" if "?" in path else "?"
            seconds = render(context, f"{url}{path}{join}{view}", heading, content)
            label = ("first visit: scan" if name == "real" else
                     "first visit: from the saved scan") if i == 0 else "scan cached"
            print(f"{name}: {path:60} {seconds:6.2f} s  ({label})", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=("real", "plus"), action="append")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1800})
        for name in args.only or ("real", "plus"):
            measure(name, context)
        browser.close()


if __name__ == "__main__":
    main()
