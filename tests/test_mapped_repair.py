"""Correcting a mapped release (`repair apply` on a mapping): each correction names an item,
its language and a column; the corrected release is the input's own files in their own
format, every record no correction reaches byte for byte as it was, with a mapping beside
them that opens it, and the acceptance comparison sees what was fixed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from audit.engine import scan
from audit.io import release as readers
from audit.reports import compare

REPO = Path(__file__).resolve().parent.parent


def cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corrections(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps({"reason": "test", "author": "reviewer-1", **r},
                                       ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def checks(mapping: Path) -> list[tuple]:
    found = scan.run(readers.open_release(mapping, cache=False)).findings.to_pylist()
    return sorted((f["check"], f["language"], f["id"], f["unit"]) for f in found
                  if f["severity"] != "info")


@pytest.fixture
def ntrex(realdata: Path, tmp_path: Path) -> Path:
    """60 NTREX lines in English and German (Windows line endings), German line 5 blank."""
    here = realdata / "ntrex128"
    english = (here / "newstest2019-src.eng.txt").read_text("utf-8").split("\n")[:60]
    german = (here / "newstest2019-ref.deu.txt").read_text("utf-8").split("\n")[:60]
    german[5] = ""
    (tmp_path / "src.eng.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    (tmp_path / "ref.deu.txt").write_bytes(("\r\n".join(german) + "\r\n").encode("utf-8"))
    mapping = tmp_path / "ntrex.toml"
    mapping.write_text('[release]\nsource_language = "eng"\n[input]\nfiles = "ref.{lang}.txt"\n'
                       'source = "src.eng.txt"\nalign = "row"\n', encoding="utf-8")
    return mapping


def test_a_text_file_is_corrected_in_place_of_its_one_line(ntrex: Path, tmp_path: Path
                                                             ) -> None:
    fix = corrections(tmp_path / "fix.jsonl", {
        "id": "5", "language": "deu", "unit": "text", "old_sha256": sha(""),
        "text": "Die Abgeordneten stimmten am Dienstag über den neuen Namen ab."})
    out = tmp_path / "out"
    done = cli("repair", "apply", ntrex, "--corrections", fix, "--out", out)
    assert done.returncode == 0, done.stderr
    before = (tmp_path / "ref.deu.txt").read_bytes().split(b"\r\n")
    after = (out / "ref.deu.txt").read_bytes().split(b"\r\n")
    assert len(after) == len(before)
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [5]
    assert after[5].decode("utf-8") == ("Die Abgeordneten stimmten am Dienstag über den neuen "
                                        "Namen ab.")
    assert (out / "src.eng.txt").read_bytes() == (tmp_path / "src.eng.txt").read_bytes()
    manifest = json.loads((out / "repair_manifest.json").read_text())
    assert manifest["counts"]["applied"] == 1
    assert manifest["applied"][0]["fixed"] == ["blank_translation"]
    # The folder opens as the corrected mapped release; the comparison sees the fix.
    assert ("blank_translation", "deu", "5", "text") in checks(ntrex)
    assert not [c for c in checks(out) if c[0] == "blank_translation"]
    result = compare.compare(compare.load_version(ntrex), compare.load_version(out), n_boot=200)
    assert result.findings["fixed"] >= 1 and result.findings["introduced"] == 0
    assert result.changes["by_unit"]["text"]["text_changed"] == 1


def test_a_correction_that_is_stale_unknown_or_unlocated_is_refused(ntrex: Path,
                                                                     tmp_path: Path) -> None:
    cases = [
        ({"id": "5", "language": "deu", "unit": "text", "old_sha256": sha("x"), "text": "y"},
         "stale correction"),
        ({"id": "5", "language": "deu", "unit": "title", "old_sha256": sha(""), "text": "y"},
         "unknown unit 'title' (expected a text or answer column: text)"),
        ({"id": "500", "language": "deu", "unit": "text", "old_sha256": sha(""), "text": "y"},
         "no row(s) with id '500' in deu"),
        ({"id": "5", "unit": "text", "old_sha256": sha(""), "text": "y"},
         "unknown unit 'text'"),
        ({"id": "5", "language": "deu", "unit": "text", "old_sha256": sha(""),
          "text": "two\nlines"}, "a correction holds a line break"),
    ]
    for row, problem in cases:
        out = tmp_path / "out"
        done = cli("repair", "apply", ntrex, "--corrections",
                   corrections(tmp_path / "bad.jsonl", row), "--out", out)
        assert done.returncode == 2, (row, done.stderr)
        assert problem in done.stderr, (problem, done.stderr)
        assert "Traceback" not in done.stderr and not out.exists()


def test_nested_json_is_written_again_in_its_own_formatting(realdata: Path, tmp_path: Path
                                                            ) -> None:
    """XQuAD's first article: a German question blanked and an answer replaced are put
    right; English and Russian are copied; German is the same document but the two
    values, in the file's own formatting (indent 2, ASCII escapes, final line break)."""
    docs = {}
    for lang in ("en", "de", "ru"):
        doc = json.loads((realdata / "xquad" / f"xquad.{lang}.json").read_text("utf-8"))
        doc["data"] = doc["data"][:1]
        docs[lang] = doc
    qas = [qa for p in docs["de"]["data"][0]["paragraphs"] for qa in p["qas"]]
    question, answer = qas[2]["question"], qas[4]["answers"][0]["text"]
    qas[2]["question"] = ""
    qas[4]["answers"][0]["text"] = "nirgendwo im Text"
    for lang, doc in docs.items():
        (tmp_path / f"xquad.{lang}.json").write_text(json.dumps(doc, indent=2) + "\n",
                                                     encoding="utf-8")
    mapping = tmp_path / "xquad.toml"
    mapping.write_text("""[release]
source_language = "en"
[input]
files = "xquad.{lang}.json"
records = "data[].paragraphs[].qas[]"
[columns]
id = "id"
context = "text"
question = "text"
answer = { role = "answer", field = "answers[0].text", in = "context" }
""", encoding="utf-8")
    fix = corrections(tmp_path / "fix.jsonl",
                      {"id": qas[2]["id"], "language": "de", "unit": "question",
                       "old_sha256": sha(""), "text": question},
                      {"id": qas[4]["id"], "language": "de", "unit": "answer",
                       "old_sha256": sha("nirgendwo im Text"), "text": answer})
    out = tmp_path / "out"
    done = cli("repair", "apply", mapping, "--corrections", fix, "--out", out)
    assert done.returncode == 0, done.stderr
    for lang in ("en", "ru"):
        assert (out / f"xquad.{lang}.json").read_bytes() == (
            tmp_path / f"xquad.{lang}.json").read_bytes()
    qas[2]["question"], qas[4]["answers"][0]["text"] = question, answer
    assert (out / "xquad.de.json").read_text("utf-8") == json.dumps(docs["de"], indent=2) + "\n"
    assert not [c for c in checks(out / "xquad.toml")
                if c[0] in ("blank_translation", "answer_not_in_text")]


