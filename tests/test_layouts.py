"""V2 RC1 and canonical JSONL map onto the same checks; the real V2 sample is consistent."""

from __future__ import annotations

import json
from pathlib import Path

from test_inputs import JSONL_RECORD

from audit.engine import scan
from audit.io import release as readers


def test_v2_sample_reproduces_reference_flags_status_and_hashes(realdata):
    release = readers.open_release(realdata / "xhotpotqa_v2_sample" /
                                   "xhotpotqa_v2_sample.parquet")
    assert (release.layout.name, release.rows) == ("v2", 197)
    result = scan.run(release)
    counts = result.summary["check_counts"]
    for name in ("status_mismatch", "structural_flags_mismatch", "record_hash_mismatch"):
        assert name not in counts
    # Derived from the layout (not carried): the reference builder's own counts.
    assert counts["xhotpot:sentence_count_mismatch"] == 21
    assert counts["xhotpot:blank_translation_sentence"] == 9
    assert counts["xhotpot:paragraph_sentence_source_copy"] == 10
    assert counts["provenance:assignment_manifest_hash_missing"] == 95
    assert counts["source:blank_source_sentence"] == 1
    # One finding per defect: the reference name, whose detail names ours.
    assert "source_blank_sentence" not in counts
    blank = [r for r in result.findings.to_pylist()
             if r["check"] == "source:blank_source_sentence"]
    assert [r["detail"] for r in blank] == [
        "source sentence is blank (source_blank_sentence in other layouts)"]
    carried = {r["check"] for r in result.findings.to_pylist() if "cannot show" in r["detail"]}
    assert carried == {"xhotpot:difficulty_mismatch"}
    # Beyond the reference: the em-dash placeholders and invalid characters it never flagged.
    assert counts["placeholder_sentence"] == 4
    assert counts["invalid_unicode"] == 5
    assert result.summary["shipped_status_counts"] == {
        "accepted": 83, "review_required": 82, "quarantined": 32}


def test_jsonl_release(tmp_path):
    rows = [dict(JSONL_RECORD), dict(JSONL_RECORD, id="q2", source_id="q2", question=" ",
                                     supporting_facts=[{"paragraph_id": "p00",
                                                        "sentence_id": 3}])]
    path = tmp_path / "release.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    release = readers.open_release(path)
    assert (release.layout.name, release.rows) == ("jsonl", 2)
    result = scan.run(release)
    found = sorted((r["id"], r["check"], r["paragraph_id"], r["sentence_index"])
                   for r in result.findings.to_pylist())
    assert found == [("q2", "blank_question", None, None),
                     ("q2", "source_support_index_out_of_range", "p00", 3),
                     ("q2", "support_index_out_of_range", "p00", 3)]
    assert [r["status"] for r in result.status.to_pylist()] == ["accepted", "quarantined"]
    assert [r["shipped_status"] for r in result.status.to_pylist()] == [None, None]


def test_every_layout_yields_the_core_views_and_the_units(tmp_path, realdata):
    """Whatever a layout's files hold, the scan reads `views` and `units` alike."""
    from test_parallel_layout import build

    from audit.io import units
    from audit.io.layouts import base
    from audit.io.layouts.registry import LAYOUTS
    jsonl = tmp_path / "release.jsonl"
    jsonl.write_text(json.dumps(JSONL_RECORD, ensure_ascii=False) + "\n")
    releases = {"v2": realdata / "xhotpotqa_v2_sample" / "xhotpotqa_v2_sample.parquet",
                "v1.1": Path(__file__).parent.parent / "data" / "demo" / "release",
                "jsonl": jsonl, "parallel": build(realdata, tmp_path / "parallel")}
    assert sorted(releases) == sorted(layout.name for layout in LAYOUTS)
    for name, path in releases.items():
        release = readers.open_release(path)
        assert release.layout.name == name
        assert release.layout.capabilities <= base.CAPABILITIES.keys()
        views = release.con.sql("SELECT * FROM views LIMIT 0").columns
        assert set(base.CORE_VIEW_COLUMNS) <= set(views), name
        assert tuple(release.con.sql("SELECT * FROM units LIMIT 0").columns) == units.COLUMNS
        kinds = {k for (k,) in release.con.sql("SELECT DISTINCT unit FROM units").fetchall()}
        assert kinds <= set(units.UNITS), name
