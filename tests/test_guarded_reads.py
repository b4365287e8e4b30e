"""Reads that must not break a page or a test run: a damaged saved scan, a Label Studio that
answers the token request with a web page, a pid file whose pid is now another process, and
a review batch whose items were never recorded."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit import settings
from audit.engine import scan, store
from audit.review.labelstudio import client as ls
from audit.review.labelstudio.errors import ServerError
from devkit.labelstudio_local import LocalServer

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------- scan history

@pytest.fixture(scope="module")
def demo_scans(tmp_path_factory):
    """Three saved scans of the demo release; the newest with a manifest that is not JSON,
    the next with a truncated summary (its manifest still matches the demo's scan)."""
    scans = tmp_path_factory.mktemp("scans")
    saved = settings.current()
    settings.configure(dataclasses.replace(saved, scans=scans))
    try:
        result = scan.scan_release()
        good, broken_summary, broken_manifest = (store.write_scan(result) for _ in range(3))
    finally:
        settings.configure(saved)
    (broken_manifest / "manifest.json").write_text("{not json", encoding="utf-8")
    summary = (broken_summary / "summary.json").read_text(encoding="utf-8")
    (broken_summary / "summary.json").write_text(summary[:40], encoding="utf-8")
    return scans, result, good, broken_summary, broken_manifest


def test_a_damaged_saved_scan_is_listed_as_such_and_hides_nothing(demo_scans, settings_env):
    scans, result, good, broken_summary, broken_manifest = demo_scans
    settings_env(AUDIT_SCANS=scans)
    history = store.scan_history(result.release)
    assert [(h["directory"], h.get("problem")) for h in history] == [
        (str(broken_manifest), "unreadable (JSONDecodeError): not used"),
        (str(broken_summary), "unreadable (JSONDecodeError): not used"),
        (str(good), None)]
    assert history[2]["rows"] == 240 and history[2]["accepted"] == 161


@pytest.mark.parametrize("page", ["app", "6_Export"])
def test_overview_and_export_render_beside_a_damaged_scan(demo_scans, settings_env, page):
    scans, _, good, *_ = demo_scans
    settings_env(AUDIT_SCANS=scans)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    if page != "app":
        at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "scan_id" in d.value.columns)
    assert list(table["directory"])[-1] == str(good)
    assert list(table["problem"].fillna("")) == ["unreadable (JSONDecodeError): not used",
                                                 "unreadable (JSONDecodeError): not used", ""]
    if page == "6_Export":
        assert at.selectbox(key="manifest_of").options == [str(good)]


# ------------------------------------------------------------------------- sign-in

class FakeLogin(BaseHTTPRequestHandler):
    """A login form that accepts anyone, then answers the token request with `TOKEN`
    (what a proxy's error page or a half-upgraded server sends)."""

    TOKEN: tuple[int, str, bytes] = (200, "text/html", b"<html>Sign in</html>")

    def do_GET(self):
        if self.path.startswith("/api/current-user/token"):
            status, kind, body = self.TOKEN
            self._answer(status, kind, body)
        else:
            self._answer(200, "text/html", b"<form></form>",
                         {"Set-Cookie": "csrftoken=abc; Path=/"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(302, "text/html", b"", {"Location": "/projects/"})

    def _answer(self, status, kind, body, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


TOKEN = ' (expected {"token": …})'


@pytest.mark.parametrize(("answer", "problem"), [
    ((200, "text/html; charset=utf-8", b"<html>Sign in</html>"),
     "the answer is not JSON (text/html)" + TOKEN),
    ((200, "application/json", b"[]"), "no token in the answer" + TOKEN),
    ((200, "application/json", b'{"token": null}'), "no token in the answer" + TOKEN),
    ((502, "text/html", b"<html>Bad gateway</html>"),
     'HTTP 502 (expected 200 with {"token": …})'),
])
def test_a_token_answer_that_is_no_token_is_a_server_error(monkeypatch, answer, problem):
    monkeypatch.setattr(FakeLogin, "TOKEN", answer)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeLogin)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with pytest.raises(ServerError) as caught:
            ls.sign_in(url, "ana@example.org", "pw")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert str(caught.value) == (f"Label Studio at {url}: log in as ana@example.org: read "
                                 f"the user's API token: {problem}")


# ------------------------------------------------------------------------- LocalServer.kill

def started(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *args],
                            env={**os.environ, **(env or {})})


def test_kill_never_signals_a_pid_that_is_no_longer_the_server(tmp_path):
    data_dir = tmp_path / "ls"
    data_dir.mkdir()
    other = started()                       # the pid file's pid, now another process
    try:
        (data_dir / "server.pid").write_text(f"{other.pid}\n")
        server = LocalServer(data_dir, 18080)
        with pytest.raises(RuntimeError, match=f"pid {other.pid} .* is not this server"):
            server.kill()
        assert other.poll() is None         # still running, not signalled
    finally:
        other.kill()
        other.wait()


def test_kill_signals_the_server_it_started(tmp_path):
    """A process that is `label-studio start --port P` on this data dir is killed."""
    data_dir = tmp_path / "ls"
    data_dir.mkdir()
    fake = tmp_path / "bin" / "label-studio"
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(120)\n")
    elsewhere = started(env={"LABEL_STUDIO_BASE_DATA_DIR": str(tmp_path / "other")})
    proc = subprocess.Popen([sys.executable, str(fake), "start", "--port", "18081"],
                            env={**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir)})
    impostor = subprocess.Popen([sys.executable, str(fake), "start", "--port", "18081"],
                                env={**os.environ,
                                     "LABEL_STUDIO_BASE_DATA_DIR": str(tmp_path / "other")})
    try:
        server = LocalServer(data_dir, 18081)
        assert not server.runs_as(elsewhere.pid) and not server.runs_as(impostor.pid)
        assert not LocalServer(data_dir, 18082).runs_as(proc.pid)
        (data_dir / "server.pid").write_text(f"{proc.pid}\n")
        server.kill()
        assert proc.wait(timeout=30) == -9
    finally:
        for child in (elsewhere, proc, impostor):
            child.kill()
            child.wait()


# ------------------------------------------------------------------------- review batch

def test_a_batch_without_its_items_is_named_not_a_file_not_found(tmp_path):
    from audit.errors import InputError
    from audit.review import workspace
    (tmp_path / "half-pushed").mkdir()
    (tmp_path / "half-pushed" / "ledger.json").write_text(
        '{"batch_id": "half-pushed", "projects": {}}', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        workspace.Workspace("half-pushed", tmp_path).items()
    assert str(caught.value).startswith(str(tmp_path / "half-pushed" / "items.parquet"))
    assert "the batch's items are missing" in str(caught.value)
