"""A corrected release in the input's own layout: V2 RC1 (the 197-row real-text sample
whose flags, status and checksums the reference V2 builder computed) and canonical JSONL
(checksums by the toolkit's rule, every other line byte for byte)."""

from __future__ import annotations

import hashlib
import json
import sys

import pyarrow.parquet as pq
import pytest
import realdata_release
import repair_helpers as rh
from test_compare import record as jsonl_record

from audit.engine import scan
from audit.io import release as readers
from audit.io.digests import text_sha256
from audit.io.layouts import jsonl
from audit.repair import plan, record

V2_SAMPLE = "xhotpotqa_v2_sample/xhotpotqa_v2_sample.parquet"
BLANK_ROW, COUNT_ROW, COPY_ROW = ("xhp-validation-5a8133725542995ce29dcbdb",
                                  "xhp-train-5ade9c9c5542997c77adee8c",
                                  "xhp-train-5a84e21d5542997b5ce3ff7c")


def _findings(path) -> set[tuple]:
    result = scan.run(readers.open_release(path), skip=frozenset(rh.HEURISTICS))
    return {(r["id"], r["check"], r["paragraph_id"], r["sentence_index"])
            for r in result.findings.to_pylist()}


def _canonical(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@pytest.fixture(scope="module")
def v2(tmp_path_factory, realdata):
    sample = realdata / V2_SAMPLE
    folder = tmp_path_factory.mktemp("repair_v2")
    release = readers.open_release(sample)
    scanned = scan.run(release, skip=frozenset(rh.HEURISTICS))
    work = {(u["id"], u["unit"]): u for u in plan.work_list(scanned).to_pylist()}
    ntrex = realdata_release.load_ntrex()
    blank, count = work[(BLANK_ROW, "sentence")], work[(COUNT_ROW, "paragraph")]
    question = work[(COPY_ROW, "question")]
    assert count["required_for"] == ["xhotpot:sentence_count_mismatch"]
    assert (len(count["sentences"]), len(count["source_sentences"])) == (6, 5)
    lines = [
        {"id": BLANK_ROW, "unit": "sentence", "paragraph_id": blank["paragraph_id"],
         "sentence_index": blank["sentence_index"], "old_sha256": blank["old_sha256"],
         "text": ntrex[blank["language"]][11], "author": "editor"},
        {"id": COUNT_ROW, "unit": "paragraph", "paragraph_id": count["paragraph_id"],
         "old_sha256": count["old_sha256"], "sentences": count["sentences"][:5],
         "author": "editor"},
        {"id": COPY_ROW, "unit": "question", "old_sha256": question["old_sha256"],
         "text": ntrex[question["language"]][10], "author": "editor"},
    ]
    fixes = rh.write_lines(folder / "fixes.jsonl", lines)
    out = folder / "corrected"
    done = rh.cli("repair", "apply", sample, "--corrections", fixes, "--out", out,
                  *rh.SKIP_HEURISTICS)
    assert done.returncode == 0, done.stderr
    return {"sample": sample, "out": out, "lines": lines}


def test_v2_corrected_in_its_own_layout_with_flags_status_and_checksum_rederived(v2):
    before, after = _findings(v2["sample"]), _findings(v2["out"])
    assert after - before == set()
    assert sorted(before - after) == [
        (COPY_ROW, "exact_source_copy", None, None), (COPY_ROW, "language_mismatch", None, None),
        (COPY_ROW, "script_mismatch", None, None),
        (COPY_ROW, "xhotpot:question_source_copy", None, None),
        (COUNT_ROW, "xhotpot:sentence_count_mismatch", "p07", None),
        (BLANK_ROW, "xhotpot:blank_translation_sentence", "p08", 0)]
    old = pq.ParquetFile(v2["sample"])
    new = pq.ParquetFile(v2["out"] / "xhotpotqa_v2_sample.parquet")
    assert new.schema_arrow.equals(old.schema_arrow, check_metadata=True)
    a = {r["id"]: r for r in old.read().to_pylist()}
    b = {r["id"]: r for r in new.read().to_pylist()}
    assert list(a) == list(b) and len(a) == 197
    assert {i for i in a if a[i] != b[i]} == {BLANK_ROW, COUNT_ROW, COPY_ROW}
    digest = json.loads((v2["out"] / "repair_manifest.json").read_text())["record"]["digest"]
    expected = {BLANK_ROW: ("review_required", [], ["provenance:assignment_manifest_hash_missing"]),
                COUNT_ROW: ("accepted", [], []),
                COPY_ROW: ("review_required", [],
                           ["provenance:assignment_manifest_hash_missing"])}
    for i, (status, structural, quality) in expected.items():
        row = b[i]
        assert (row["status"], row["structural_flags"], row["quality_flags"]) == (
            status, structural, quality)
        assert row["translation_revision"] == a[i]["translation_revision"] + f"+repair.{digest}"
        # The V2 builder's rule: the checksum of the record with that key set to "".
        assert row["release_record_sha256"] == hashlib.sha256(
            _canonical({**row, "release_record_sha256": ""}).encode()).hexdigest()
        # What describes the generator's input is the input's: kept.
        for key in ("input_record_checksum_sha256", "input_checksum_valid",
                    "source_record_sha256", "created_at"):
            assert row[key] == a[i][key]
    assert b[COUNT_ROW]["candidates"][7]["sentences"] == v2["lines"][1]["sentences"]
    assert [f["in_bounds"] for f in b[COUNT_ROW]["supporting_facts"]] == [
        f["in_bounds"] for f in a[COUNT_ROW]["supporting_facts"]]     # against the source


@pytest.fixture(scope="module")
def canonical(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repair_jsonl")
    rows = [jsonl_record(i) for i in range(4)]
    rows[1]["question"] = " "
    rows[2]["provenance"] = {"translation_revision": "rev-7",
                             "assignment_manifest_sha256": "ab" * 32, "retry_count": 3}
    for row in rows:
        row["checksum"] = jsonl.checksum(row)
    release = folder / "release.jsonl"
    # Key order as a producer wrote it, a blank line, a CRLF line: all kept where untouched.
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:2]) + "\n" + \
        json.dumps(rows[2], ensure_ascii=False) + "\r\n" + json.dumps(rows[3]) + "\n"
    release.write_bytes(text.encode("utf-8"))
    fixes = folder / "fixes.csv"
    fixes.write_text(
        "id,unit,paragraph_id,sentence_index,old_sha256,text,author\n"
        f"q1,question,,,{text_sha256(' ')},\"Welcher Fluss ist länger? (1)\",ana\n"
        f"q2,sentence,p01,0,{text_sha256('Der Rhein fließt durch sechs Länder.')},"
        "Der Rhein fließt durch sechs Staaten.,ana\n", encoding="utf-8")
    out = folder / "corrected"
    done = rh.cli("repair", "apply", release, "--corrections", fixes, "--out", out)
    assert done.returncode == 0, done.stderr
    return {"release": release, "out": out, "rows": rows}


