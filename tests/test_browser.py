"""The workbench in a real browser: Debian's Chromium driven by Playwright against
`streamlit run app.py` on 127.0.0.1. Screenshots of every page go to artifacts/screenshots/.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from app_server import running_app
from conftest import record, source, view

from devkit import synth

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app, serving the demo and any release the tests write under the session's
    temporary directory (its data roots)."""
    with running_app(AUDIT_DATA_ROOTS=os.pathsep.join([str(tmp_path_factory.getbasetemp()),
                                                       str(ROOT / "data")])) as url:
        yield url


@contextmanager
def chromium(profile: Path | None = None, **options):
    """Headless Chromium: a browser to open contexts in, or, given a `profile` folder, one
    persistent context there (`options`: its viewport, downloads)."""
    with playwright.sync_playwright() as p:
        opened = (p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, **options)
            if profile is not None else
            p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS))
        yield opened
        opened.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile"),
                  viewport={"width": 1400, "height": 1800}, accept_downloads=True) as context:
        yield context


# What a page says while the full scan of a release opened for the first time is running.
PARTIAL = "Partial results: the scan is still running."


def settled(tab, *texts: str) -> None:
    """Wait until the script has finished, every given text is on the page and the scan
    is complete: a partial one's notice gone and the page run again on the full scan
    (tests/test_first_view.py looks at the partial view). Content, never a fixed time:
    the machine may be loaded."""
    ran(tab, *texts)
    notice = tab.get_by_text(PARTIAL).first
    if notice.count():
        notice.wait_for(state="detached", timeout=180_000)
        ran(tab, *texts)


def ran(tab, *texts: str) -> None:
    """Wait until the script has finished and every given text is on the page."""
    for text in texts:
        tab.get_by_text(text, exact=False).first.wait_for(timeout=90_000)
    # The run that drew them has ended: the app's own script state, not the status widget,
    # which shows only once a run has lasted a moment (a slow step after the texts, such
    # as asking the Label Studio servers, went unwaited for under load).
    tab.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                          timeout=90_000)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)
    # No element still stale from the last run, and none still a grey placeholder.
    tab.wait_for_function("() => !document.querySelector('[data-stale=\"true\"], "
                          "[data-testid^=\"stSkeleton\"], [data-testid=\"stAppSkeleton\"]')",
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


@pytest.mark.parametrize(("path", "heading", "name", "content"), [
    ("/", "Release overview", "overview", "Findings by check"),
    ("/Browse", "Browse", "browse", "240 of 240 rows match"),
    ("/Instance?row=72", "Instance", "instance", "p00 · 1"),
    ("/Findings", "Findings", "findings", "Where a check fired"),
    ("/Mixing", "Language mixing", "mixing", "Language distribution (Table 11)"),
    ("/Compare", "Compare two releases", "compare", "Name the earlier release (OLD)"),
    ("/Export", "Export", "export", "Saved scans"),
    ("/Review", "Review", "review", "Annotators and routing"),
    ("/Annotations", "Annotations", "annotations", "Annotations"),
    ("/Evaluate", "Evaluate predictions", "evaluate", "Rows behind a slice"),
    ("/Judge", "LLM-judge samples", "judge", "Calibration against human adequacy"),
    ("/Repair", "Repair", "repair", "on the work list"),
    ("/Retrieval", "MAPLE retrieval runs", "retrieval", "Per query"),
])
def test_every_page_renders(server, browser, path, heading, name, content):
    tab = visit(browser, server + path, heading, content)
    shot(tab, name)
    menu = [link.inner_text() for link in tab.locator('[data-testid="stPageLink"]').all()]
    assert menu[:9] == ["Overview", "Browse", "Instance", "Findings", "Mixing", "Compare",
                        "Export", "Review", "Annotations"]
    tab.close()


def test_deep_link_applies_set_up_and_filter(server, browser):
    tab = visit(browser, server + "/Browse?question_language=fa,ur", "Browse",
                "21 of 240 rows match")
    assert tab.title() == "Browse · XHotpotQA audit"
    assert "filter: question_language fa, ur → 21 rows" in tab.inner_text("body")
    tab.close()


def test_choose_several_filters_at_once(server, browser):
    tab = visit(browser, server + "/Browse", "Browse", "240 of 240 rows match")
    assert tab.locator("a.chip").count() == 0           # no filter: no chip
    tab.get_by_role("button", name="Choose several filters at once…").click()
    box = tab.locator('[data-testid="stMultiSelect"]').filter(has_text="Stratum")
    box.locator("input").click()
    tab.locator("div[role=option]").filter(has_text="S3").first.click()
    tab.wait_for_url("**stratum=S3**", timeout=90_000)
    settled(tab, "16 of 240 rows match")
    shot(tab, "browse-filtered")
    # The chooser stays open: a second value is one more pick, not another trip.
    box.locator("input").click()
    tab.locator("div[role=option]").filter(has_text="S2").first.click()
    tab.wait_for_url("**stratum=S3%2CS2**", timeout=90_000)
    settled(tab, "41 of 240 rows match")
    tab.keyboard.press("Escape")
    chips = tab.locator("a.chip")
    chips.filter(has_text="Stratum: S2").wait_for(timeout=90_000)
    assert sorted(chips.all_text_contents()) == [
        "Stratum: S2 ✕", "Stratum: S3 ✕", "clear every filter ✕"]
    tab.close()


def test_instance_shows_finding_at_its_sentence_and_rtl(server, browser):
    tab = visit(browser, server + "/Instance?row=72", "Instance",
                "blank_sentence: translated sentence is blank")
    assert "p00 · 1" in tab.inner_text("body")
    rtl = tab.locator(".xt-rtl").first
    assert rtl.evaluate("e => getComputedStyle(e).direction") == "rtl"
    tab.close()


def test_instance_marks_what_was_looked_for_and_the_best_match(server, browser):
    """Row 142: a German-assigned paragraph written in Dutch lost the answer's German
    rendering: the English sentence marks 'Venice', the translated one its best match."""
    tab = visit(browser, server + "/Instance?row=142", "Instance",
                "answer_not_in_evidence: answer 'Venice' lost")
    marks = tab.locator("mark.ev")
    assert [marks.nth(i).inner_text() for i in range(marks.count())] == ["Venetië", "Venice"]
    marks.first.scroll_into_view_if_needed()
    tab.screenshot(path=str(SHOTS / "instance-answer-lost.png"))
    tab.close()


def test_download_quarantine_csv(server, browser):
    tab = visit(browser, server + "/Export", "Export", "reasons on")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8"))))
    assert len(rows) == 141
    assert {r["status"] for r in rows} == {"quarantined", "review_required"}
    assert rows[0].keys() >= {"id", "source_split", "reason", "paragraph_id", "sentence_index"}
    tab.close()


# ------------------------------------------------------------ the view survives every click

FILTER = "split=train&stratum=S4&status=quarantined,review_required"
FILTER_WORDS = "split train · stratum S4 · status quarantined, review_required"


@pytest.fixture(scope="module")
def other_release(tmp_path_factory):
    """A non-default release (the demo's files under another name, no HotpotQA source)
    and the rows the filter selects, computed by the core."""
    from audit.analysis import browse
    from audit.engine import scan
    from audit.io import release
    folder = tmp_path_factory.mktemp("other") / "other-release"
    folder.mkdir()
    for shard in (ROOT / "data" / "demo" / "release").glob("*.parquet"):
        shutil.copy(shard, folder / shard.name)
    result = scan.run(release.open_release(folder))
    browse.build_index(result)
    filters = browse.Filters.from_query(dict(p.split("=") for p in FILTER.split("&")))
    rows = browse.matching_rows(result, filters)
    ids = {r["row"]: r["id"] for r in result.status.to_pylist()}
    return folder, rows, ids


def assert_view(tab, folder, rows: int) -> None:
    """The URL and the scope line carry the release and the filter."""
    query = parse_qs(urlparse(tab.url).query)
    assert query["release"] == [str(folder)]
    assert (query["split"], query["stratum"], query["status"]) == (
        ["train"], ["S4"], ["quarantined,review_required"])
    settled(tab, f"filter: {FILTER_WORDS} → {rows} rows")
    assert "other-release" in tab.locator(".scope").inner_text()
    path_box = tab.get_by_label("Release: path, directory of shards, glob or mapping (.toml)")
    assert path_box.input_value() == str(folder)


def test_release_filter_and_row_survive_a_walk_through_the_pages(server, browser,
                                                                  other_release):
    folder, rows, ids = other_release
    assert len(rows) >= 4
    tab = browser.new_page()
    tab.goto(f"{server}/Browse?release={folder}&{FILTER}")
    tab.get_by_role("heading", name="Browse").first.wait_for(timeout=90_000)
    settled(tab, f"{len(rows)} of 240 rows match")
    assert_view(tab, folder, len(rows))
    shot(tab, "walk-1-browse")

    tab.get_by_role("link", name=ids[rows[1]], exact=True).click()       # open a result
    tab.get_by_role("heading", name="Instance").first.wait_for(timeout=90_000)
    for step, row in enumerate(rows[1:4], start=2):
        if step > 2:
            tab.get_by_role("button", name="next ▶").click()
        settled(tab, f"Row {row}: {step:,} of {len(rows):,} under the filter")
        # The caption comes before the instance body streams in: wait for the row's id.
        tab.wait_for_function("id => document.querySelector('[data-testid=\"stMain\"]')"
                              ".innerText.includes(id)", arg=ids[row], timeout=90_000)
        assert parse_qs(urlparse(tab.url).query)["row"] == [str(row)]
        assert_view(tab, folder, len(rows))
        assert ids[row] in tab.locator('[data-testid="stMain"]').inner_text()
    shot(tab, "walk-2-instance")

    tab.locator('[data-testid="stPageLink"]').filter(has_text="Findings").click()
    tab.get_by_role("heading", name="Findings").first.wait_for(timeout=90_000)
    settled(tab, "Where a check fired")
    assert_view(tab, folder, len(rows))
    assert "No HotpotQA source is attached" in tab.inner_text("body")
    # Drill down to another check's examples: a local choice, the filter stays.
    select = tab.locator('[data-testid="stSelectbox"]').filter(has_text="Examples of")
    chosen = select.inner_text().split("\n")[-1].strip()
    select.locator("input").click()
    options = tab.locator("[role=option]")
    options.first.wait_for(timeout=90_000)
    other = next(o.strip() for o in options.all_inner_texts() if o.strip() not in ("", chosen))
    options.filter(has_text=other).first.click()
    tab.wait_for_url("**examples=**", timeout=90_000)
    settled(tab, f"findings of {other}")
    assert "check" not in parse_qs(urlparse(tab.url).query)
    assert_view(tab, folder, len(rows))
    shot(tab, "walk-3-findings")

    tab.locator('[data-testid="stPageLink"]').filter(has_text="Export").click()
    tab.get_by_role("heading", name="Export").first.wait_for(timeout=90_000)
    settled(tab, "reasons on")
    assert_view(tab, folder, len(rows))
    assert f"{FILTER_WORDS}" in tab.inner_text("body")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Download CSV").click()
    exported = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8"))))
    assert sorted({int(r["row"]) for r in exported}) == rows
    assert {r["id"] for r in exported} == {ids[r] for r in rows}
    shot(tab, "walk-4-export")

    tab.reload()                                        # the URL alone reproduces the view
    tab.get_by_role("heading", name="Export").first.wait_for(timeout=90_000)
    settled(tab, "reasons on")
    assert_view(tab, folder, len(rows))
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
        shown = [HOSTILE[key] for key in ("question", "answer", "title", "paragraph_id",
                                          "question_language")]
        shown += [HOSTILE_ID, "abc⟨U+202E⟩txt.exe www.evil.example bob@evil.example **bold** $x$"]
        # The page streams in: wait until every one of them is drawn (content, not time).
        tab.wait_for_function("texts => texts.every(t => document.body.innerText.includes(t))",
                              arg=shown, timeout=90_000)
        settled(tab, "⟨U+202E⟩")
        body = tab.inner_text("body")
        for text in shown:
            assert text in body
        badges = tab.locator(".badge:not(details > .badge)")     # info notes fold away
        assert badges.count() >= 5
        assert all(b.is_visible() for b in badges.all())
        assert tab.locator(".cc-review").first.get_attribute("title") == \
            "U+202E RIGHT-TO-LEFT OVERRIDE"
        shot(tab, "instance-hostile")
    assert tab.evaluate("() => window.__xss") is None
    main = tab.locator('[data-testid="stMain"]')
    # No link leads outside: a hostile value rides only in our own page links' queries.
    assert tab.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] a')]"
                        ".filter(a => new URL(a.href).origin !== location.origin)"
                        ".map(a => a.href)") == []
    assert main.locator("img[src*='evil'], script").count() == 0
    styles = main.locator("style").all_inner_texts()       # only the app's own stylesheet
    assert len(styles) == 1 and "display:none" not in styles[0] and ".cc-review" in styles[0]
    assert outside == [] and dialogs == []
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


