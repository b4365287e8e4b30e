"""The review loop against a real Label Studio (audit/review/labelstudio.py, push.py, pull.py,
status.py).

The session server is LABEL_STUDIO_URL (token from LABEL_STUDIO_API_KEY or .labelstudio.env)
when set; otherwise scripts/labelstudio.sh starts one on a free port and a fresh data dir
under data/labelstudio/ and stops it at the end. Every run uses e-mail addresses and batch
ids of its own. Annotators are real accounts: the push signs them up (or finds them), and
each annotates through its own login and API token, exactly as a person in the labeling
interface does (completed_by and updated_by are then that person). The admin acts only as
the admin (an intruder). The crash test and the PostgreSQL test start servers of their own.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from audit.engine import scan
from audit.errors import InputError
from audit.review import agreement, maple, sampling
from audit.review.batches import ReviewBatch
from audit.review.intrusions import release
from audit.review.kinds.realism import realism_batch, realism_table
from audit.review.kinds.relevance import relevance_batch
from audit.review.kinds.translation import translation_batch
from audit.review.labelstudio import client as ls
from audit.review.labelstudio import forms
from audit.review.labelstudio.errors import ServerError
from audit.review.pull import PullReport, pull
from audit.review.push import ProjectPush, PushReport, push, push_adjudication, queue_with_skips
from audit.review.schemas import ANNOTATION_SCHEMA
from audit.review.status import status as batch_status
from audit.review.workspace import Workspace, batch_dir, project_title
from audit.settings import current
from devkit.labelstudio_local import LocalServer, free_port

pytestmark = pytest.mark.labelstudio

INSTALLED = importlib.util.find_spec("label_studio") is not None
EXTERNAL = bool(os.environ.get("LABEL_STUDIO_URL"))
RUN = uuid.uuid4().hex[:6]
ANN1, ANN2, ADJ, INTRUDER = (f"ann1-{RUN}@example.org", f"ann2-{RUN}@example.org",
                             f"adjudicator-{RUN}@example.org", f"intruder-{RUN}@example.org")
SEED = 20261130


def _need_local_server() -> None:
    if not INSTALLED:
        pytest.skip("label-studio is not installed (pip install -r requirements.txt)")


# ------------------------------------------------------------------------- servers

@dataclass
class Session:
    server: ls.Server
    suffix: str              # batch id suffix of this run
    created: list[int]       # project ids to delete at the end (outside server)
    people: dict             # email -> a Server signed in as that person


@pytest.fixture(scope="session")
def session():
    local = None
    if not EXTERNAL:
        _need_local_server()
        local = LocalServer(current().labelstudio_data / f"pytest-{uuid.uuid4().hex[:8]}",
                            free_port()).start()
    try:
        server = ls.connect(local.url if local else None)
        state = Session(server, f"-{RUN}", [], {})
        yield state
        for person in state.people.values():
            person.close()
        if EXTERNAL:
            for project_id in state.created:
                if server.get_project(project_id) is not None:
                    server.delete_project(project_id)
        server.close()
    finally:
        if local is not None:
            local.stop()
            shutil.rmtree(local.data_dir, ignore_errors=True)


@pytest.fixture
def own_server(request):
    """A server of this test's own on a fresh data dir (it may be killed)."""
    _need_local_server()
    postgres = getattr(request, "param", False)
    local = LocalServer(current().labelstudio_data / f"pytest-own-{uuid.uuid4().hex[:8]}",
                        free_port(), postgres=postgres)
    try:
        yield local.start()
    finally:
        local.stop()
        shutil.rmtree(local.data_dir, ignore_errors=True)


def _track(session: Session, report: PushReport) -> None:
    session.created += [p.project_id for p in report.projects]


def sign_in_all(session: Session, report: PushReport) -> None:
    """Log in as every account the push created, with the password it gave."""
    for note in report.credentials:
        session.people[note.email] = ls.sign_in(note.server, note.email, note.password)


def person(session: Session, email: str) -> ls.Server:
    """A signed-in person: one the pushes signed up, or an account made for the occasion."""
    if email not in session.people:
        account = session.server.ensure_account(email)
        assert account.created, f"{email} exists but no push of this run made it"
        session.people[email] = ls.sign_in(session.server.url, email, account.password)
    return session.people[email]


def annotate(me: ls.Server, task_id: int, result: list[dict], *, skip: bool = False) -> int:
    """Submit as `me` through my own token (what the labeling interface does)."""
    created = me.client.annotations.create(id=task_id, result=result, was_cancelled=skip,
                                           request_options={"max_retries": 0})
    return created.id


def tasks_of(server: ls.Server, project_id: int) -> dict[str, int]:
    return {t.item_id: t.id for t in server.list_tasks(project_id)}


def projects_by_role(report: PushReport) -> dict[str, ProjectPush]:
    return {p.role: p for p in report.projects}


# ------------------------------------------------------------------------- results

def rating(name: str, value: int) -> dict:
    return {"from_name": name, "to_name": "translation", "type": "rating",
            "value": {"rating": value}}


def choice(name: str, value: str, to_name: str = "translation") -> dict:
    return {"from_name": name, "to_name": to_name, "type": "choices",
            "value": {"choices": [value]}}


TRANSLATION_CRITERIA = ("adequacy", "fluency", "answer_preserved", "entities_preserved",
                        "alignment_preserved", "assigned_language", "consequence", "comment")


def translation_result(values: dict) -> list[dict]:
    result = []
    for name, value in values.items():
        if value is None:
            continue
        if name in ("adequacy", "fluency"):
            result.append(rating(name, int(value)))
        elif name == "comment":
            result.append({"from_name": "comment", "to_name": "translation",
                           "type": "textarea", "value": {"text": [value]}})
        else:
            result.append(choice(name, value))
    return result


BASE = {"adequacy": "4", "fluency": "4", "answer_preserved": "yes",
        "entities_preserved": "yes", "alignment_preserved": "yes", "assigned_language": "yes",
        "consequence": "cosmetic", "comment": None}
# Planted labels for 8 items. answer_preserved: annotator 1 / annotator 2 differ on items 2
# and 4; adequacy differs on item 5; annotator 2 leaves consequence unanswered on item 7.
ANSWER_1 = ("yes", "yes", "yes", "no", "no", "yes", "yes", "no")
ANSWER_2 = ("yes", "yes", "no", "no", "yes", "yes", "yes", "no")
# κ by hand: observed 6/8; both say "yes" 5/8 of the time, so expected
# (5/8)² + (3/8)² = 34/64 and κ = (48/64 − 34/64) / (1 − 34/64) = 14/30 = 7/15.
KAPPA_ANSWER = 7 / 15
# Nominal α by hand: 16 pairable values, yes 10 / no 6; coincidences o[y,y] = 8, o[n,n] = 4,
# o[y,n] = o[n,y] = 2; α = 1 − (16 − 1)·4 / (2·10·6) = 1 − 60/120 = 1/2.
ALPHA_ANSWER = 1 / 2
DISAGREEING = {2, 4, 5, 7}


