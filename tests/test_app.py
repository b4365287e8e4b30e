"""The app opens on the demo release and shows an error box, not a traceback, on bad input."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_overview_on_the_demo_release():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Rows": "240", "accepted": "162", "review required": "39",
                       "quarantined": "39"}


def test_unreadable_release_is_an_error_box(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input[0].input(str(bad)).run()
    assert not at.exception
    assert "not a readable Parquet file" in at.error[0].value