def test_compare_page_shows_the_change_and_the_gate(server, browser, tmp_path_factory):
    from test_compare import new_rows, old_rows, write_jsonl
    folder = tmp_path_factory.mktemp("compare-pair")
    old = write_jsonl(folder / "old.jsonl", old_rows())
    new = write_jsonl(folder / "new.jsonl", new_rows())
    tab = visit(browser, f"{server}/Compare?release={new}&old={old}", "Compare two releases",
                "Sources in both", "Acceptance gate", "Verdict:")
    text = tab.inner_text("body")
    assert "33.33%" in text and "22.22%" in text and "-11.11%" in text
    assert "key equality" in text and "1 source only in OLD, 0 tolerated (only_old)" in text
    assert "no paired review batch was given" in text and "--reviews" not in text
    # The interval chart and the Sankey are drawn (Plotly loads lazily: wait for the SVGs).
    tab.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg')"
                          ".length >= 2", timeout=60_000)
    shot(tab, "compare-full")
    # Every download works however quickly it follows another (built once, kept).
    labels = ("compare.json", "units CSV", "acceptance.json", "report.html")
    arrived = []
    tab.on("download", lambda d: arrived.append(d))
    for label in labels:                       # one click straight after another
        tab.get_by_role("button", name=label).click(no_wait_after=True)
    while len(arrived) < len(labels):          # each download comes, or this times out
        tab.wait_for_event("download", timeout=30_000)
    names = {"compare.json": "compare.json", "units.csv": "units CSV",
             "acceptance.json": "acceptance.json", "acceptance-report.html": "report.html"}
    got = {names[d.suggested_filename]: Path(d.path()).read_bytes() for d in arrived}
    assert set(got) == set(labels)
    assert json.loads(got["compare.json"])["key_equality"]["only_old"] == 1
    assert got["units CSV"].startswith(b"source_id,") or b"source_id" in got["units CSV"][:200]
    assert json.loads(got["acceptance.json"])["verdict"] == "fail"
    assert b"<html" in got["report.html"][:500].lower()
    # The release stays in the menu's links; OLD is this page's own choice.
    links = [a.get_attribute("href") for a in tab.locator('[data-testid="stPageLink"] a').all()]
    assert all("release=" in link for link in links)
    tab.close()