def planted(slot: int, index: int) -> dict:
    values = dict(BASE, answer_preserved=(ANSWER_1 if slot == 1 else ANSWER_2)[index])
    if slot == 2 and index == 5:
        values["adequacy"] = "5"
    if slot == 2 and index == 7:
        values["consequence"] = None
    if slot == 1 and index == 0:
        values["comment"] = "reads well"
    return values


def german_batch(session: Session, per_unit: dict, seed: int = SEED, tag: str = ""
                 ) -> ReviewBatch:
    """German paragraph / question / answer units: one routing group, "de"."""
    result = scan.scan_release()
    units = sampling.build_units(result)
    sample = sampling.sample(units, by=["unit"], seed=seed, per_stratum=per_unit,
                             where={"language": "de"},
                             created_at="2026-11-30T00:00:00+00:00")
    return translation_batch(sample, result.release,
                             batch_id=sample.batch_id + tag + session.suffix)


# ------------------------------------------------------------------------- translation flow

@dataclass
class TranslationRun:
    batch: ReviewBatch
    workspace: Path
    push: PushReport
    pull: PullReport
    table: pa.Table
    expected: list[tuple]
    intruder_annotations: set[int]
    admin: str


@pytest.fixture(scope="module")
def translation(session, tmp_path_factory):
    server = session.server
    batch = german_batch(session, {"paragraph": 4, "question": 2, "answer": 2})
    assert len(batch.tasks) == 8 and set(batch.groups) == {"de"}
    work = tmp_path_factory.mktemp("reviews")
    progress = []
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de,fr"], workspace=work,
                  chunk_size=3, progress=lambda *event: progress.append(event))
    _track(session, report)
    sign_in_all(session, report)
    assert [p.sent for p in report.projects] == [8, 8]
    assert [e[1:] for e in progress] == [(0, 8), (3, 8), (6, 8), (8, 8)] * 2
    expected = []
    for slot, email, project in zip((1, 2), (ANN1, ANN2), report.projects):
        tasks = tasks_of(server, project.project_id)
        for index, item_id in enumerate(batch.item_ids):
            values = planted(slot, index)
            annotate(session.people[email], tasks[item_id], translation_result(values))
            expected += [(item_id, email, "initial", c, values[c])
                         for c in TRANSLATION_CRITERIA]
    # Annotations the assignment forbids: the intruder in annotator 1's project, the
    # admin (acting as itself) in annotator 2's.
    first = tasks_of(server, report.projects[0].project_id)
    second = tasks_of(server, report.projects[1].project_id)
    intruders = {
        annotate(person(session, INTRUDER), first[batch.item_ids[0]], translation_result(BASE)),
        server.create_annotation(second[batch.item_ids[1]], translation_result(BASE),
                                 server.whoami().id),
    }
    pulled = pull(server, batch.batch_id, workspace=work)
    return TranslationRun(batch, work, report, pulled, Workspace(
        batch.batch_id, work).annotations(), sorted(expected, key=_row_key), intruders,
        server.whoami().email)


def _row_key(row: tuple) -> tuple:
    return tuple("" if v is None else v for v in row)


def _rows(table: pa.Table) -> list[tuple]:
    columns = ["item_id", "annotator", "role", "criterion", "value"]
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=_row_key)


def test_push_routes_the_group_to_its_pair_with_working_accounts(translation, session):
    report = translation.push
    assert [(p.key, p.annotator) for p in report.projects] == [
        ("de · annotator 1", ANN1), ("de · annotator 2", ANN2)]
    assert report.projects[0].title == f"{translation.batch.batch_id} · de · annotator 1"
    assert report.blinding == "detected"
    assert sorted((a.email, a.created) for a in report.accounts) == [(ANN1, True),
                                                                     (ANN2, True)]
    for email in (ANN1, ANN2):   # each logs in with exactly what the push gave
        assert session.people[email].whoami().email == email
    folder = translation.workspace / translation.batch.batch_id
    credentials = folder / "credentials.txt"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    lines = credentials.read_text().splitlines()
    assert [line.split("\t")[2:] for line in lines] == [
        [n.email, n.password] for n in report.credentials]
    for path in folder.iterdir():   # the passwords are nowhere else
        if path.name != "credentials.txt" and path.is_file():
            assert not any(n.password.encode() in path.read_bytes() for n in report.credentials)
    ledger = Workspace(translation.batch.batch_id, translation.workspace).ledger()
    assert ledger["pairs"] == {"de": [ANN1, ANN2]}
    assert ledger["accounts"][ANN1][session.server.url]["origin"] == "signed up by the workbench"


def test_annotations_table_has_exactly_the_expected_rows(translation):
    table = translation.table
    assert table.schema == ANNOTATION_SCHEMA
    assert _rows(table) == translation.expected
    assert table.num_rows == 16 * len(TRANSLATION_CRITERIA)
    assert len(set(table.column("annotation_id").to_pylist())) == 16
    units = {r["item_id"]: r for r in translation.batch.items.to_pylist()}
    for row in table.to_pylist():
        unit = units[row["item_id"]]
        assert (row["cluster_id"], row["language"], row["unit"], row["kind"]) == \
            (unit["cluster_id"], unit["language"], unit["unit"], "translation")
        assert row["updated_at"] is not None and row["task_id"] > 0
    assert translation.pull.rows_added == table.num_rows and translation.pull.changed
    final = Workspace(translation.batch.batch_id, translation.workspace).final_labels()
    assert final.num_rows == 8 * 7 and set(final.column("origin").to_pylist()) == \
        {"agreed", None}


def test_rejected_annotations_are_reported(translation):
    rejected = translation.pull.rejected
    assert {r["annotation_id"] for r in rejected} == translation.intruder_annotations
    reasons = sorted(r["reason"] for r in rejected)
    assert reasons == sorted([f"created by {INTRUDER}, not the assigned {ANN1}",
                              f"created by {translation.admin}, not the assigned {ANN2}"])
    assert {r["completed_by"] for r in rejected} == {INTRUDER, translation.admin}
    assert INTRUDER not in translation.table.column("annotator").to_pylist()
    by_key = {p.key: p for p in translation.pull.projects}
    assert (by_key["de · annotator 1"].annotations, by_key["de · annotator 1"].accepted) == \
        (9, 8)
    logged = Workspace(translation.batch.batch_id, translation.workspace).refusals()
    assert len(logged) == 2 and all(r["seen_at"] and r["result"] for r in logged)


