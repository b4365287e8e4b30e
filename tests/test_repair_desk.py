"""What the Repair page works with, headless (audit.repair.desk): a release's repair area,
its applies, one apply's outcomes read back from the record, the character-level diff and
its rendering."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
import repair_demo

from audit.engine.scan import scan_release
from audit.errors import InputError
from audit.repair import apply as repair
from audit.repair import corrections, desk, plan
from audit.reports import render


@pytest.fixture(scope="module")
def demo():
    return scan_release()


@pytest.fixture(scope="module")
def applied(demo, tmp_path_factory):
    root = tmp_path_factory.mktemp("repairs")
    area = desk.area(root, demo.release)
    fixes = repair_demo.write_fixes(demo, root / "fixes.jsonl")
    first = repair.apply(demo.release, corrections.read_file(fixes, "Editor"),
                         desk.next_out(area), workspace=desk.workspace(area))
    held = next(e["correction_id"] for e in first.manifest["held"])
    second = repair.apply(demo.release, [], desk.next_out(area),
                          workspace=desk.workspace(area),
                          decisions=[repair.Decision("accepted", held, "Reviewer")])
    return {"area": area, "first": first.out, "second": second.out, "held": held}


def test_the_area_is_named_by_the_release_content_not_its_path(demo, tmp_path):
    digest = hashlib.sha256("\n".join(demo.release.content).encode()).hexdigest()
    assert desk.area(tmp_path, demo.release) == tmp_path / digest[:16]
    moment = dt.datetime(2026, 12, 2, 15, 4, 5, 123456, tzinfo=dt.timezone.utc)
    assert desk.next_out(tmp_path, moment).name == "corrected-20261202T150405123456Z"


def test_outcomes_list_the_held_correction_first_with_its_texts_and_verdicts(applied):
    rows = desk.outcomes(applied["first"]).to_pylist()
    assert [(r["action"], r["row_id"], r["language"]) for r in rows] == [
        ("held", repair_demo.TURKISH[0], "tr"), ("applied", repair_demo.DUTCH[0], "nl")]
    held, done = rows
    assert (held["old_text"], held["new_text"]) == ("", repair_demo.TURKISH[3])
    assert held["fixed"] == ["blank_sentence"] and held["introduced"] == ["near_source_copy"]
    assert held["held_for"][0].startswith("near_source_copy")
    assert done["old_text"] == "Ze werkte drie decen\ufffdnia lang in Berlijn."
    assert (done["fixed"], done["introduced"], done["held_for"]) == (
        ["invalid_unicode"], [], [])
    assert {f["check"] for f in done["before"]} == {"invalid_unicode"} and done["after"] == []
    assert {r["author"] for r in rows} == {"Editor"}


def test_an_accept_applies_the_held_correction_from_the_workspace_alone(applied):
    listed = desk.applies(applied["area"])
    assert [a["out"] for a in listed] == [applied["second"], applied["first"]]   # newest first
    assert [(a["counts"]["applied"], a["counts"]["held"]) for a in listed] == [(2, 0), (1, 1)]
    second = {r["correction_id"]: r for r in desk.outcomes(applied["second"]).to_pylist()}
    assert second[applied["held"]]["action"] == "applied"
    assert second[applied["held"]]["note"] == "accepted by Reviewer despite its findings"


def test_a_damaged_manifest_is_named_and_listed_as_such(applied, tmp_path):
    broken = tmp_path / "corrected-20260101T000000000000Z"
    broken.mkdir()
    (broken / "repair_manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="repair_manifest.json.*unreadable"):
        desk.manifest(broken)
    assert desk.applies(tmp_path)[0]["out"] == broken and "problem" in desk.applies(tmp_path)[0]


def test_select_narrows_by_status_check_and_language(demo):
    work = plan.work_list(demo)
    dutch = desk.select(work, [], ["invalid_unicode"], ["nl"]).to_pylist()
    assert [(u["id"], u["sentence_index"]) for u in dutch] == [(repair_demo.DUTCH[0], 1)]
    assert desk.select(work, [], [], []).num_rows == work.num_rows == 72
    quarantined = desk.select(work, ["quarantined"], [], [])
    assert set(quarantined.column("status").to_pylist()) == {"quarantined"}
    assert 0 < quarantined.num_rows < work.num_rows


def test_char_diff_marks_only_what_changed():
    assert desk.char_diff("Ze werkte drie decen\ufffdnia lang.", "Ze werkte drie decennia lang.") \
        == [(0, "Ze werkte drie decen"), (-1, "\ufffd"), (0, "nia lang.")]
    assert desk.char_diff("The cat sat on the mat.", "The dog sat on a mat.") == [
        (0, "The "), (-1, "cat"), (1, "dog"), (0, " sat on "), (-1, "the"), (1, "a"),
        (0, " mat.")]
    assert desk.char_diff("", "Yeni cümle.") == [(1, "Yeni cümle.")]


def test_the_diff_renders_each_side_escaped_and_right_to_left_where_the_language_is():
    pieces = desk.char_diff("<b>x</b> ١٢", "<b>y</b> ١٢")
    old, new = render.diff(pieces, "old"), render.diff(pieces, "new", "ar")
    assert old == ('<div class="xt" dir="auto">&#60;b&#62;<del class="d-del">x</del>&#60;&#47;b'
                   '&#62; ١٢</div>')
    assert new.startswith('<div class="xt xt-rtl" lang="ar" dir="auto">&#60;b&#62;<ins '
                          'class="d-ins">y</ins>')
    # A hidden character that changed is shown as its token, never invisible.
    rlo = render.diff(desk.char_diff("ab", "a\u202eb"), "new")
    assert "⟨U+202E⟩" in rlo and "\u202e" not in rlo
    assert render.diff(desk.char_diff("", "Yeni."), "old") == \
        '<div class="missing">(empty: no old text)</div>'
    with pytest.raises(ValueError):
        render.diff(pieces, "both")


def test_paragraph_lines_split_a_paragraph_into_its_sentences():
    text = json.dumps(["Eins.", "Zwei."], ensure_ascii=False, separators=(",", ":"))
    assert desk.paragraph_lines("paragraph", text) == ["Eins.", "Zwei."]
    assert desk.paragraph_lines("sentence", "Eins.") == ["Eins."]
    assert desk.paragraph_lines("answer", None) == [""]