def test_compare_with_no_shared_source_is_one_line_not_a_traceback(server, browser,
                                                                    tmp_path_factory):
    from test_compare import new_rows, write_jsonl
    new = write_jsonl(tmp_path_factory.mktemp("compare-alone") / "new.jsonl", new_rows())
    tab = visit(browser, f"{server}/Compare?release={new}&old=data/demo/release",
                "Compare two releases", "Cannot compare")
    error = tab.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "share no source_id" in error and "data/demo/release" in error
    body = tab.inner_text("body")
    assert "Traceback" not in body and "/work/" not in body.replace(str(new), "")
    shot(tab, "compare-no-shared-source")
    tab.close()


def test_findings_drill_down_then_export_holds_exactly_the_views_rows(server, browser):
    """The walk of issue 24: a check picked under "Examples of" on Findings is local; the
    Export reached from the menu downloads the quarantine rows of the view's own filter."""
    from audit.analysis import browse
    from audit.engine.scan import scan_release
    from audit.reports import quarantine
    tab = visit(browser, server + "/Findings?question_language=fa", "Findings",
                "Where a check fired")
    box = tab.locator('[data-testid="stSelectbox"]').filter(has_text="Examples of")
    box.click()
    tab.locator('div[role="option"]').nth(1).click()
    tab.wait_for_url("**examples=**", timeout=90_000)
    settled(tab, "Where a check fired")
    assert "check" not in parse_qs(urlparse(tab.url).query)
    tab.locator('[data-testid="stPageLink"]').filter(has_text="Export").click()
    tab.get_by_role("heading", name="Export").first.wait_for(timeout=90_000)
    settled(tab, "reasons on")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8"))))
    result = scan_release()
    browse.build_index(result)
    wanted = quarantine.quarantine(result.findings, result.status,
                               ("quarantined", "review_required"),
                               browse.matching_rows(result, browse.Filters(
                                   question_language=["fa"])))
    assert len(rows) == wanted.num_rows > 0
    assert sorted(r["id"] for r in rows) == sorted(wanted.column("id").to_pylist())
    shot(tab, "export-after-drill-down")
    tab.close()


def test_values_in_our_sentences_are_in_the_sentences_font(server, browser):
    """A value in a message (a code span, so it shows verbatim) is set like its sentence,
    in boxes and captions alike, not in monospace."""
    tab = visit(browser, server + "/?policy=no-such-policy.toml", "Release overview",
                "Cannot open the policy file")
    fonts = tab.evaluate("() => [...document.querySelectorAll('[data-testid=\"stAlert\"] p, "
                         "[data-testid=\"stCaptionContainer\"] p')].filter(p => "
                         "p.querySelector('code')).map(p => [getComputedStyle(p).fontFamily, "
                         "getComputedStyle(p.querySelector('code')).fontFamily])")
    assert len(fonts) >= 2 and all(text == value for text, value in fonts), fonts
    assert not any("monospace" in value for _, value in fonts)
    tab.close()


