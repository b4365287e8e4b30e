"""answer_not_in_evidence and bridge_entity_lost (audit/checks/preservation.py, audit/translation/preservation.py): the matcher across
scripts (romanised names, numbers by value, whole words for short names), the units a
release gives (answers in supporting sentences, bridge titles mentioned), the renderings the
release holds, review vs info, the evidence on both sides, the cache and the policy; and real
text: XQuAD's professional translations with their answers deleted or replaced."""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest
import xquad_release
from conftest import record, scan_records

from audit.checks import preservation as preservation_checks
from audit.checks import registry
from audit.engine import policy as policies
from audit.engine import scan
from audit.errors import InputError
from audit.io import release
from audit.translation import preservation as pres

OTHERS = frozenset(c.name for c in registry.REGISTRY) - set(preservation_checks.PRESERVATION_NAMES)
OBAMA = "Barack Obama was born in Hawaii."


# ------------------------------------------------------------------------------ matching

@pytest.mark.parametrize(("lang", "translation", "score", "match"), [
    ("ru", "Барак Обама родился на Гавайях.", 100.0, "Барак Обама"),
    ("hi", "बराक ओबामा का जन्म हवाई में हुआ था।", 100.0, "बराक ओबामा"),
    ("el", "Ο Μπαράκ Ομπάμα γεννήθηκε στη Χαβάη.", 100.0, "Μπαράκ Ομπάμα"),
    ("bn", "বারাক ওবামা হাওয়াইতে জন্মগ্রহণ করেন।", 100.0, "বারাক ওবামা"),
    ("ja", "バラク・オバマはハワイで生まれた。", 100.0, "バラク・オバマ"),
    ("ar", "ولد باراك أوباما في هاواي.", 83.3, "باراك أوباما"),
    ("th", "บารัค โอบามา เกิดที่ฮาวาย", 83.3, "บารัค โอบามา"),
    ("ur", "براک اوباما ہوائی میں پیدا ہوئے۔", 78.3, "براک اوباما"),
    ("zh", "巴拉克·奥巴马出生于夏威夷。", 72.7, "巴拉克·奥巴马"),
    ("ko", "버락 오바마는 하와이에서 태어났다.", 71.4, "버락 오바마는"),
])
def test_romanised_names_are_found_with_the_words_they_cover(lang, translation, score, match):
    found = pres.match_signals("answer", lang, "Barack Obama", OBAMA, translation)
    assert (found["roman_score"], found["roman_match"]) == (score, match)
    assert found["src_match"] == "Barack Obama" and found["num_missing"] is None


def test_a_verbatim_or_inflected_name_needs_no_romanisation():
    kept = pres.match_signals("answer", "de", "Barack Obama", OBAMA,
                              "Barack Obama wurde auf Hawaii geboren.")
    assert (kept["en_score"], kept["en_match"]) == (100.0, "Barack Obama")
    assert "roman_score" not in kept          # a 100 needs nothing more
    inflected = pres.match_signals("answer", "pl", "Barack Obama", OBAMA,
                                   "Dzieciństwo Baracka Obamy minęło na Hawajach.")
    assert (inflected["en_score"], inflected["en_match"]) == (91.7, "Baracka Obamy")


def test_a_rendering_from_the_release_is_looked_for_in_the_sentence():
    found = pres.match_signals("answer", "ru", "Steven Spielberg", "Directed by Steven Spielberg.",
                               "Режиссёр — Стивен Спилберг.", ["Стивен Спилберг"])
    assert (found["form_score"], found["form_match"], found["form"]) == (
        100.0, "Стивен Спилберг", "Стивен Спилберг")


def test_short_names_match_whole_words_only():
    assert pres.match_signals("answer", "de", "UK", "The UK voted.",
                              "Die Ukraine stimmte ab.")["en_score"] == 0.0
    assert pres.match_signals("answer", "de", "UK", "The UK voted.",
                              "Das UK stimmte ab.")["en_score"] == 100.0


@pytest.mark.parametrize(("lang", "translation", "missing"), [
    ("bn", "এটি ১৯৯৫ সালে খোলা হয়েছিল।", None),       # Bengali digits
    ("th", "เปิดในปี 2538", None),                      # the Buddhist year of 1995
    ("th", "เปิดในปี 2539", "1995"),
    ("zh", "它于１９９５年开放。", None),
    ("de", "Es wurde 1996 eröffnet.", "1995"),
])
def test_numbers_are_compared_by_value(lang, translation, missing):
    found = pres.match_signals("answer", lang, "1995", "It opened in 1995.", translation)
    assert found["num_missing"] == missing


