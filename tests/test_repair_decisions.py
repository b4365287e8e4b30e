"""The repair loop's decisions on an XHotpotQA+-shaped release of real aligned text (24
views per source share one context; two sentences per context left in English): agreeing
corrections are one edit, disagreeing ones are held until one is chosen, a correction the
checks still fault is held until a reviewer accepts it, a rejected or unchanged one is
refused; a context's correction reaches every view holding it; the workspace's record is
appended to and never rewritten, and a repeated apply appends nothing."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest
import realdata_release
import repair_helpers as rh

from audit.engine import scan
from audit.io import release as readers
from audit.io.digests import text_sha256
from audit.io.units import paragraph_text
from audit.repair import plan, record

REVIEWER = "Rhea Reviewer"


def _unit(work, source: int, paragraph: str, sentence: int | None = None) -> dict:
    return next(u for u in work if u["source_id"].endswith(f"-{source:05d}")
                and u["paragraph_id"] == paragraph and u["sentence_index"] == sentence)


def _line(u: dict, text: str, view: int = 0) -> dict:
    """A sentence correction of work-list unit `u`, filed on one of its views."""
    return {"id": u["view_ids"][view], "unit": "sentence", "paragraph_id": u["paragraph_id"],
            "sentence_index": u["sentence_index"], "old_sha256": u["old_sha256"],
            "text": text, "reason": "untranslated", "author": "vendor"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory, realdata):
    folder = tmp_path_factory.mktemp("repair_decisions")
    info = rh.plus_release(folder / "plus", sources=4, untranslated=2)
    release = readers.open_release(info["release"], [f"validation={info['source']}"])
    work = plan.work_list(scan.run(release)).to_pylist()
    ntrex = realdata_release.load_ntrex(english=True)
    good = lambda u: rh.aligned_translation(u["source_text"], u["language"], ntrex)
    hi1, hi2 = _unit(work, 1, "p09", 4), _unit(work, 3, "p01", 1)
    it, nl, tr = _unit(work, 0, "p09", 3), _unit(work, 2, "p01", 0), _unit(work, 2, "p07", 0)
    ja = _unit(work, 1, "p00", 1)
    ur_agree, ur_split = _unit(work, 1, "p08", 1), _unit(work, 0, "p06", 1)

    def paragraph(u, text: str) -> dict:
        """A correction of the unit's whole paragraph, its sentence given `text`."""
        (old,), = release.con.sql(
            "SELECT c.sentences FROM (SELECT unnest(candidates) AS c FROM release WHERE id = ?)"
            " WHERE c.paragraph_id = ?", params=[u["id"], u["paragraph_id"]]).fetchall()
        sentences = list(old)
        sentences[u["sentence_index"]] = text
        return {"id": u["id"], "unit": "paragraph", "paragraph_id": u["paragraph_id"],
                "old_sha256": text_sha256(paragraph_text(old)),
                "sentences": sentences, "reason": "untranslated", "author": "vendor"}

    es_view = release.con.sql("SELECT id, question FROM views WHERE source_id LIKE '%-00000' "
                              "AND question_language = 'es'").fetchall()[0]
    question = {"id": es_view[0], "unit": "question", "old_sha256": text_sha256(es_view[1]),
                "text": es_view[1].replace("la emoción", "sus emociones"), "author": "editor"}
    lines = [
        _line(hi1, good(hi1), view=5), _line(hi1, good(hi1), view=5),   # the same line twice
        _line(hi1, good(hi1), view=17),                # the same fix filed on another view
        _line(hi2, good(hi2)), _line(hi2, good(hi2) + " वे सहमत नहीं हैं।"),  # disagree
        _line(it, "—"),                                # a placeholder: still a finding
        _line(nl, rh.aligned_translation(nl["source_text"], "ru", ntrex)),  # wrong script
        _line(tr, good(tr)),
        _line(ja, ja["text"]),                         # unchanged
        _line(ur_agree, good(ur_agree)), paragraph(ur_agree, good(ur_agree)),   # agree
        _line(ur_split, good(ur_split)),                                        # disagree
        paragraph(ur_split, good(ur_split).rstrip("۔.")),
        question,
    ]
    fixes = rh.write_lines(folder / "fixes.jsonl", lines)
    workspace = folder / "workspace"
    first = rh.cli("repair", "apply", info["release"], "--corrections", fixes,
                   "--workspace", workspace, "--out", folder / "first")
    assert first.returncode == 0, first.stderr
    manifest = json.loads((folder / "first" / "repair_manifest.json").read_text())
    ids = {name: _id(manifest, line) for name, line in (
        ("hi2a", lines[3]), ("hi2b", lines[4]), ("it", lines[5]), ("nl", lines[6]))}
    second = rh.cli("repair", "apply", info["release"], "--workspace", workspace,
                    "--choose", ids["hi2a"], "--accept", ids["it"], "--reject", ids["nl"],
                    "--reviewer", REVIEWER, "--out", folder / "second")
    assert second.returncode == 0, second.stderr
    return {"info": info, "release": release, "work": work, "lines": lines, "ids": ids,
            "folder": folder, "workspace": workspace, "first": manifest,
            "second": json.loads((folder / "second" / "repair_manifest.json").read_text()),
            "fixes": fixes}


