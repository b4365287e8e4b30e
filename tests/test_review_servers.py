"""The Review page says, for each configured Label Studio server, whether it answers right
now (issue 48): a real Label Studio answers with its version; an address where nothing
listens does not, and says why; a server that never answers costs the page at most
PROBE_TIMEOUT seconds."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from conftest import label_studio
from streamlit.testing.v1 import AppTest

from audit.review.labelstudio import client as ls
from devkit.labelstudio_local import free_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.labelstudio
@pytest.mark.slow
def test_the_review_page_says_which_configured_server_answers_now(tmp_path, settings_env):
    nowhere = f"http://127.0.0.1:{free_port()}"        # nothing listens there
    with label_studio("answers") as server:
        release = server.client.versions.get().release  # what the server says, via the SDK
        settings = tmp_path / "servers.toml"
        settings.write_text(f'[nowhere]\nurl = "{nowhere}"\n', encoding="utf-8")
        # The test's Label Studio as "default", the settings file's one more; an empty
        # data dir: no other local server to discover.
        settings_env(LABEL_STUDIO_URL=server.url, AUDIT_LABEL_STUDIO_SERVERS=settings,
                     AUDIT_DATA_DIR=tmp_path, AUDIT_DATA_ROOTS=ROOT / "data",
                     AUDIT_REVIEWS=tmp_path / "reviews")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.switch_page("pages/7_Review.py").run()
        assert not at.exception and not at.error
        table = at.dataframe[1].value            # [0]: the batch's strata
        assert table[["server", "url", "right now"]].to_dict("records") == [
            {"server": "default", "url": server.url,
             "right now": f"answers (Label Studio {release})"},
            {"server": "nowhere", "url": nowhere,
             "right now": "does not answer: connection refused"}]
        captions = [c.value for c in at.caption]
        assert f"` default ` answers (` Label Studio {release} `)" in captions
        at.selectbox(key="review_server").set_value("nowhere").run()
        assert not at.exception
        captions = [c.value for c in at.caption]
        assert "` nowhere ` does not answer: ` connection refused `" in captions
        assert f"` default ` answers (` Label Studio {release} `)" not in captions


def test_a_server_that_never_answers_costs_at_most_the_probe_timeout():
    """A port that accepts the connection and then says nothing, beside one where nothing
    listens: both are answered for within the timeout."""
    assert ls.PROBE_TIMEOUT <= 2
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)                   # the kernel accepts; nobody ever replies
        mute = f"http://127.0.0.1:{silent.getsockname()[1]}"
        refused = f"http://127.0.0.1:{free_port()}"
        started = time.monotonic()
        found = ls.probe_all([mute, refused], timeout=0.5)
        took = time.monotonic() - started
    assert {url: p.text for url, p in found.items()} == {
        mute: "does not answer: no answer within 0.5 s",
        refused: "does not answer: connection refused"}
    assert took < 0.5 + 1.0
