"""The 18 V1.1 flags on hand-built rows: exact locations, and agreement with the shipped
flags the reference rules (devkit.synth) computed for the same rows."""

from __future__ import annotations

import pytest
from conftest import located, record, scan_records, source, view

ID = "5a0000000000000000000001"


def only(result, check):
    return located(result, check)


def assert_consistent(result):
    """The derived reference flags equal the shipped ones: no consistency finding."""
    assert only(result, "structural_flags_mismatch") == []
    assert only(result, "status_mismatch") == []
    assert only(result, "record_hash_mismatch") == []


def test_clean_row_has_no_findings_and_is_accepted(tmp_path):
    result = scan_records(tmp_path, [record()])
    assert result.findings.num_rows == 0
    assert result.status.to_pylist()[0]["status"] == "accepted"
    assert result.status.to_pylist()[0]["shipped_status"] == "accepted"


@pytest.mark.parametrize("blank", ["", " ", "\u00a0", "\u3000", "\t\n", "\u2003 \u2028"])
def test_unicode_whitespace_sentence_is_blank(tmp_path, blank):
    ctx = view(source())
    ctx[1][1][1] = blank
    result = scan_records(tmp_path, [record(context=ctx)])
    assert only(result, "blank_sentence") == [(ID, "p01", 1)]
    assert result.status.to_pylist()[0]["status"] == "quarantined"
    assert_consistent(result)


@pytest.mark.parametrize("not_blank", ["\u200b", "\ufeff", "—"])
def test_invisible_but_not_whitespace_is_not_blank(tmp_path, not_blank):
    ctx = view(source())
    ctx[0][1][2] = not_blank
    result = scan_records(tmp_path, [record(context=ctx)])
    assert only(result, "blank_sentence") == []
    assert_consistent(result)


def test_blank_question_and_answer(tmp_path):
    result = scan_records(tmp_path, [record(question="\u3000", answer=" ")])
    assert only(result, "blank_question") == [(ID, None, None)]
    assert only(result, "blank_answer") == [(ID, None, None)]
    assert_consistent(result)


def test_shortfall_moves_support_out_of_range_against_translated_count(tmp_path):
    ctx = view(source())
    ctx[1][1] = ctx[1][1][:1]          # Rhine keeps 1 of 2 sentences; the fact points at 1
    result = scan_records(tmp_path, [record(context=ctx)])
    assert only(result, "paragraph_sentence_shortfall") == [(ID, "p01", None)]
    assert only(result, "support_index_out_of_range") == [(ID, "p01", 1)]
    assert only(result, "source_support_index_out_of_range") == []
    assert_consistent(result)


def test_surplus(tmp_path):
    ctx = view(source())
    ctx[2][1] = ctx[2][1] + ["Eine zusätzliche Zeile."]
    result = scan_records(tmp_path, [record(context=ctx)])
    assert only(result, "paragraph_sentence_surplus") == [(ID, "p02", None)]
    assert_consistent(result)


@pytest.mark.parametrize(("first", "second", "duplicate"), [
    ("Straße", "STRASSE", True),            # casefold, not lower()
    ("ＤＡＮＵＢＥ", "Danube", True),          # NFKC folds fullwidth letters
    ("Lake  Baikal", "lake\u00a0baikal", True),  # whitespace collapsed, NBSP included
    ("می‌خواهم", "میخواهم", False),          # ZWNJ survives NFKC: different titles
    ("Dunaj", "Dunaj.", False),
])
def test_duplicate_normalized_title(tmp_path, first, second, duplicate):
    ctx = view(source())
    ctx[0][0], ctx[2][0] = first, second
    # A Persian title on a German-labelled candidate is also a real script_mismatch; this
    # test is about title normalisation, so the language checks stay out of it.
    result = scan_records(tmp_path, [record(context=ctx)],
                          skip={"script_mismatch", "language_mismatch"})
    expected = [(ID, "p02", None)] if duplicate else []
    assert only(result, "duplicate_normalized_translated_title") == expected
    assert result.status.to_pylist()[0]["status"] == ("review_required" if duplicate
                                                       else "accepted")
    assert_consistent(result)


def test_support_title_join_is_exact_and_unnormalised(tmp_path):
    src = source(supporting_facts=[["Danube ", 0], ["rhine", 1]])
    result = scan_records(tmp_path, [record(src)])
    assert only(result, "supporting_title_missing") == [(ID, None, 0), (ID, None, 1)]
    assert only(result, "support_index_out_of_range") == [(ID, None, 0), (ID, None, 1)]
    assert_consistent(result)


