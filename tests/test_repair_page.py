"""The Repair page in a real browser, as a release manager uses it on the demo: apply a
corrections file, read each outcome with its diff and checks, accept the held one, and open
Compare on the corrected release."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pyarrow.parquet as pq
import pytest
import repair_demo
from streamlit.testing.v1 import AppTest
from test_browser import browser, server, settled, shot, visit  # noqa: F401 (fixtures)

from audit.engine.scan import scan_release
from audit.repair import desk
from audit.settings import DEMO_RELEASE


def _metrics(tab) -> dict[str, str]:
    return {m.get_by_test_id("stMetricLabel").inner_text().strip():
            m.get_by_test_id("stMetricValue").inner_text().strip()
            for m in tab.get_by_test_id("stMetric").all()}


def _pick_first_row(tab, grid: int) -> None:
    """Tick the first row of the page's `grid`-th table (a canvas: click its checkbox)."""
    frame = tab.get_by_test_id("stDataFrame").nth(grid)
    frame.scroll_into_view_if_needed()
    box = frame.bounding_box()
    tab.mouse.click(box["x"] + 18, box["y"] + 53)


def test_apply_read_accept_and_compare(server, browser, tmp_path_factory):  # noqa: F811
    base = tmp_path_factory.getbasetemp()         # the server's first data root
    fixes = repair_demo.write_fixes(scan_release(), base / "demo-fixes.jsonl")
    tab = visit(browser, f"{server}/Repair", "Repair",
                "72 units on 72 views of 72 on the work list")
    box = tab.get_by_label("Corrections file (JSONL or CSV) under the data roots")
    box.fill(str(fixes))
    box.press("Enter")
    author = tab.get_by_label("Author of lines that name none")
    author.fill("Vendor A")
    author.press("Enter")
    settled(tab)
    tab.get_by_role("button", name="Apply", exact=True).click()
    settled(tab, "Rows changed", "Applied 1, held 1, refused 0 of 2 corrections")
    assert {k: _metrics(tab)[k] for k in ("Corrections", "Applied", "Held", "Refused",
                                          "Rows changed")} == {
        "Corrections": "2", "Applied": "1", "Held": "1", "Refused": "0", "Rows changed": "1"}

    _pick_first_row(tab, 3)                       # outcomes: the held one is listed first
    settled(tab, "Held: ", "Checks after")
    assert tab.get_by_test_id("stAlert").filter(has_text="near_source_copy").count() == 1
    assert tab.get_by_text("(empty: no old text)").count() == 1
    inserted = tab.locator("ins.d-ins")
    assert inserted.all_inner_texts() == [repair_demo.TURKISH[3]]
    shot(tab, "repair-held")
    tab.get_by_label("Reviewer (your name)").fill("Reviewer B")
    tab.get_by_label("Reviewer (your name)").press("Enter")
    settled(tab)
    tab.get_by_role("button", name="Accept and apply again").click()
    settled(tab, "Applied 2, held 0, refused 0 of 2 corrections; 2 rows changed")
    assert {k: _metrics(tab)[k] for k in ("Applied", "Held", "Rows changed")} == {
        "Applied": "2", "Held": "0", "Rows changed": "2"}

    area = desk.area(base / "repairs", scan_release().release)
    newest = desk.applies(area)[0]["out"]
    tr = next(r for path in sorted(Path(newest).glob("*.parquet"))
              if path.name != "corrections.parquet"
              for r in pq.read_table(path).to_pylist() if r["id"] == repair_demo.TURKISH[0])
    assert repair_demo.TURKISH[3] in json.dumps(tr, ensure_ascii=False, default=str)
    shot(tab, "repair-accepted")

    tab.get_by_text("Compare the corrected release with this one").click()
    tab.get_by_role("heading", name="Compare two releases").first.wait_for(timeout=90_000)
    # The two corrected findings fixed; the accepted near copy introduced.
    settled(tab, "Sources in both", "Acceptance gate", "2 fixed, 1 introduced")
    query = parse_qs(urlparse(tab.url).query)
    assert query["old"] == [str(DEMO_RELEASE)] and query["release"] == [str(newest)]
    assert tab.locator('[data-testid="stException"]').count() == 0
    shot(tab, "repair-compare")