def test_facet_labels_are_never_cut_off(server, browser):
    """At 1280 px every facet value shows its whole name (broken only after "_"), and its
    bar has a width."""
    tab = visit(browser, server + "/Browse", "Browse", "240 of 240 rows match")
    labels = tab.locator(".fv-label")
    assert labels.count() > 20
    clipped = tab.evaluate("() => [...document.querySelectorAll('.fv-label')]"
                           ".filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent)")
    assert clipped == []
    bars = tab.evaluate("() => [...document.querySelectorAll('a.fv')].filter(a => "
                        "a.offsetParent).map(a => a.querySelector('.fv-bar > span')"
                        ".getBoundingClientRect().width)")
    assert len(bars) > 20 and min(bars) > 0
    assert tab.get_by_text("same-script", exact=False).count() >= 1
    tab.close()


def test_a_facet_value_is_a_link_that_filters_and_its_chip_removes_it(server, browser):
    tab = visit(browser, server + "/Browse", "Browse", "240 of 240 rows match")
    tab.locator("a.fv", has_text="blank_sentence").first.click()
    tab.wait_for_url("**check=blank_sentence**", timeout=90_000)
    settled(tab, "6 of 240 rows match")
    # The row's blocking check is its first badge, in the blocking colour, never folded.
    first = tab.locator(".xtable tbody tr").first.locator(".badge").nth(1)
    assert first.text_content() == "blank_sentence"
    assert "badge-blocking" in first.get_attribute("class")
    tab.locator("a.chip", has_text="blank_sentence").click()
    tab.wait_for_url(lambda url: "check=" not in url, timeout=90_000)
    settled(tab, "240 of 240 rows match")
    tab.close()


def test_instance_summary_links_to_the_finding_and_names_a_blank(server, browser):
    tab = visit(browser, server + "/Instance?row=72", "Instance", "Findings: 1 blocking")
    jump = tab.locator("a.jump", has_text="blank_sentence")
    assert jump.get_attribute("href") == "#at-c0-1"
    jump.click()
    top = tab.evaluate("() => document.querySelector('#at-c0-1').getBoundingClientRect().top")
    assert -100 < top < 200
    assert tab.get_by_text("(blank: whitespace only, U+0020)").count() == 1
    tab.close()


def test_the_browse_page_number_survives_a_reload_and_back_to_browse(server, browser):
    tab = visit(browser, server + "/Browse", "Browse", "page 1 of 5")
    tab.get_by_role("link", name="next page ▶").click()
    tab.wait_for_url("**page=2**", timeout=90_000)
    settled(tab, "page 2 of 5")
    tab.reload()
    tab.get_by_role("heading", name="Browse").first.wait_for(timeout=90_000)
    settled(tab, "page 2 of 5")
    first = tab.locator(".xtable tbody tr td a").first
    first.click()                                              # open a row of page 2
    tab.get_by_role("heading", name="Instance").first.wait_for(timeout=90_000)
    settled(tab, "back to Browse")
    tab.get_by_role("link", name="back to Browse").click()
    tab.get_by_role("heading", name="Browse").first.wait_for(timeout=90_000)
    settled(tab, "page 2 of 5")
    assert parse_qs(urlparse(tab.url).query)["page"] == ["2"]
    shot(tab, "browse-page-2")
    tab.close()


def test_a_mapped_benchmark_browses_and_opens_an_item(server, browser, realdata,
                                                      tmp_path_factory):
    """XQuAD's first article through its mapping: Browse by language and unit, and an item
    beside the source in every language, at laptop width."""
    from test_mapped_workbench import small_xquad
    mapping = small_xquad(realdata, tmp_path_factory.mktemp("mapped") / "xquad", "xquad-one",
                          blank=3)
    release = f"release={mapping}"
    tab = visit(browser, f"{server}/Browse?{release}&unit=question", "Browse",
                "rows match", "Unit with a finding (column)")
    shot(tab, "mapped-browse")
    tab.get_by_role("link", name=tab.locator("td a").first.inner_text()).first.click()
    settled(tab, "languages beside the source (en)")
    assert tab.locator('[data-testid="stException"]').count() == 0
    body = tab.inner_text("body")
    assert "context" in body and "question" in body and "answer" in body
    shot(tab, "mapped-instance")
    tab.close()
