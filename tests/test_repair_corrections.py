"""The corrections file format (JSONL and CSV with the same columns) and bad input: a
malformed line, an unknown row or unit, a stale digest, an ambiguous id, a decision without
a reviewer or on no known correction — exit 2, one error line naming the file, the line and
the row id, and nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import repair_helpers as rh
from conftest import record, source

from audit.errors import InputError
from audit.io import release as readers
from audit.io.digests import text_sha256
from audit.io.units import paragraph_text
from audit.repair import corrections
from devkit import synth

SENTENCES = ["German 0: Danube.", "German 1: Danube.", "German 2: Danube."]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """Three rows: q1 (validation), q2 twice (train and validation)."""
    folder = tmp_path_factory.mktemp("repair_format") / "release"
    rows = [record(source(_id="q1"), question="Welcher Fluss ist länger?"),
            record(source(_id="q2"), position=1),
            record(source(_id="q2"), split="train")]
    synth.write_release(rows, folder)
    return folder


def good(**changes) -> dict:
    line = {"id": "q1", "unit": "sentence", "paragraph_id": "p00", "sentence_index": 1,
            "old_sha256": text_sha256(SENTENCES[1]), "text": "Sie fließt nach Osten.",
            "reason": "mistranslation", "author": "ana@example.org"}
    line.update(changes)
    return {k: v for k, v in line.items() if v is not None}


def _apply(release: Path, fixes: Path, out: Path, *extra: str):
    return rh.cli("repair", "apply", release, "--corrections", fixes, "--out", out, *extra)


def _refused(done, out: Path, message: str) -> None:
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, done.stderr
    assert errors == [message], done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.*"))


def test_jsonl_and_csv_say_the_same(tmp_path):
    lines = [good(), good(unit="paragraph", sentence_index=None, text=None,
                          old_sha256=text_sha256(paragraph_text(SENTENCES)),
                          sentences=["Eins.", "Zwei.", "Drei."]),
             good(unit="question", paragraph_id=None, sentence_index=None,
                  old_sha256=text_sha256("Welcher Fluss ist länger?"), text="Welcher Fluss?")]
    jsonl = rh.write_lines(tmp_path / "fixes.jsonl", lines)
    with (tmp_path / "fixes.csv").open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=corrections.FIELDS)
        writer.writeheader()
        for line in lines:
            writer.writerow({**line, "sentences": json.dumps(line["sentences"])}
                            if "sentences" in line else line)
    a, b = corrections.read_file(jsonl), corrections.read_file(tmp_path / "fixes.csv")
    strip = lambda cs: [(c.correction_id, c.row_id, c.unit, c.paragraph_id, c.sentence_index,
                         c.old_sha256, c.new_text, c.reason, c.author) for c in cs]
    assert strip(a) == strip(b)
    assert a[1].new_text == '["Eins.","Zwei.","Drei."]'
    assert a[1].sentences == ("Eins.", "Zwei.", "Drei.")
    assert [(c.origin.kind, c.origin.line) for c in b] == [("file", 2), ("file", 3), ("file", 4)]


MALFORMED = [
    ('{"id": "q1" "unit": "title"}', "line 2: invalid JSON (Expecting ',' delimiter, "
                                     "column 13)"),
    (good(sentense_index=1), "line 2, id q1: unknown field 'sentense_index'"),
    (good(old_sha256=None), "line 2, id q1: no 'old_sha256'"),
    (good(unit="word"), "line 2, id q1: unknown unit 'word' (expected question / answer / "
                        "title / sentence / paragraph)"),
    (good(sentence_index=None), "line 2, id q1: a sentence needs 'sentence_index', an "
                                "integer from 0"),
    (good(sentence_index=True), "line 2, id q1: a sentence needs 'sentence_index', an "
                                "integer from 0"),
    (good(unit="paragraph", sentence_index=None), "line 2, id q1: a paragraph takes "
                                                  "'sentences', not 'text'"),
    (good(unit="question", sentence_index=None), "line 2, id q1: a question takes no "
                                                 "'paragraph_id'"),
    (good(old_sha256="ABC"), "line 2, id q1: 'old_sha256' is not 64 lower-case hex digits"),
    (good(author=" "), "line 2, id q1: 'id' and 'author' must not be empty"),
    (good(text=7), "line 2, id q1: a sentence needs 'text', a string"),
]


@pytest.mark.parametrize("bad, where", MALFORMED)
def test_a_malformed_line_stops_everything_naming_its_line_and_row(release, tmp_path, bad,
                                                                 where):
    fixes = tmp_path / "fixes.jsonl"
    second = bad if isinstance(bad, str) else json.dumps(bad)
    fixes.write_text(json.dumps(good()) + "\n" + second + "\n", encoding="utf-8")
    out = tmp_path / "corrected"
    done = _apply(release, fixes, out)
    prefix = f"error: {fixes}: {where}"
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(prefix), done.stderr
    _refused(done, out, errors[0])


@pytest.mark.parametrize("changes, where", [
    (dict(id="nope"), "line 1, id nope: no release row has id 'nope' (expected the id of a "
                      "row of this release)"),
    (dict(paragraph_id="p42"), "line 1, id q1: row 'q1' has no paragraph(s) 'p42' (expected "
                               "a paragraph_id of that row)"),
    (dict(sentence_index=7), "line 1, id q1: paragraph p00 has 3 sentence(s), no sentence 7 "
                             "(expected a sentence_index below the sentence count (a missing "
                             "sentence is a paragraph correction))"),
    (dict(old_sha256=text_sha256("German 1: Danube!")),
     f"line 1, id q1: stale correction: old_sha256 {text_sha256('German 1: Danube!')[:12]}… "
     f"is not the SHA-256 of the sentence's current text ({text_sha256(SENTENCES[1])[:12]}…)"
     " (expected the digest of the text this release holds)"),
    (dict(id="q2"), "line 1, id q2: 2 release rows have id 'q2' (expected 'source_split' to "
                    "tell them apart)"),
])
def test_an_unknown_or_stale_correction_stops_everything(release, tmp_path, changes, where):
    fixes = rh.write_lines(tmp_path / "fixes.jsonl", [good(**changes), good(reason="second")])
    out = tmp_path / "corrected"
    _refused(_apply(release, fixes, out), out, f"error: {fixes}: {where}")


def test_a_split_tells_repeated_ids_apart(release, tmp_path):
    fixes = rh.write_lines(tmp_path / "fixes.jsonl", [good(id="q2", source_split="train")])
    located = corrections.locate(readers.open_release(release),
                                 corrections.read_file(fixes))
    assert (located[0].source_split, located[0].old_text) == ("train", SENTENCES[1])


def test_default_author_and_decisions_need_a_reviewer_and_a_known_correction(release,
                                                                             tmp_path):
    fixes = rh.write_lines(tmp_path / "fixes.jsonl", [good(author="")])
    with pytest.raises(InputError, match="'id' and 'author' must not be empty"):
        corrections.read_file(fixes)
    assert corrections.read_file(fixes, author="Vendor Co")[0].author == "Vendor Co"
    out = tmp_path / "corrected"
    _refused(_apply(release, fixes, out, "--author", "Vendor Co", "--accept", "c-0"), out,
             "error: --reviewer: a decision needs the reviewer's name (expected --reviewer "
             "NAME with --accept, --reject or --choose)")
    _refused(_apply(release, fixes, out, "--author", "Vendor Co", "--accept",
                    "c-0000000000000000", "--reviewer", "Rhea"), out,
             "error: --accept: no correction 'c-0000000000000000' among the corrections "
             "given or the workspace's (expected an id from the manifest or record)")
    _refused(_apply(release, fixes, out, "--skip", "no_such_check"), out,
             "error: --skip: unknown check(s) no_such_check (expected names from "
             "`python -m audit checks`)")
    done = _apply(release, fixes, out, "--author", "Vendor Co")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["applied"] == 1
    _refused_again = _apply(release, fixes, out, "--author", "Vendor Co")
    assert _refused_again.returncode == 2
    assert "already exists; a repair never overwrites an earlier one" in _refused_again.stderr


def test_an_unknown_format_and_a_bad_csv_header(release, tmp_path):
    bad = tmp_path / "fixes.txt"
    bad.write_text("id,unit\n", encoding="utf-8")
    out = tmp_path / "corrected"
    _refused(_apply(release, bad, out), out,
             f"error: {bad}: unknown corrections format '.txt' (expected .jsonl or .csv)")
    header = tmp_path / "fixes.csv"
    header.write_text("id,unit,old_sha256,author,colour\n", encoding="utf-8")
    _refused(_apply(release, header, out), out,
             f"error: {header}: line 1: unknown column 'colour' (expected columns "
             + ", ".join(corrections.FIELDS) + ")")
