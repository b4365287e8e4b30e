"""script_mismatch and language_mismatch on hand-built V1.1 rows (and one JSONL release)."""

from __future__ import annotations

import json
import re

from conftest import located, record, scan_records, source

from audit.engine import scan
from audit.io import release

ID = "5a0000000000000000000001"
LANGUAGE = ("script_mismatch", "language_mismatch")

# The conftest source's three paragraphs (Danube 3 sentences, Rhine 2, Seine 1), written
# for these tests in several languages.
TEXT = {
    "German": [["Donau", ["Die Donau ist ein langer Fluss, der durch viele Länder fließt.",
                          "Sie fließt von Westen nach Osten durch ganz Mitteleuropa.",
                          "Am Ende mündet sie über ein breites Delta ins Meer."]],
               ["Rhein", ["Der Rhein entspringt in den Alpen und ist sehr lang.",
                          "Er fließt nach Norden bis zur Nordsee."]],
               ["Seine", ["Die Seine fließt durch Paris."]]],
    "Dutch": [["Donau", ["De Donau is een lange rivier die door veel landen stroomt.",
                         "Hij stroomt van het westen naar het oosten door heel Midden-Europa.",
                         "Aan het einde mondt hij via een brede delta uit in de zee."]]],
    "French": [["Danube", ["Le Danube est un long fleuve qui traverse de nombreux pays.",
                           "Il coule d'ouest en est à travers toute l'Europe centrale.",
                           "À la fin, il se jette dans la mer par un large delta."]],
               ["Rhin", ["Le Rhin prend sa source dans les Alpes et il est très long.",
                         "Il coule vers le nord jusqu'à la mer du Nord."]],
               ["Seine", ["La Seine traverse Paris."]]],
    "Russian": [["Дунай", ["Дунай — длинная река, которая течёт через многие страны.",
                           "Он течёт с запада на восток через всю Центральную Европу.",
                           "В конце он впадает в море через широкую дельту."]],
                ["Рейн", ["Рейн берёт начало в Альпах и очень длинный.",
                          "Он течёт на север до Северного моря."]]],
    "Greek": [["Δούναβης", ["Ο Δούναβης είναι ένας μακρύς ποταμός που διασχίζει πολλές χώρες.",
                            "Ρέει από τα δυτικά προς τα ανατολικά μέσα από την Κεντρική Ευρώπη.",
                            "Στο τέλος εκβάλλει στη θάλασσα μέσω ενός πλατιού δέλτα."]]],
    "Thai": [["แม่น้ำดานูบ", ["แม่น้ำดานูบเป็นแม่น้ำสายยาวที่ไหลผ่านหลายประเทศ",
                             "แม่น้ำไหลจากทิศตะวันตกไปทิศตะวันออกผ่าน Mitteleuropa ตอนกลาง",
                             "ในปี 2020 มีเรือกว่า 5,000 ลำแล่นผ่าน Budapest และ Wien"]]],
}


def entry(language: str, i: int, as_language: str | None = None) -> list:
    title, sentences = TEXT[language][i]
    return [title, list(sentences), as_language or language]


def clean() -> list:
    """German, French, German: every unit in its assigned language."""
    return [entry("German", 0), entry("French", 1), entry("German", 2)]


def language_findings(result) -> list[tuple]:
    return sorted(((r["check"], r["paragraph_id"], r["sentence_index"], r["detail"])
                   for r in result.findings.to_pylist() if r["check"] in LANGUAGE),
                  key=repr)


def test_units_in_their_assigned_language_raise_nothing(tmp_path):
    result = scan_records(tmp_path, [record(context=clean())])
    assert language_findings(result) == []
    assert result.status.to_pylist()[0]["status"] == "accepted"


def test_latin_names_and_digits_inside_thai_pass(tmp_path):
    ctx = clean()
    ctx[0] = entry("Thai", 0)
    result = scan_records(tmp_path, [record(context=ctx)])
    assert language_findings(result) == []


def test_dutch_text_assigned_german_is_a_language_mismatch(tmp_path):
    ctx = clean()
    ctx[0] = entry("Dutch", 0, as_language="German")
    result = scan_records(tmp_path, [record(context=ctx)])
    assert located(result, "language_mismatch") == [(ID, "p00", None)]
    assert located(result, "script_mismatch") == []
    (finding,) = language_findings(result)
    assert finding[3].startswith("paragraph: detected nl (") and finding[3].endswith(
        "), assigned de")
    assert result.status.to_pylist()[0]["status"] == "review_required"


def test_greek_text_assigned_russian_fails_both_checks(tmp_path):
    ctx = clean()
    ctx[0] = entry("Greek", 0, as_language="Russian")
    result = scan_records(tmp_path, [record(context=ctx)])
    assert language_findings(result) == [
        ("language_mismatch", "p00", None, "paragraph: detected el (1.00), assigned ru"),
        ("script_mismatch", "p00", 0, "sentence: Greek, expected Cyrillic"),
        ("script_mismatch", "p00", 1, "sentence: Greek, expected Cyrillic"),
        ("script_mismatch", "p00", 2, "sentence: Greek, expected Cyrillic"),
        ("script_mismatch", "p00", None, "title: Greek, expected Cyrillic"),
    ]