# ------------------------------------------------- numbers and dates checked by value (issue 47)

@pytest.mark.parametrize(("answer", "by_value"), [
    ("October 6, 1973", True), ("66 million years ago", True), ("1970s", True),
    ("£30m", True), ("between 1920 and 1930", True), ("US$5 million", True),
    ("28 February 2008", True), ("the 19th century", True), ("1995", True),
    ("Super Bowl 50", False), ("State Route 41", False), ("March", False),
    ("Barack Obama", False),
    # numbers in words: at most four words, no capitalised word but a number word
    ("four", True), ("Six", True), ("ten million", True), ("every five years", True),
    ("a two-thirds majority", True), ("The Three Musketeers", False),
    ("one", False), ('"one-stop shopping"', False), ("over half", False),
    ("two of the three largest cities", False)])
def test_numbers_and_dates_with_words_are_checked_by_value(answer, by_value):
    con = duckdb.connect()
    assert con.execute(f"SELECT {pres.by_value_sql('s')} FROM (SELECT ? AS s)",
                       [answer]).fetchall() == [(by_value,)]
    # the Python twin that decides whether the English number words are read
    assert pres.spelled_number(answer) == (by_value and not any(c.isdigit() for c in answer))


@pytest.mark.parametrize(("answer", "lang", "translation", "missing"), [
    ("£30m", "fr", "Le club a payé 30 millions de livres.", None),
    ("£30m", "fr", "Le club a payé 40 millions de livres.", "30"),
    ("66 million years ago", "es", "Se extinguieron hace 66 millones de años.", None),
    ("66 million years ago", "es", "Se extinguieron hace 65 millones de años.", "66"),
    ("October 6, 1973", "ru", "Война началась 6 октября 1973 года.", None),
    ("October 6, 1973", "ru", "Война началась 6 октября 1974 года.", "1973"),
    ("1970s", "ru", "В 1970-х годах сеть перешла на цвет.", None),
    ("the 19th century", "es", "Durante el siglo XIX creció.", None),    # a Roman numeral
    ("the 19th century", "es", "Durante el siglo XVIII creció.", "19"),
    # numbers in words, either side: ICU's spellout forms, cases and genders included
    ("four", "ru", "Он управлял четырьмя заводами.", None),
    ("four", "ru", "Он управлял пятью заводами.", "4"),
    ("five million", "ru", "Там живут более пяти миллионов человек.", None),
    ("five million", "zh", "那里住着500万人。", None),
    ("ten years", "zh", "他在那里工作了十年。", None),
    ("ten years", "zh", "他在那里工作了九年。", "10"),
    ("two", "zh", "公司有两支球队。", None),
    ("eleven", "tr", "Takımda on bir oyuncu var.", None),
    ("eleven", "tr", "Onlar on oyuncu.", "11"),
    ("a two-thirds majority", "de", "Es braucht eine Zweidrittelmehrheit.", None),
    ("every five years", "ar", "تجري الانتخابات كل خمس سنوات.", None),     # feminine form
    ("every five years", "ar", "تجري الانتخابات كل أربع سنوات.", "5"),
    ("1990s", "ar", "تجدد الاهتمام به منذ التسعينيات.", None),              # a decade in words
    ("five million", "hi", "जनसंख्या पांच मिलियन से अधिक है।", None),      # anusvara for ँ
    ("four", "bn", "চার জন খেলোয়াড়", None),
    ("1995", "de", "Es wurde neunzehnhundertfünfundneunzig eröffnet.", "1995"),
])
def test_a_number_or_date_answer_is_found_by_the_value_of_its_numerals(answer, lang,
                                                                       translation, missing):
    found = pres.match_signals("answer", lang, answer, answer, translation)
    assert found["num_missing"] == missing


@pytest.mark.parametrize(("lang", "target", "translation", "roman", "word"), [
    # word order and inflection: each word against its best translated word and its stem
    ("es", "Pacific Ocean", "La corriente llega al Océano Pacífico.", 76.2, 95.5),
    ("es", "Pacific Ocean", "La corriente llega al Océano Atlántico.", 53.8, 65.5),
    # still short of word_score 90: "major" ~ "maiora", "james" ~ "dzheimsa" romanised
    ("ru", "Major General James Abercrombie",
     "Войска под командованием генерал-майора Джеймса Аберкромби отступили.", 84.2, 86.4),
])
def test_names_are_also_matched_word_by_word(lang, target, translation, roman, word):
    found = pres.match_signals("answer", lang, target, target, translation)
    assert (found["roman_score"], found["word_score"]) == (roman, word)