def test_kappa_and_alpha_match_the_hand_computed_values(translation):
    stats = agreement.agreement(translation.table, n_boot=200).to_pylist()
    kappa = [r for r in stats if r["criterion"] == "answer_preserved"
             and r["statistic"] == "cohen_kappa"]
    assert len(kappa) == 1 and kappa[0]["n_items"] == 8
    assert math.isclose(kappa[0]["estimate"], KAPPA_ANSWER, rel_tol=1e-12)
    raw = [r for r in stats if r["criterion"] == "answer_preserved"
           and r["statistic"] == "raw_agreement"][0]
    assert raw["estimate"] == 0.75
    alpha = [r for r in stats if r["criterion"] == "answer_preserved"
             and r["statistic"] == "krippendorff_alpha"][0]
    assert math.isclose(alpha["estimate"], ALPHA_ANSWER, rel_tol=1e-12)


def test_repush_adds_nothing_and_finds_the_accounts(session, translation):
    again = push(session.server, translation.batch, [f"{ANN1}:de", f"{ANN2}:de"],
                 workspace=translation.workspace)
    assert again.sent == 0 and again.credentials == []
    assert [(p.existing, p.duplicates) for p in again.projects] == [(8, ()), (8, ())]
    for project in again.projects:
        held = [t.item_id for t in session.server.list_tasks(project.project_id)]
        assert sorted(held) == sorted(translation.batch.item_ids)


def test_a_slot_keeps_its_annotator(session, translation):
    with pytest.raises(InputError, match=f"group de of batch .* is assigned to {ANN1} and "
                                         f"{ANN2}; {ANN1} is not among the annotators given"):
        push(session.server, translation.batch, [f"{INTRUDER}:de", f"{ANN2}:de"],
             workspace=translation.workspace)


def test_second_pull_changes_nothing(session, translation):
    path = translation.pull.path
    before = path.read_bytes()
    log = translation.workspace / translation.batch.batch_id / "refusals.jsonl"
    logged = log.read_bytes()
    again = pull(session.server, translation.batch.batch_id,
                 workspace=translation.workspace)
    assert (again.rows_added, again.changed, again.new_refusals) == (0, False, 0)
    assert path.read_bytes() == before and log.read_bytes() == logged
    assert {r["annotation_id"] for r in again.rejected} == translation.intruder_annotations


def test_adjudication_settles_only_the_disputed_criteria(session, translation):
    server = session.server
    batch_id, work = translation.batch.batch_id, translation.workspace
    item = translation.batch.item_ids
    assert push_adjudication(server, batch_id, [f"{ANN2}:de"], workspace=work
                             ).projects == []          # an annotator cannot adjudicate
    report = push_adjudication(server, batch_id, [f"{ANN2}:de", f"{ADJ}:de"],
                               workspace=work)
    _track(session, report)
    sign_in_all(session, report)
    (project,) = report.projects
    assert (project.title, project.annotator, project.sent) == (
        f"{batch_id} · de · adjudication", ADJ, 4)
    tasks = {t["data"]["item_id"]: t for t in _all_tasks(server, project.project_id)}
    assert sorted(tasks) == sorted(item[i] for i in DISAGREEING)
    shown = tasks[item[5]]["data"]
    assert shown["dispute_adequacy"] == ("DISPUTED. One annotator: 4 — the other: 5. "
                                         "Choose the final answer below.")
    assert shown["dispute_answer_preserved"] == ("Agreed: yes. Kept as it is; leave this "
                                                 "criterion empty.")
    assert ANN1 not in str(shown) and ANN2 not in str(shown)      # the answers are unnamed
    assert tasks[item[7]]["data"]["dispute_consequence"] == (
        "DISPUTED. One annotator: cosmetic — the other: none (no error). Choose the final "
        "answer below.")
    # The adjudicator answers everything; only the disputed criteria are read back.
    me = session.people[ADJ]
    for item_id, task in tasks.items():
        values = dict(BASE, answer_preserved="no", adequacy="2", consequence="none")
        annotate(me, task["id"], translation_result(values))
    pulled = pull(server, batch_id, workspace=work)
    table = Workspace(batch_id, work).annotations()
    adjudicated = table.filter(pc.equal(table["role"], "adjudication"))
    assert set(adjudicated.column("annotator").to_pylist()) == {ADJ}
    assert sorted(zip(adjudicated["item_id"].to_pylist(), adjudicated["criterion"].to_pylist())
                  ) == sorted([(item[2], "answer_preserved"), (item[4], "answer_preserved"),
                               (item[5], "adequacy"), (item[7], "consequence")])
    assert pulled.rows_added == 4
    final = {(r["item_id"], r["criterion"]): (r["value"], r["origin"])
             for r in agreement.final_labels(table).to_pylist()}
    assert final[(item[2], "answer_preserved")] == ("no", "adjudicated")
    assert final[(item[5], "adequacy")] == ("2", "adjudicated")
    assert final[(item[5], "answer_preserved")] == ("yes", "agreed")   # kept, not "no"
    assert final[(item[7], "consequence")] == ("none", "adjudicated")
    assert final[(item[0], "answer_preserved")] == ("yes", "agreed")
    queue = agreement.adjudication_queue(table).to_pylist()
    assert {r["state"] for r in queue} == {"resolved"} and len(queue) == 4
    again = push_adjudication(server, batch_id, [f"{ADJ}:de"], workspace=work)
    assert again.sent == 0 and again.queue.num_rows == 0


def _all_tasks(server: ls.Server, project_id: int) -> list[dict]:
    return [{"id": t.id, "data": t.data} for t in server.client.tasks.list(
        project=project_id, include="id,data", page_size=1000)]


# ------------------------------------------------------------------------- attribution

