"""The repair loop on a V1.1 release of real text with planted defects
(tests/realdata_release.py): the work list names every defect a text correction can repair;
corrections giving back the text each unit had before its plant yield a corrected release
that re-scans with exactly those findings gone and none new, every other row identical
value for value, valid checksums, and flags and status that our rule and the public
reference builder re-derive without a disagreement; compare then shows exactly the
corrected units as changed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import realdata_release
import repair_helpers as rh

from audit.engine import scan
from audit.io import release as readers
from audit.io.digests import text_sha256
from audit.repair import corrections, plan, record
from devkit import synth

# Where each planted kind lands on the work list (the two kinds a text cannot repair —
# an unknown candidate language, a source support title — are not on it).
UNIT_OF_KIND = {
    "blank_sentence": "sentence", "exact_source_copy": "sentence",
    "placeholder_sentence": "sentence", "invalid_unicode": "sentence",
    "paragraph_sentence_shortfall": "paragraph", "paragraph_sentence_surplus": "paragraph",
    "english_identity_mismatch": "paragraph", "blank_question": "question",
    "blank_answer": "answer", "duplicate_normalized_translated_title": "title",
}
# The findings each repaired plant leaves behind once corrected: all of its own.
FIXED_OF_KIND = {
    "blank_sentence": ["blank_sentence"], "exact_source_copy": ["exact_source_copy"],
    "placeholder_sentence": ["placeholder_sentence"], "invalid_unicode": ["invalid_unicode"],
    "paragraph_sentence_shortfall": ["paragraph_sentence_shortfall",
                                     "support_index_out_of_range"],
    "paragraph_sentence_surplus": ["paragraph_sentence_surplus"],
    "english_identity_mismatch": ["english_identity_mismatch"],
    "blank_question": ["blank_question"], "blank_answer": ["blank_answer"],
    "duplicate_normalized_translated_title": ["duplicate_normalized_translated_title"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory, realdata):
    folder = tmp_path_factory.mktemp("repair_realdata")
    info = realdata_release.build(folder / "built")
    specs = [f"{split}={path}" for split, path in info["sources"].items()]
    release = readers.open_release(info["release"], specs)
    scanned = scan.run(release, skip=frozenset(rh.HEURISTICS))
    work = plan.work_list(scanned).to_pylist()
    fixes = rh.write_lines(folder / "fixes.jsonl",
                           rh.restoring(work, rh.pristine_views()))
    out = folder / "corrected"
    done = rh.cli("repair", "apply", info["release"], "--corrections", fixes, "--out", out,
                  *rh.SKIP_HEURISTICS)
    assert done.returncode == 0, done.stderr
    return {"info": info, "specs": specs, "release": release, "scanned": scanned,
            "work": work, "fixes": fixes,
            "out": out, "folder": folder, "printed": json.loads(done.stdout)}


def _findings(path, specs) -> set[tuple]:
    result = scan.run(readers.open_release(path, specs), skip=frozenset(rh.HEURISTICS))
    return {(r["id"], r["check"], r["paragraph_id"], r["sentence_index"])
            for r in result.findings.to_pylist()}


def _rows(folder: Path) -> dict[str, dict]:
    return {r["id"]: r for path in sorted(folder.glob("*.parquet"))
            if path.name != "corrections.parquet" for r in pq.read_table(path).to_pylist()}


def _repaired(built) -> list[dict]:
    return [p for p in built["info"]["planted"] if p["kind"] in UNIT_OF_KIND]


def test_the_work_list_names_every_plant_a_text_can_repair(built):
    work = built["work"]
    expected = {(p["id"], UNIT_OF_KIND[p["kind"]]) for p in _repaired(built)}
    assert {(u["id"], u["unit"]) for u in work} == expected
    assert plan.summary(plan.work_list(built["scanned"]).select(
        [f.name for f in plan.SCHEMA]))["per_unit"] == {
        "answer": 3, "paragraph": 9, "question": 3, "sentence": 12, "title": 4}
    by_place = {(u["id"], u["paragraph_id"], u["sentence_index"]): u for u in work}
    for p in _repaired(built):
        if UNIT_OF_KIND[p["kind"]] == "sentence":
            unit = by_place[(p["id"], p["paragraph_id"], p["sentence_index"])]
            assert p["kind"] in unit["required_for"]
    shortfalls = [u for u in work if "paragraph_sentence_shortfall" in u["required_for"]]
    assert len(shortfalls) == 3
    for u in shortfalls:    # the fact pointing at the dropped sentence comes with it
        assert u["required_for"] == ["paragraph_sentence_shortfall",
                                     "support_index_out_of_range"]
        assert len(u["sentences"]) == len(u["source_sentences"]) - 1
        assert u["old_sha256"] == text_sha256(json.dumps(u["sentences"], ensure_ascii=False,
                                                          separators=(",", ":")))
    blank = next(u for u in work if u["unit"] == "question")
    assert (blank["text"], blank["views"], blank["status"]) == ("", 1, "quarantined")
    assert blank["old_sha256"] == text_sha256("")
    assert blank["source_text"] == _sources(built)[blank["id"]][1]["question"] != ""


def test_plan_cli_writes_the_work_list_and_a_template_that_reads_back(built, tmp_path):
    info = built["info"]
    out = tmp_path / "plan"
    done = rh.cli("repair", "plan", info["release"], *[a for s in built["specs"]
                                                      for a in ("--source", s)],
                  "--checks", "blank_question,blank_answer", "--out", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["per_unit"] == {"answer": 3, "question": 3}
    assert sorted(p.name for p in out.iterdir()) == [
        "corrections.template.jsonl", "plan.csv", "plan.parquet", "summary.json"]
    template = corrections.read_file(out / "corrections.template.jsonl", author="vendor")
    assert len(template) == 6 and {c.unit for c in template} == {"question", "answer"}
    located = corrections.locate(built["release"], template)
    assert all(x.unchanged for x in located)      # pre-filled with the current text
    again = rh.cli("repair", "plan", info["release"], "--out", out)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_corrected_release_rescans_with_those_findings_gone_and_none_new(built):
    before = _findings(built["info"]["release"], built["specs"])
    after = _findings(built["out"], built["specs"])
    assert after - before == set()
    fixed = Counter(check for _, check, _, _ in before - after)
    assert fixed == {"blank_answer": 3, "blank_question": 3, "blank_sentence": 3,
                     "duplicate_normalized_translated_title": 4,
                     "english_identity_mismatch": 3, "exact_source_copy": 3,
                     "invalid_unicode": 3, "paragraph_sentence_shortfall": 3,
                     "paragraph_sentence_surplus": 3, "placeholder_sentence": 3,
                     # the untranslated sentence in a non-Latin paragraph, and the facts
                     # pointing at the dropped sentences
                     "script_mismatch": 1, "support_index_out_of_range": 3}
    repaired = {p["id"] for p in _repaired(built)}
    assert {id_ for id_, *_ in before - after} == repaired
    # What is left: the two kinds no text repairs, and what the real data explains.
    assert Counter(check for _, check, _, _ in after) == {
        "unknown_candidate_language": 3, "supporting_title_missing": 3,
        "support_index_out_of_range": 3, "source_blank_sentence": 1, "invisible_control": 9}


def test_every_other_row_is_identical_and_the_schema_and_shards_are_the_input_s(built):
    source, out = Path(built["info"]["release"]), built["out"]
    names = sorted(p.name for p in source.glob("*.parquet"))
    manifest = json.loads((out / "repair_manifest.json").read_text())
    assert manifest["release_files"] == names == ["train-00000.parquet",
                                                  "validation-00000.parquet"]
    for name in names:
        a, b = pq.ParquetFile(source / name), pq.ParquetFile(out / name)
        assert b.schema_arrow.equals(a.schema_arrow, check_metadata=True)
        assert b.metadata.num_row_groups == a.metadata.num_row_groups
        assert b.metadata.row_group(0).column(0).compression == "ZSTD"
    old, new = _rows(source), _rows(out)
    assert list(old) == list(new)                          # same rows, same order
    changed = {i for i in old if old[i] != new[i]}
    assert changed == {p["id"] for p in _repaired(built)}
    allowed = {"status", "structural_flags", "provenance", "record_sha256"}
    for i in changed:
        fields = {k for k in old[i] if old[i][k] != new[i][k]}
        kind = next(p["kind"] for p in _repaired(built) if p["id"] == i)
        text = {"question": {"question"}, "answer": {"answer"}}.get(
            UNIT_OF_KIND[kind], {"candidates"})
        # a paragraph given its missing sentence puts its supporting fact back in bounds
        facts = {"supporting_facts"} if kind == "paragraph_sentence_shortfall" else set()
        assert text | {"provenance", "record_sha256"} <= fields <= text | facts | allowed


def test_checksums_are_valid_and_the_release_rule_agrees(built):
    rows = _rows(built["out"])
    assert all(synth.record_sha256(r) == r["record_sha256"] for r in rows.values())
    after = _findings(built["out"], built["specs"])
    assert {f for f in after if f[1] in ("record_hash_mismatch", "status_mismatch",
                                         "structural_flags_mismatch")} == set()


def _sources(built) -> dict[str, tuple[int, dict]]:
    return {record_["_id"]: (position, record_)
            for path in built["info"]["sources"].values()
            for position, record_ in enumerate(json.loads(path.read_text()))}


def test_corrected_rows_flags_and_status_by_our_port_of_the_reference_rule(built):
    """Each corrected row rebuilt from its source record and its corrected text by
    devkit.synth (the reference builder's rule, tested against the published flags)."""
    sources = _sources(built)
    rows = _rows(built["out"])
    statuses = Counter()
    for p in _repaired(built):
        row = rows[p["id"]]
        position, source = sources[row["source_id"]]
        rebuilt = synth.build_v11_record(
            source, [[c["title"], c["sentences"], c["language"]] for c in row["candidates"]],
            row["question"], row["answer"], row["question_language_name"],
            split=row["source_split"], source_position=row["source_position"],
            release_position=row["release_position"], view_index=row["legacy_view_index"])
        for key in ("structural_flags", "status", "candidates", "supporting_facts"):
            assert rebuilt[key] == row[key], (p, key)
        statuses[row["status"]] += 1
    assert statuses == {"accepted": 31}


def test_the_reference_builder_rederives_every_row_without_a_disagreement(built, tmp_path):
    """The public toolkit's own build_record, run beside us the way bench/scan.py runs it,
    on every row of the corrected release (skipped where the toolkit is not on the
    machine; the test above holds the same rule without it)."""
    toolkit = rh.toolkit(tmp_path)
    if toolkit is None:
        pytest.skip("the XHotpotQA reference toolkit is not on this machine")
    rows = _rows(built["out"])
    compared = 0
    for split, source in built["info"]["sources"].items():
        out = tmp_path / f"reference-{split}"
        subprocess.run([sys.executable, str(rh.REPO / "bench" / "reference_build.py"),
                        str(toolkit), str(built["out"] / f"{split}-00000.parquet"),
                        str(source), str(out)], check=True, capture_output=True)
        for ref in pq.read_table(out / "validation-00000.parquet").to_pylist():
            ours = rows[ref["id"]]
            for key in ("structural_flags", "status", "candidates", "supporting_facts"):
                assert ref[key] == ours[key], (ref["id"], key)
            compared += 1
    assert compared == 201


def test_manifest_record_and_changelog(built):
    out = built["out"]
    manifest = json.loads((out / "repair_manifest.json").read_text())
    assert manifest["counts"] == {"proposed": 31, "corrections": 31, "duplicates": 0,
                                  "applied": 31, "held": 0, "refused": 0, "rows_changed": 31}
    assert manifest["fixed_per_check"] == {
        "blank_answer": 3, "blank_question": 3, "blank_sentence": 3,
        "duplicate_normalized_translated_title": 4, "english_identity_mismatch": 3,
        "exact_source_copy": 3, "invalid_unicode": 3, "paragraph_sentence_shortfall": 3,
        "paragraph_sentence_surplus": 3, "placeholder_sentence": 3, "script_mismatch": 1,
        "support_index_out_of_range": 3}
    assert manifest["introduced_per_check"] == {}
    assert manifest["status_transitions"] == {"accepted → accepted": 9,
                                              "quarantined → accepted": 18,
                                              "review_required → accepted": 4}
    assert sum(c.get("applied", 0) for c in manifest["per_language"].values()) == 31
    assert manifest["per_language"]["en"] == {"applied": 3, "views": 3}
    table = pq.read_table(out / "corrections.parquet")
    assert table.schema.equals(record.SCHEMA)
    assert record.verify(table) == []
    digest = record.digest(table)
    assert manifest["record"] == {"file": "corrections.parquet", "digest": digest,
                                  "entries": 62, "new_entries": 62}
    assert Counter(table.column("action").to_pylist()) == {"proposed": 31, "applied": 31}
    rows = _rows(out)
    repaired = {p["id"] for p in _repaired(built)}
    assert {r["provenance"]["build_version"] for i, r in rows.items() if i in repaired} == {
        f"1.1.0+repair.{digest}"}
    assert {r["provenance"]["build_version"] for i, r in rows.items()
            if i not in repaired} == {"1.1.0"}
    entries = table.to_pylist()
    applied = [e for e in entries if e["action"] == "applied"]
    assert all(e["after"] == [] and e["held_for"] == [] for e in applied)
    assert all(set(FIXED_OF_KIND[k]) <= set(e["fixed"]) for e in applied
               for k in [next(p["kind"] for p in _repaired(built) if p["id"] == e["row_id"])])
    assert {c for e in applied for c in e["checks_run"]} >= {
        "blank_sentence", "exact_source_copy", "placeholder_sentence", "invalid_unicode",
        "invisible_control", "script_mismatch", "language_mismatch"}
    assert not {c for e in applied for c in e["checks_run"]} & set(rh.HEURISTICS)
    proposed = {(e["row_id"], e["unit"]): e for e in entries if e["action"] == "proposed"}
    blank = next(e for (i, u), e in proposed.items() if u == "question")
    assert (blank["old_text"], blank["ter"]) == ("", 100.0)
    assert blank["edit_distance"] == len(blank["new_text"]) > 0
    for p in _repaired(built):
        e = proposed[(p["id"], UNIT_OF_KIND[p["kind"]])]
        assert e["origin"]["kind"] == "file" and e["origin"]["file"] == str(built["fixes"])
        if p["kind"] == "invalid_unicode":          # the plant inserted one U+FFFD
            assert e["edit_distance"] == 1
        if p["kind"] == "english_identity_mismatch":   # and this one dropped one space
            assert (e["edit_distance"], e["language"]) == (1, "en")
    changelog = (out / "CHANGELOG.md").read_text()
    assert changelog.startswith("## Repair of release (")
    assert "31 correction(s) applied, 0 held for review, 0 refused; 31 row(s) changed" \
        in changelog
    assert "| `paragraph_sentence_shortfall` | 3 |" in changelog
    assert "| quarantined → accepted | 18 |" in changelog
    assert f"`{digest}`" in changelog
    assert built["printed"]["counts"]["applied"] == 31


def test_compare_shows_exactly_the_corrected_units_changed_and_their_findings_fixed(
        built, tmp_path):
    out = tmp_path / "comparison"
    done = rh.cli("compare", built["info"]["release"], built["out"],
                  *[a for s in built["specs"] for a in ("--old-source", s, "--new-source", s)],
                  "--out", out)
    assert done.returncode == 0, done.stderr
    units_ = pq.read_table(out / "units.parquet").to_pylist()
    changed = {(u["source_id"], u["unit"], u["paragraph_id"], u["sentence_index"])
               for u in units_ if u["change"] != "unchanged"}
    expected = set()
    for line in map(json.loads, built["fixes"].read_text().splitlines()):
        unit, pid = line["unit"], line.get("paragraph_id")
        if unit in ("question", "answer"):
            expected.add((line["id"], unit, None, None))
            continue
        expected.add((line["id"], "paragraph", pid, None))     # a title is its paragraph's
        if unit == "sentence":
            expected.add((line["id"], "sentence", pid, line["sentence_index"]))
        if unit == "paragraph":
            old = next(u for u in built["work"] if u["id"] == line["id"]
                       and u["paragraph_id"] == pid)["sentences"]
            new = line["sentences"]
            expected |= {(line["id"], "sentence", pid, k)
                         for k in range(max(len(old), len(new)))
                         if k >= min(len(old), len(new)) or old[k] != new[k]}
    assert changed == expected
    fixed = Counter(c for u in units_ for c in u["fixed"])
    assert fixed["blank_question"] == fixed["placeholder_sentence"] == 3
    # compare runs every check: on this release's unaligned text the heuristics judge noise,
    # and only they find something new on a restored text.
    assert {c for u in units_ for c in u["introduced"]} <= set(rh.HEURISTICS)
    summary = json.loads((out / "compare.json").read_text())
    assert summary["key_equality"] == {"only_old": 0, "only_new": 0, "unit_set_differs": 0}
    # Only the six rows no text repairs are quarantined now (they were among 24).
    assert summary["quarantined"]["new"]["rows"] == 6