def test_a_tsv_cell_is_corrected_and_every_other_line_kept(realdata: Path, tmp_path: Path
                                                           ) -> None:
    here = realdata / "ntrex128"
    texts = {lang: (here / f"newstest2019-{name}.txt").read_text("utf-8").split("\n")[:30]
             for lang, name in (("en", "src.eng"), ("sw", "ref.swa"))}
    texts["sw"][7] = texts["en"][7]                    # left in English
    for lang, lines in texts.items():
        (tmp_path / f"nli.{lang}.tsv").write_text("pairID\tpremise\tlabel\n" + "".join(
            f"p{i}\t{line}\tneutral\n" for i, line in enumerate(lines)), encoding="utf-8")
    mapping = tmp_path / "nli.toml"
    mapping.write_text('[release]\nsource_language = "en"\n[input]\nfiles = "nli.{lang}.tsv"\n'
                       '[columns]\npairID = "id"\npremise = "text"\nlabel = "same"\n')
    swahili = (here / "newstest2019-ref.swa.txt").read_text("utf-8").split("\n")[7]
    fix = corrections(tmp_path / "fix.jsonl", {
        "id": "p7", "language": "sw", "unit": "premise", "old_sha256": sha(texts["en"][7]),
        "text": swahili})
    out = tmp_path / "out"
    assert cli("repair", "apply", mapping, "--corrections", fix, "--out", out).returncode == 0
    before = (tmp_path / "nli.sw.tsv").read_text("utf-8").split("\n")
    after = (out / "nli.sw.tsv").read_text("utf-8").split("\n")
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [8]
    assert after[8] == f"p7\t{swahili}\tneutral"