def test_word_by_word_decides_only_without_a_rendering(tmp_path):
    """'Océano Pacífico' carries 'Pacific Ocean' word by word (95.5 ≥ word_score 90): no
    finding where the release holds no Spanish rendering; 'Océano Atlántico' stays info."""
    def ocean(n: int, translation: str) -> dict:
        src = {"_id": f"5d{n:022d}", "question": "Where does it flow?",
               "answer": "Pacific Ocean", "type": "bridge", "level": "hard",
               "supporting_facts": [["Current", 0]],
               "context": [["Current", ["The current reaches the Pacific Ocean."]]]}
        return record(src, context=[["Corriente", [translation], "Spanish"]],
                      question="Wohin fließt sie?", answer="Pazifik", position=n)
    result = scan_records(tmp_path, [ocean(0, "La corriente llega al Océano Pacífico."),
                                     ocean(1, "La corriente llega al Océano Atlántico.")],
                          skip=OTHERS | {"bridge_entity_lost"})
    assert [(f["row"], f["severity"], f["category"]) for f in result.findings.to_pylist()] == [
        (1, "info", "unverifiable")]


def money(n: int, translation: str) -> dict:
    src = {"_id": f"5c{n:022d}", "question": "How much did the club pay?", "answer": "£30m",
           "type": "bridge", "level": "hard", "supporting_facts": [["Transfer", 0]],
           "context": [["Transfer", ["The club paid £30m for him."]]]}
    return record(src, context=[["Transfert", [translation], "French"]],
                  question="Wie viel zahlte der Verein?", answer="30 Mio. Pfund", position=n)


def test_a_currency_amount_is_judged_by_value_in_a_release(tmp_path):
    """'£30m' was not checked at all (copy_category name_like, judged as a name it had no
    French rendering): now its numerals decide, review where they are lost."""
    result = scan_records(tmp_path, [money(0, "Le club a payé 30 millions de livres."),
                                     money(1, "Le club a payé 40 millions de livres.")],
                          skip=OTHERS | {"bridge_entity_lost"})
    assert [(f["row"], f["severity"], f["category"], f["detail"])
            for f in result.findings.to_pylist()] == [
        (1, "review", "lost", "answer '£30m' lost: numeral 30 is not in the translated "
                              "sentence")]


# ---------------------------------------------------------------------- in a release

JAWS = {"_id": "5b0000000000000000000000", "question": "Where was the director of Jaws born?",
        "answer": "Cincinnati", "type": "bridge", "level": "hard",
        "supporting_facts": [["Jaws (film)", 0], ["Steven Spielberg", 1]],
        "context": [["Jaws (film)", ["Jaws is a 1975 film directed by Steven Spielberg."]],
                    ["Steven Spielberg", ["Steven Spielberg is an American director.",
                                          " He was born in Cincinnati, Ohio."]],
                    ["Seine", ["The Seine flows through Paris."]]]}


def jaws(n: int, jaws_ru: str, born_de: str) -> dict:
    """A bridge row: Jaws' paragraph in Russian mentions the answer hop's title, the
    answer hop (German) holds the answer; question and answer in German."""
    context = [["Челюсти (фильм)", [jaws_ru], "Russian"],
               ["Steven Spielberg", ["Steven Spielberg ist ein amerikanischer Regisseur.",
                                     born_de], "German"],
               ["Seine", ["Die Seine fließt durch Paris."], "German"]]
    return record(dict(JAWS, _id=f"5b{n:022d}"), context=context,
                  question="Wo wurde der Regisseur von Der weiße Hai geboren?",
                  answer="Cincinnati", position=n)


def spielberg_in_russian(n: int) -> dict:
    """Another source whose Russian paragraph is titled with the entity: a rendering."""
    src = dict(JAWS, _id=f"5b{n:022d}", type="comparison", question="Who is older?",
               answer="Steven Spielberg", supporting_facts=[["Steven Spielberg", 0],
                                                            ["Seine", 0]])
    context = [["Челюсти (фильм)", ["«Челюсти» — фильм."], "Russian"],
               ["Стивен Спилберг", ["Стивен Спилберг — американский режиссёр.",
                                    " Он родился в Цинциннати."], "Russian"],
               ["Сена", ["Сена течёт через Париж."], "Russian"]]
    return record(src, context=context, question="Кто старше?", answer="Стивен Спилберг",
                  language="Russian", position=n)


KEPT = ("«Челюсти» — фильм 1975 года режиссёра Стивена Спилберга.",
        "Er wurde in Cincinnati, Ohio, geboren.")
