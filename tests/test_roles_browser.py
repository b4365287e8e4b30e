"""Viewer and operator in a real browser (Debian chromium + Playwright).

The app is served the way a team would serve it: bound to this machine's network address
(not loopback), so whoever opens it is a viewer — they browse and export but see no push,
upload or save, and each place says why. With an operator password in Streamlit's secrets,
the same app lets a person who signs in in the sidebar do all of it. Screenshots go to
artifacts/screenshots/roles-*.png."""

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
from app_server import free_port
from test_browser import CHROMIUM, chromium, settled, shot, visit
from test_roles import plant_batch

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "operator password for the browser test"
playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


def network_address() -> tuple[str, str]:
    """(bind address, host to browse): this machine's own non-loopback address when it has
    one (no packet is sent to find it), else every interface, browsed on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
        except OSError:
            address = ""
    if address and not address.startswith("127."):
        return address, address
    return "0.0.0.0", "127.0.0.1"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A review batch with pulled annotations (so Pull and adjudication would show) and a
    scan store of the test's own."""
    root = tmp_path_factory.mktemp("roles")
    plant_batch(root / "reviews")
    return root


def serve(root: Path, secrets: str | None):
    """`streamlit run app.py` bound to the network address; the URL to browse and the
    process. `secrets`: the text of its only secrets file (None: no secrets at all)."""
    bind, host = network_address()
    port = free_port()
    secrets_file = root / f"secrets-{port}.toml"
    if secrets is not None:
        secrets_file.write_text(secrets)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env.update(AUDIT_REVIEWS=str(root / "reviews"), AUDIT_SCANS=str(root / "scans"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", bind, "--server.headless", "true", "--secrets.files",
         str(secrets_file), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://{host}:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return url, bind, proc
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("streamlit did not start: " + proc.stdout.read().decode()[-2000:])
            time.sleep(0.3)


@pytest.fixture(scope="module")
def viewer_app(workspace):
    url, bind, proc = serve(workspace, None)
    yield url, bind
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def password_app(workspace):
    url, bind, proc = serve(workspace, f'[workbench]\noperator_password = "{PASSWORD}"\n')
    yield url, bind
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with chromium() as engine:
        yield engine


def buttons(tab, *names: str) -> dict[str, int]:
    return {name: tab.get_by_role("button", name=name, exact=True).count() for name in names}


WRITES = ("Push batch", "Save this scan (findings, status, summary, manifest)",
          "Pull annotations from Label Studio", "Push the open items to the adjudicators")


def test_a_viewer_browses_and_exports_but_sees_no_push_upload_or_save(viewer_app, browser):
    url, bind = viewer_app
    context = browser.new_context(viewport={"width": 1400, "height": 1900},
                                  accept_downloads=True)
    why = f"served on {bind} with no operator sign-in configured"
    pages = [("/", "Release overview", "Findings by check", "roles-viewer-overview", ()),
             ("/Browse", "Browse", "240 of 240 rows match", "roles-viewer-browse", ()),
             ("/Export", "Export", "Saved scans", "roles-viewer-export", ("Saving a scan",)),
             ("/Review", "Review", "Annotators and routing", "roles-viewer-review",
              ("Pushing a batch (and creating Label Studio accounts)",)),
             ("/Annotations", "Annotations", "Adjudication queue", "roles-viewer-annotations",
              ("Pulling annotations from Label Studio", "Pushing the open items to "
               "adjudicators (and creating their accounts)")),
             ("/Evaluate", "Evaluate predictions", "Slices", "roles-viewer-evaluate", ())]
    for path, heading, content, name, actions in pages:
        tab = visit(context, url + path, heading, content)
        sidebar = tab.locator('[data-testid="stSidebar"]').inner_text()
        assert f"Viewer (read-only) · {why}" in sidebar
        assert tab.locator('[data-testid="stFileUploader"]').count() == 0
        assert buttons(tab, *WRITES) == dict.fromkeys(WRITES, 0)
        body = tab.inner_text("body")
        for action in actions:
            assert f"{action} needs an operator: this session is read-only ({why})" in body, \
                (path, action)
        assert "Uploading a file needs an operator: this session is read-only." in sidebar
        shot(tab, name)
        if path == "/Export":          # exporting what is shown is reading
            with tab.expect_download() as download:
                tab.get_by_role("button", name="Download CSV").click()
            rows = list(csv.DictReader(io.StringIO(
                Path(download.value.path()).read_text("utf-8"))))
            assert len(rows) == 141      # the demo's quarantine reasons
        tab.close()
    context.close()


def test_an_operator_signs_in_and_can_push_upload_and_save(password_app, browser, workspace):
    url, bind = password_app
    context = browser.new_context(viewport={"width": 1400, "height": 1900})
    tab = visit(context, url + "/Export", "Export", "Saved scans")
    assert buttons(tab, WRITES[1]) == {WRITES[1]: 0}
    assert "Viewer (read-only) · operators sign in" in \
        tab.locator('[data-testid="stSidebar"]').inner_text()
    box = tab.get_by_label("Operator password")
    box.fill("not the password")
    box.press("Enter")
    settled(tab, "That is not the operator password.")
    assert buttons(tab, WRITES[1]) == {WRITES[1]: 0}
    box.fill(PASSWORD)
    box.press("Enter")
    settled(tab, "Operator · signed in with the operator password")
    shot(tab, "roles-operator-export")
    assert tab.locator('[data-testid="stFileUploader"]').count() >= 1
    tab.get_by_role("button", name=WRITES[1]).click()
    settled(tab, "Saved to")
    assert len(list((workspace / "scans").glob("*/*/manifest.json"))) == 1
    # The session stays signed in through the menu.
    tab.locator('[data-testid="stPageLink"]').filter(has_text="Review").click()
    tab.get_by_role("heading", name="Review").first.wait_for(timeout=90_000)
    # The button closes the page: waited for as content, since under load the run may not
    # yet show as running when the page's first texts are there.
    settled(tab, "Annotators and routing", "Push batch")
    assert buttons(tab, "Push batch") == {"Push batch": 1}
    shot(tab, "roles-operator-review")
    tab.locator('[data-testid="stPageLink"]').filter(has_text="Annotations").click()
    tab.get_by_role("heading", name="Annotations").first.wait_for(timeout=90_000)
    settled(tab, "Adjudication queue", WRITES[2], WRITES[3])
    assert buttons(tab, WRITES[2], WRITES[3]) == {WRITES[2]: 1, WRITES[3]: 1}
    tab.get_by_role("button", name="Sign out").click()
    settled(tab, "Viewer (read-only) · operators sign in")
    assert buttons(tab, *WRITES) == dict.fromkeys(WRITES, 0)
    shot(tab, "roles-operator-signed-out")
    context.close()