def test_the_work_list_template_filled_in_is_a_corrections_file(ntrex: Path, tmp_path: Path
                                                                ) -> None:
    plan = tmp_path / "plan"
    assert cli("repair", "plan", ntrex, "--out", plan).returncode == 0
    lines = [json.loads(line) for line in
             (plan / "corrections.template.jsonl").read_text("utf-8").splitlines()]
    assert lines == [{"id": "5", "language": "deu", "unit": "text", "old_sha256": sha(""),
                      "text": "", "reason": "", "author": ""}]
    lines[0].update(text="Die Abgeordneten stimmten ab.", reason="blank", author="vendor")
    filled = tmp_path / "filled.jsonl"
    filled.write_text(json.dumps(lines[0], ensure_ascii=False) + "\n", encoding="utf-8")
    done = cli("repair", "apply", ntrex, "--corrections", filled, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "repair_manifest.json").read_text())["counts"][
        "applied"] == 1


def test_a_record_holding_every_language_is_corrected_in_its_language(realdata: Path,
                                                                      tmp_path: Path) -> None:
    here = realdata / "ntrex128"
    texts = {lang: (here / f"newstest2019-{name}.txt").read_text("utf-8").split("\n")[:12]
             for lang, name in (("en", "src.eng"), ("de", "ref.deu"), ("fr", "ref.fra"))}
    german = texts["de"][4]
    texts["de"][4] = ""
    lines = [json.dumps({"uid": f"x{i}", "premise": {lang: texts[lang][i] for lang in texts}},
                        ensure_ascii=False) for i in range(12)]
    (tmp_path / "xnli.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    mapping = tmp_path / "xnli.toml"
    mapping.write_text('[release]\nsource_language = "en"\n[input]\nfiles = "xnli.jsonl"\n'
                       '[columns]\nuid = "id"\npremise = { role = "text", field = '
                       '"premise.{lang}" }\n', encoding="utf-8")
    fix = corrections(tmp_path / "fix.jsonl", {"id": "x4", "language": "de", "unit": "premise",
                                               "old_sha256": sha(""), "text": german})
    out = tmp_path / "out"
    done = cli("repair", "apply", mapping, "--corrections", fix, "--out", out)
    assert done.returncode == 0, done.stderr
    after = (out / "xnli.jsonl").read_text("utf-8").split("\n")
    assert [i for i, (a, b) in enumerate(zip(lines, after)) if a != b] == [4]
    assert json.loads(after[4])["premise"] == {"en": texts["en"][4], "de": german,
                                               "fr": texts["fr"][4]}


def test_a_csv_record_is_rewritten_and_quoted_neighbours_kept(realdata: Path, tmp_path: Path
                                                             ) -> None:
    """CSV with quoted cells (commas, a line break inside a cell, doubled quotes): one
    corrected record is written again; every other line is the same bytes."""
    import csv
    import io
    here = realdata / "ntrex128"
    texts = {lang: (here / f"newstest2019-{name}.txt").read_text("utf-8").split("\n")[:20]
             for lang, name in (("eng_Latn", "src.eng"), ("deu_Latn", "ref.deu"))}
    texts["deu_Latn"][3] = texts["eng_Latn"][3]
    for lang, lines in texts.items():
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["question_id", "passage", "correct_answer_num"])
        for i, line in enumerate(lines):
            passage = line + ("\nzweite Zeile, mit \"Zitat\"" if i == 5 else "")
            writer.writerow([f"q{i}", passage, str(i % 4 + 1)])
        (tmp_path / f"{lang}.csv").write_text(out.getvalue(), encoding="utf-8", newline="")
    mapping = tmp_path / "mc.toml"
    mapping.write_text('[release]\nsource_language = "eng_Latn"\n[input]\nfiles = '
                       '"{lang}.csv"\n[columns]\nquestion_id = "id"\npassage = "text"\n'
                       'correct_answer_num = "same"\n', encoding="utf-8")
    assert ("exact_source_copy", "deu_Latn", "q3", "passage") in checks(mapping)
    german = (here / "newstest2019-ref.deu.txt").read_text("utf-8").split("\n")[3]
    fix = corrections(tmp_path / "fix.jsonl", {
        "id": "q3", "language": "deu_Latn", "unit": "passage",
        "old_sha256": sha(texts["eng_Latn"][3]), "text": german + ', "zitiert"'})
    out = tmp_path / "out"
    done = cli("repair", "apply", mapping, "--corrections", fix, "--out", out)
    assert done.returncode == 0, done.stderr
    before = (tmp_path / "deu_Latn.csv").read_bytes().split(b"\r\n")
    after = (out / "deu_Latn.csv").read_bytes().split(b"\r\n")
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [4]
    rows = list(csv.reader(io.StringIO((out / "deu_Latn.csv").read_text("utf-8"), newline="")))
    assert rows[4] == ["q3", german + ', "zitiert"', "4"] and rows[6][1].endswith('"Zitat"')
