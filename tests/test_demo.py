"""The committed demo release is reproducible and its oracle covers every planted defect."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from audit.languages import CODES, VIEW_ORDER
from devkit import synth
from devkit.demo import build, instances, oracle

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "data/demo"
SPLITS = ("train", "validation")
CHECKS = {
    # SPEC §2
    "blank_question", "blank_answer", "unknown_question_language", "english_identity_mismatch",
    "invalid_source_context", "invalid_context", "candidate_count_mismatch",
    "invalid_candidate", "invalid_source_candidate", "unknown_candidate_language",
    "blank_sentence", "paragraph_sentence_shortfall", "paragraph_sentence_surplus",
    "malformed_supporting_fact", "supporting_title_missing", "supporting_title_ambiguous",
    "support_index_out_of_range", "duplicate_normalized_translated_title",
    # SPEC §3 and release consistency
    "exact_source_copy", "placeholder_sentence", "invalid_unicode", "source_blank_sentence",
    "source_support_index_out_of_range", "record_hash_mismatch", "status_mismatch",
    "structural_flags_mismatch", "duplicate_id", "unexpected_source_id", "missing_source_id",
    "invisible_control",
}
# Language compliance: planted, and expected in `language_findings` (no independent oracle).
LANGUAGE = {"script_mismatch", "language_mismatch"}


def read_rows(root: Path) -> dict[str, list[dict]]:
    return {s: pq.read_table(root / "release" / f"{s}-00000.parquet").to_pylist()
            for s in SPLITS}


def read_sources(root: Path) -> dict[str, list[dict]]:
    return {s: json.loads((root / f"hotpot_source_{s}.json").read_text("utf-8"))
            for s in SPLITS}


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((DEMO / "expected_findings.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def rows() -> dict[str, list[dict]]:
    return read_rows(DEMO)


def location(f: dict) -> tuple:
    """The same key for a finding and for a plant/negative-control record."""
    split = f["source_split"] if "source_split" in f else f["split"]
    check = f["check"] if "check" in f else f["kind"]
    return (f["id"], split, f["release_position"], check, f["paragraph_id"],
            f["sentence_index"])


def test_devkit_demo_regenerates_the_committed_release_byte_for_byte(tmp_path: Path) -> None:
    """`python -m devkit demo --out DIR` writes exactly the files data/demo/ ships, each
    byte-identical: the JSON is rendered deterministically and the Parquet is written by
    the pinned pyarrow (whose version its footer names), so no file needs a looser compare.
    data/demo/ holds nothing else but the hand-written text bank and README."""
    done = subprocess.run([sys.executable, "-m", "devkit", "demo", "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["rows"] == {"train": 144, "validation": 96}
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                     if p.is_file())
    assert written == ["expected_findings.json", "hotpot_source_train.json",
                       "hotpot_source_validation.json", "release/train-00000.parquet",
                       "release/validation-00000.parquet"]
    for name in written:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name
    shipped = {p.relative_to(DEMO).as_posix() for p in DEMO.rglob("*") if p.is_file()}
    assert shipped - set(written) == {"README.md"} | {f"text/{code}.json" for code in CODES}
    for split in SPLITS:
        assert pq.read_table(tmp_path / "release" / f"{split}-00000.parquet").schema.equals(
            synth.V11_SCHEMA)


def test_oracle_recomputed_from_the_files_matches(expected: dict, rows: dict) -> None:
    findings, _ = oracle.compute_findings(rows, read_sources(DEMO),
                                        expected["generator"]["shapes"])
    assert findings == expected["findings"]


def test_every_planted_defect_is_found_where_planted(expected: dict) -> None:
    found = {location(f) for f in expected["findings"] + expected["language_findings"]}
    for plant in expected["planted"]:
        if plant["kind"] == "missing_source_id":
            assert (plant["id"], plant["split"], None, "missing_source_id", None, None) in found
        else:
            assert location(plant) in found, plant
    kinds = {p["kind"] for p in expected["planted"]}
    assert kinds == CHECKS | LANGUAGE
    for split in SPLITS:  # every kind in both splits, except where the view rule forbids it
        split_kinds = {p["kind"] for p in expected["planted"] if p["split"] == split}
        assert (CHECKS | LANGUAGE) - split_kinds <= (
            {"unknown_question_language"} if split == "train" else set())
    # Three checks fire where nothing was planted for them: view_context_drift on the
    # duplicate_id plant's twin (another build of the same source, fresh candidate
    # languages, test below), and the preservation checks where the hand-written text bank
    # renders an answer or entity otherwise than the release's renderings or ICU.
    assert {f["check"] for f in expected["findings"]} == CHECKS | {
        "view_context_drift", "answer_not_in_evidence", "bridge_entity_lost"}
    # language_findings are exactly the planted language units
    assert Counter(map(location, expected["language_findings"])) == Counter(
        location(p) for p in expected["planted"] if p["kind"] in LANGUAGE)
    assert {f["check"] for f in expected["language_findings"]} == LANGUAGE
    assert len(oracle.STRUCTURAL_CHECKS) == 18 and oracle.STRUCTURAL_CHECKS <= CHECKS


def test_negative_controls_are_not_reported(expected: dict) -> None:
    found = {location(f) for f in expected["findings"]}
    assert {n["kind"] for n in expected["negative_controls"]} == {
        "blank_sentence", "placeholder_sentence", "duplicate_normalized_translated_title",
        "invisible_control"}
    for control in expected["negative_controls"]:
        key = location(control)
        assert key not in found, control
        if control["kind"] == "duplicate_normalized_translated_title":
            assert not any(f["id"] == control["id"] and f["check"] == control["kind"]
                           for f in expected["findings"])


def test_planted_text_edge_cases_are_in_the_release(rows: dict) -> None:
    sentences = {s for split in SPLITS for r in rows[split] for c in r["candidates"]
                 for s in c["sentences"]}
    titles = {c["title"] for split in SPLITS for r in rows[split] for c in r["candidates"]}
    assert {"", " ", "\u00a0", "\u3000", "\t", "\u200b", "—", "..."} <= sentences
    assert {"ＤＡＮＵＢＥ", "Danube", "Straße", "STRASSE", "Lake  Baikal", "lake baikal",
            "Rhein", "Rh\u200cein"} <= titles
    assert any("\ufffd" in s for s in sentences)
    assert any("\x07" in t for t in titles)
    assert any("\x9b" in r["question"] for r in rows["validation"])


def test_sources_carry_the_planted_source_anomalies() -> None:
    sources = read_sources(DEMO)
    records = sources["train"] + sources["validation"]
    assert sum(not isinstance(r["context"], list) for r in records) == 2
    entries = [e for r in records if isinstance(r["context"], list) for e in r["context"]]
    assert sum(not (isinstance(e[0], str) and isinstance(e[1], list)) for e in entries) == 2
    facts = [f for r in records for f in r["supporting_facts"]]
    assert ["Danube", -1] in facts and ["Danube", "2"] in facts and ["Rhine ", 2] in facts
    assert any(s == "" for e in entries if isinstance(e[1], list) for s in e[1])


def test_question_languages_and_views(rows: dict) -> None:
    names = {name for name in VIEW_ORDER}
    for split in SPLITS:
        assert names <= {r["question_language_name"] for r in rows[split]}
    for row in rows["train"]:
        assert row["legacy_view_index"] == instances.train_view(row["id"])
        assert row["question_language_name"] == VIEW_ORDER[row["legacy_view_index"]]
    assert {r["legacy_view_index"] for r in rows["validation"]} == {0}
    for split in SPLITS:
        assert [r["release_position"] for r in rows[split]] == list(range(len(rows[split])))


def test_shipped_status_counts(expected: dict, rows: dict) -> None:
    for split in SPLITS:
        counts = Counter(r["status"] for r in rows[split])
        assert counts == expected["status_counts_shipped"][split]
        assert set(counts) == {"accepted", "review_required", "quarantined"}


def test_exact_copy_categories(expected: dict) -> None:
    copies = [f for f in expected["findings"] if f["check"] == "exact_source_copy"]
    seen = {(f["unit"], f["category"]) for f in copies}
    assert {("answer", "number_or_date"), ("title", "name_like"),
            ("sentence", "sentence")} <= seen
    assert oracle.copy_category("1661") == "number_or_date"
    assert oracle.copy_category("J. R. R. Tolkien") == "name_like"
    assert oracle.copy_category("Lise Meitner") == "name_like"
    assert oracle.copy_category("Duke of the Netherlands") == "name_like"
    assert oracle.copy_category("—") == "punctuation"
    assert oracle.copy_category("It is long.") == "sentence"


def test_demo_is_small() -> None:
    size = sum(p.stat().st_size for p in DEMO.rglob("*") if p.is_file())
    assert size < 1_000_000


def test_missing_text_file_is_named(tmp_path: Path) -> None:
    text = tmp_path / "text"
    shutil.copytree(DEMO / "text", text)
    (text / "sw.json").unlink()
    with pytest.raises(FileNotFoundError, match="sw.json"):
        build.generate_demo(tmp_path / "out", text_dir=text)
    assert len(CODES) == 24


def test_the_duplicates_twin_drifts_from_its_sibling(expected: dict) -> None:
    """The duplicate_id plant rebuilds a source with fresh candidate languages: the twin
    (the split's last row) is a view whose context differs, at every paragraph whose
    language changed."""
    twins = {(p["id"], p["split"]) for p in expected["planted"] if p["kind"] == "duplicate_id"}
    drift = [f for f in expected["findings"] if f["check"] == "view_context_drift"]
    assert {(f["id"], f["source_split"]) for f in drift} == twins
    assert Counter(f["release_position"] for f in drift) == {143: 4, 95: 6}
    assert {f["sentence_index"] for f in drift} == {None}


def test_preservation_findings_on_the_text_bank(expected: dict) -> None:
    found = Counter(f["check"] for f in expected["findings"]
                    if f["check"] in ("answer_not_in_evidence", "bridge_entity_lost"))
    # Three bridge units are "J. R. R. Tolkien" written "জে. আর. আর. টোলকিনের" in Bengali,
    # where the release holds no Bengali rendering: found word by word (issue 47).
    assert found == {"answer_not_in_evidence": 11, "bridge_entity_lost": 1}
