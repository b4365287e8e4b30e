"""The correction record's API: rows identified by their content, an append-only workspace
that adds an event once, a digest of what happened (not when), decisions where the latest
wins, and the path a post-edit pull will take: proposals with their Label Studio ids
appended to a workspace, then applied from it."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import repair_helpers as rh
from conftest import record as v11_record
from conftest import source

from audit.errors import InputError
from audit.io import release as readers
from audit.io.digests import text_sha256
from audit.repair import apply, record
from audit.repair.corrections import Correction
from audit.repair.record import Origin, Workspace
from devkit import synth

EDIT = Origin("post-edit", batch="pe-20261201", project=7, task=41, annotation=93)


def _row(**changes) -> dict:
    values = dict(action="proposed", correction_id="c-1", created_at="2026-12-01T10:00:00+00:00",
                  author="ana@example.org", origin=EDIT, row_id="q1", unit="question",
                  old_text="", new_text="Welcher Fluss?")
    values.update(changes)
    return record.make_row(**values)


def test_an_entry_is_its_content_not_its_time():
    a = _row()
    assert a["entry"] == _row(created_at="2027-01-01T00:00:00+00:00")["entry"]
    assert a["entry"] != _row(new_text="Welcher Fluss ist länger?")["entry"]
    assert a["origin"] == {"kind": "post-edit", "file": None, "line": None,
                           "batch": "pe-20261201", "project": 7, "task": 41, "annotation": 93}
    assert EDIT.where() == "batch pe-20261201, project 7, task 41, annotation 93"
    with pytest.raises(ValueError, match="origin kind 'mail'"):
        Origin("mail")
    with pytest.raises(KeyError, match="not record columns: \\['colour'\\]"):
        record.make_row(action="proposed", colour="red")


def test_the_workspace_appends_each_event_once_and_rewrites_nothing(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    assert workspace.read().num_rows == 0
    assert workspace.append([_row(), _row()]) == 1
    first = sorted(workspace.parts.glob("part-*.parquet"))
    snapshot = first[0].read_bytes()
    assert workspace.append([_row(), _row(action="accepted", author="rhea")]) == 1
    parts = sorted(workspace.parts.glob("part-*.parquet"))
    assert len(parts) == 2 and parts[0].read_bytes() == snapshot
    assert workspace.append([_row()]) == 0 and len(list(workspace.parts.glob("*.parquet"))) == 2
    full = workspace.read()
    assert full.column("action").to_pylist() == ["proposed", "accepted"]
    assert record.verify(full) == []
    rows = full.to_pylist()
    assert record.digest(full) == record.digest(record.table(rows[::-1]))
    tampered = record.table([rows[0], {**rows[1], "author": "mallory"}])
    assert record.verify(tampered) == [1]
    later = record.table(rows + [_row(action="rejected", author="rhea")])
    assert record.latest_decisions(later)["c-1"]["action"] == "rejected"


def test_a_post_edit_pull_appends_proposals_that_an_apply_takes_up(tmp_path):
    folder = tmp_path / "release"
    synth.write_release([v11_record(source(_id="q1"), question=" ")], folder)
    release = readers.open_release(folder)
    pulled = Correction(row_id="q1", unit="question", paragraph_id=None, sentence_index=None,
                        old_sha256=text_sha256(" "), new_text="Welcher Fluss ist länger?",
                        reason="untranslated", author="ana@example.org", origin=EDIT)
    rows = apply.propose(release, [pulled])
    assert [(r["action"], r["old_text"], r["new_text"], r["views"], r["language"])
            for r in rows] == [("proposed", " ", "Welcher Fluss ist länger?", 1, "de")]
    # 25 characters for one space: 24 inserted, the space kept
    assert (rows[0]["edit_distance"], rows[0]["ter"]) == (24, 100.0)
    workspace = tmp_path / "ws"
    assert Workspace(workspace).append(rows) == 1
    stale = Correction(**{**pulled.__dict__, "old_sha256": text_sha256("?"),
                          "correction_id": ""})
    with pytest.raises(InputError, match="stale correction"):
        apply.propose(release, [stale])
    done = rh.cli("repair", "apply", folder, "--workspace", workspace, "--out",
                  tmp_path / "corrected")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "corrected" / "repair_manifest.json").read_text())
    assert manifest["counts"]["applied"] == 1 and manifest["counts"]["proposed"] == 0
    assert manifest["applied"][0]["origin"] == EDIT.where()
    assert manifest["applied"][0]["fixed"] == ["blank_question"]
    row = pq.read_table(tmp_path / "corrected" / "validation-00000.parquet").to_pylist()[0]
    assert (row["question"], row["status"], row["structural_flags"]) == (
        "Welcher Fluss ist länger?", "accepted", [])
    outcome = [r for r in Workspace(workspace).read().to_pylist() if r["action"] == "applied"]
    assert len(outcome) == 1 and outcome[0]["origin"]["annotation"] == 93
