"""Secrets go only where they were configured: a Label Studio admin token reaches the server
it was configured for and nothing else — not a URL typed on the Review page, not one in a
link, not one a batch's ledger names.

The listener is a small HTTP server on 127.0.0.1 that answers /health and whoami like
Label Studio and records every request it receives."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import streamlit.config as st_config
from streamlit.testing.v1 import AppTest

from audit.errors import InputError
from audit.review import routing, sites
from audit.review.labelstudio import client as ls
from audit.review.labelstudio.errors import ServerError
from audit.settings import current, default_url
from devkit.labelstudio_local import free_port

ROOT = Path(__file__).resolve().parent.parent
SECRET = "AdminToken0ForThisTestOnly0123456789"
OWN = "ListenerOwnToken0123456789"
# Query parameters a crafted link could carry.
LINKED = ("server", "servers", "url", "label_studio_url", "LABEL_STUDIO_URL", "review_url1",
          "review_url2", "review_url3", "side1", "adjudication", "host")


class Listener(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.seen.append({"method": self.command, "path": self.path,
                          "headers": dict(self.headers.items()),
                          "body": self.rfile.read(length).decode(errors="replace")})

    def do_GET(self):
        self._record()
        body = {"status": "UP"} if self.path.startswith("/health") else \
            {"id": 1, "email": "admin@example.com", "username": "admin"}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def listener():
    Listener.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", Listener.seen
    httpd.shutdown()
    httpd.server_close()


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def configured(tmp_path, settings_env):
    """A workbench configured for three servers that are not running (the default and two
    of the settings file), all with the admin token; no local server to discover."""
    settings = tmp_path / "servers.toml"
    settings.write_text(f'[side2]\nurl = "{dead_url()}"\n\n[side3]\nurl = "{dead_url()}"\n')
    # data/labelstudio of an empty data dir: no local server to discover.
    settings_env(LABEL_STUDIO_URL=dead_url(), LABEL_STUDIO_API_KEY=SECRET,
                 AUDIT_LABEL_STUDIO_SERVERS=settings, AUDIT_DATA_DIR=tmp_path,
                 AUDIT_DATA_ROOTS=ROOT / "data", AUDIT_REVIEWS=tmp_path / "reviews")
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")   # the operator may push
    yield settings
    st_config.set_option("server.address", saved)


def leaked(seen: list[dict]) -> list[dict]:
    return [r for r in seen if SECRET in json.dumps(r) or "authorization" in
            {k.lower() for k in r["headers"]}]


def push_on_the_review_page(at: AppTest, url: str) -> None:
    """Type `url` into every text box of the page (the sidebar's path boxes aside), give
    annotators, and press Push."""
    for box in at.text_input:
        if not str(box.key).startswith("path_"):
            box.input(url)
    for key, lines in (("review_annotators", "ana@example.org:ar\nbo@example.org:ar"),
                       ("review_side1", "ana@example.org:ar"),
                       ("review_side2", "bo@example.org:ar")):
        if any(area.key == key for area in at.text_area):
            at.text_area(key=key).input(lines)
    at.run()
    for button in at.button:
        if button.label == "Push batch" and not button.disabled:
            button.click().run()
    assert not at.exception, at.exception


def test_no_url_typed_or_linked_on_the_review_page_receives_a_secret(configured, listener):
    url, seen = listener
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page("pages/7_Review.py").run()
    for mode in ("one server per side (blinding enforced)",
                 "one shared server (blinding only detected)"):
        at.radio(key="review_mode").set_value(mode).run()
        push_on_the_review_page(at, url)
        for name in LINKED:
            at.query_params[name] = url
        at.run()
        push_on_the_review_page(at, url)
    assert leaked(seen) == [] and seen == []        # not even probed
    # The page pushed to the configured servers instead, and says they are down.
    assert any("cannot reach the server" in e.value for e in at.error)
    names = at.selectbox(key="review_server").options
    assert names == [f"default · {default_url()}"] + [
        ls.configured()[n].label for n in ("side2", "side3")]


def ledger_naming(workspace: Path, url: str) -> str:
    """A batch whose ledger (a file in the workspace) names `url` as its server."""
    batch = workspace / "linked-batch"
    batch.mkdir(parents=True)
    entry = {"title": "linked-batch · ar · annotator 1", "project_id": 1,
             "annotator": "ana@example.org", "role": "annotator 1", "group": "ar",
             "server": url}
    (batch / "ledger.json").write_text(json.dumps({
        "batch_id": "linked-batch", "config": "translation_review", "kind": "translation",
        "blinding": "detected", "pairs": {"ar": ["ana@example.org", "bo@example.org"]},
        "servers": {role: url for role in routing.ROLES},
        "projects": {"ar · annotator 1": entry}, "accounts": {}}))
    return "linked-batch"


def test_a_server_a_ledger_names_receives_no_secret_unless_configured(configured, listener,
                                                                     settings_env):
    url, seen = listener
    reviews = current().reviews
    batch = ledger_naming(reviews, url)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page("pages/8_Annotations.py").run()
    next(b for b in at.button if b.label == "Pull annotations from Label Studio").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Pull failed: ` Label Studio at {url}: not a configured server: nothing is sent to "
        f"it (expected one of {', '.join(c.label for c in ls.configured().values())} "
        "(LABEL_STUDIO_URL with LABEL_STUDIO_API_KEY, the settings file servers.toml, or a "
        "server scripts/labelstudio.sh runs)) `"]
    review = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    review.switch_page("pages/7_Review.py").run()
    assert any("Progress unavailable" in e.value and "not a configured server" in e.value
               for e in review.error)
    for command in ("status", "pull"):
        done = subprocess.run([sys.executable, "-m", "audit", "review", "--workspace",
                               str(reviews), command, batch], cwd=ROOT,
                              capture_output=True, text=True)
        assert done.returncode == 2 and "not a configured server" in done.stderr, done.stderr
    assert seen == []
    # Configured in the settings file with a token of its own, it gets that token only.
    configured.write_text(configured.read_text() + f'\n[listener]\nurl = "{url}"\n'
                          'token_env = "LISTENER_TOKEN"\n')
    settings_env(LISTENER_TOKEN=OWN)
    sites.ledger_sites(batch, reviews).close()
    tokens = {value for r in seen for key, value in r["headers"].items()
              if key.lower() == "authorization"}
    assert tokens == {f"Token {OWN}"} and SECRET not in json.dumps(seen)


def test_configured_servers_and_their_tokens(configured, listener, settings_env):
    url, seen = listener
    known = ls.configured()
    assert list(known) == ["default", "side2", "side3"]
    assert all(c.token == SECRET for c in known.values()) and SECRET not in repr(known)
    with pytest.raises(ServerError, match="not a configured server: nothing is sent"):
        ls.connect(url)
    with pytest.raises(ServerError, match="not a configured server"):
        sites.connect_sites({"annotator 1": "default", "annotator 2": "side2",
                             "adjudication": url})
    assert seen == []
    assert ls.find_server(known["side2"].url + "/").name == "side2"
    for text, problem in (
            ('[far]\nurl = "https://review.example.org"\n', "names no token_env"),
            ('[default]\nurl = "http://127.0.0.1:1"\n', "server 'default'"),
            ('[x]\nurl = "ftp://x"\n', "server 'x'"),
            ('[x]\nurl = "http://127.0.0.1:1"\ntoken = "inline"\n', "server 'x'"),
            ("[x\n", "not valid TOML")):
        configured.write_text(text)
        with pytest.raises(InputError, match=problem):
            ls.configured()
    configured.write_text('[far]\nurl = "https://review.example.org/"\n'
                          'token_env = "FAR_TOKEN"\n')
    settings_env(FAR_TOKEN=OWN)
    assert ls.configured()["far"].token == OWN
    assert ls.configured()["far"].url == "https://review.example.org"