LOST = ("«Челюсти» — фильм 1975 года.", "Er wurde in Ohio geboren.")


@pytest.fixture(scope="module")
def jaws_scan(tmp_path_factory):
    rows = [jaws(0, *KEPT), jaws(1, *LOST), spielberg_in_russian(2)]
    return scan_records(tmp_path_factory.mktemp("jaws"), rows, skip=OTHERS)


def found(result) -> list[tuple]:
    return [(f["row"], f["check"], f["paragraph_id"], f["sentence_index"], f["severity"],
             f["category"], f["evidence"], f["source_evidence"])
            for f in result.findings.to_pylist()]


def test_what_translation_kept_raises_nothing_and_what_it_lost_is_named(jaws_scan):
    assert found(jaws_scan) == [
        (1, "answer_not_in_evidence", "p01", 1, "review", "lost", "geboren", "Cincinnati"),
        (1, "bridge_entity_lost", "p00", 0, "review", "lost", "Челюсти» — фильм",
         "Steven Spielberg")]


def test_details_name_what_was_looked_for_and_the_best_match(jaws_scan):
    details = [f["detail"] for f in jaws_scan.findings.to_pylist()]
    assert details == [
        "answer 'Cincinnati' lost: not verbatim, not as the release's German rendering "
        "'Cincinnati', not romanised (Latin, ICU); best match 'geboren' (romanised 'geboren' "
        "33 < Latin threshold 85)",
        "bridge entity 'Steven Spielberg' (title of p01) lost: not verbatim, not as the "
        "release's Russian rendering 'Стивен Спилберг', not romanised (Cyrillic, ICU); best "
        "match 'Челюсти» — фильм' (as the rendering 46 < 85)"]


def test_without_a_rendering_the_check_says_it_cannot_tell(tmp_path):
    """The Russian title from another source is the only Russian rendering of the entity:
    without it the lost mention is info, not review."""
    result = scan_records(tmp_path, [jaws(1, *LOST)], skip=OTHERS)
    bridge = [f for f in result.findings.to_pylist() if f["check"] == "bridge_entity_lost"]
    assert [(f["severity"], f["category"], f["detail"]) for f in bridge] == [(
        "info", "unverifiable",
        "bridge entity 'Steven Spielberg' (title of p01) not confirmed: the release holds no "
        "Russian rendering of it and romanised (Cyrillic, ICU) it does not match; best match "
        "'Челюсти» — фильм' (romanised 'celusti film' 44 < Cyrillic threshold 85): a "
        "translated name cannot be told from a lost one")]
    # The German answer hop is still judged by the row's own German answer.
    assert [f["category"] for f in result.findings.to_pylist()
            if f["check"] == "answer_not_in_evidence"] == ["lost"]


def test_views_sharing_a_context_share_its_units_and_the_cache(tmp_path, jaws_scan):
    first = jaws(1, *LOST)
    view = dict(first, id=first["id"] + "-fr", question="Où est né le réalisateur ?",
                question_language="fr", question_language_name="French",
                answer_language="fr", answer_language_name="French")
    result = scan_records(tmp_path, [first, view, spielberg_in_russian(2)], skip=OTHERS)
    assert [(f["row"], f["check"]) for f in result.findings.to_pylist()] == [
        (0, "answer_not_in_evidence"), (0, "bridge_entity_lost"),
        (1, "answer_not_in_evidence"), (1, "bridge_entity_lost")]
    signals = result.summary["signals"]["preservation"]
    # One context: its answer unit and its bridge unit; the Russian source's answer unit
    # (its answer stands in its sentence; a comparison has no bridge): all cached already.
    assert (signals["units"], signals["computed"]) == (3, 0)


def test_registry_and_policy_carry_the_per_script_thresholds(tmp_path):
    assert dict(registry.BY_NAME["answer_not_in_evidence"].thresholds) == {
        "rendering_score": 85.0, "latin_score": 85.0, "cyrillic_score": 85.0,
        "greek_score": 85.0, "arabic_score": 80.0, "devanagari_score": 85.0,
        "bengali_score": 85.0, "thai_score": 85.0, "hangul_score": 85.0,
        "japanese_score": 85.0, "han_score": 85.0, "word_score": 90.0}
    assert dict(registry.BY_NAME["bridge_entity_lost"].category_severity) == {
        "unverifiable": "info"}
    path = tmp_path / "policy.toml"
    path.write_text("[thresholds.bridge_entity_lost]\ncyrillic_score = 101\n", "utf-8")
    with pytest.raises(InputError, match="thresholds.bridge_entity_lost.cyrillic_score"):
        policies.load(path)


