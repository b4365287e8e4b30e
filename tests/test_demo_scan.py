"""End to end: scanning the bundled demo release finds exactly what its oracle expects."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from audit.engine.scan import scan_release
from audit.settings import DEMO

# Language compliance has no independent oracle: its expected units are the planted ones,
# in expected_findings.json "language_findings" (see devkit/demo/build.py).
LANGUAGE = {"script_mismatch", "language_mismatch"}


@pytest.fixture(scope="module")
def result():
    return scan_release()


@pytest.fixture(scope="module")
def expected():
    return json.loads((DEMO / "expected_findings.json").read_text("utf-8"))


def key(f: dict) -> tuple:
    return (f["id"], f["source_split"], f["check"], f["paragraph_id"], f["sentence_index"])


def test_findings_equal_the_oracle(result, expected):
    ours = Counter(key(f) for f in result.findings.to_pylist() if f["check"] not in LANGUAGE)
    theirs = Counter(key(f) for f in expected["findings"])
    assert ours - theirs == Counter(), "findings the oracle does not expect"
    assert theirs - ours == Counter(), "expected findings the scan missed"
    assert sum(ours.values()) == 543


def test_language_checks_find_the_planted_units_and_nothing_else(result, expected):
    ours = Counter(key(f) for f in result.findings.to_pylist() if f["check"] in LANGUAGE)
    theirs = Counter(key(f) for f in expected["language_findings"])
    assert ours - theirs == Counter(), "language findings on units nobody planted"
    assert theirs - ours == Counter(), "planted wrong-language units the scan missed"
    assert Counter(check for _, _, check, _, _ in ours.elements()) == {
        "script_mismatch": 19, "language_mismatch": 10}


def test_language_findings_say_what_was_detected(result):
    details = {(f["source_split"], f["paragraph_id"], f["sentence_index"], f["detail"])
               for f in result.findings.to_pylist() if f["check"] in LANGUAGE}
    assert ("validation", "p02", None, "title: Greek, expected Cyrillic") in details
    assert ("validation", "p02", 0, "sentence: Greek, expected Cyrillic") in details
    assert ("train", "p05", 1, "sentence: Japanese, expected Han") in details
    assert ("train", "p03", 1, "sentence: Bengali, expected Devanagari") in details
    assert ("validation", "p05", 0, "sentence: Latin, expected Hangul") in details
    paragraphs = sorted(re.sub(r" \(\d\.\d\d\)", "", d) for _, _, _, d in details
                        if d.startswith("paragraph:"))
    assert paragraphs == [f"paragraph: detected {a}, assigned {b}" for a, b in (
        ("el", "ru"), ("el", "ru"), ("es", "pt"), ("es", "pt"), ("ja", "zh"), ("ja", "zh"),
        ("nl", "de"), ("nl", "de"))]
    questions = sorted(d for _, _, _, d in details if d.startswith("question:"))
    assert questions == ["question: detected ur (1.00), assigned fa"] * 2


def test_exact_copy_categories_equal_the_oracle(result, expected):
    ours = Counter((key(f), f["category"]) for f in result.findings.to_pylist()
                   if f["check"] == "exact_source_copy")
    theirs = Counter((key(f), f["category"]) for f in expected["findings"]
                     if f["check"] == "exact_source_copy")
    assert ours == theirs
    assert Counter(c for _, c in ours.elements()) == {"name_like": 371, "number_or_date": 46,
                                                      "sentence": 13}


def test_exact_counts(result):
    summary = result.summary
    assert summary["rows"] == 240
    assert summary["rows_per_split"] == {"train": 144, "validation": 96}
    assert summary["shipped_status_counts"] == {"accepted": 197, "review_required": 4,
                                                "quarantined": 39}
    assert summary["check_counts"]["status_mismatch"] == 2
    assert summary["check_counts"]["record_hash_mismatch"] == 2
    assert summary["checks_from_shipped_flags"] == ["invalid_candidate", "invalid_context"]


def test_inconsistency_is_reported_only_on_rows_edited_after_the_build(result, expected):
    edited = {(p["id"], p["split"]) for p in expected["planted"]
              if p["kind"] in ("structural_flags_mismatch", "record_hash_mismatch")}
    reported = {(f["id"], f["source_split"]) for f in result.findings.to_pylist()
                if f["check"] in ("structural_flags_mismatch", "record_hash_mismatch")}
    assert reported == edited and len(edited) == 4


@pytest.mark.parametrize(("skipped", "reported"), [
    ({"structural_flags_mismatch"}, {"status_mismatch": 2}),
    ({"status_mismatch"}, {"structural_flags_mismatch": 2}),   # still run, as it says
])
def test_skipping_a_consistency_check_reports_none_of_its_findings(result, skipped, reported):
    from audit.engine import scan
    from audit.io import release
    from audit.settings import DEMO_RELEASE, demo_sources
    assert result.summary["check_counts"]["structural_flags_mismatch"] == 2
    skipping = scan.run(release.open_release(DEMO_RELEASE, demo_sources()),
                        skip=frozenset(skipped))
    counts = skipping.summary["check_counts"]
    assert skipping.summary["checks_skipped"] == sorted(skipped)
    assert {name: counts[name] for name in ("status_mismatch", "structural_flags_mismatch")
            if name in counts} == reported
    assert set(skipping.findings.column("severity").to_pylist()) <= {
        "blocking", "review", "info"}
