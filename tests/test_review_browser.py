"""The review loop as its people use it, in a real browser (Debian chromium + Playwright)
against real Label Studio servers and the workbench's own pages.

- Each annotator logs in to Label Studio with exactly the email and password the push gave
  the manager, opens their own queue ("Label All Tasks"), labels and submits; the pull
  credits that person. The Arabic task is laid out right to left (screenshot).
- With one server per side, annotator 1 cannot see annotator 2's labels: their login does
  not exist on side 2's server, and side 1's server holds no side-2 project.
- The Review page shows a submission in its live progress within 10 s.
- On one shared server, annotator 1 opens annotator 2's queue and submits a task: status
  names the intrusion and counts none of it for annotator 2; `review release` logs the
  intruder's annotation and annotator 2's queue offers every task again.

Screenshots go to artifacts/screenshots/labelstudio-*.png and review-progress.png.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.compute as pc
import pytest
from app_server import running_app
from test_browser import CHROMIUM, chromium

from audit.engine import scan
from audit.errors import InputError
from audit.review import maple, sampling
from audit.review.kinds.realism import realism_batch
from audit.review.kinds.translation import translation_batch
from audit.review.labelstudio import client as ls
from audit.review.pull import pull
from audit.review.push import push, push_adjudication
from audit.review.routing import ROLES
from audit.review.sites import Sites
from audit.review.status import status as batch_status
from audit.review.workspace import Workspace
from audit.settings import current, default_token
from devkit.labelstudio_local import LocalServer, free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
RUN = uuid.uuid4().hex[:6]
ANA, BO, CY = (f"ana-{RUN}@example.org", f"bo-{RUN}@example.org", f"cy-{RUN}@example.org")

playwright = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)
if importlib.util.find_spec("label_studio") is None:
    pytest.skip("label-studio is not installed", allow_module_level=True)


def local_server(name: str) -> LocalServer:
    return LocalServer(current().labelstudio_data / f"pytest-{name}-{uuid.uuid4().hex[:8]}",
                       free_port()).start()


def stop(local: LocalServer) -> None:
    local.stop()
    shutil.rmtree(local.data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    """The session's Label Studio (LABEL_STUDIO_URL), else one of this module's own."""
    local = None if os.environ.get("LABEL_STUDIO_URL") else local_server("browser")
    try:
        with ls.connect(local.url if local else None) as connected:
            yield connected
    finally:
        if local is not None:
            stop(local)


@pytest.fixture(scope="module")
def browser():
    with chromium() as engine:
        yield engine


def shot(tab, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def log_in(browser, url: str, email: str, password: str):
    """A fresh browser (no cookies) logged in to Label Studio as this person."""
    context = browser.new_context(viewport={"width": 1400, "height": 1700})
    tab = context.new_page()
    tab.goto(f"{url}/user/login/")
    tab.fill("#email", email)
    tab.fill("#password", password)
    tab.click("button[type=submit]")
    tab.wait_for_function("() => !location.pathname.startsWith('/user/login')",
                          timeout=60_000)
    return tab


def open_queue(tab, url: str, project_id: int) -> None:
    """The project's data manager, then "Label All Tasks": the annotator's queue."""
    tab.goto(f"{url}/projects/{project_id}/data")
    tab.get_by_role("button", name="Label All Tasks").click()
    tab.get_by_role("button", name="Submit current annotation").wait_for(timeout=60_000)


def label_translation(tab, stars: int, answers: tuple[str, str, str, str]) -> None:
    """Rate adequacy and fluency, answer the four yes/no questions in order, submit."""
    for rating in range(2):
        tab.locator("ul.ant-rate").nth(rating).locator("li.ant-rate-star").nth(
            stars - 1).click()
    groups = tab.locator(".lsf-choices")
    for k, answer in enumerate(answers):
        groups.nth(k).locator(f"label:has(input[name='{answer}'])").click()
    submit(tab)


def submit(tab) -> None:
    """Submit and wait for the server to store the annotation."""
    with tab.expect_response(lambda r: r.request.method == "POST" and
                             "/annotations" in r.url, timeout=60_000) as answer:
        tab.get_by_role("button", name="Submit current annotation").click()
    assert answer.value.status == 201, answer.value.text()


# ------------------------------------------------------------------------- accounts + RTL

@pytest.fixture(scope="module")
def arabic(server, tmp_path_factory):
    """Two Arabic units pushed to ana and bo, who get new accounts."""
    result = scan.scan_release()
    units = sampling.build_units(result)
    sample = sampling.sample(units, by=["unit"], seed=11,
                             per_stratum={"paragraph": 1, "question": 1},
                             where={"language": "ar"})
    batch = translation_batch(sample, result.release, batch_id=f"ar-{RUN}")
    work = tmp_path_factory.mktemp("reviews")
    report = push(server, batch, [f"{ANA}:ar", f"{BO}:ar,fa"], workspace=work)
    return batch, work, report


def test_each_annotator_logs_in_with_what_the_push_gave_and_is_credited(server, browser,
                                                                         arabic):
    batch, work, report = arabic
    logins = {n.email: n.password for n in report.credentials}
    assert sorted(logins) == sorted([ANA, BO])
    projects = {p.annotator: p for p in report.projects}
    for email, stars in ((ANA, 4), (BO, 2)):
        tab = log_in(browser, server.url, email, logins[email])
        open_queue(tab, server.url, projects[email].project_id)
        if email == ANA:
            _check_right_to_left(tab)
        label_translation(tab, stars, ("yes", "yes", "no", "yes"))
        tab.context.close()
    pulled = pull(server, batch.batch_id, workspace=work)
    assert pulled.rejected == []
    table = Workspace(batch.batch_id, work).annotations()
    for email, stars in ((ANA, "4"), (BO, "2")):
        mine = table.filter(pc.equal(table["annotator"], email))
        assert mine.num_rows == 8                # one annotation, eight controls
        values = dict(zip(mine["criterion"].to_pylist(), mine["value"].to_pylist()))
        assert (values["adequacy"], values["fluency"], values["alignment_preserved"],
                values["assigned_language"]) == (stars, stars, "no", "yes")
    by_key = {p.key: p for p in pulled.projects}
    assert by_key["ar · annotator 1"].accepted == by_key["ar · annotator 2"].accepted == 1


def _check_right_to_left(tab) -> None:
    """The translation column reads right to left: markers [n] at the right edge."""
    text = tab.locator(".xr-target").last.locator("text=[0]").first
    direction = text.evaluate("e => getComputedStyle(e).direction")
    assert direction == "rtl"
    box = text.bounding_box()
    column = tab.locator(".xr-target").last.bounding_box()
    marker = tab.evaluate("""() => {
        const node = [...document.querySelectorAll('.xr-target *')].find(
            e => e.childElementCount === 0 && e.textContent.includes('[0]'));
        const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
        const text = walker.nextNode();
        const at = text.textContent.indexOf('[0]');
        const range = document.createRange();
        range.setStart(text, at); range.setEnd(text, at + 3);
        const r = range.getBoundingClientRect();
        return {left: r.left, right: r.right};
    }""")
    # the marker sits at the right end of its line, inside the column's right half
    assert marker["left"] > column["x"] + column["width"] / 2, (marker, column, box)
    shot(tab, "labelstudio-rtl-task")


# ------------------------------------------------------------------------- blinding

@pytest.fixture(scope="module")
def sides(server):
    """Side 2 and the adjudicator on servers of their own (side 1 is the session's)."""
    second, third = local_server("side2"), local_server("adjudication")
    try:
        with ls.connect(second.url) as s2, ls.connect(third.url) as s3:
            yield Sites({"annotator 1": server, "annotator 2": s2, "adjudication": s3})
    finally:
        stop(second)
        stop(third)


def choose(tab, letter: str) -> None:
    tab.locator(f"label:has(input[name='{letter}'])").click()
    submit(tab)


def test_with_a_server_per_side_annotator_1_cannot_see_annotator_2s_labels(
        browser, sides, tmp_path):
    # People of their own: the accounts of the other tests live on side 1's server.
    ANA, BO = f"ana-side1-{RUN}@example.org", f"bo-side2-{RUN}@example.org"
    items = maple.assign_order(maple.read_query_pairs(maple.DEMO_QUERY_PAIRS)[:2], seed=3)
    batch = realism_batch(items, batch_id=f"blind-{RUN}")
    report = push(sides, batch, {"annotator 1": [ANA], "annotator 2": [BO]},
                  workspace=tmp_path)
    assert report.blinding == "enforced"
    one, two, referee = (sides.role(r) for r in ROLES)
    assert one.find_user(ANA) and two.find_user(ANA) is None and referee.find_user(ANA) is None
    assert two.find_user(BO) and one.find_user(BO) is None
    logins = {n.email: n.password for n in report.credentials}
    projects = {p.role: p for p in report.projects}
    assert {p.server for p in report.projects} == {one.url, two.url}
    # Annotator 2 labels everything "B" on side 2.
    with ls.sign_in(two.url, BO, logins[BO]) as bo:
        for task in two.list_tasks(projects["annotator 2"].project_id):
            bo.client.annotations.create(id=task.id, result=[{
                "from_name": "preference", "to_name": "query_a", "type": "choices",
                "value": {"choices": ["B"]}}])
    # Annotator 1, in the browser, sees only side 1: their project, no other labels.
    tab = log_in(browser, one.url, ANA, logins[ANA])
    tab.goto(f"{one.url}/projects/")
    tab.get_by_text(projects["annotator 1"].title).wait_for(timeout=60_000)
    listed = tab.inner_text("body")
    assert projects["annotator 2"].title not in listed
    shot(tab, "labelstudio-blind-side1-projects")
    open_queue(tab, one.url, projects["annotator 1"].project_id)
    body = tab.inner_text("body")
    assert BO not in body
    choose(tab, "A")
    # Side 2's server does not know annotator 1: the login is refused, the project closed.
    tab.goto(f"{two.url}/projects/{projects['annotator 2'].project_id}/data")
    tab.wait_for_url("**/user/login/**", timeout=60_000)
    tab.fill("#email", ANA)
    tab.fill("#password", logins[ANA])
    tab.click("button[type=submit]")
    tab.get_by_text("The email and password you entered don't match.").wait_for(
        timeout=60_000)
    shot(tab, "labelstudio-blind-side2-refused")
    tab.context.close()
    pulled = pull(sides, batch.batch_id, workspace=tmp_path)
    assert pulled.rejected == [] and {p.accepted for p in pulled.projects} == {1, 2}
    # The adjudicator lives on the third server; an annotator cannot be one.
    with pytest.raises(InputError, match="also annotate"):
        push_adjudication(sides, batch.batch_id, [ANA], workspace=tmp_path)
    adjudication = push_adjudication(sides, batch.batch_id, [CY], workspace=tmp_path)
    assert [p.server for p in adjudication.projects] == [referee.url]
    assert referee.find_user(CY) and one.find_user(CY) is None and two.find_user(CY) is None


# ------------------------------------------------------------------------- live progress

@pytest.fixture(scope="module")
def workbench(server, arabic):
    """The Streamlit app on the batch's workspace and the session's Label Studio."""
    _, work, _ = arabic
    with running_app(AUDIT_REVIEWS=str(work), LABEL_STUDIO_URL=server.url,
                     LABEL_STUDIO_API_KEY=default_token() or "") as url:
        yield url


def test_review_page_shows_a_submission_within_10_s(server, browser, arabic, workbench):
    batch, work, report = arabic
    before = batch_status(server, batch.batch_id, workspace=work)
    done = sum(p.done for p in before.projects)
    total = sum(p.tasks for p in before.projects)
    tab = browser.new_page(viewport={"width": 1400, "height": 2000})
    tab.goto(f"{workbench}/Review")
    tab.get_by_text(f"{done} of {total} tasks done").wait_for(timeout=120_000)
    projects = {p.annotator: p for p in report.projects}
    logins = {n.email: n.password for n in report.credentials}
    with ls.sign_in(server.url, BO, logins[BO]) as bo:
        waiting = [t for t in server.list_tasks(projects[BO].project_id)
                   if not _annotated(server, projects[BO].project_id, t.id)]
        submitted = time.monotonic()
        bo.client.annotations.create(id=waiting[0].id, result=[{
            "from_name": "adequacy", "to_name": "translation", "type": "rating",
            "value": {"rating": 5}}])
    tab.get_by_text(f"{done + 1} of {total} tasks done").wait_for(timeout=10_000)
    assert time.monotonic() - submitted < 10
    shot(tab, "review-progress")
    tab.close()


def _annotated(server: ls.Server, project_id: int, task_id: int) -> bool:
    return any(t["id"] == task_id for t in server.export_annotations(project_id))


# ------------------------------------------------------------------------- intrusions

def _next_answer(response) -> bool:
    """The labeling stream's request for its next task (the data manager's hidden
    next_task action, which locks the task it answers for the user)."""
    return "/api/dm/actions" in response.url and "id=next_task" in response.url


def queue_first(tab, url: str, project_id: int) -> int:
    """Open the project's queue ("Label All Tasks"); the id of the task it offers."""
    tab.goto(f"{url}/projects/{project_id}/data")
    with tab.expect_response(_next_answer, timeout=60_000) as answer:
        tab.get_by_role("button", name="Label All Tasks").click()
    tab.get_by_role("button", name="Submit current annotation").wait_for(timeout=60_000)
    return answer.value.json()["id"]


def choose_then_next(tab, letter: str) -> int | None:
    """Choose, submit, and the id of the task the queue offers next (None: it is empty,
    which is when Label Studio's /next answers 404)."""
    with tab.expect_response(_next_answer, timeout=60_000) as answer:
        choose(tab, letter)
    if answer.value.status != 200:
        return None
    offered = answer.value.json()["id"]
    for option in ("A", "Tie", "B"):        # the next task is on screen, nothing chosen
        playwright.expect(tab.locator(f"input[name='{option}']")).not_to_be_checked(
            timeout=60_000)
    return offered


def test_a_visit_to_someone_elses_queue_is_named_and_given_back(server, browser, arabic,
                                                                workbench):
    """Annotator 1 opens annotator 2's queue and submits one task: Label Studio counts it
    done for the project (maximum_annotations = 1) and locks the next task for annotator 1
    (TASK_LOCK_TTL, 24 h). Status counts 0 of 4 for annotator 2 with one intrusion by
    annotator 1 (the Review page too); the release logs the intruder's annotation and
    gives annotator 2 all 4."""
    work = arabic[1]                           # the workspace the Review page shows
    one, two = f"ann1-q-{RUN}@example.org", f"ann2-q-{RUN}@example.org"
    items = maple.assign_order(maple.read_query_pairs(maple.DEMO_QUERY_PAIRS)[:4], seed=5)
    batch = realism_batch(items, batch_id=f"queue-{RUN}")
    report = push(server, batch, [one, two], workspace=work)
    projects = {p.role: p for p in report.projects}
    theirs = projects["annotator 2"]
    intruder, owner = projects["annotator 1"].annotator, theirs.annotator
    assert {intruder, owner} == {one, two} and theirs.n_items == 4
    logins = {n.email: n.password for n in report.credentials}
    tab = log_in(browser, server.url, intruder, logins[intruder])
    taken = queue_first(tab, server.url, theirs.project_id)
    locked = choose_then_next(tab, "A")               # locked for the intruder now
    tab.context.close()
    assert locked not in (None, taken)
    with ls.sign_in(server.url, owner, logins[owner]) as me:   # what the bug looked like
        offered = _next_for(me, theirs.project_id)
    assert offered not in (taken, locked)

    status = batch_status(server, batch.batch_id, workspace=work)
    assert status.rows() == [
        {"group": "", "role": "annotator 1", "annotator": intruder, "tasks": 4, "done": 0,
         "skipped": 0, "remaining": 4, "missing": False},
        {"group": "", "role": "annotator 2", "annotator": owner, "tasks": 4, "done": 0,
         "skipped": 0, "remaining": 4, "missing": False}]
    assert status.intrusions() == [{"project": "annotator 2", "annotator": owner,
                                    "intruder": intruder, "annotations": 1,
                                    "on_behalf_of": None}]
    printed = _cli(server, work, "status", batch.batch_id, "--json")
    assert json.loads(printed)["intrusions"] == status.intrusions()
    printed = _cli(server, work, "status", batch.batch_id)
    assert f"annotator 2  {owner}  {intruder}  1" in printed
    assert f"python -m audit review release {batch.batch_id}" in printed
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.goto(f"{workbench}/Review")
    page.locator('[data-testid="stSelectbox"]').filter(
        has=page.get_by_text("Batch", exact=True)).click()
    page.locator("[role=option]").filter(has_text=batch.batch_id).click()
    page.get_by_text("0 of 8 tasks done").wait_for(timeout=120_000)
    page.get_by_text(f"python -m audit review release {batch.batch_id}").wait_for(
        timeout=60_000)
    shot(page, "review-progress-intrusion")
    page.close()

    printed = _cli(server, work, "release", batch.batch_id)
    assert f"annotator 2: {intruder} 1 annotation; 1 refusal logged, 0 annotations " \
           f"deleted, 4 tasks re-imported" in printed
    (refusal,) = Workspace(batch.batch_id, work).refusals()
    assert (refusal["kind"], refusal["completed_by"], refusal["updated_by"],
            refusal["project"], refusal["task_id"], refusal["result"]) == (
        "annotation", intruder, intruder, theirs.title, taken, {"preference": ["A"]})
    held = server.list_tasks(theirs.project_id)       # the same items, as new tasks (on
    assert sorted(t.item_id for t in held) == sorted(batch.item_ids)  # SQLite an id may be
    assert server.export_annotations(theirs.project_id) == []         # reused)

    tab = log_in(browser, server.url, owner, logins[owner])
    offered = [queue_first(tab, server.url, theirs.project_id)]
    while (following := choose_then_next(tab, "B")) is not None:
        offered.append(following)
    tab.context.close()
    assert sorted(offered) == sorted(t.id for t in held)      # all 4, each once
    after = batch_status(server, batch.batch_id, workspace=work)
    assert after.rows()[1] == {
        "group": "", "role": "annotator 2", "annotator": owner, "tasks": 4, "done": 4,
        "skipped": 0, "remaining": 0, "missing": False}
    assert after.intrusions() == []
    pulled = pull(server, batch.batch_id, workspace=work)
    assert [(p.key, p.accepted) for p in pulled.projects] == [("annotator 1", 0),
                                                             ("annotator 2", 4)]
    assert pulled.rejected == [] and len(Workspace(batch.batch_id, work).refusals()) == 1


def _next_for(me: ls.Server, project_id: int) -> int | None:
    """The task Label Studio's queue offers this user next (it locks it for them; the SDK
    has no call for it)."""
    import httpx
    answer = httpx.get(f"{me.url}/api/projects/{project_id}/next",
                       headers={"Authorization": f"Token {me._token}"}, timeout=60)
    return answer.json()["id"] if answer.status_code == 200 else None


def _cli(server: ls.Server, work: Path, *args: str) -> str:
    """`python -m audit review --workspace WORK ARGS` against this server; its stdout."""
    env = dict(os.environ, LABEL_STUDIO_URL=server.url,
               LABEL_STUDIO_API_KEY=default_token() or "")
    done = subprocess.run([sys.executable, "-m", "audit", "review", "--workspace", str(work),
                           *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout
