"""End to end: scanning the bundled demo release finds exactly what its oracle expects."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from audit.workspace import DEMO, scan_release


@pytest.fixture(scope="module")
def result():
    return scan_release()


@pytest.fixture(scope="module")
def expected():
    return json.loads((DEMO / "expected_findings.json").read_text("utf-8"))


def key(f: dict) -> tuple:
    return (f["id"], f["source_split"], f["check"], f["paragraph_id"], f["sentence_index"])


def test_findings_equal_the_oracle(result, expected):
    ours = Counter(key(f) for f in result.findings.to_pylist())
    theirs = Counter(key(f) for f in expected["findings"])
    assert ours - theirs == Counter(), "findings the oracle does not expect"
    assert theirs - ours == Counter(), "expected findings the scan missed"
    assert sum(ours.values()) == 518


def test_exact_copy_categories_equal_the_oracle(result, expected):
    ours = Counter((key(f), f["category"]) for f in result.findings.to_pylist()
                   if f["check"] == "exact_source_copy")
    theirs = Counter((key(f), f["category"]) for f in expected["findings"]
                     if f["check"] == "exact_source_copy")
    assert ours == theirs
    assert Counter(c for _, c in ours.elements()) == {"name_like": 370, "number_or_date": 46,
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