def test_one_untranslated_sentence_in_a_russian_paragraph(tmp_path):
    src = source()
    ctx = clean()
    ctx[1] = entry("Russian", 1)
    ctx[1][1][1] = src["context"][1][1][1].strip()         # "It flows north."
    result = scan_records(tmp_path, [record(src, ctx)])
    assert language_findings(result) == [
        ("script_mismatch", "p01", 1, "sentence: Latin, expected Cyrillic")]


def test_english_assigned_paragraph_in_german_is_reported(tmp_path):
    ctx = clean()
    ctx[0] = entry("German", 0, as_language="English")
    result = scan_records(tmp_path, [record(context=ctx)])
    assert located(result, "language_mismatch") == [(ID, "p00", None)]
    assert located(result, "english_identity_mismatch") == [(ID, "p00", None)]


def test_question_and_answer(tmp_path):
    rows = [
        record(context=clean(), language="Persian", position=0,
               question="دی ہابٹ کے مصنف کہاں پیدا ہوئے اور انہوں نے کیا لکھا؟",  # Urdu
               answer="بلومفونتین"),
        record(context=clean(), language="Russian", position=1,
               question="Какая река длиннее, Дунай или Рейн?",
               answer="The Danube is the longer river"),                      # English
        record(context=clean(), language="Thai", position=2,
               question="แม่น้ำสายใดยาวกว่ากัน ระหว่างแม่น้ำดานูบกับแม่น้ำไรน์",
               answer="Danube"),                                               # a name
    ]
    for n, row in enumerate(rows):
        row["id"] = row["source_id"] = f"5a000000000000000000000{n}"
    result = scan_records(tmp_path, rows)
    found = sorted((r["id"][-1], r["check"], r["paragraph_id"],
                    re.sub(r" \(\d\.\d\d\)", "", r["detail"]))
                   for r in result.findings.to_pylist() if r["check"] in LANGUAGE)
    # A different script needs no confidence: the English answer is reported however
    # unsure the detector is between the Latin-script languages.
    assert found == [
        ("0", "language_mismatch", None, "question: detected ur, assigned fa"),
        ("1", "language_mismatch", None, "answer: detected en, assigned ru"),
        ("1", "script_mismatch", None, "answer: Latin, expected Cyrillic"),
    ]


def test_unknown_languages_are_left_to_the_unknown_language_checks(tmp_path):
    ctx = clean()
    ctx[0] = entry("Greek", 0, as_language="Klingon")
    rec = record(context=ctx, language="Klingon", question="The Danube is the longer river?")
    result = scan_records(tmp_path, [rec])
    assert language_findings(result) == []
    assert located(result, "unknown_candidate_language") == [(ID, "p00", None)]


def test_a_kana_rich_title_assigned_chinese(tmp_path):
    ctx = clean()
    ctx[2] = ["セーヌ川", ["塞纳河流经巴黎。"], "Mandarin Chinese"]
    result = scan_records(tmp_path, [record(context=ctx)])
    assert language_findings(result) == [
        ("script_mismatch", "p02", None, "title: Japanese, expected Han")]


def test_the_checks_run_on_a_jsonl_release(tmp_path):
    candidates = [{"id": "p00", "title": "Дунай", "sentences": TEXT["Greek"][0][1],
                   "language": "ru"},
                  {"id": "p01", "title": "Rhein", "sentences": TEXT["German"][1][1],
                   "language": "de"}]
    line = {"id": "x1", "source_id": "x1", "source_split": "validation",
            "question": "Welcher Fluss ist länger, die Donau oder der Rhein?",
            "answer": "Donau", "question_language": "de", "answer_language": "de",
            "candidates": candidates, "supporting_facts": [], "question_type": "comparison"}
    path = tmp_path / "release.jsonl"
    path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    result = scan.run(release.open_release(path))
    assert sorted((r["check"], r["paragraph_id"], r["sentence_index"])
                  for r in result.findings.to_pylist() if r["check"] in LANGUAGE) == [
        ("language_mismatch", "p00", None), ("script_mismatch", "p00", 0),
        ("script_mismatch", "p00", 1), ("script_mismatch", "p00", 2)]


def test_skipping_the_language_checks_skips_their_work(tmp_path):
    ctx = clean()
    ctx[0] = entry("Greek", 0, as_language="Russian")
    result = scan_records(tmp_path, [record(context=ctx)], skip=set(LANGUAGE))
    assert language_findings(result) == []
    tables = {r[0] for r in result.release.con.sql("SHOW TABLES").fetchall()}
    assert "lang_judged" not in tables