def test_the_policy_sets_the_script_threshold_and_the_cache_serves_it(tmp_path):
    """Without a rendering the lost mention scores 44 romanised: info at the default 85,
    nothing at a (much too lenient) 40, from the same cached signals."""
    path = tmp_path / "policy.toml"
    path.write_text("[thresholds.bridge_entity_lost]\ncyrillic_score = 40\n", "utf-8")
    default = scan_records(tmp_path / "r", [jaws(1, *LOST)], skip=OTHERS | {
        "answer_not_in_evidence"})
    assert [f["category"] for f in default.findings.to_pylist()] == ["unverifiable"]
    lenient = scan.run(release.open_release(tmp_path / "r" / "release"), policies.load(path),
                       skip=OTHERS | {"answer_not_in_evidence"})
    assert lenient.findings.num_rows == 0
    assert lenient.summary["signals"]["preservation"]["computed"] == 0
    assert lenient.summary["policy"]["thresholds"] == {"bridge_entity_lost": {
        "cyrillic_score": 40}}


# ------------------------------------------------------------------ real text: XQuAD

LANGUAGES, LIMIT = ("ru", "zh", "el"), 100


@pytest.fixture(scope="module")
def xquad(tmp_path_factory, realdata):
    out = {}
    for setting in xquad_release.SETTINGS:
        built = xquad_release.build(tmp_path_factory.mktemp(setting), setting, LANGUAGES, LIMIT)
        result = scan.run(release.open_release(built["release"]), skip=OTHERS)
        out[setting] = built["units"], {f["id"]: f for f in result.findings.to_pylist()}
    return out


def outcomes(units: dict, findings: dict) -> Counter:
    return Counter((u["lang"], u["plant"] or "clean",
                    findings[k[0]]["category"] if k[0] in findings else None)
                   for k, u in units.items() if u["eligible"])


def test_xquad_with_a_rendering_every_lost_answer_is_found(xquad):
    """Setting 'own': the row's answer is the translated answer, as a sibling view's is.
    Of 3 x 100 questions: every deleted or replaced eligible answer is found, and the one
    clean finding is the translator's own error (1991 written as 2000)."""
    units, findings = xquad["own"]
    assert outcomes(units, findings) == Counter({
        ("el", "clean", None): 83, ("el", "deleted", "lost"): 77, ("el", "replaced", "lost"): 76,
        ("ru", "clean", None): 82, ("ru", "clean", "lost"): 1, ("ru", "deleted", "lost"): 81,
        ("ru", "replaced", "lost"): 80,
        ("zh", "clean", None): 83, ("zh", "deleted", "lost"): 79, ("zh", "replaced", "lost"): 78})
    clean = [f["detail"] for k, f in findings.items() if units[(k, "p00", 0)]["plant"] is None]
    assert clean == ["answer 'April 1991' lost: numeral 1991 is not in the translated sentence"]
    assert all(f["severity"] == "review" for f in findings.values())


def test_xquad_without_a_rendering_only_numbers_decide(xquad):
    """Setting 'english': no rendering in the paragraph's language. Numbers and dates are
    found lost by value (review); a name that is neither verbatim nor matched romanised is
    'unverifiable' (info) on plants and clean rows alike: the check says it cannot tell."""
    units, findings = xquad["english"]
    # two answers in words per language ("two", "ten years"…) are judged by value too
    assert outcomes(units, findings) == Counter({
        ("el", "clean", None): 66, ("el", "clean", "unverifiable"): 17,
        ("el", "deleted", "lost"): 28, ("el", "deleted", "unverifiable"): 49,
        ("el", "replaced", "lost"): 28, ("el", "replaced", "unverifiable"): 48,
        ("ru", "clean", None): 68, ("ru", "clean", "lost"): 1, ("ru", "clean", "unverifiable"): 14,
        ("ru", "deleted", "lost"): 28, ("ru", "deleted", "unverifiable"): 53,
        ("ru", "replaced", "lost"): 28, ("ru", "replaced", "unverifiable"): 52,
        ("zh", "clean", None): 39, ("zh", "clean", "unverifiable"): 44,
        ("zh", "deleted", "lost"): 28, ("zh", "deleted", "unverifiable"): 51,
        ("zh", "replaced", "lost"): 28, ("zh", "replaced", "unverifiable"): 50})
    assert {f["detail"].split(": ")[1].split(" ")[0] for f in findings.values()
            if f["category"] == "lost"} == {"numeral"}
    assert {f["severity"] for f in findings.values() if f["category"] == "unverifiable"} == {
        "info"}