def test_attribution_refuses_edits_imports_and_drafts_and_appends_the_log(session, tmp_path):
    server = session.server
    batch = german_batch(session, {"paragraph": 3}, seed=SEED + 7, tag="-at")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    one, two = report.projects
    first, second = tasks_of(server, one.project_id), tasks_of(server, two.project_id)
    mine = {item_id: annotate(person(session, ANN1), first[item_id], translation_result(BASE))
            for item_id in batch.item_ids}
    for item_id in batch.item_ids:
        annotate(person(session, ANN2), second[item_id], translation_result(BASE))
    a, b, c = batch.item_ids
    # annotator 2 changes annotator 1's label
    person(session, ANN2).update_annotation(mine[a], translation_result(
        dict(BASE, adequacy="1")))
    # an annotation imported under annotator 1's name (no labeling interface, no author)
    data = next(t for t in batch.tasks if t["item_id"] == b)
    server.import_tasks(one.project_id, [data], annotations=[[{
        "result": translation_result(BASE), "completed_by": person(session, ANN1).whoami().id}]])
    # the intruder starts editing annotator 1's task and leaves a draft
    intruder = person(session, INTRUDER)
    draft = httpx.post(f"{server.url}/api/tasks/{first[c]}/drafts",
                       headers={"Authorization": f"Token {intruder._token}"},
                       json={"result": translation_result(dict(BASE, fluency="1")),
                             "lead_time": 3})
    assert draft.status_code == 201, draft.text
    pulled = pull(server, batch.batch_id, workspace=tmp_path)
    reasons = sorted(r["reason"] for r in pulled.rejected)
    assert reasons == sorted([
        f"last changed by {ANN2}, not the assigned {ANN1}",
        f"no recorded author of its last change (updated_by is empty: imported or made "
        f"outside the labeling interface), not {ANN1}",
        f"an unsubmitted edit (draft) by {INTRUDER}, who is not the assigned annotator"])
    edited = next(r for r in pulled.rejected if r["reason"].startswith("last changed"))
    assert (edited["completed_by"], edited["updated_by"], edited["item_id"]) == (ANN1, ANN2, a)
    assert edited["result"]["adequacy"] == 1 and edited["updated_at"]
    table = Workspace(batch.batch_id, tmp_path).annotations()
    ann1_items = set(table.filter(pc.equal(table["annotator"], ANN1))["item_id"].to_pylist())
    assert ann1_items == {b, c}
    log = tmp_path / batch.batch_id / "refusals.jsonl"
    first_log = log.read_bytes()
    assert first_log.count(b"\n") == 3
    # Annotator 1 saves their own label again: it counts; the log keeps the refusal.
    person(session, ANN1).update_annotation(mine[a], translation_result(BASE))
    again = pull(server, batch.batch_id, workspace=tmp_path)
    assert again.new_refusals == 0 and log.read_bytes() == first_log
    table = Workspace(batch.batch_id, tmp_path).annotations()
    assert a in table.filter(pc.equal(table["annotator"], ANN1))["item_id"].to_pylist()
    # A new breach is appended after the earlier entries, which stay byte for byte.
    annotate(intruder, second[a], translation_result(BASE))
    third = pull(server, batch.batch_id, workspace=tmp_path)
    assert third.new_refusals == 1
    grown = log.read_bytes()
    assert grown.startswith(first_log) and grown.count(b"\n") == 4


# ------------------------------------------------------------------------- accounts

def test_accounts_work_whether_the_person_signed_up_first_or_not(session, tmp_path):
    server = session.server
    early, late = f"early-{RUN}@example.org", f"late-{RUN}@example.org"
    own_password = "a-password-only-early-knows"
    forms.sign_up(server.url, early, own_password, server._invite_token())   # signs up first
    batch = german_batch(session, {"question": 1}, seed=SEED + 3, tag="-ac")
    report = push(server, batch, [f"{early}:de", f"{late}:de"], workspace=tmp_path)
    _track(session, report)
    assert sorted((a.email, a.created) for a in report.accounts) == [(early, False),
                                                                     (late, True)]
    assert [n.email for n in report.credentials] == [late]
    with ls.sign_in(server.url, early, own_password) as me:
        assert me.whoami().email == early
    with ls.sign_in(server.url, late, report.credentials[0].password) as me:
        assert me.whoami().email == late
    with pytest.raises(ServerError, match="don't match"):
        ls.sign_in(server.url, late, own_password)
    with pytest.raises(ServerError, match="User with this email already exists"):
        forms.sign_up(server.url, late, "another-password-1", server._invite_token())
    ledger = Workspace(batch.batch_id, tmp_path).ledger()
    assert ledger["accounts"][early][server.url]["origin"] == "found (signed up before)"


# ------------------------------------------------------------------------- progress

def test_status_counts_done_skipped_and_remaining(session, tmp_path):
    server = session.server
    batch = german_batch(session, {"paragraph": 3}, seed=SEED + 5, tag="-st")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    one, two = report.projects
    first = tasks_of(server, one.project_id)
    a, b, _ = batch.item_ids
    annotate(person(session, ANN1), first[a], translation_result(BASE))
    annotate(person(session, ANN1), first[b], [], skip=True)
    status = batch_status(server, batch.batch_id, workspace=tmp_path)
    assert status.rows() == [
        {"group": "de", "role": "annotator 1", "annotator": ANN1, "tasks": 3, "done": 1,
         "skipped": 1, "remaining": 1, "missing": False},
        {"group": "de", "role": "annotator 2", "annotator": ANN2, "tasks": 3, "done": 0,
         "skipped": 0, "remaining": 3, "missing": False}]
    assert status.by("group") == [{"group": "de", "tasks": 6, "done": 1, "skipped": 1,
                                   "remaining": 4}]
    assert status.blinding == "detected" and status.left_out == 0
    pulled = pull(server, batch.batch_id, workspace=tmp_path)
    assert [(p.accepted, p.skipped) for p in pulled.projects] == [(1, 1), (0, 0)]
    assert pulled.rejected == []


def test_status_names_intrusions_and_release_gives_back_only_what_was_taken(session,
                                                                           tmp_path):
    """Annotator 1 labels a and c; the intruder labels a too and b, which annotator 1 has
    not reached; the admin edits annotator 1's label on c. Status: annotator 1 has done 1
    (a: c's last change is not theirs), intrusions admin 1, intruder 2. The release logs
    the three refusals, deletes the intruder's annotation on a, re-imports b (new id, back
    in the queue) and leaves c, whose edit only annotator 1 can redo."""
    server = session.server
    batch = german_batch(session, {"paragraph": 3}, seed=SEED + 5, tag="-rl")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    one = projects_by_role(report)["annotator 1"]
    before = tasks_of(server, one.project_id)
    a, b, c = batch.item_ids
    me, intruder = person(session, ANN1), person(session, INTRUDER)
    annotate(me, before[a], translation_result(BASE))
    edited = annotate(me, before[c], translation_result(BASE))
    annotate(intruder, before[a], translation_result(dict(BASE, adequacy="1")))
    annotate(intruder, before[b], translation_result(dict(BASE, adequacy="2")))
    server.update_annotation(edited, translation_result(dict(BASE, adequacy="3")))
    admin = server.whoami().email
    status = batch_status(server, batch.batch_id, workspace=tmp_path)
    assert [(r["role"], r["done"], r["remaining"]) for r in status.rows()] == [
        ("annotator 1", 1, 2), ("annotator 2", 0, 3)]
    assert status.intrusions() == [
        {"project": "de · annotator 1", "annotator": ANN1, "intruder": who, "annotations": n,
         "on_behalf_of": None} for who, n in sorted([(admin, 1), (INTRUDER, 2)])]
    (released,) = release(server, batch.batch_id, workspace=tmp_path)
    assert (released.key, released.logged, released.deleted, released.recreated) == (
        "de · annotator 1", 3, 1, 1)
    after = tasks_of(server, one.project_id)
    assert (after[a], after[c]) == (before[a], before[c]) and after[b] > max(before.values())
    assert _next_task(me, one.project_id) == after[b]
    logged = Workspace(batch.batch_id, tmp_path).refusals()
    assert sorted((r["task_id"], r["completed_by"], r["updated_by"], r["result"]["adequacy"])
                  for r in logged) == sorted([(before[a], INTRUDER, INTRUDER, 1),
                                              (before[b], INTRUDER, INTRUDER, 2),
                                              (before[c], ANN1, admin, 3)])
    assert batch_status(server, batch.batch_id, workspace=tmp_path).intrusions() == [
        {"project": "de · annotator 1", "annotator": ANN1, "intruder": admin,
         "annotations": 1, "on_behalf_of": None}]
    # the admin's edit of c stays named; releasing again takes nothing (c is annotator 1's
    # to save again) and logs nothing twice
    (again,) = release(server, batch.batch_id, workspace=tmp_path)
    assert (again.intrusions, again.logged, again.deleted, again.recreated) == (
        ((admin, 1, None),), 0, 0, 0)
    assert len(Workspace(batch.batch_id, tmp_path).refusals()) == 3


