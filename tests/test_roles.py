"""Viewer and operator (workbench/auth.py): who may write, decided from Streamlit's secrets
and the address the app is bound to, and every write action of every page behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit.config as st_config
from streamlit.testing.v1 import AppTest

from workbench import auth

# Each test runs pages in Streamlit's AppTest: seconds apiece.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple"
NONE = auth.Settings()
WITH_PASSWORD = auth.Settings(password=PASSWORD)
OIDC = auth.settings({"auth": {"redirect_uri": "http://x/oauth2callback"},
                      "workbench": {"operators": ["Ana@Example.org"]}})


@pytest.mark.parametrize(("config", "address", "headers", "email", "typed", "expected"), [
    (NONE, "127.0.0.1", {}, None, False, "operator"),
    (NONE, "::1", {}, None, False, "operator"),
    (NONE, "[::1]", {}, None, False, "operator"),
    (NONE, "localhost", {}, None, False, "operator"),
    (NONE, "127.0.0.2", {}, None, False, "operator"),
    (NONE, None, {}, None, False, "viewer"),                 # every interface
    (NONE, "", {}, None, False, "viewer"),
    (NONE, "0.0.0.0", {}, None, False, "viewer"),
    (NONE, "192.0.2.2", {}, None, False, "viewer"),
    (NONE, "workbench.example.org", {}, None, False, "viewer"),
    (NONE, "unix:///run/workbench.sock", {}, None, False, "viewer"),
    (NONE, "127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, None, False, "viewer"),
    (NONE, "127.0.0.1", {"forwarded": "for=203.0.113.9"}, None, False, "viewer"),
    (WITH_PASSWORD, "127.0.0.1", {}, None, False, "viewer"),  # configured: sign in first
    (WITH_PASSWORD, "0.0.0.0", {}, None, True, "operator"),
    (OIDC, "0.0.0.0", {}, "ana@example.org", False, "operator"),
    (OIDC, "127.0.0.1", {}, "bo@example.org", False, "viewer"),
    (OIDC, "127.0.0.1", {}, None, False, "viewer"),
    (auth.settings({"workbench": {"operator_password": "short"}}), "127.0.0.1", {}, None,
     True, "viewer"),
    (auth.settings({"workbench": "oops"}), "127.0.0.1", {}, None, False, "viewer"),
])
def test_who_is_an_operator(config, address, headers, email, typed, expected):
    role = auth.decide(config, address=address, headers=headers, email=email,
                       typed_password=typed)
    assert role.kind == expected, role
    if expected == "viewer":
        assert role.how                       # a viewer is told how one becomes an operator


def test_what_a_viewer_is_told():
    served = auth.decide(NONE, address="0.0.0.0", headers={})
    assert served.plain(served.why) == "served on 0.0.0.0 with no operator sign-in configured"
    assert "operator_password" in served.how and "127.0.0.1" in served.how
    outsider = auth.decide(OIDC, address="0.0.0.0", headers={}, email="bo@example.org")
    assert outsider.plain(outsider.how) == "bo@example.org is not among the operators"
    weak = auth.settings({"workbench": {"operator_password": "short"}})
    assert weak.password is None and weak.problems == (
        "[workbench] operator_password is shorter than 12 characters: not used",)
    assert "operators is not a list" in auth.settings(
        {"workbench": {"operators": "ana@example.org"}}).problems[0]
    assert PASSWORD not in repr(WITH_PASSWORD)


def test_wrong_passwords_lock_the_form_for_a_minute():
    now = [1000.0]
    attempts = auth.Attempts(clock=lambda: now[0])
    for _ in range(auth.TRIES - 1):
        assert not attempts.check(PASSWORD, "guess")
    assert attempts.check(PASSWORD, PASSWORD) and not attempts.locked_for()
    assert not attempts.check(PASSWORD, "guess")
    assert attempts.locked_for() == auth.WINDOW
    assert not attempts.check(PASSWORD, PASSWORD)        # locked: even the right one waits
    now[0] += auth.WINDOW
    assert attempts.locked_for() == 0 and attempts.check(PASSWORD, PASSWORD)


# ------------------------------------------------------------------------- pages

@pytest.fixture
def bound(monkeypatch):
    """Run the pages as if the app were bound to an address (restored afterwards)."""
    saved = st_config.get_option("server.address")

    def bind(address):
        st_config.set_option("server.address", address)
    yield bind
    st_config.set_option("server.address", saved)


def plant_batch(workspace: Path) -> Path:
    """A review workspace holding one batch with pulled, hand-planted annotations (three
    open disagreements), so Pull and adjudication would show."""
    import pyarrow.parquet as pq
    from test_agreement import annotations, planted_review
    batch = workspace / "demo-batch"
    batch.mkdir(parents=True)
    (batch / "ledger.json").write_text(json.dumps(
        {"batch_id": "demo-batch", "config": "translation_review", "kind": "translation",
         "pairs": {}, "projects": {}, "accounts": {}}))
    pq.write_table(annotations(planted_review()), batch / "annotations.parquet")
    return workspace


@pytest.fixture
def workspace(tmp_path, settings_env):
    settings_env(AUDIT_REVIEWS=plant_batch(tmp_path))
    return tmp_path


WRITES = {"7_Review": ["Push batch"], "8_Annotations": [
    "Pull annotations from Label Studio", "Push the open items to the adjudicators"],
    "6_Export": ["Save this scan (findings, status, summary, manifest)"],
    "12_Repair": ["Apply"]}
NOTES = {"7_Review": ["Pushing a batch (and creating Label Studio accounts)"],
         "8_Annotations": ["Pulling annotations from Label Studio",
                           "Pushing the open items to adjudicators (and creating their "
                           "accounts)"],
         "6_Export": ["Saving a scan"], "12_Repair": ["Applying corrections"]}


def run(page: str, **setup) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for name, value in setup.items():
        setattr(at, name, value)
    if page != "app":
        at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def writes(at: AppTest) -> set[str]:
    shown = {b.label for b in at.button}
    return {label for labels in WRITES.values() for label in labels if label in shown}


@pytest.mark.parametrize("page", ["app", "6_Export", "7_Review", "8_Annotations",
                                  "9_Evaluate", "10_Judge", "12_Repair"])
def test_a_viewer_sees_no_write_action_and_is_told_why(bound, workspace, page):
    bound("0.0.0.0")
    at = run(page)
    assert writes(at) == set()
    assert at.get("file_uploader") == []
    notes = [i.value for i in at.info] + [c.value for c in at.caption]
    for action in NOTES.get(page, []):
        assert any(f"{action} needs an operator: this session is read-only (served on "
                   "` 0.0.0.0 ` with no operator sign-in configured)" in n for n in notes), \
            (action, notes)
    assert "🔒 Uploading a file needs an operator: this session is read-only." in notes
    assert "**Viewer** (read-only) · served on ` 0.0.0.0 `" in at.sidebar.caption[0].value
    with pytest.raises(auth.ReadOnly):
        from workbench.shell import save_upload
        save_upload(object(), (".parquet",))


@pytest.mark.parametrize("page", ["6_Export", "7_Review", "8_Annotations", "12_Repair"])
def test_an_operator_on_loopback_sees_every_write_action(bound, workspace, page):
    bound("127.0.0.1")
    at = run(page)
    assert writes(at) == set(WRITES[page])
    assert len(at.get("file_uploader")) >= 1
    assert at.sidebar.caption[0].value.startswith("**Operator** · bound to ` 127.0.0.1 `")


def test_the_operator_password_signs_a_session_in_and_out(bound, workspace):
    bound("0.0.0.0")
    at = run("6_Export", secrets={"workbench": {"operator_password": PASSWORD}})
    assert writes(at) == set()
    at.text_input(key="workbench_password").input("not it at all").run()
    assert writes(at) == set()
    assert "That is not the operator password." in [c.value for c in at.sidebar.caption]
    at.text_input(key="workbench_password").input(PASSWORD).run()
    assert writes(at) == set(WRITES["6_Export"])
    assert at.sidebar.caption[0].value == \
        "**Operator** · signed in with the operator password"
    at.switch_page("pages/8_Annotations.py").run()    # the session stays signed in
    assert writes(at) == set(WRITES["8_Annotations"])
    next(b for b in at.button if b.label == "Sign out").click().run()
    assert writes(at) == set()


def test_an_oidc_login_is_an_operator_only_when_listed(bound, workspace):
    bound("0.0.0.0")
    secrets = {"auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                        "cookie_secret": "x" * 32, "client_id": "c", "client_secret": "s",
                        "server_metadata_url": "https://id.example.org/.well-known/x"},
               "workbench": {"operators": ["ana@example.org"]}}
    ana = run("6_Export", secrets=secrets, user={"is_logged_in": True,
                                                  "email": "ana@example.org"})
    assert writes(ana) == set(WRITES["6_Export"])
    assert [b.label for b in ana.button if b.label == "Log out"] == ["Log out"]
    bo = run("6_Export", secrets=secrets, user={"is_logged_in": True,
                                                "email": "bo@example.org"})
    assert writes(bo) == set()
    assert any("` bo@example.org ` is not among the operators" in i.value for i in bo.info)
    nobody = run("6_Export", secrets=secrets, user={"is_logged_in": False})
    assert writes(nobody) == set() and "Log in" in {b.label for b in nobody.button}