# ------------------------------------------------------- the corrections input (issue 48)
# In Streamlit's AppTest (no browser): the Repair page on the demo, its repairs kept under
# the test's own first data root.

ROOT = Path(__file__).resolve().parents[1]


def _repair_page(tmp_path, settings_env) -> AppTest:
    settings_env(AUDIT_DATA_ROOTS=f"{tmp_path}:{ROOT / 'data'}")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/12_Repair.py").run()
    assert not at.exception, at.exception
    if not any(b.key == "repair_go" for b in at.button):
        pytest.fail("no Apply button: " + " | ".join(i.value for i in at.info))
    return at


def _applies(tmp_path) -> list:
    return desk.applies(desk.area(tmp_path / "repairs", scan_release().release))


@pytest.mark.slow
def test_a_typed_path_and_an_upload_together_are_refused_naming_both(tmp_path, settings_env):
    fixes = repair_demo.write_fixes(scan_release(), tmp_path / "typed-fixes.jsonl",
                                   author="Vendor A")
    at = _repair_page(tmp_path, settings_env)
    at.text_input(key="repair_file").input(str(fixes))
    at.get("file_uploader")[0].upload("vendor-batch.jsonl", fixes.read_bytes(),
                                      "application/x-ndjson")
    at.run()
    at.button(key="repair_go").click().run()
    assert not at.exception
    said = f"` {fixes} `"
    assert [e.value for e in at.error] == [
        f"Not applied: both a path ({said}) and an upload (` vendor-batch.jsonl `) are "
        "given. Clear the path box or remove the upload, so that one file is applied."]
    assert len(at.status) == 0 and _applies(tmp_path) == []     # nothing ran, nothing written
    # Said before Apply is pressed, too.
    assert f"Both a path ({said}) and an upload (` vendor-batch.jsonl `) are given: clear " \
        "one; Apply refuses until then." in [c.value for c in at.caption]
    # Cleared path: the upload alone is applied, and said to be what Apply reads.
    at.text_input(key="repair_file").input("").run()
    assert "Apply reads the uploaded file ` vendor-batch.jsonl `." in [c.value for c in
                                                                      at.caption]
    at.button(key="repair_go").click().run()
    assert not at.exception and not at.error
    assert [(s.label, s.state) for s in at.status] == [
        ("Done: 1 applied, 1 held, 0 refused", "complete")]
    assert [a["counts"]["corrections"] for a in _applies(tmp_path)] == [2]


@pytest.mark.slow
def test_a_refused_apply_ends_its_status_box_in_error_with_its_own_label(tmp_path,
                                                                          settings_env):
    fixes = repair_demo.write_fixes(scan_release(), tmp_path / "fixes.jsonl",
                                   author="Vendor A")
    first, second = fixes.read_text(encoding="utf-8").splitlines()
    stale = {**json.loads(first), "old_sha256": "0" * 64}     # not the text it replaces
    fixes.write_text(json.dumps(stale) + "\n" + second + "\n", encoding="utf-8")
    at = _repair_page(tmp_path, settings_env)
    at.text_input(key="repair_file").input(str(fixes)).run()
    at.button(key="repair_go").click().run()
    assert not at.exception
    assert [(s.label, s.state) for s in at.status] == [
        ("Not applied (the reason is below); nothing was written", "error")]
    assert len(at.error) == 1 and "stale correction: old_sha256 000000000000…" in \
        at.error[0].value
    assert _applies(tmp_path) == []
    assert f"Apply reads the file ` {fixes} `." in [c.value for c in at.caption]
