"""Who did what in a project, as status, release and a re-push say it (audit/review/
intrusions.py, status.py, push.PushReport), on refusal records as the pull makes them:
an admin's annotation made on someone's behalf is the admin's, a MAPLE batch has no
language group, and blinding does not apply with one editor per item."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from audit.cli.review import _print_status
from audit.review import kinds, status
from audit.review.intrusions import Intrusion, ProjectRelease, intruders
from audit.review.push import PushReport
from audit.review.routing import NO_LANGUAGE

ANA, BO, ADMIN, EVE = "ana@example.org", "bo@example.org", "admin@example.org", "eve@x.org"
CREATED = "2026-12-07T14:05:23.223995Z"


def refusal(author: str, editor: str, updated: str = "2026-12-07T14:05:23.224033Z",
            kind: str = "annotation") -> dict:
    return {"kind": kind, "completed_by": author, "updated_by": editor,
            "created_at": CREATED, "updated_at": updated}


def test_an_annotation_made_on_someones_behalf_is_the_makers():
    """In ana's project: the admin made one credited to ana (38 µs between the stamps: one
    save) and one credited to bo; eve made two of her own; the admin edited ana's label
    0.13 s after ana made it (two saves: the admin's edit, not made for anyone)."""
    refused = [refusal(ANA, ADMIN), refusal(BO, ADMIN), refusal(EVE, EVE), refusal(EVE, EVE),
               refusal(ANA, ADMIN, updated="2026-12-07T14:05:23.356379Z"),
               refusal(EVE, EVE, kind="draft")]
    assert intruders(refused, ANA) == (
        Intrusion(ADMIN, 1), Intrusion(ADMIN, 1, ANA), Intrusion(ADMIN, 1, BO),
        Intrusion(EVE, 2))
    assert [i.describe() for i in intruders(refused, ANA)] == [
        f"{ADMIN} 1 annotation", f"{ADMIN} 1 annotation made on behalf of {ANA}",
        f"{ADMIN} 1 annotation made on behalf of {BO}", f"{EVE} 2 annotations"]
    # bo is named nowhere as an intruder: the admin made it
    assert all(i.who != BO for i in intruders(refused, ANA))
    # without stamps there is no claim of one save: the first who is not ana
    assert intruders([refusal(BO, ADMIN, updated=None)], ANA) == (Intrusion(BO, 1),)


def progress(group: str, role: str, annotator: str, done: int) -> status.ProjectProgress:
    return status.ProjectProgress(f"{group or 'maple'} · {role}", role, group, annotator, 4,
                                  done, 0, 4 - done)


def test_a_maple_status_prints_no_language_group():
    maple = status.Status("m1", "detected", [progress(NO_LANGUAGE, "annotator 1", ANA, 1),
                                             progress(NO_LANGUAGE, "annotator 2", BO, 3)], 0)
    assert maple.by("group") == []
    assert [r["done"] for r in maple.by("annotator")] == [1, 3]
    printed = io.StringIO()
    with redirect_stdout(printed):
        _print_status(maple, False, 0.5)
    assert "per annotator:" in printed.getvalue()
    assert "per language" not in printed.getvalue()
    german = status.Status("t1", "detected", [progress("de", "annotator 1", ANA, 1)], 0)
    assert german.by("group") == [{"group": "de", "tasks": 4, "done": 1, "skipped": 0,
                                   "remaining": 3}]


def test_blinding_does_not_apply_with_one_editor_per_item():
    assert status.blinding(kinds.get("post-edit"), "detected") == \
        "not applicable (one editor per item)"
    assert status.blinding(kinds.get("translation"), "detected") == "detected"
    assert status.blinding(kinds.get("realism"), "enforced") == "enforced"


def test_a_push_report_names_the_intruders_and_what_a_release_would_do():
    found = ProjectRelease("de · annotator 1", "b1 · de · annotator 1", ANA,
                           (Intrusion(ADMIN, 1, BO), Intrusion(EVE, 2)), 3, 1, 2,
                           applied=False)
    report = PushReport("b1", [], [], {}, "detected", intrusions=(found,))
    assert report.intrusion_notes() == [
        "Someone other than the assigned annotator worked in 1 project(s); nothing was "
        "released. `python -m audit review release b1` would:",
        f"de · annotator 1: {ADMIN} 1 annotation made on behalf of {BO}; {EVE} 2 "
        "annotations; would delete 1 annotation and re-import 2 tasks"]
    assert PushReport("b1", [], [], {}, "detected").intrusion_notes() == []
