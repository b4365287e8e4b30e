"""Shared builders: hand-made HotpotQA sources turned into real V1.1 Parquet releases."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from audit import settings
from audit.engine import scan
from audit.io import release
from devkit import synth

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


@contextmanager
def label_studio(name: str):
    """A connected Label Studio: the session's (LABEL_STUDIO_URL), else one of the caller's
    own under data/labelstudio/pytest-<name>-…, started here and removed after."""
    from audit.review.labelstudio import client as ls
    from devkit.labelstudio_local import LocalServer, free_port
    local = None
    if not os.environ.get("LABEL_STUDIO_URL"):
        if importlib.util.find_spec("label_studio") is None:
            pytest.skip("label-studio is not installed (pip install -r requirements.txt)")
        folder = f"pytest-{name}-{uuid.uuid4().hex[:8]}"
        local = LocalServer(settings.current().labelstudio_data / folder, free_port()).start()
    try:
        with ls.connect(local.url if local else None) as connected:
            yield connected
    finally:
        if local is not None:
            local.stop()
            shutil.rmtree(local.data_dir, ignore_errors=True)

BASE_SOURCE = {
    "_id": "5a0000000000000000000001",
    "question": "Which river is longer, the Danube or the Rhine?",
    "answer": "Danube",
    "type": "comparison",
    "level": "hard",
    "supporting_facts": [["Danube", 0], ["Rhine", 1]],
    "context": [
        ["Danube", ["The Danube is a long river.", " It flows east.", " It ends in the sea."]],
        ["Rhine", ["The Rhine starts in the Alps.", " It flows north."]],
        ["Seine", ["The Seine flows through Paris."]],
    ],
}


def source(**changes) -> dict:
    record = copy.deepcopy(BASE_SOURCE)
    record.update(changes)
    return record


def view(src: dict, languages=("German", "French", "Spanish")) -> list:
    """A clean translated context: every paragraph in the given languages, same counts.
    Each sentence is a placeholder made of names and a number ("German 0: Danube · · ·."),
    which no language check can fault: names carry no language (tests/test_language_checks.py
    writes real text); it ends with a full stop like its source and is about as long, so no
    translation-quality heuristic faults it either (the length rule's NTREX-128 prior
    calibrates a release this small; tests/test_heuristics.py writes real pairs)."""
    return [[f"{title} ({language[:2]})", [_placeholder(f"{language} {i}: {title}", sentence)
                                          for i, sentence in enumerate(sentences)], language]
            for (title, sentences), language in zip(src["context"], languages)]


def _placeholder(text: str, source: str) -> str:
    """`text`, padded with middle dots (no letter: no loop, no language) to its source's
    length, and a full stop."""
    return text + " ·" * max(0, (len(source.strip()) - len(text)) // 2) + "."


def record(src: dict | None = None, context=None, question="Welcher Fluss ist länger?",
           answer="Donau", language="German", split="validation", position=0) -> dict:
    src = src or source()
    return synth.build_v11_record(src, view(src) if context is None else context, question,
                                  answer, language, split=split, source_position=position,
                                  release_position=position, view_index=0)


def scan_records(tmp_path: Path, records: list[dict], sources: dict | None = None,
                 skip: frozenset[str] = frozenset()) -> scan.ScanResult:
    """Write the records as a V1.1 release (and optional {split: [source]}) and scan it,
    leaving out the checks named in `skip`."""
    release_dir = tmp_path / "release"
    synth.write_release(records, release_dir)
    specs = []
    for split, items in (sources or {}).items():
        path = tmp_path / f"source_{split}.json"
        path.write_text(json.dumps(items), encoding="utf-8")
        specs.append(f"{split}={path}")
    return scan.run(release.open_release(release_dir, specs), skip=frozenset(skip))


def located(result: scan.ScanResult, check: str) -> list[tuple]:
    """(id, paragraph_id, sentence_index) of each finding of one check, in order."""
    rows = [(r["id"], r["paragraph_id"], r["sentence_index"])
            for r in result.findings.to_pylist() if r["check"] == check]
    return sorted(rows, key=lambda t: (t[0], t[1] or "", -1 if t[2] is None else t[2]))


@pytest.fixture(autouse=True, scope="session")
def _language_cache(tmp_path_factory):
    """The tests' edge: the settings from the environment, with the signal caches of the
    session in a temporary directory, not in the workspace (data/cache): in this process
    and in every CLI or app it starts."""
    saved_env = os.environ.get("AUDIT_CACHE_DIR")
    root = tmp_path_factory.mktemp("cache")
    os.environ["AUDIT_CACHE_DIR"] = str(root)
    settings.configure(settings.Settings.from_env())
    yield root / "langid"
    if saved_env is None:
        os.environ.pop("AUDIT_CACHE_DIR", None)
    else:
        os.environ["AUDIT_CACHE_DIR"] = saved_env


@pytest.fixture(autouse=True, scope="session")
def _full_scans_in_app_tests():
    """A page run in Streamlit's AppTest that met a scan still running (a release opened
    for the first time shows its structural checks while the slow ones run:
    audit/engine/staged.py) runs again once that scan is complete, as the page's own
    refresh reruns it in a browser (AppTest runs no timers): the page tests check what the
    full scan shows; tests/test_first_view.py checks the partial view in a browser."""
    app_test = sys.modules.get("streamlit.testing.v1.app_test")
    if app_test is None:        # no collected test runs a page
        yield
        return
    original = app_test.AppTest._run

    def run(self, widget_state=None, timeout=None):
        ran = original(self, widget_state, timeout)
        shell = sys.modules.get("workbench.shell")
        running = [staged for staged in shell.SCANS.values() if not staged.done] \
            if shell else []
        for staged in running:
            staged.wait()
        # Rerun as the page would: the widgets as they now stand, no click repeated.
        return self._tree.run(timeout=timeout) if running else ran
    app_test.AppTest._run = run
    yield
    app_test.AppTest._run = original


@pytest.fixture
def settings_env(monkeypatch):
    """Set environment variables and configure the library's settings from them, as an edge
    does, so this process, the CLIs and the app pages it runs read the same
    (`settings_env(AUDIT_REVIEWS=path)`); undone after the test."""
    saved = settings.current()

    def use(**env: object) -> settings.Settings:
        for name, value in env.items():
            monkeypatch.setenv(name, str(value))
        return settings.configure(settings.Settings.from_env())
    yield use
    settings.configure(saved)


def require_realdata() -> Path:
    """../shared/realdata, or a skip; under CI (CI set) its absence is a failure."""
    if not REALDATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail("../shared/realdata is missing on CI")
        pytest.skip("../shared/realdata is not present")
    return REALDATA


@pytest.fixture(scope="session")
def realdata() -> Path:
    return require_realdata()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that reads ../shared/realdata (through the `realdata` fixture, directly or
    through its own fixtures) is marked `realdata`, one that drives Chromium (the `browser`
    fixture of test_browser.py) `browser`: the fast lane leaves them out."""
    for item in items:
        used = getattr(item, "fixturenames", ())
        for mark in ("realdata", "browser"):
            if mark in used:
                item.add_marker(getattr(pytest.mark, mark))
