"""A full scan that fails behind a first view (issue 49), in Streamlit's AppTest: the error
reaches every page as an error box, the partial results stay marked as such with exports
off, the pages that act on every finding stop, and "Scan again" scans again. (The partial
view itself, and the page rerunning when the full scan lands: tests/test_first_view.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit.language import layer as langid

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FAILED = "The full scan of this release failed: ` RuntimeError: the language detector crashed `"


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(params)
    at.switch_page(f"pages/{name}.py") if name != "app" else None
    return at.run()


def test_a_failed_full_scan_is_an_error_box_its_partial_results_stay_partial(
        tmp_path, settings_env, monkeypatch):
    settings_env(AUDIT_DATA_ROOTS=str(tmp_path), AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    release = tmp_path / "failing"
    shutil.copytree(ROOT / "data" / "demo" / "release", release)
    working = langid.prepare

    def broken(*args, **kwargs):
        raise RuntimeError("the language detector crashed")
    monkeypatch.setattr(langid, "prepare", broken)

    overview = page("app", release=str(release))
    assert not overview.exception
    [error] = [box.value for box in overview.error]
    assert error.startswith(FAILED)
    assert "script_mismatch" in error and "exporting, comparing, reviewing" in error
    assert {m.label: m.value for m in overview.metric} == {
        "Rows": "240", "accepted (partial)": "190", "review required (partial)": "11",
        "quarantined (partial)": "39"}
    assert not [box for box in overview.info if "Partial results" in box.value]

    export = page("6_Export", release=str(release))
    assert export.error[0].value.startswith(FAILED)
    assert [button.disabled for button in export.get("download_button")] == [True] * 3
    compare = page("5_Compare", release=str(release))        # acts on every finding: stops
    assert [box.value[:len(FAILED)] for box in compare.error] == [FAILED]
    assert not compare.exception and not compare.subheader

    monkeypatch.setattr(langid, "prepare", working)          # the cause fixed
    overview.button(key="scan_again").click().run()
    assert not overview.error and not overview.exception
    assert {m.label: m.value for m in overview.metric} == {
        "Rows": "240", "accepted": "163", "review required": "38", "quarantined": "39"}