def test_a_repush_names_each_intruder_and_what_a_release_would_do_and_releases_nothing(
        session, tmp_path):
    """Annotator 1 labels a; the intruder labels b in annotator 1's project; the admin makes
    one on c there credited to annotator 2 ("annotate as a user") and one on a in annotator
    2's project credited to annotator 2. Status and the re-push name the admin, on whose
    behalf, never annotator 2 as an intruder. The re-push sends nothing and changes
    nothing; a release would delete nothing and re-import b and c of project 1 (annotator 1
    worked on a only) and nothing of project 2 (an annotation credited to its annotator is
    theirs to save again); the release then does exactly that."""
    server = session.server
    batch = german_batch(session, {"paragraph": 3}, seed=SEED + 13, tag="-rp")
    people = [f"{ANN1}:de", f"{ANN2}:de"]
    report = push(server, batch, people, workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    assert report.intrusions == () and report.intrusion_notes() == []
    one, two = (projects_by_role(report)[role] for role in ("annotator 1", "annotator 2"))
    first, second = tasks_of(server, one.project_id), tasks_of(server, two.project_id)
    a, b, c = batch.item_ids
    annotate(person(session, ANN1), first[a], translation_result(BASE))
    annotate(person(session, INTRUDER), first[b], translation_result(BASE))
    ann2 = server.find_user(ANN2)
    server.create_annotation(first[c], translation_result(BASE), ann2)
    server.create_annotation(second[a], translation_result(BASE), ann2)
    admin = server.whoami().email
    in_one = sorted([(admin, 1, ANN2), (INTRUDER, 1, None)])
    assert batch_status(server, batch.batch_id, workspace=tmp_path).intrusions() == [
        {"project": "de · annotator 1", "annotator": ANN1, "intruder": who,
         "annotations": n, "on_behalf_of": behalf} for who, n, behalf in in_one] + [
        {"project": "de · annotator 2", "annotator": ANN2, "intruder": admin,
         "annotations": 1, "on_behalf_of": ANN2}]
    again = push(server, batch, people, workspace=tmp_path)
    assert again.sent == 0
    assert [(p.key, p.intrusions, p.deleted, p.recreated, p.applied)
            for p in again.intrusions] == [
        ("de · annotator 1", tuple(in_one), 0, 2, False),
        ("de · annotator 2", ((admin, 1, ANN2),), 0, 0, False)]
    named = {admin: f"{admin} 1 annotation made on behalf of {ANN2}",
             INTRUDER: f"{INTRUDER} 1 annotation"}
    assert again.intrusion_notes() == [
        "Someone other than the assigned annotator worked in 2 project(s); nothing was "
        f"released. `python -m audit review release {batch.batch_id}` would:",
        "de · annotator 1: " + "; ".join(named[who] for who, _, _ in in_one)
        + "; would delete 0 annotations and re-import 2 tasks",
        f"de · annotator 2: {named[admin]}; would delete 0 annotations and re-import "
        "0 tasks"]
    assert (tasks_of(server, one.project_id), tasks_of(server, two.project_id)) == (
        first, second)
    assert len(server.export_annotations(one.project_id)) == 3
    done = release(server, batch.batch_id, workspace=tmp_path)
    assert [(p.key, p.deleted, p.recreated, p.applied) for p in done] == [
        ("de · annotator 1", 0, 2, True), ("de · annotator 2", 0, 0, True)]
    after = tasks_of(server, one.project_id)
    assert after[a] == first[a] and {after[b], after[c]}.isdisjoint(first.values())


def test_status_reuses_a_reading_only_while_its_project_is_unchanged(session, tmp_path,
                                                                     monkeypatch):
    """A second status exports nothing (an export would fail here) while no annotation
    changed; an edit in place, which leaves every counter as it was, is seen through the
    project's latest change; a mangled status.json is read past."""
    server = session.server
    batch = german_batch(session, {"paragraph": 2}, seed=SEED + 11, tag="-sr")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    one = projects_by_role(report)["annotator 1"]
    a, _ = batch.item_ids
    mine = annotate(person(session, ANN1), tasks_of(server, one.project_id)[a],
                    translation_result(BASE))
    progress = [(r["role"], r["done"], r["remaining"]) for r in
                batch_status(server, batch.batch_id, workspace=tmp_path).rows()]
    assert progress == [("annotator 1", 1, 1), ("annotator 2", 0, 2)]
    real_export = ls.Server.export_annotations

    def no_export(self, project_id, **kwargs):
        raise ServerError(self.url, f"export project {project_id}: refused for this test")
    monkeypatch.setattr(ls.Server, "export_annotations", no_export)
    again = batch_status(server, batch.batch_id, workspace=tmp_path)
    assert [(r["role"], r["done"], r["remaining"]) for r in again.rows()] == progress
    server.update_annotation(mine, translation_result(dict(BASE, adequacy="2")))
    with pytest.raises(ServerError, match="refused for this test"):
        batch_status(server, batch.batch_id, workspace=tmp_path)
    monkeypatch.setattr(ls.Server, "export_annotations", real_export)
    edited = batch_status(server, batch.batch_id, workspace=tmp_path)
    assert [(r["role"], r["done"]) for r in edited.rows()] == [("annotator 1", 0),
                                                                ("annotator 2", 0)]
    assert edited.intrusions() == [{"project": "de · annotator 1", "annotator": ANN1,
                                    "intruder": server.whoami().email, "annotations": 1,
                                    "on_behalf_of": None}]
    readings = batch_dir(batch.batch_id, tmp_path) / "status.json"
    readings.write_text('{"de · annotator 1": {"stamp": "x", "done": 7}}', encoding="utf-8")
    assert batch_status(server, batch.batch_id, workspace=tmp_path).rows() == edited.rows()


def test_release_gives_an_adjudicators_queue_back_too(session, tmp_path):
    """The intruder annotates the one adjudication task before the adjudicator: status
    names it, the release logs it and re-imports the task with the same data, offered to
    the adjudicator again."""
    server = session.server
    batch = german_batch(session, {"paragraph": 1}, seed=SEED + 9, tag="-ra")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    (a,) = batch.item_ids
    for project, adequacy in zip(report.projects, ("4", "2")):
        annotate(person(session, project.annotator), tasks_of(server, project.project_id)[a],
                 translation_result(dict(BASE, adequacy=adequacy)))
    pull(server, batch.batch_id, workspace=tmp_path)
    pushed = push_adjudication(server, batch.batch_id, [f"{ADJ}:de"], workspace=tmp_path)
    _track(session, pushed)
    sign_in_all(session, pushed)
    (project,) = pushed.projects
    (before,) = _all_tasks(server, project.project_id)
    annotate(person(session, INTRUDER), before["id"],
             translation_result(dict(BASE, adequacy="3")))
    status = batch_status(server, batch.batch_id, workspace=tmp_path)
    assert status.intrusions() == [{"project": "de · adjudication", "annotator": ADJ,
                                    "intruder": INTRUDER, "annotations": 1,
                                    "on_behalf_of": None}]
    assert [(r["role"], r["done"], r["remaining"]) for r in status.rows()] == [
        ("annotator 1", 1, 0), ("annotator 2", 1, 0), ("adjudication", 0, 1)]
    (released,) = release(server, batch.batch_id, workspace=tmp_path)
    assert (released.key, released.logged, released.deleted, released.recreated) == (
        "de · adjudication", 1, 0, 1)
    (after,) = _all_tasks(server, project.project_id)
    assert after["data"] == before["data"] and server.export_annotations(
        project.project_id) == []
    assert _next_task(person(session, ADJ), project.project_id) == after["id"]
    (refusal,) = Workspace(batch.batch_id, tmp_path).refusals()
    assert (refusal["project"], refusal["completed_by"], refusal["task_id"]) == (
        project.title, INTRUDER, before["id"])


def _next_task(me: ls.Server, project_id: int) -> int | None:
    """The task Label Studio's queue ("Label All Tasks") would offer me next, or None."""
    answer = httpx.get(f"{me.url}/api/projects/{project_id}/next",
                       headers={"Authorization": f"Token {me._token}"}, timeout=60)
    return answer.json()["id"] if answer.status_code == 200 else None


def test_a_skipped_adjudication_is_listed_as_skipped_and_can_be_offered_again(session,
                                                                               tmp_path):
    server = session.server
    batch = german_batch(session, {"paragraph": 2}, seed=SEED + 9, tag="-sk")
    report = push(server, batch, [f"{ANN1}:de", f"{ANN2}:de"], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    a, b = batch.item_ids
    for project, adequacy in zip(report.projects, ("4", "2")):   # they disagree on a only
        me = person(session, project.annotator)
        ids = tasks_of(server, project.project_id)
        annotate(me, ids[a], translation_result(dict(BASE, adequacy=adequacy)))
        annotate(me, ids[b], translation_result(BASE))
    pull(server, batch.batch_id, workspace=tmp_path)
    pushed = push_adjudication(server, batch.batch_id, [f"{ADJ}:de"], workspace=tmp_path)
    _track(session, pushed)
    sign_in_all(session, pushed)
    (project,) = pushed.projects
    me = person(session, ADJ)
    task = tasks_of(server, project.project_id)[a]
    assert _next_task(me, project.project_id) == task
    skip = annotate(me, task, [], skip=True)
    assert _next_task(me, project.project_id) is None       # Label Studio's queue is empty
    pull(server, batch.batch_id, workspace=tmp_path)
    table = Workspace(batch.batch_id, tmp_path).annotations()
    queue = queue_with_skips(agreement.adjudication_queue(table),
                             Workspace(batch.batch_id, tmp_path).skips(), batch.batch_id)
    (row,) = queue.to_pylist()
    assert (row["item_id"], row["state"], row["skipped_by"]) == (a, "skipped", ADJ)
    assert f"review adjudicate {batch.batch_id} --reoffer" in row["todo"]
    again = push_adjudication(server, batch.batch_id, [f"{ADJ}:de"], workspace=tmp_path)
    assert again.sent == 0 and again.reoffered == ()
    assert [(s["item_id"], s["annotation_id"], s["annotator"]) for s in again.skipped] == [
        (a, skip, ADJ)]
    offered = push_adjudication(server, batch.batch_id, [f"{ADJ}:de"],
                                workspace=tmp_path, reoffer=True)
    assert [s["item_id"] for s in offered.reoffered] == [a] and offered.skipped == ()
    assert _next_task(me, project.project_id) == task        # back in the queue
    assert Workspace(batch.batch_id, tmp_path).skips() == []
    logged = (tmp_path / batch.batch_id / "skips.log.jsonl").read_text().splitlines()
    assert [json.loads(line)["annotation_id"] for line in logged] == [skip]
    annotate(me, task, translation_result(dict(BASE, adequacy="3")))
    pull(server, batch.batch_id, workspace=tmp_path)
    final = {(r["item_id"], r["criterion"]): (r["value"], r["origin"]) for r in
             agreement.final_labels(Workspace(batch.batch_id, tmp_path).annotations()).to_pylist()}
    assert final[(a, "adequacy")] == ("3", "adjudicated")


class SilentReceiver:
    """A webhook receiver that is down the worst way: it accepts connections and never
    answers (Label Studio then waits out its 1 s webhook timeout on every event)."""

    def __init__(self) -> None:
        import socket
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/hook"

    def close(self) -> None:
        self.socket.close()


def test_polling_sees_a_submission_within_10_s_with_webhook_receivers_down(
        own_server_with_local_webhooks, tmp_path):
    """Label Studio refuses webhooks to loopback unless USE_DEFAULT_BANNED_SUBNETS=false;
    this server allows them, so a local receiver that hangs and one that is not running
    can be registered. Submissions still go through and the next poll shows them."""
    silent = SilentReceiver()
    try:
        with ls.connect(own_server_with_local_webhooks.url) as server:
            _poll_past_dead_receivers(server, silent.url, tmp_path)
    finally:
        silent.close()


def _poll_past_dead_receivers(server: ls.Server, silent: str, tmp_path: Path) -> None:
    batch = _small_batch(2)
    report = push(server, batch, ANNOTATORS, workspace=tmp_path)
    for url in (silent, f"http://127.0.0.1:{free_port()}/hook"):
        for project in report.projects:
            server.client.webhooks.create(url=url, project=project.project_id,
                                          send_payload=True, is_active=True,
                                          actions=["ANNOTATION_CREATED",
                                                   "ANNOTATION_UPDATED"])
    note = next(n for n in report.credentials if n.email == ANN2)
    with ls.sign_in(server.url, ANN2, note.password) as me:
        task = server.list_tasks(report.projects[1].project_id)[0]
        submitted = time.monotonic()
        annotate(me, task.id, translation_result(BASE))
        while batch_status(server, batch.batch_id, workspace=tmp_path).by(
                "annotator")[1]["done"] != 1:
            assert time.monotonic() - submitted < 10, "not visible within 10 s"
        assert time.monotonic() - submitted < 10
    assert pull(server, batch.batch_id, workspace=tmp_path).rows_added == \
        len(TRANSLATION_CRITERIA)


@pytest.fixture
def own_server_with_local_webhooks(monkeypatch):
    _need_local_server()
    monkeypatch.setenv("USE_DEFAULT_BANNED_SUBNETS", "false")
    local = LocalServer(current().labelstudio_data / f"pytest-hooks-{uuid.uuid4().hex[:8]}",
                        free_port())
    try:
        yield local.start()
    finally:
        local.stop()
        shutil.rmtree(local.data_dir, ignore_errors=True)


# ------------------------------------------------------------------------- MAPLE realism

def realism_result(letter: str) -> list[dict]:
    return [choice("preference", letter, to_name="query_a")]


def test_realism_pull_unblinds_and_survives_project_deletion(session, tmp_path):
    server = session.server
    pairs = maple.read_query_pairs(maple.DEMO_QUERY_PAIRS)[:6]
    items = maple.assign_order(pairs, seed=SEED)
    assert {i.swapped for i in items} == {True, False}   # both display orders occur
    batch = realism_batch(items, batch_id=f"realism-test{session.suffix}")
    report = push(server, batch, [ANN1, ANN2], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    assert [p.title for p in report.projects] == [f"{batch.batch_id} · annotator 1",
                                                  f"{batch.batch_id} · annotator 2"]
    assert (tmp_path / batch.batch_id / "assignments.jsonl").exists()
    for task in batch.tasks:   # the server sees only the texts
        assert set(task) == {"item_id", "batch_id", "query_a", "query_b"}
    # Both annotators prefer the setting's first-named source, whatever letter shows it,
    # except annotator 2 calls the last pair a tie.
    shown_letters = {}
    for email, project in zip((ANN1, ANN2), report.projects):
        tasks = tasks_of(server, project.project_id)
        for index, item in enumerate(items):
            first = maple.SETTINGS[item.setting][0]
            letter = "A" if item.shown_a_source == first else "B"
            if email == ANN2 and index == len(items) - 1:
                letter = "Tie"
            shown_letters[(item.item_id, email)] = letter
            annotate(person(session, email), tasks[item.item_id], realism_result(letter))
    pull(server, batch.batch_id, workspace=tmp_path)
    table = Workspace(batch.batch_id, tmp_path).annotations()
    assert table.num_rows == 12
    by_item = {i.item_id: i for i in items}
    for row in table.to_pylist():
        item = by_item[row["item_id"]]
        assert row["value"] == shown_letters[(row["item_id"], row["annotator"])]
        assert (row["source_a"], row["source_b"], row["setting"], row["cluster_id"]) == \
            (item.shown_a_source, item.shown_b_source, item.setting, item.pair_id)
    # Relative to the setting every preference is "A" (the first-named source).
    final = agreement.final_labels(table).to_pylist()
    assert sorted(r["value"] or "-" for r in final) == ["-"] + ["A"] * 5
    # Table 4 for "MAPLE vs human-written" (qp-001 A/A, qp-006 A/Tie, not adjudicated):
    # shares over the one resolved pair; κ over the two initial pairs, p_o = 1/2,
    # p_e = 1 · 1/2 = 1/2, κ = 0.
    table4 = {r["setting"]: r for r in realism_table(table).to_pylist()}
    row = table4["MAPLE vs human-written"]
    assert (row["prefer_a"], row["tie"], row["prefer_b"], row["n"], row["n_unresolved"],
            row["n_pairs"]) == (100.0, 0.0, 0.0, 1, 1, 2)
    assert row["kappa"] == pytest.approx(0.0, abs=1e-12)
    # The adjudicator sees the two answers in the letters shown to the annotators.
    adjudication = push_adjudication(server, batch.batch_id, [ADJ], workspace=tmp_path)
    _track(session, adjudication)
    last = items[-1]
    (task,) = _all_tasks(server, adjudication.projects[0].project_id)
    letter = shown_letters[(last.item_id, ANN1)]
    assert task["data"]["dispute_preference"] == \
        f"DISPUTED. One annotator: {letter} — the other: Tie. Choose the final answer below."
    # Deleting the Label Studio projects loses nothing already pulled.
    before = (tmp_path / batch.batch_id / "annotations.parquet").read_bytes()
    for project in (*report.projects, *adjudication.projects):
        server.delete_project(project.project_id)
    after = pull(server, batch.batch_id, workspace=tmp_path)
    assert len(after.missing) == 3
    assert (tmp_path / batch.batch_id / "annotations.parquet").read_bytes() == before
    assert Workspace(batch.batch_id, tmp_path).annotations().num_rows == 12


def test_relevance_batch_round_trip(session, tmp_path):
    server = session.server
    pairs = maple.read_relevance_pairs(maple.DEMO_RELEVANCE_PAIRS)[:3]
    batch = relevance_batch(pairs, batch_id=f"relevance-test{session.suffix}")
    report = push(server, batch, [ANN1, ANN2], workspace=tmp_path)
    _track(session, report)
    sign_in_all(session, report)
    for email, project in zip((ANN1, ANN2), report.projects):
        tasks = tasks_of(server, project.project_id)
        for index, item_id in enumerate(batch.item_ids):
            label = "irrelevant" if (email, index) == (ANN2, 0) else "relevant"
            result = [choice("relevance", label, to_name="text")]
            if (email, index) == (ANN1, 1):
                result.append({"from_name": "comment", "to_name": "text", "type": "textarea",
                               "value": {"text": ["on topic", "but dated"]}})
            annotate(person(session, email), tasks[item_id], result)
    pull(server, batch.batch_id, workspace=tmp_path)
    table = Workspace(batch.batch_id, tmp_path).annotations()
    rows = {(r["item_id"], r["annotator"], r["criterion"]): r["value"] for r in table.to_pylist()}
    assert len(rows) == table.num_rows == 3 * 2 * 2
    first, second = batch.item_ids[:2]
    assert rows[(first, ANN2, "relevance")] == "irrelevant"
    assert rows[(second, ANN1, "comment")] == "on topic\nbut dated"
    assert rows[(second, ANN2, "comment")] is None
    assert {r["cluster_id"] for r in table.to_pylist()} == {p.query_id for p in pairs}
    queue = agreement.adjudication_queue(table).column("item_id").to_pylist()
    assert queue == [first]


# ------------------------------------------------------------------------- errors

def test_unreachable_server_is_a_clear_error():
    if importlib.util.find_spec("label_studio_sdk") is None:
        pytest.skip("label-studio-sdk is not installed (pip install -r requirements.txt)")
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerError, match=f"Label Studio at {url}.*cannot reach"):
        ls.connect(url, token="0" * 40)


def test_rejected_token_is_a_clear_error(session):
    with pytest.raises(ServerError, match="token was rejected"):
        ls.connect(session.server.url, token="0" * 40)


def test_a_batch_id_too_long_for_project_titles_is_refused(session, tmp_path):
    batch = german_batch(session, {"question": 1}, seed=SEED + 9, tag="-" + "x" * 30)
    with pytest.raises(InputError, match="50-character project titles"):
        push(session.server, batch, ANNOTATORS, workspace=tmp_path)
    assert not list(tmp_path.glob("*/ledger.json")) or \
        Workspace(batch.batch_id, tmp_path).ledger()["projects"] == {}


def test_nobody_to_route_to_is_a_clear_error(session, tmp_path):
    batch = german_batch(session, {"question": 1}, seed=SEED + 9, tag="-no")
    with pytest.raises(InputError, match="no group of this batch has two annotators who "
                                         "read it: no annotator reads de"):
        push(session.server, batch, [f"{ANN1}:fr", f"{ANN2}:fr"], workspace=tmp_path)


# ------------------------------------------------------------------------- crash, postgres

def _small_batch(size: int, suffix: str = "") -> ReviewBatch:
    result = scan.scan_release()
    units = sampling.build_units(result)
    sample = sampling.sample(units, by=["unit"], seed=SEED + 1, size=size,
                             where={"language": "de", "unit": "paragraph"},
                             created_at="2026-11-30T00:00:00+00:00")
    return translation_batch(sample, result.release, batch_id=sample.batch_id + suffix)


ANNOTATORS = [f"{ANN1}:de", f"{ANN2}:de"]


def test_server_killed_mid_push_resumes_without_duplicates(own_server, tmp_path):
    batch = _small_batch(36)
    killed = []

    def kill_after_first_chunk(title: str, sent: int, total: int) -> None:
        if sent and not killed:
            own_server.kill()
            killed.append((title, sent))

    with ls.connect(own_server.url) as server, \
            pytest.raises(ServerError, match=f"Label Studio at {own_server.url}") as error:
        push(server, batch, ANNOTATORS, workspace=tmp_path, chunk_size=10,
             progress=kill_after_first_chunk)
    assert "cannot reach" in str(error.value) and "10 sent before" in str(error.value)
    assert killed == [(project_title(batch.batch_id, "annotator 1", "de"), 10)]
    own_server.start()   # the same data dir and port
    with ls.connect(own_server.url) as server:
        _resumed(server, batch, tmp_path)


def _resumed(server: ls.Server, batch: ReviewBatch, tmp_path: Path) -> None:
    report = push(server, batch, ANNOTATORS, workspace=tmp_path, chunk_size=10)
    assert [(p.existing, p.sent) for p in report.projects] == [(10, 26), (0, 36)]
    assert report.credentials == []   # the accounts were made before the crash
    for project in report.projects:
        held = [t.item_id for t in server.list_tasks(project.project_id)]
        assert len(held) == 36 and sorted(held) == sorted(batch.item_ids)
    assert push(server, batch, ANNOTATORS, workspace=tmp_path).sent == 0


@pytest.mark.parametrize("own_server", [True], indirect=True, ids=["postgres"])
def test_postgres_mode(own_server, tmp_path):
    """scripts/labelstudio.sh --postgres: Label Studio on a PostgreSQL cluster of its own
    (first start runs the migrations on PostgreSQL: about a minute)."""
    assert (own_server.data_dir / "postgres" / "postgres.env").exists()
    assert not (own_server.data_dir / "label_studio.sqlite3").exists()
    with ls.connect(own_server.url) as server:
        _postgres_round_trip(server, tmp_path)


def _postgres_round_trip(server: ls.Server, tmp_path: Path) -> None:
    batch = _small_batch(4)
    report = push(server, batch, ANNOTATORS, workspace=tmp_path, chunk_size=3)
    assert report.sent == 8
    note = next(n for n in report.credentials if n.email == ANN1)
    with ls.sign_in(server.url, ANN1, note.password) as me:
        task = server.list_tasks(report.projects[0].project_id)[0]
        annotate(me, task.id, translation_result(BASE))
    pulled = pull(server, batch.batch_id, workspace=tmp_path)
    assert pulled.rows_added == len(TRANSLATION_CRITERIA)
    assert push(server, batch, ANNOTATORS, workspace=tmp_path).sent == 0


def test_status_after_an_unclean_death_says_not_running_without_a_proc_error(tmp_path):
    """server.pid left behind by a server killed with -9 names a pid that is gone."""
    import subprocess
    import sys
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()                          # reaped: its pid (and /proc entry) no longer exist
    data = tmp_path / "ls"
    data.mkdir()
    (data / "server.pid").write_text(f"{gone.pid}\n")
    script = Path(__file__).resolve().parent.parent / "scripts" / "labelstudio.sh"
    done = subprocess.run(["bash", str(script), "status", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, f"not running ({data})\n", "")


def test_a_mapped_release_is_reviewed_by_language_and_column(session, realdata, tmp_path):
    """XQuAD's first article through its mapping: German units (one per column) sampled,
    routed to annotators who declare German as "deu" or "de", pushed, annotated and pulled;
    the annotations name each unit's column and κ is computed over them."""
    from test_mapped_workbench import small_xquad

    from audit.io import release as readers
    mapping = small_xquad(realdata, tmp_path / "xquad", "xquad-review", blank=3)
    result = scan.run(readers.open_release(mapping, cache=False))
    sample = sampling.sample(sampling.build_units(result), by=["unit"], seed=SEED,
                             per_stratum=2, where={"language": "de"},
                             created_at="2026-12-07T00:00:00+00:00")
    batch = translation_batch(sample, result.release,
                              batch_id=sample.batch_id + "-mapped" + session.suffix)
    assert len(batch.tasks) == 6 and set(batch.groups) == {"de"}
    assert sorted(i.split(":")[1] for i in batch.item_ids) == [
        "answer", "answer", "context", "context", "question", "question"]
    work = tmp_path / "reviews"
    report = push(session.server, batch, [f"{ANN1}:deu", f"{ANN2}:de"], workspace=work)
    _track(session, report)
    sign_in_all(session, report)
    assert [(p.key, p.sent) for p in report.projects] == [("de · annotator 1", 6),
                                                          ("de · annotator 2", 6)]
    for slot, email, project in zip((1, 2), (ANN1, ANN2), report.projects):
        tasks = tasks_of(session.server, project.project_id)
        shown = next(t["data"] for t in _all_tasks(session.server, project.project_id)
                     if t["data"]["item_id"] == batch.item_ids[0])
        assert shown["translation_text"] and shown["source_text"] and shown["question"] == "—"
        for index, item_id in enumerate(batch.item_ids):
            values = dict(BASE, answer_preserved="no" if slot == 2 and index == 0 else "yes")
            annotate(person(session, email), tasks[item_id], translation_result(values))
    pull(session.server, batch.batch_id, workspace=work)
    table = Workspace(batch.batch_id, work).annotations()
    rows = table.filter(pc.equal(table.column("criterion"), "answer_preserved")).to_pylist()
    assert len(rows) == 12 and {r["item_id"] for r in rows} == set(batch.item_ids)
    assert sorted(r["value"] for r in rows).count("no") == 1
