"""Benchmark: the workbench in a real browser (Debian chromium + Playwright) on the real-text
releases of bench/realtext.py.

    .venv/bin/python bench/pages.py [--only real|plus] [--users 1 --users 3]

`real` (23,760 rows): Overview's first render (it scans), then the first complete render of
every page with the scan cached. `plus` (553,584 views): a scan is made first with the CLI
(as a release manager would), then a fresh app renders Overview from the results it
remembered, then every page. A render is complete when the script has finished and no element is stale or a
grey placeholder.

For each user count (default 1 and 3) a fresh server is started and that many browser
contexts (separate sessions) walk the pages at the same moment, page after page: the first
page and the deep link as page loads, the others by a click in the sidebar menu, as a
person goes. Printed per page: each user's time and the server's peak resident memory (its
process tree, sampled every 50 ms from /proc) while the page was being rendered, then the
whole walk's peak.
Targets: every page < 5 s at 23,760 rows once scanned, Browse < 1 s; Overview cold < 8 s
with 3 users; server < 1.5 GiB for 3 users; Overview < 10 s from remembered results at
553,584 views.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import threading
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
# (path, heading, a text that appears once the page has its content; None: the heading)
PAGES = [("/", "Release overview", "Findings by check"), ("/Browse", "Browse", "rows match"),
         ("/Instance", "Instance", "under the filter"),
         ("/Findings", "Findings", "Where a check fired"),
         ("/Mixing", "Language mixing", "Language distribution (Table 11)"),
         ("/Compare", "Compare two releases", None),
         ("/Export", "Export", "Saved scans"),
         ("/Review", "Review", "Annotators and routing"),
         ("/Annotations", "Annotations", None),
         ("/Evaluate", "Evaluate predictions", None),
         ("/Judge", "LLM-judge samples", None),
         ("/Retrieval", "MAPLE retrieval runs", None),
         ("/Repair", "Repair", "Work list"),
         ("/Browse?question_language=fa,ur&stratum=S4&status=accepted", "Browse",
          "rows match")]
IDLE = ("() => !document.querySelector('[data-stale=\"true\"], [data-testid^=\"stSkeleton\"],"
        " [data-testid=\"stAppSkeleton\"], [data-testid=\"stStatusWidget\"]')")
GIB = 1024 ** 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOG = Path(tempfile.gettempdir()) / "bench-pages-server.log"


def start_app() -> tuple[subprocess.Popen, str]:
    """A fresh server; its output goes to LOG (named when a page shows an exception)."""
    port = free_port()
    env = {**os.environ, "AUDIT_DATA_ROOTS": os.pathsep.join([str(HERE / "data"),
                                                              str(REPO / "data")])}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.headless", "true", "--server.fileWatcherType", "none"],
                            cwd=REPO, env=env, stdout=LOG.open("wb"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("streamlit did not start")


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(status.split("VmRSS:")[1].split()[0]) * 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, IndexError):
            continue
    return total


class PeakMemory:
    """The server tree's peak RSS since the last `reset`, sampled on a thread."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        self.pid, self.every = pid, every
        self.peak = self.overall = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            rss = tree_rss(self.pid)
            self.peak, self.overall = max(self.peak, rss), max(self.overall, rss)
            self._stop.wait(self.every)

    def reset(self) -> None:
        self.peak = tree_rss(self.pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


async def arrive(tab, heading: str, content: str | None) -> None:
    """Wait for the page's heading, its content and the end of the script run."""
    await tab.get_by_role("heading", name=heading).first.wait_for(timeout=600_000)
    if content:
        await tab.get_by_text(content).first.wait_for(timeout=600_000)
    await tab.wait_for_function(IDLE, timeout=600_000)
    if await tab.locator('[data-testid="stException"]').count():
        raise SystemExit(f"{tab.url}: exception on the page (the server's log: {LOG})")


async def step(tab, url: str, path: str, heading: str, content: str | None) -> float:
    """One page as a person reaches it: a URL typed or followed (a full page load) for the
    first page and a deep link, else a click on its entry in the sidebar menu."""
    started = time.perf_counter()
    if path == "/" or "?" in path:
        await tab.goto(url)
    else:
        await tab.locator('[data-testid="stSidebar"]').get_by_role(
            "link", name=path[1:], exact=True).click()
    await arrive(tab, heading, content)
    return time.perf_counter() - started


async def measure(name: str, browser, users: int) -> None:
    info = realtext.release(name)
    if name == "plus":
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "audit", "scan", info["release"], "--source",
                        f"validation={info['source']}"], cwd=REPO, check=True,
                       capture_output=True)
        print(f"{name}: saved a scan with the CLI in {time.perf_counter() - started:.1f} s",
              flush=True)
    proc, url = start_app()
    memory = PeakMemory(proc.pid)
    contexts = [await browser.new_context(viewport={"width": 1400, "height": 1800})
                for _ in range(users)]
    tabs = [await context.new_page() for context in contexts]
    try:
        view = f"release={info['release']}&source_validation={info['source']}"
        print(f"{name}, {users} user(s): server at start {tree_rss(proc.pid) / GIB:.2f} GiB",
              flush=True)
        for i, (path, heading, content) in enumerate(PAGES):
            join = "&" if "?" in path else "?"
            memory.reset()
            seconds = await asyncio.gather(*(
                step(tab, f"{url}{path}{join}{view}", path, heading, content) for tab in tabs))
            label = ("first visit: scan" if name == "real" else
                     "first visit: from the saved scan") if i == 0 else \
                "deep link: page load" if "?" in path else "menu click, scan cached"
            times = " ".join(f"{s:6.2f}" for s in seconds)
            print(f"{name}, {users} user(s): {path:60} {times} s  peak "
                  f"{memory.peak / GIB:.2f} GiB  ({label})", flush=True)
            for tab in tabs if i == 0 else ():   # the scan's own share of the first visit
                scanned = tab.get_by_text("Scanned ", exact=False)
                if await scanned.count():
                    print(f"{name}, {users} user(s):   {await scanned.first.inner_text()} "
                          "(the session that scanned; any other waited for it)", flush=True)
        print(f"{name}, {users} user(s): server peak over the walk "
              f"{memory.overall / GIB:.2f} GiB", flush=True)
    finally:
        memory.stop()
        for context in contexts:
            await context.close()
        proc.terminate()
        proc.wait(timeout=30)


async def run(args) -> None:
    from playwright.async_api import async_playwright
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                          args=FLAGS)
        for name in args.only or ("real", "plus"):
            for users in args.users or (1, 3):
                await measure(name, browser, users)
        await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=("real", "plus"), action="append")
    parser.add_argument("--users", type=int, action="append",
                        help="simultaneous sessions (repeatable; default 1 and 3)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
