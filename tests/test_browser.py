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
playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app, serving the demo and any release the tests write under the session's
    temporary directory (its data roots)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env["AUDIT_DATA_ROOTS"] = os.pathsep.join([str(tmp_path_factory.getbasetemp()),
                                               str(ROOT / "data")])
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


def settled(tab, *texts: str) -> None:
    """Wait until the script has finished and every given text is on the page (content,
    never a fixed time: the machine may be loaded)."""
    for text in texts:
        tab.get_by_text(text, exact=False).first.wait_for(timeout=90_000)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)
    tab.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')",
                          timeout=90_000)


def visit(browser, url: str, heading: str, *texts: str):
    """Open a fresh tab, wait for the page's heading, the given texts and the end of the
    script run."""
    tab = browser.new_page()
    tab.goto(url)
    tab.get_by_role("heading", name=heading).first.wait_for(timeout=90_000)
    settled(tab, *texts)
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


# A payload in every field a page renders: each must show literally and run nothing.
HOSTILE_ID = '<img src="https://evil.example/id.png" onerror="window.__xss=1">'
HOSTILE = {
    "question": "<script>window.__xss = 2</script> see https://evil.example/q",
    "answer": "[Re-authenticate](https://evil.example/login) ![x](https://evil.example/a.png)",
    "title": '<style>.badge{display:none}</style><a href="https://evil.example">T</a>',
    "sentence": "abc\u202etxt.exe www.evil.example bob@evil.example **bold** $x$",
    "paragraph_id": "<style>.badge{display:none}</style>",
    "question_language": '<img src="https://evil.example/lang.png">',
    "language_name": "<b onmouseover=window.__xss=3>Fr</b>",
}


@pytest.fixture(scope="module")
def hostile_release(tmp_path_factory):
    src = source(_id=HOSTILE_ID)
    ctx = view(src)
    ctx[0][1] = [HOSTILE["sentence"]] + ctx[0][1][1:]
    ctx[1][0] = HOSTILE["title"]
    ctx[2][2] = HOSTILE["language_name"]
    row = record(src, ctx, question=HOSTILE["question"], answer=HOSTILE["answer"])
    row["candidates"][2]["paragraph_id"] = HOSTILE["paragraph_id"]
    row["question_language"] = HOSTILE["question_language"]
    row["record_sha256"] = synth.record_sha256(row)
    out = tmp_path_factory.mktemp("hostile") / "release"
    synth.write_release([row], out)
    return out


@pytest.mark.parametrize(("path", "heading"), [
    ("/Instance?row=0", "Instance"), ("/Browse", "Browse"), ("/Findings", "Findings"),
    ("/", "Release overview"), ("/Mixing", "Language mixing"), ("/Export", "Export")])
def test_hostile_text_shows_literally_and_runs_nothing(server, browser, hostile_release, path,
                                                       heading):
    outside, dialogs = [], []
    tab = browser.new_page()
    tab.on("request", lambda r: outside.append(r.url)
           if not r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else None)
    tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    join = "&" if "?" in path else "?"
    tab.goto(f"{server}{path}{join}release={hostile_release}")
    tab.get_by_role("heading", name=heading).first.wait_for(timeout=90_000)
    settled(tab, "rows")
    assert tab.locator('[data-testid="stException"]').count() == 0
    body = tab.inner_text("body")
    if path.startswith("/Instance"):
        settled(tab, "⟨U+202E⟩")
        body = tab.inner_text("body")
        for key in ("question", "answer", "title", "paragraph_id", "question_language"):
            assert HOSTILE[key] in body, key
        assert HOSTILE_ID in body
        assert "abc⟨U+202E⟩txt.exe www.evil.example bob@evil.example **bold** $x$" in body
        badges = tab.locator(".badge")
        assert badges.count() >= 5
        assert all(b.is_visible() for b in badges.all())
        assert tab.locator(".cc-review").first.get_attribute("title") == \
            "U+202E RIGHT-TO-LEFT OVERRIDE"
        shot(tab, "instance-hostile")
    assert tab.evaluate("() => window.__xss") is None
    main = tab.locator('[data-testid="stMain"]')
    assert main.locator("a[href*='evil']").count() == 0
    assert main.locator("img[src*='evil'], script").count() == 0
    styles = main.locator("style").all_inner_texts()       # only the app's own stylesheet
    assert len(styles) == 1 and "display:none" not in styles[0] and ".cc-review" in styles[0]
    assert outside == [] and dialogs == []
    tab.close()