def _id(manifest: dict, line: dict) -> str:
    for action in ("applied", "held", "refused"):
        for e in manifest[action]:
            if (e["id"], e["unit"], e["paragraph_id"], e["sentence_index"]) == (
                    line["id"], line["unit"], line.get("paragraph_id"),
                    line.get("sentence_index")) and e["origin"].endswith(
                    f"line {_line_number(manifest, line)}"):
                return e["correction_id"]
    raise AssertionError(line)


def _line_number(manifest: dict, line: dict) -> int:
    fixes = next(i["path"] for i in manifest["inputs"] if i["role"] == "corrections")
    for number, text in enumerate(open(fixes, encoding="utf-8"), start=1):
        if json.loads(text) == line:
            return number
    raise AssertionError(line)


def test_first_apply_applies_holds_and_refuses_as_the_checks_and_agreement_say(setup):
    m = setup["first"]
    assert m["counts"] == {"proposed": 14, "corrections": 13, "duplicates": 1, "applied": 6,
                           "held": 6, "refused": 1, "rows_changed": 49}
    held = {e["correction_id"]: e for e in m["held"]}
    ids = setup["ids"]
    assert held[ids["hi2a"]]["held_for"] == [f"disagrees with {ids['hi2b']}"]
    assert held[ids["hi2b"]]["held_for"] == [f"disagrees with {ids['hi2a']}"]
    assert held[ids["it"]]["held_for"] == [
        "placeholder_sentence: placeholder — for a non-blank source"]
    assert held[ids["nl"]]["held_for"] == ["script_mismatch: sentence: Cyrillic, expected Latin"]
    conflicts = [e for e in m["held"] if e["unit"] == "paragraph" or e["id"].endswith(
        "-00000-v00") and e["paragraph_id"] == "p06"]
    assert len(conflicts) == 2 and all(e["held_for"][0].startswith("disagrees with")
                                       for e in conflicts)
    assert [e["note"] for e in m["refused"]] == ["unchanged: the new text is the old text"]
    applied = Counter(e["unit"] for e in m["applied"])
    assert applied == {"sentence": 4, "paragraph": 1, "question": 1}
    hindi = [e for e in m["applied"] if e["language"] == "hi"]
    assert len(hindi) == 2 and all(e["fixed"] == ["exact_source_copy", "script_mismatch"]
                                   and e["views"] == 24 for e in hindi)
    assert m["per_language"]["hi"] == {"applied": 2, "held": 2, "views": 48}
    assert m["fixed_per_check"] == {"exact_source_copy": 5, "script_mismatch": 4}


def test_a_context_correction_reaches_every_view_holding_it_and_nothing_else(setup):
    old = {r["id"]: r for r in pq.read_table(setup["info"]["release"]).to_pylist()}
    new = {r["id"]: r for r in pq.read_table(
        setup["folder"] / "first" / "validation-00000.parquet").to_pylist()}
    changed = sorted(i for i in old if old[i] != new[i])
    by_source = Counter(i.rsplit("-v", 1)[0][-5:] for i in changed)
    assert by_source == {"00001": 24, "00002": 24, "00000": 1}
    hi1 = _unit(setup["work"], 1, "p09", 4)
    fixed_text = setup["lines"][0]["text"]
    for i in hi1["view_ids"]:
        paragraph = next(c for c in new[i]["candidates"] if c["paragraph_id"] == "p09")
        assert paragraph["sentences"][4] == fixed_text
        assert {k for k in old[i] if old[i][k] != new[i][k]} == {"candidates", "provenance",
                                                                 "record_sha256"}
    question = setup["lines"][-1]
    assert {k for k in old[question["id"]] if old[question["id"]][k] != new[question["id"]][k]
            } == {"question", "provenance", "record_sha256"}
    assert new[question["id"]]["question"] == question["text"]


