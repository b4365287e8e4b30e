"""The review loop against a real Label Studio (audit/review/labelstudio.py, loop.py).

The session server is LABEL_STUDIO_URL (token from LABEL_STUDIO_API_KEY or .labelstudio.env)
when set; otherwise scripts/labelstudio.sh starts one on a free port and a fresh data dir
under data/labelstudio/ and stops it at the end. Against an outside server every batch id
gets a per-run suffix and the test projects are deleted afterwards. The crash test and the
PostgreSQL test start servers of their own. Annotators are simulated with the admin token
acting as each user (completed_by), as the notes describe.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from audit import workspace as audit_workspace
from audit.errors import InputError
from audit.review import agreement, loop, maple, reports, sampling
from audit.review import labelstudio as ls

INSTALLED = importlib.util.find_spec("label_studio") is not None
EXTERNAL = bool(os.environ.get("LABEL_STUDIO_URL"))
ANN1, ANN2, ADJ, INTRUDER = ("ann1@example.org", "ann2@example.org", "adjudicator@example.org",
                             "intruder@example.org")
SEED = 20261130


def _need_local_server() -> None:
    if not INSTALLED:
        pytest.skip("label-studio is not installed (pip install -r requirements.txt)")


# ------------------------------------------------------------------------- servers

@dataclass
class Session:
    server: ls.Server
    suffix: str              # "" on our own fresh server; a run id on an outside one
    created: list[int]       # project ids to delete at the end (outside server)


@pytest.fixture(scope="session")
def session():
    local = None
    if not EXTERNAL:
        _need_local_server()
        local = ls.LocalServer(ls.DATA_ROOT / f"pytest-{uuid.uuid4().hex[:8]}",
                               ls.free_port()).start()
    try:
        server = ls.connect(local.url if local else None)
        state = Session(server, f"-{uuid.uuid4().hex[:6]}" if EXTERNAL else "", [])
        yield state
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
    local = ls.LocalServer(ls.DATA_ROOT / f"pytest-own-{uuid.uuid4().hex[:8]}",
                           ls.free_port(), postgres=postgres)
    try:
        yield local.start()
    finally:
        local.stop()
        shutil.rmtree(local.data_dir, ignore_errors=True)


def _track(session: Session, report: loop.PushReport) -> None:
    session.created += [p.project_id for p in report.projects]


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


# ------------------------------------------------------------------------- translation flow

@dataclass
class TranslationRun:
    batch: loop.ReviewBatch
    workspace: Path
    push: loop.PushReport
    pull: loop.PullReport
    table: pa.Table
    expected: list[tuple]
    intruder_annotations: set[int]
    admin: str


@pytest.fixture(scope="module")
def translation(session, tmp_path_factory):
    server = session.server
    result = audit_workspace.scan_release()
    units = sampling.build_units(result)
    sample = sampling.sample(units, by=["unit"], seed=SEED, per_stratum=2,
                             created_at="2026-11-30T00:00:00+00:00")
    batch = loop.translation_batch(sample, result.release,
                                   batch_id=sample.batch_id + session.suffix)
    assert len(batch.tasks) == 8
    work = tmp_path_factory.mktemp("reviews")
    progress = []
    report = loop.push(server, batch, [ANN1, ANN2], workspace=work, chunk_size=3,
                       progress=lambda *event: progress.append(event))
    _track(session, report)
    assert [p.sent for p in report.projects] == [8, 8]
    assert [e[1:] for e in progress] == [(3, 8), (6, 8), (8, 8)] * 2
    users = {email: server.ensure_user(email) for email in (ANN1, ANN2, INTRUDER)}
    expected = []
    for slot, email, project in zip((1, 2), (ANN1, ANN2), report.projects):
        tasks = {t.item_id: t.id for t in server.list_tasks(project.project_id)}
        for index, item_id in enumerate(batch.item_ids):
            values = planted(slot, index)
            server.create_annotation(tasks[item_id], translation_result(values),
                                     users[email])
            expected += [(item_id, email, "initial", c, values[c])
                         for c in TRANSLATION_CRITERIA]
    # Annotations the assignment forbids: the intruder in annotator 1's project, the
    # admin (acting as itself) in annotator 2's.
    first = {t.item_id: t.id for t in server.list_tasks(report.projects[0].project_id)}
    second = {t.item_id: t.id for t in server.list_tasks(report.projects[1].project_id)}
    intruders = {
        server.create_annotation(first[batch.item_ids[0]], translation_result(BASE),
                                 users[INTRUDER]),
        server.create_annotation(second[batch.item_ids[1]], translation_result(BASE),
                                 server.whoami().id),
    }
    pulled = loop.pull(server, batch.batch_id, workspace=work)
    return TranslationRun(batch, work, report, pulled, loop.read_annotations(
        batch.batch_id, work), sorted(expected, key=_row_key), intruders,
        server.whoami().email)


def _row_key(row: tuple) -> tuple:
    return tuple("" if v is None else v for v in row)


def _rows(table: pa.Table) -> list[tuple]:
    columns = ["item_id", "annotator", "role", "criterion", "value"]
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=_row_key)


def test_annotations_table_has_exactly_the_expected_rows(translation):
    table = translation.table
    assert table.schema == loop.ANNOTATION_SCHEMA
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


def test_rejected_annotations_are_reported(translation):
    rejected = translation.pull.rejected
    assert {r["annotation_id"] for r in rejected} == translation.intruder_annotations
    assert all(r["reason"].startswith("not the assigned annotator") for r in rejected)
    assert {r["annotator"] for r in rejected} == {INTRUDER, translation.admin}
    assert INTRUDER not in translation.table.column("annotator").to_pylist()
    by_slot = {p.slot: p for p in translation.pull.projects}
    assert (by_slot["annotator 1"].annotations, by_slot["annotator 1"].accepted) == (9, 8)


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


def test_repush_adds_nothing(session, translation):
    again = loop.push(session.server, translation.batch, [ANN1, ANN2],
                      workspace=translation.workspace)
    assert again.sent == 0
    assert [(p.existing, p.duplicates) for p in again.projects] == [(8, ()), (8, ())]
    for project in again.projects:
        held = [t.item_id for t in session.server.list_tasks(project.project_id)]
        assert sorted(held) == sorted(translation.batch.item_ids)


def test_a_slot_keeps_its_annotator(session, translation):
    with pytest.raises(InputError, match="assigned to ann1@example.org"):
        loop.push(session.server, translation.batch, [INTRUDER, ANN2],
                  workspace=translation.workspace)


def test_second_pull_changes_nothing(session, translation):
    path = translation.pull.path
    before = path.read_bytes()
    again = loop.pull(session.server, translation.batch.batch_id,
                      workspace=translation.workspace)
    assert (again.rows_added, again.changed) == (0, False)
    assert path.read_bytes() == before
    assert {r["annotation_id"] for r in again.rejected} == translation.intruder_annotations


def test_adjudication_holds_exactly_the_disagreements(session, translation):
    server = session.server
    batch_id, work = translation.batch.batch_id, translation.workspace
    with pytest.raises(InputError, match="neither initial annotator"):
        loop.push_adjudication(server, batch_id, ANN2, workspace=work)
    report = loop.push_adjudication(server, batch_id, ADJ, workspace=work)
    _track(session, report)
    disagreeing = {translation.batch.item_ids[i] for i in DISAGREEING}
    held = server.list_tasks(report.projects[0].project_id)
    assert sorted(t.item_id for t in held) == sorted(disagreeing)
    assert report.sent == 4 and report.projects[0].title.endswith("· adjudication")
    queue = {r["item_id"]: r["criteria"] for r in report.queue.to_pylist()}
    item = translation.batch.item_ids
    assert queue == {item[2]: ["answer_preserved"], item[4]: ["answer_preserved"],
                     item[5]: ["adequacy"], item[7]: ["consequence"]}
    # The adjudicator resolves them; the pull files those annotations as adjudication.
    adjudicator = server.ensure_user(ADJ)
    for task in held:
        server.create_annotation(task.id, translation_result(dict(BASE, answer_preserved="no")),
                                 adjudicator)
    pulled = loop.pull(server, batch_id, workspace=work)
    table = loop.read_annotations(batch_id, work)
    adjudicated = table.filter(pc.equal(table["role"], "adjudication"))
    assert set(adjudicated.column("annotator").to_pylist()) == {ADJ}
    assert set(adjudicated.column("item_id").to_pylist()) == disagreeing
    assert pulled.rows_added == 4 * len(TRANSLATION_CRITERIA)
    final = {(r["item_id"], r["criterion"]): (r["value"], r["status"])
             for r in agreement.final_labels(table).to_pylist()}
    assert final[(item[2], "answer_preserved")] == ("no", "adjudicated")
    assert final[(item[0], "answer_preserved")] == ("yes", "agreed")
    again = loop.push_adjudication(server, batch_id, ADJ, workspace=work)
    assert again.sent == 0


# ------------------------------------------------------------------------- MAPLE realism

def realism_result(letter: str) -> list[dict]:
    return [choice("preference", letter, to_name="query_a")]


def test_realism_pull_unblinds_and_survives_project_deletion(session, tmp_path):
    server = session.server
    pairs = maple.read_query_pairs(maple.DEMO_QUERY_PAIRS)[:6]
    items = maple.assign_order(pairs, seed=SEED)
    assert {i.swapped for i in items} == {True, False}   # both display orders occur
    batch = loop.realism_batch(items, batch_id=f"realism-test{session.suffix}")
    report = loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path)
    _track(session, report)
    assert (tmp_path / batch.batch_id / "assignments.jsonl").exists()
    for task in batch.tasks:   # the server sees only the texts
        assert set(task) == {"item_id", "batch_id", "query_a", "query_b"}
    users = {email: server.ensure_user(email) for email in (ANN1, ANN2)}
    # Both annotators prefer the setting's first-named source, whatever letter shows it,
    # except annotator 2 calls the last pair a tie.
    shown_letters = {}
    for email, project in zip((ANN1, ANN2), report.projects):
        tasks = {t.item_id: t.id for t in server.list_tasks(project.project_id)}
        for index, item in enumerate(items):
            first = maple.SETTINGS[item.setting][0]
            letter = "A" if item.shown_a_source == first else "B"
            if email == ANN2 and index == len(items) - 1:
                letter = "Tie"
            shown_letters[(item.item_id, email)] = letter
            server.create_annotation(tasks[item.item_id], realism_result(letter), users[email])
    loop.pull(server, batch.batch_id, workspace=tmp_path)
    table = loop.read_annotations(batch.batch_id, tmp_path)
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
    table4 = {r["setting"]: r for r in reports.realism_table(table).to_pylist()}
    row = table4["MAPLE vs human-written"]
    assert (row["prefer_a"], row["tie"], row["prefer_b"], row["n"], row["n_unresolved"],
            row["n_pairs"]) == (100.0, 0.0, 0.0, 1, 1, 2)
    assert row["kappa"] == pytest.approx(0.0, abs=1e-12)
    # Deleting the Label Studio projects loses nothing already pulled.
    before = (tmp_path / batch.batch_id / "annotations.parquet").read_bytes()
    for project in report.projects:
        server.delete_project(project.project_id)
    after = loop.pull(server, batch.batch_id, workspace=tmp_path)
    assert sorted(after.missing) == sorted(p.title for p in report.projects)
    assert (tmp_path / batch.batch_id / "annotations.parquet").read_bytes() == before
    assert loop.read_annotations(batch.batch_id, tmp_path).num_rows == 12


def test_relevance_batch_round_trip(session, tmp_path):
    server = session.server
    pairs = maple.read_relevance_pairs(maple.DEMO_RELEVANCE_PAIRS)[:3]
    batch = loop.relevance_batch(pairs, batch_id=f"relevance-test{session.suffix}")
    report = loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path)
    _track(session, report)
    users = {email: server.ensure_user(email) for email in (ANN1, ANN2)}
    for email, project in zip((ANN1, ANN2), report.projects):
        tasks = {t.item_id: t.id for t in server.list_tasks(project.project_id)}
        for index, item_id in enumerate(batch.item_ids):
            label = "irrelevant" if (email, index) == (ANN2, 0) else "relevant"
            result = [choice("relevance", label, to_name="text")]
            if (email, index) == (ANN1, 1):
                result.append({"from_name": "comment", "to_name": "text", "type": "textarea",
                               "value": {"text": ["on topic", "but dated"]}})
            server.create_annotation(tasks[item_id], result, users[email])
    loop.pull(server, batch.batch_id, workspace=tmp_path)
    table = loop.read_annotations(batch.batch_id, tmp_path)
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
    url = f"http://127.0.0.1:{ls.free_port()}"
    with pytest.raises(ls.ServerError, match=f"Label Studio at {url}.*cannot reach"):
        ls.connect(url, token="0" * 40)


def test_rejected_token_is_a_clear_error(session):
    with pytest.raises(ls.ServerError, match="token was rejected"):
        ls.connect(session.server.url, token="0" * 40)


# ------------------------------------------------------------------------- crash, postgres

def _small_batch(size: int, suffix: str = "") -> loop.ReviewBatch:
    result = audit_workspace.scan_release()
    units = sampling.build_units(result)
    sample = sampling.sample(units, by=["unit"], seed=SEED + 1, size=size,
                             created_at="2026-11-30T00:00:00+00:00")
    return loop.translation_batch(sample, result.release, batch_id=sample.batch_id + suffix)


def test_server_killed_mid_push_resumes_without_duplicates(own_server, tmp_path):
    batch = _small_batch(36)
    killed = []

    def kill_after_first_chunk(title: str, sent: int, total: int) -> None:
        if not killed:
            own_server.kill()
            killed.append((title, sent))

    with ls.connect(own_server.url) as server, \
            pytest.raises(ls.ServerError, match=f"Label Studio at {own_server.url}") as error:
        loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path, chunk_size=10,
                  progress=kill_after_first_chunk)
    assert "cannot reach" in str(error.value) and "10 sent before" in str(error.value)
    assert killed == [(loop.project_title(batch.batch_id, "annotator 1"), 10)]
    own_server.start()   # the same data dir and port
    with ls.connect(own_server.url) as server:
        _resumed(server, batch, tmp_path)


def _resumed(server: ls.Server, batch: loop.ReviewBatch, tmp_path: Path) -> None:
    report = loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path, chunk_size=10)
    assert [(p.existing, p.sent) for p in report.projects] == [(10, 26), (0, 36)]
    for project in report.projects:
        held = [t.item_id for t in server.list_tasks(project.project_id)]
        assert len(held) == 36 and sorted(held) == sorted(batch.item_ids)
    assert loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path).sent == 0


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
    report = loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path, chunk_size=3)
    assert report.sent == 8
    annotator = server.ensure_user(ANN1)
    task = server.list_tasks(report.projects[0].project_id)[0]
    server.create_annotation(task.id, translation_result(BASE), annotator)
    pulled = loop.pull(server, batch.batch_id, workspace=tmp_path)
    assert pulled.rows_added == len(TRANSLATION_CRITERIA)
    assert loop.push(server, batch, [ANN1, ANN2], workspace=tmp_path).sent == 0
