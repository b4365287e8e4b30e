"""The workbench in a real browser: Debian's Chromium driven by Playwright against
`streamlit run app.py` on 127.0.0.1. Screenshots of every page go to artifacts/screenshots/.
"""

from __future__ import annotations

import csv
import io
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from audit import synth
from conftest import record, source, view

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
PAYLOADS = ["<script>window.__xss = 1</script>", '<img src=x onerror="window.__xss = 2">',
            "[click](javascript:window.__xss=3)", "**not bold**"]

playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + proc.stdout.read().decode()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with playwright.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
            headless=True, args=FLAGS, viewport={"width": 1400, "height": 1800},
            accept_downloads=True)
        yield context
        context.close()


def visit(browser, url: str, heading: str):
    """Open a fresh tab, wait for the page's heading and for the script to finish."""
    tab = browser.new_page()
    tab.goto(url)
    tab.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=60_000)
    tab.wait_for_timeout(300)
    assert tab.locator('[data-testid="stException"]').count() == 0
    return tab


def shot(tab, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize(("path", "heading", "name"), [
    ("/", "Release overview", "overview"),
    ("/Browse", "Browse", "browse"),
    ("/Instance?row=72", "Instance", "instance"),
    ("/Findings", "Findings", "findings"),
    ("/Mixing", "Language mixing", "mixing"),
    ("/Export", "Export", "export"),
    ("/Review", "Review", "review"),
    ("/Annotations", "Annotations", "annotations"),
    ("/Evaluate", "Evaluate predictions", "evaluate"),
    ("/Judge", "LLM-judge samples", "judge"),
    ("/Retrieval", "MAPLE retrieval runs", "retrieval"),
])
def test_every_page_renders(server, browser, path, heading, name):
    tab = visit(browser, server + path, heading)
    shot(tab, name)
    nav = tab.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Browse" in nav and "1_Browse" not in nav
    tab.close()


def test_deep_link_applies_set_up_and_filter(server, browser):
    tab = visit(browser, server + "/Browse?question_language=fa,ur", "Browse")
    assert tab.title() == "Browse · XHotpotQA audit"
    assert "21 of 240 rows match" in tab.inner_text("body")
    tab.close()


def test_apply_a_facet_in_the_sidebar(server, browser):
    tab = visit(browser, server + "/Browse", "Browse")
    box = tab.locator('[data-testid="stMultiSelect"]').filter(has_text="Stratum")
    box.locator("input").click()
    tab.locator("div[role=option]").filter(has_text="S3").first.click()
    tab.wait_for_function("() => document.body.innerText.includes('stratum=S3') || "
                          "location.search.includes('stratum=S3')", timeout=30_000)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=60_000)
    assert "stratum=S3" in tab.url
    assert " of 240 rows match" in tab.inner_text("body")
    shot(tab, "browse-filtered")
    tab.close()


def test_instance_shows_finding_at_its_sentence_and_rtl(server, browser):
    tab = visit(browser, server + "/Instance?row=72", "Instance")
    text = tab.inner_text("body")
    assert "p00 · 1" in text and "blank_sentence: translated sentence is blank" in text
    rtl = tab.locator(".xt-rtl").first
    assert rtl.evaluate("e => getComputedStyle(e).direction") == "rtl"
    tab.close()


def test_download_quarantine_csv(server, browser):
    tab = visit(browser, server + "/Export", "Export")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8"))))
    assert len(rows) == 129
    assert {r["status"] for r in rows} == {"quarantined", "review_required"}
    assert rows[0].keys() >= {"id", "source_split", "reason", "paragraph_id", "sentence_index"}
    tab.close()


@pytest.fixture(scope="module")
def hostile_release(tmp_path_factory):
    src = source()
    ctx = view(src)
    ctx[0][1] = list(PAYLOADS[:3])
    ctx[1][0] = PAYLOADS[3]
    out = tmp_path_factory.mktemp("hostile") / "release"
    synth.write_release([record(src, ctx, question=PAYLOADS[0])], out)
    return out


def test_untrusted_text_is_shown_literally_and_runs_nothing(server, browser, hostile_release):
    tab = visit(browser, f"{server}/Instance?row=0&release={hostile_release}", "Instance")
    # The heading comes before the rows under load: wait for the content itself.
    tab.get_by_text(PAYLOADS[3]).first.wait_for(timeout=60_000)
    body = tab.inner_text("body")
    for payload in PAYLOADS:
        assert payload in body
    assert tab.evaluate("() => window.__xss") is None
    assert tab.locator("img[src=x]").count() == 0
    shot(tab, "instance-hostile")
    tab.close()


def test_evaluate_links_a_slice_row_to_its_instance(server, browser):
    tab = visit(browser, server + "/Evaluate", "Evaluate predictions")
    tab.get_by_role("heading", name="Rows behind a slice").wait_for(timeout=60_000)
    text = tab.inner_text("body")
    assert "Contrasts (Tables 9 and 15)" in text and "Sensitivity to flagged rows" in text
    # Charts load their Plotly bundle lazily: wait for the drawn SVGs, not for time.
    tab.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg')"
                          ".length >= 2", timeout=60_000)
    shot(tab, "evaluate-full")
    tab.close()


def test_judge_page_labels_the_difference_descriptive(server, browser):
    tab = visit(browser, server + "/Judge", "LLM-judge samples")
    tab.get_by_role("heading", name="Calibration against human adequacy").wait_for(
        timeout=60_000)
    assert "independent, unpaired samples" in tab.inner_text("body")
    shot(tab, "judge-full")
    tab.close()