def test_jsonl_lines_untouched_are_bytes_untouched(canonical):
    old = canonical["release"].read_bytes().splitlines(keepends=True)
    new = (canonical["out"] / "release.jsonl").read_bytes().splitlines(keepends=True)
    assert len(old) == len(new) == 5
    assert [i for i, (a, b) in enumerate(zip(old, new)) if a != b] == [1, 3]
    assert new[3].endswith(b"\r\n") and new[1].endswith(b"\n")
    digest = json.loads((canonical["out"] / "repair_manifest.json").read_text()
                        )["record"]["digest"]
    q1, q2 = json.loads(new[1]), json.loads(new[3])
    assert new[1] == (_canonical(q1) + "\n").encode("utf-8")
    assert q1["question"] == "Welcher Fluss ist länger? (1)"
    assert q2["candidates"][1]["sentences"] == ["Der Rhein fließt durch sechs Staaten."]
    assert q1["provenance"] == {"translation_revision": f"+repair.{digest}"}
    assert q2["provenance"] == {"translation_revision": f"rev-7+repair.{digest}",
                                "assignment_manifest_sha256": "ab" * 32, "retry_count": 3}
    for row in (q1, q2):
        assert row["checksum"] == jsonl.checksum(row) != ""
    assert readers.open_release(canonical["out"]).rows == 4


def test_jsonl_checksum_is_the_toolkit_s_own(canonical, tmp_path):
    toolkit = rh.toolkit(tmp_path)
    if toolkit is None:
        pytest.skip("the XHotpotQA reference toolkit is not on this machine")
    sys.path.insert(0, str(toolkit / "src"))
    try:
        from xhotpotqa.data.checksum import compute_checksum
        from xhotpotqa.data.models import XHotpotInstance
        rows = [json.loads(line) for line in
                (canonical["out"] / "release.jsonl").read_text().splitlines() if line.strip()]
        assert [compute_checksum(XHotpotInstance.from_dict(r)) for r in rows] == [
            r["checksum"] for r in rows]
        assert len({r["checksum"] for r in rows}) == 4
    finally:
        sys.path.remove(str(toolkit / "src"))
        for name in [m for m in sys.modules if m == "xhotpotqa" or m.startswith("xhotpotqa.")]:
            del sys.modules[name]


def test_jsonl_record_and_manifest(canonical):
    manifest = json.loads((canonical["out"] / "repair_manifest.json").read_text())
    assert manifest["layout"] == "jsonl" and manifest["release_files"] == ["release.jsonl"]
    assert manifest["counts"]["applied"] == 2 and manifest["status_transitions"] == {}
    assert manifest["provenance"] == {"field": "provenance.translation_revision",
                                      "appended": f"+repair.{manifest['record']['digest']}",
                                      "checksum": "checksum"}
    table = pq.read_table(canonical["out"] / "corrections.parquet")
    assert record.verify(table) == [] and record.digest(table) == manifest["record"]["digest"]