def test_ambiguous_support_title(tmp_path):
    src = source()
    src["context"][2][0] = "Rhine"
    result = scan_records(tmp_path, [record(src)])
    assert only(result, "supporting_title_ambiguous") == [(ID, None, 1)]
    assert only(result, "supporting_title_missing") == []
    assert_consistent(result)


def test_unknown_languages(tmp_path):
    ctx = view(source())
    ctx[1][2] = "Latin"
    result = scan_records(tmp_path, [record(context=ctx, language="Klingon")])
    assert only(result, "unknown_question_language") == [(ID, None, None)]
    assert only(result, "unknown_candidate_language") == [(ID, "p01", None)]
    assert_consistent(result)


def test_english_identity(tmp_path):
    src = source()
    ctx = view(src, languages=("English", "English", "German"))
    ctx[0] = [src["context"][0][0], list(src["context"][0][1]), "English"]   # exact: fine
    ctx[1] = [src["context"][1][0], ["The Rhine starts in the Alps.", "It flows north."],
              "English"]                                                   # lost a space
    result = scan_records(tmp_path, [record(src, ctx, question=src["question"] + " ",
                                            answer=src["answer"], language="English")])
    assert only(result, "english_identity_mismatch") == [(ID, None, None), (ID, "p01", None)]
    assert_consistent(result)


def test_dropped_candidate_leaves_a_gap(tmp_path):
    ctx = view(source())
    ctx[1][0] = None                 # title not a string: the builder drops the candidate
    result = scan_records(tmp_path, [record(context=ctx)])
    assert only(result, "invalid_candidate") == [(ID, "p01", None)]
    assert only(result, "support_index_out_of_range") == [(ID, "p01", 1)]
    assert_consistent(result)


def test_source_shape_flags_need_the_source_and_are_carried_without_it(tmp_path):
    src = source(supporting_facts=[["Danube", 0], ["Rhine", -1]])
    src["context"][2] = ["Seine", "not a list"]
    ctx = view(source())[:2]
    rec = record(src, ctx)
    assert rec["structural_flags"] == ["candidate_count_mismatch", "malformed_supporting_fact"]
    without = scan_records(tmp_path / "a", [rec])
    for flag in ("candidate_count_mismatch", "malformed_supporting_fact"):
        assert only(without, flag) == [(ID, None, None)]
        assert "cannot show" in next(r["detail"] for r in without.findings.to_pylist()
                                     if r["check"] == flag)
    assert_consistent(without)
    with_source = scan_records(tmp_path / "b", [rec], {"validation": [src]})
    for flag in ("candidate_count_mismatch", "malformed_supporting_fact"):
        assert only(with_source, flag) == [(ID, None, None)]
    assert "source has 3 paragraphs, translation 2" in [
        r["detail"] for r in with_source.findings.to_pylist()]
    assert_consistent(with_source)


def test_invalid_source_candidate_with_source(tmp_path):
    src = source()
    src["context"][1] = ["Rhine", [1, 2]]
    rec = record(src, view(source()))
    assert "invalid_source_candidate" in rec["structural_flags"]
    result = scan_records(tmp_path, [rec], {"validation": [src]})
    assert only(result, "invalid_source_candidate") == [(ID, "p01", None)]
    assert_consistent(result)


def test_tampered_release_is_caught(tmp_path):
    clean, blank = record(), record(question=" ", position=1)
    blank["id"] = blank["source_id"] = "5a0000000000000000000002"
    blank["status"] = "accepted"               # lies about its status …
    blank["structural_flags"] = []             # … and its flags
    blank["record_sha256"] = __import__("devkit.synth", fromlist=["x"]).record_sha256(blank)
    clean["record_sha256"] = "0" * 64          # content no longer matches the checksum
    result = scan_records(tmp_path, [clean, blank])
    assert only(result, "status_mismatch") == [("5a0000000000000000000002", None, None)]
    assert only(result, "structural_flags_mismatch") == [
        ("5a0000000000000000000002", None, None)]
    assert only(result, "record_hash_mismatch") == [(ID, None, None)]
    details = {r["check"]: r["detail"] for r in result.findings.to_pylist()}
    assert details["status_mismatch"] == "shipped accepted, the release rule gives quarantined"
    assert details["structural_flags_mismatch"] == "derived only: blank_question"
