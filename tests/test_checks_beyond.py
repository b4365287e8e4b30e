"""Checks the reference lacks (SPEC §3) and the release-level reconciliation checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import located, record, scan_records, source, view

from audit.analysis import queries
from audit.engine import scan
from audit.io import release as readers
from audit.settings import DEMO_RELEASE, demo_sources

ID = "5a0000000000000000000001"


def categories(result):
    return sorted((r["paragraph_id"] or "", -1 if r["sentence_index"] is None
                   else r["sentence_index"], r["category"])
                  for r in result.findings.to_pylist() if r["check"] == "exact_source_copy")


def test_exact_copies_are_located_and_categorised(tmp_path):
    src = source()
    src["context"][2] = ["Seine", ["The Seine flows through Paris.", "1,642 – 1,700", "—!?",
                                   "Notre-Dame de Paris"]]
    ctx = view(src)
    ctx[0][0] = "Danube"                                    # title kept: a name
    ctx[2][1] = list(src["context"][2][1])                  # four copied sentences
    rec = record(src, ctx, question=src["question"], answer="Danube")
    result = scan_records(tmp_path, [rec])
    assert categories(result) == [
        ("", -1, "name_like"),                  # answer "Danube"
        ("", -1, "sentence"),                   # the question
        ("p00", -1, "name_like"),               # title
        ("p02", 0, "sentence"),
        ("p02", 1, "number_or_date"),
        ("p02", 2, "punctuation"),
        ("p02", 3, "name_like"),
    ]
    assert result.status.to_pylist()[0]["status"] == "review_required"
    severities = {r["category"]: r["severity"] for r in result.findings.to_pylist()
                  if r["check"] == "exact_source_copy"}
    assert severities == {"name_like": "info", "number_or_date": "info",
                          "punctuation": "info", "sentence": "review"}
    # The Spanish-assigned paragraph left in English is also a language mismatch.
    assert located(result, "language_mismatch") == [(ID, "p02", None)]
    assert result.status.to_pylist()[0]["flags"] == ["exact_source_copy", "language_mismatch"]


def test_policy_can_rate_one_copy_category(tmp_path):
    from audit.engine import policy as policies
    path = tmp_path / "p.json"
    path.write_text('{"severity": {"exact_source_copy:name_like": "blocking"}}')
    rules = policies.load(path)
    assert rules.severity("exact_source_copy", "name_like") == "blocking"
    assert rules.severity("exact_source_copy", "number_or_date") == "info"
    assert rules.severity("exact_source_copy", "sentence") == "review"
    path.write_text('{"severity": {"exact_source_copy": "blocking"}}')
    assert policies.load(path).severity("exact_source_copy", "name_like") == "blocking"


def test_english_units_are_never_copies(tmp_path):
    src = source()
    ctx = view(src, languages=("English", "German", "French"))
    ctx[0] = [src["context"][0][0], list(src["context"][0][1]), "English"]
    result = scan_records(tmp_path, [record(src, ctx, question=src["question"],
                                            answer=src["answer"], language="English")])
    assert located(result, "exact_source_copy") == []
    assert result.findings.num_rows == 0


@pytest.mark.parametrize(("text", "source_text", "flagged"), [
    ("—", "It flows east.", True),
    (" … ", "It flows east.", True),
    ("N/A", "It flows east.", True),
    ("—", "", False),          # the source itself is blank: inherited, not a placeholder
    ("—", ".", False),         # one-character sources were legitimately replaced
    ("— and more", "It flows east.", False),
])
def test_placeholder_sentence(tmp_path, text, source_text, flagged):
    src = source()
    src["context"][0][1][1] = source_text
    ctx = view(src)
    ctx[0][1][1] = text
    result = scan_records(tmp_path, [record(src, ctx)])
    assert located(result, "placeholder_sentence") == ([(ID, "p00", 1)] if flagged else [])


def test_invalid_unicode_everywhere(tmp_path):
    ctx = view(source())
    ctx[0][0] = "Donau\x07"
    ctx[1][1][0] = "Der Rhein \ufffd entspringt."
    ctx[1][1][1] = "Tab\tand newline\n are fine."
    result = scan_records(tmp_path, [record(context=ctx, question="Welcher\x9b Fluss?")])
    assert located(result, "invalid_unicode") == [(ID, None, None), (ID, "p00", None),
                                                  (ID, "p01", 0)]


def test_inherited_source_anomalies(tmp_path):
    src = source(supporting_facts=[["Danube", 0], ["Rhine", 7]])
    src["context"][1][1].append("")
    ctx = view(source())
    ctx[1][1] = ctx[1][1] + ["—"]
    result = scan_records(tmp_path, [record(src, ctx)])
    assert located(result, "source_blank_sentence") == [(ID, "p01", 2)]
    assert located(result, "source_support_index_out_of_range") == [(ID, "p01", 7)]
    assert located(result, "support_index_out_of_range") == [(ID, "p01", 7)]
    assert located(result, "placeholder_sentence") == []
    origins = {r["check"]: r["origin"] for r in result.findings.to_pylist()}
    assert origins["source_blank_sentence"] == "source"
    assert origins["support_index_out_of_range"] == "translation"


def test_reconciliation_with_the_source(tmp_path):
    a = record(position=0)
    b = record(source(_id="5a0000000000000000000002"), position=1)
    twin = record(source(_id="5a0000000000000000000002"), position=2)
    stray = record(source(_id="5a00000000000000000000ff"), position=3)
    sources = {"validation": [source(), source(_id="5a0000000000000000000002"),
                              source(_id="5a0000000000000000000003")]}
    result = scan_records(tmp_path, [a, b, twin, stray], sources)
    assert located(result, "duplicate_id") == [("5a0000000000000000000002", None, None)] * 2
    assert located(result, "missing_source_id") == [("5a0000000000000000000003", None, None)]
    assert located(result, "unexpected_source_id") == [("5a00000000000000000000ff", None, None)]
    assert result.status.num_rows == 4           # one status row per release row
    missing = next(r for r in result.findings.to_pylist() if r["check"] == "missing_source_id")
    assert missing["row"] is None and missing["source_split"] == "validation"


def test_a_file_of_both_splits_given_as_one_splits_source_is_named(tmp_path):
    """The demo's train and validation sources joined into one file and given as the train
    source: each validation record the file holds is missing as a train row, and says the
    release has it as a validation row; the validation split has no source of its own."""
    files = dict(spec.split("=", 1) for spec in demo_sources())
    both = [*json.loads(Path(files["train"]).read_text()),
            *json.loads(Path(files["validation"]).read_text())]
    (tmp_path / "hotpot_both.json").write_text(json.dumps(both))
    result = scan.run(readers.open_release(DEMO_RELEASE,
                                           [f"train={tmp_path / 'hotpot_both.json'}"]))
    missing = [f for f in result.findings.to_pylist() if f["check"] == "missing_source_id"]
    named = [f for f in missing if "the release has it as a validation row" in f["detail"]]
    assert (len(missing), len(named)) == (96, 94)
    assert named[0]["detail"].endswith("has no train row; the release has it as a validation "
                                       "row (is this file both splits? give each split its "
                                       "own source)")
    assert queries.splits_without_source(result) == {"validation": 96}