def test_decisions_resolve_held_corrections_in_a_later_apply(setup):
    m, ids = setup["second"], setup["ids"]
    assert m["counts"] == {"proposed": 0, "corrections": 13, "duplicates": 0, "applied": 8,
                           "held": 2, "refused": 3, "rows_changed": 96}
    applied = {e["correction_id"]: e for e in m["applied"]}
    assert applied[ids["it"]]["note"] == f"accepted by {REVIEWER} despite its findings"
    assert ids["hi2a"] in applied
    refused = {e["correction_id"]: e["note"] for e in m["refused"]}
    assert refused[ids["hi2b"]] == f"another correction was chosen: {ids['hi2a']}"
    assert refused[ids["nl"]] == f"rejected by {REVIEWER}"
    assert {e["unit"] for e in m["held"]} == {"sentence", "paragraph"}   # still undecided


def test_the_workspace_record_is_appended_to_never_rewritten(setup, tmp_path):
    workspace = record.Workspace(setup["workspace"])
    parts = sorted(workspace.parts.glob("part-*.parquet"))
    assert len(parts) == 2
    first = pq.read_table(parts[0])
    assert Counter(first.column("action").to_pylist()) == {"proposed": 14, "applied": 6,
                                                           "held": 6, "refused": 1}
    second = pq.read_table(parts[1])
    assert Counter(second.column("action").to_pylist()) == {
        "chosen": 1, "accepted": 1, "rejected": 1, "applied": 8, "held": 2, "refused": 3}
    assert {r["author"] for r in second.to_pylist() if r["action"] in record.DECISIONS} == {
        REVIEWER}
    full = workspace.read()
    assert record.verify(full) == []
    snapshot = pq.read_table(setup["folder"] / "second" / "corrections.parquet")
    assert snapshot.column("entry").to_pylist() == full.column("entry").to_pylist()
    assert setup["second"]["record"]["digest"] == record.digest(full)
    before = [p.read_bytes() for p in parts]
    again = rh.cli("repair", "apply", setup["info"]["release"], "--workspace",
                   setup["workspace"], "--choose", setup["ids"]["hi2a"], "--accept",
                   setup["ids"]["it"], "--reject", setup["ids"]["nl"], "--reviewer", REVIEWER,
                   "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["record"]["appended"] == 0
    assert [p.read_bytes() for p in sorted(workspace.parts.glob("part-*.parquet"))] == before
    again_rows = pq.read_table(tmp_path / "again" / "validation-00000.parquet")
    assert again_rows.equals(pq.read_table(setup["folder"] / "second" /
                                           "validation-00000.parquet"))   # reproducible


def test_compare_and_accept_work_on_the_corrected_pair(setup, tmp_path):
    source = f"validation={setup['info']['source']}"
    new = setup["folder"] / "second"
    done = rh.cli("compare", setup["info"]["release"], new, "--old-source", source,
                  "--new-source", source, "--out", tmp_path / "cmp")
    assert done.returncode == 0, done.stderr
    units_ = pq.read_table(tmp_path / "cmp" / "units.parquet").to_pylist()
    changed = Counter((u["unit"], u["change"]) for u in units_ if u["change"] != "unchanged")
    # 8 applied corrections: 5 sentences in 5 paragraphs (two filed on other views of one
    # context, a paragraph agreeing with one of them) and one question.
    assert changed == {("sentence", "text_changed"): 5, ("paragraph", "text_changed"): 5,
                       ("question", "text_changed"): 1}
    # the accepted placeholder fixed an English copy and introduced itself
    assert Counter(c for u in units_ for c in u["fixed"]) == {"exact_source_copy": 5,
                                                             "script_mismatch": 3}
    assert Counter(c for u in units_ for c in u["introduced"]) == {"placeholder_sentence": 1}
    gate = rh.cli("accept", setup["info"]["release"], new, "--old-source", source,
                  "--new-source", source)
    assert gate.returncode == 3, gate.stdout + gate.stderr
    lines = gate.stdout.splitlines()
    assert lines[0].startswith("1. key_equality  PASS")
    assert lines[1].startswith("2. structure     PASS")
    assert lines[-1] == "verdict: INSUFFICIENT"
