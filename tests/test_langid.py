"""The language layer's signals (audit/language/): the script rule on mixed-script strings,
language ID on short sentences, and the content-hash cache."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest
from conftest import record, source

from audit.io import signal_cache
from audit.io.digests import text_sha256
from audit.language import detectors, scripts, words
from audit.language import layer as langid
from audit.language import letters as letter_rule
from audit.language.scripts import script_mismatch
from audit.languages import CODES

# ------------------------------------------------------------------------ script rule

@pytest.mark.parametrize(("text", "code"), [
    # Latin names, digits and punctuation inside non-Latin text
    ("ภาพยนตร์เรื่อง Jurassic Park ออกฉายเมื่อปี 1993 และกำกับโดย Steven Spielberg", "th"),
    ("ولد Albert Einstein في مدينة Ulm عام 1879.", "ar"),
    ("Компания Apple представила iPhone 15 Pro в сентябре 2023 года.", "ru"),
    ("BBC Scotland 的 Alasdair Lamont 在 Tony Macaroni 球场报道。", "zh"),
    ("警察透露，事故发生在Ballyhackamore。", "zh"),   # a name glued to Han characters
    # Japanese: kanji and kana together
    ("東京は日本の首都であり、人口は約1400万人です。", "ja"),
    ("黒澤明", "ja"),                                   # kanji only is still Japanese script
    # Persian with ZWNJ (U+200C), which is not a letter of any script
    ("این کتاب\u200cها را می\u200cخواهم بخوانم.", "fa"),
    # Korean with some Han
    ("서울특별시(서울特別市)는 대한민국의 수도이다.", "ko"),
    # Chinese
    ("北京是中华人民共和国的首都。", "zh"),
    # too few letters outside the script to judge, or only a name
    ("5 km²", "ja"), ("Lake Baikal", "th"), ("1661", "el"), ("—", "hi"),
    ("Die Donau ist der zweitlängste Fluss Europas.", "de"),
])
def test_script_rule_accepts(text, code):
    assert script_mismatch(text, code) is None


@pytest.mark.parametrize(("text", "code", "dominant"), [
    ("Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", "ru", "Greek"),
    ("東京は日本の首都であり、人口は約1400万人です。", "zh", "Japanese"),   # kana-rich
    ("ドナウ川", "zh", "Japanese"),
    ("北京是中华人民共和国的首都。", "ko", "Han"),
    ("The river flows into the Black Sea.", "th", "Latin"),
    ("lake baikal", "th", "Latin"),                  # not a name: lower-case words
    ("Il faut bien le faire.", "ru", "Latin"),
    ("भारत की राजधानी नई दिल्ली है।", "bn", "Devanagari"),
    ("Москва — столица России.", "de", "Cyrillic"),
    ("Москва — столица России.", "en", "Cyrillic"),   # English-assigned units are checked
    ("این کتاب\u200cها را می\u200cخواهم بخوانم.", "tr", "Arabic"),
])
def test_script_rule_rejects(text, code, dominant):
    assert script_mismatch(text, code) == dominant


def test_script_profile_counts_letters_not_digits_punctuation_or_zwnj():
    p = scripts.script_profile("می\u200cخواهم 123، BBC!")
    assert (p["arabic"], p["latin"], p["latin_names"], p["letters"]) == (7, 3, 3, 10)
    p = scripts.script_profile("ドナウ川は2番目")
    assert (p["kana"], p["han"], p["dominant"]) == (4, 3, "Japanese")


def test_the_check_query_applies_the_rule_for_every_language():
    """The cached per-rule verdicts, read by the script_mismatch query, equal
    script_mismatch(text, code) for every text and every one of the 24 languages."""
    from audit.checks.language import LANGUAGE_CHECKS
    texts = ["Η Αθήνα είναι η πρωτεύουσα.", "東京は日本の首都です。", "北京是首都。",
             "BBC Scotland 的 Alasdair Lamont", "The river flows east.", "Lake Baikal",
             "서울특별시(서울特別市)는 수도", "ولد Albert Einstein في Ulm", "Il faut bien le faire.",
             "क ख ग घ বাংলা ভাষা", "", "1993", "สวัสดี Bangkok city", "Привет, мир",
             "ドナウ川 and the river", "این کتاب‌ها"]
    table = langid._script_table([str(i) for i in range(len(texts))],
                                 *scripts.count_pieces(texts, split=True))
    con = duckdb.connect()
    con.register("signals", table)
    codes = ", ".join(f"('{c}')" for c in CODES)
    con.execute("CREATE TABLE lang_script AS SELECT * FROM signals")
    con.execute(f"""CREATE TABLE lang_judged AS
        SELECT row_number() OVER () AS rid, NULL::INTEGER AS ctx,
               s.key || ':' || l.code AS id, NULL::VARCHAR AS paragraph_id,
               'question' AS unit, l.code AS lang, s.key, s.fails,
               NULL::VARCHAR AS detected, NULL::DOUBLE AS confidence
        FROM signals s, (VALUES {codes}) l(code)""")
    con.execute("CREATE TABLE views AS SELECT rid, ctx, id, 'validation' AS source_split "
                "FROM lang_judged")
    # No unit in a language beyond the 24 (those the check reads from `units` itself).
    con.execute("CREATE TABLE units (unit VARCHAR, lang VARCHAR, tgt VARCHAR)")

    class Prepared:  # a release whose signals are already in place
        pass
    release = Prepared()
    release.con = con
    langid._PREPARED[con] = langid.Prepared("test", 0.7)
    found = sorted((r[1], r[7]) for r in con.sql(LANGUAGE_CHECKS[0].query(release)).fetchall())
    expected = sorted((f"{i}:{c}", f"question: {script_mismatch(t, c)}, expected "
                       f"{scripts.GROUP_OF[c]}") for i, t in enumerate(texts)
                      for c in CODES if script_mismatch(t, c))
    assert found == expected and len(expected) == 209


EDGES = ["", "a", "\x1f", "a\x1f\x1fB", "\x1fX", "Ab\x1f", "Éric e\u0301 École de Paris",
         "𝐀𝐁 𠀀𠀁 𰀀 \U00030001 Zürich", "在Ballyhackamore", "\x01\x02abc DEF", "ÀÉÎõü ÇA",
         "ドナウ川は2番目", "می\u200cخواهم 123، BBC!", "ǅemal Ǆ ǈ", "ＡＢＣ ｄｅｆ"]


@pytest.mark.parametrize("slice_chars", [scripts.SLICE_CHARS, 1_000])
def test_counting_in_bulk_equals_counting_one_text_at_a_time(monkeypatch, slice_chars,
                                                              realdata):
    """count_pieces and without_names (numpy, a slice of texts at once) give exactly the
    one-text counts (_count_tuple) and name regex on real text in all 24 languages
    (NTREX-128), joined into paragraphs or not, and on edge cases: empty pieces, separators
    at either end, astral and combining characters, title-case digraphs, full-width Latin,
    control characters; in one slice or in a hundred."""
    from realdata_release import load_ntrex
    monkeypatch.setattr(scripts, "SLICE_CHARS", slice_chars)
    lines = [line for texts in load_ntrex(english=True).values() for line in texts[:150]]
    lines += EDGES
    paragraphs = [scripts.SEPARATOR.join(lines[i:i + 4]) for i in range(0, len(lines), 4)]
    for texts, split in ((lines, False), (paragraphs, True), (paragraphs, False), ([], True)):
        counts, pieces = scripts.count_pieces(texts, split)
        expected = [scripts._count_tuple(p) for t in texts
                    for p in (t.split(scripts.SEPARATOR) if split else [t])]
        assert [tuple(row) for row in counts.tolist()] == expected
        assert sum(pieces) == len(expected)
    names = scripts._tables()[1]
    assert scripts.without_names(lines) == [names.sub("", line) for line in lines]
    assert scripts.without_names(["", "Ab", ""]) == ["", "", ""]


def test_verdicts_and_routes_in_bulk_equal_the_one_text_rules(realdata):
    """script_verdicts (arrays) names the failing rules and dominant groups that
    script_mismatch and script_profile give one text at a time, for every language."""
    from realdata_release import load_ntrex
    ntrex = load_ntrex(english=True)
    texts = [t for code in ntrex for t in ntrex[code][:40]] + EDGES
    texts += [a + " " + b for a, b in zip(ntrex["en"][:40], ntrex["ru"][40:80])]
    fails, best, _, _ = scripts.script_verdicts(scripts.count_pieces(texts)[0])
    for text, mask, dominant in zip(texts, fails.tolist(), best.tolist()):
        for code in CODES:
            failing = bool(mask >> scripts.RULES.index(scripts.RULE_OF[code]) & 1)
            assert failing == (script_mismatch(text, code) is not None), (text, code)
        assert scripts.script_profile(text)["dominant"] == (
            scripts.GROUPS[dominant] if dominant >= 0 else None)


# ------------------------------------------------------------------------- language ID

SHORT = [  # written for these tests: one everyday sentence per language
    ("de", "Der Zug nach München hatte heute Morgen eine Stunde Verspätung."),
    ("nl", "De trein naar Amsterdam had vanochtend een uur vertraging."),
    ("pt", "O comboio para Lisboa chegou hoje de manhã com uma hora de atraso."),
    ("es", "El tren a Madrid llegó esta mañana con una hora de retraso."),
    ("fr", "Le train pour Lyon avait une heure de retard ce matin."),
    ("it", "Il treno per Milano è arrivato con un'ora di ritardo stamattina."),
    ("sv", "Tåget till Göteborg var en timme försenat i morse."),
    ("en", "The train to Leeds was an hour late this morning."),
    ("pl", "Pociąg do Krakowa spóźnił się dziś rano o godzinę."),
    ("tr", "Ankara treni bu sabah bir saat gecikmeyle geldi."),
    ("id", "Kereta ke Bandung terlambat satu jam tadi pagi."),
    ("vi", "Chuyến tàu đi Hà Nội sáng nay đến muộn một tiếng."),
    ("sw", "Treni ya kwenda Mombasa ilichelewa kwa saa moja asubuhi ya leo."),
    ("ar", "وصل القطار المتجه إلى القاهرة متأخرا ساعة هذا الصباح."),
    ("fa", "قطار تهران امروز صبح یک ساعت تأخیر داشت."),
    ("ur", "آج صبح لاہور جانے والی ٹرین ایک گھنٹہ تاخیر سے پہنچی۔"),
    ("zh", "今天早上开往上海的火车晚点了一个小时。"),
    ("ja", "今朝、大阪行きの電車は一時間遅れて到着した。"),
    ("ko", "오늘 아침 부산행 기차가 한 시간 늦게 도착했다."),
    ("ru", "Поезд в Казань сегодня утром опоздал на час."),
    ("el", "Το τρένο για τη Θεσσαλονίκη άργησε μία ώρα σήμερα το πρωί."),
    ("th", "รถไฟไปเชียงใหม่มาถึงช้าไปหนึ่งชั่วโมงเมื่อเช้านี้"),
    ("hi", "आज सुबह जयपुर जाने वाली ट्रेन एक घंटे देर से पहुँची।"),
    ("bn", "আজ সকালে ঢাকাগামী ট্রেনটি এক ঘণ্টা দেরিতে পৌঁছেছে।"),
]


def test_default_detector_names_the_language_of_short_sentences():
    identifier = detectors.detector()
    found = identifier.identify([text for _, text in SHORT])
    assert [d.lang for d in found] == [code for code, _ in SHORT]
    assert min(d.confidence for d in found) > 0.6
    # no correctly labelled sentence is a mismatch; every same-script relabelling of the
    # pairs the issue names (pt/es, ur/fa, nl/de) and the Japanese/Chinese pair is
    assert not any(detectors.language_mismatches(
        identifier, [(text, d, code) for (code, text), d in zip(SHORT, found)]))
    by = {code: (text, d) for (code, text), d in zip(SHORT, found)}
    relabelled = [("pt", "es"), ("es", "pt"), ("ur", "fa"), ("fa", "ur"), ("nl", "de"),
                  ("de", "nl"), ("ja", "zh"), ("zh", "ja")]
    assert all(detectors.language_mismatches(
        identifier, [(*by[true], label) for true, label in relabelled]))


def test_a_same_script_disagreement_needs_the_second_opinion_too():
    """The demo's plain English question: the fast trigram reading calls it Spanish at
    0.91; the second opinion, langdetect knowing only English and Spanish, says English.
    (`identify` never asks lingua here: the function words settle it as English.)"""
    identifier = detectors.detector()
    text = "At which film festival did the director of Seven Samurai win the Golden Lion?"
    assert identifier.identify([text])[0].lang == "en"
    (lang, confidence), = identifier.detect(scripts.AMBIGUOUS["Latin"],
                                            identifier.prepare_texts("Latin", [text]))
    assert lang == "es" and confidence >= identifier.min_confidence
    found = detectors.Detection(lang, confidence, identifier.identify([text])[0].letters,
                                "Latin")
    (second, _), = identifier.confirm([(text, "es", "en")])
    assert second == "en"
    assert detectors.language_mismatches(identifier, [(text, found, "en")]) == [False]
    # A same-script disagreement under min_confidence asks no second opinion at all.
    unsure = detectors.Detection("es", 0.69, found.letters, "Latin")
    counting = CountingIdentifier()
    assert detectors.language_mismatches(counting, [(text, unsure, "en")]) == [False]
    assert counting.seconds == 0


def test_langdetect_baseline_is_seeded_and_restricted():
    identifier = detectors.LangdetectIdentifier()
    texts = [text for code, text in SHORT if scripts.GROUP_OF[code] in ("Latin", "Arabic")]
    first, second = identifier.identify(texts), identifier.identify(texts)
    assert first == second
    assert {d.lang for d in first} <= set(CODES)


@pytest.mark.parametrize("text", ["Ja.", "Marie Curie", "Mount Kilimanjaro", "1661", "",
                                  "Sir Arthur Conan Doyle, Edinburgh", "東京都", "서울"])
def test_short_or_name_only_texts_are_undetermined(text):
    assert detectors.detector().identify([text])[0].lang is None


def test_scripts_that_name_their_language_need_no_detector():
    found = detectors.detector().identify(
        ["Поезд в Казань сегодня утром опоздал на час.",
         "ภาพยนตร์เรื่อง Jurassic Park ออกฉายเมื่อปี 1993 และกำกับโดย Steven Spielberg"])
    assert [(d.lang, d.group) for d in found] == [("ru", "Cyrillic"), ("th", "Thai")]
    assert found[0].confidence == 1.0 and found[1].confidence == 1.0   # names set aside


def test_a_rare_name_does_not_outvote_english_function_words():
    text = ("John Ronald Reuel Tolkien was an English writer and philologist. He was a "
            "professor of Anglo-Saxon at the University of Oxford. He was born in "
            "Bloemfontein in 1892.")
    identifier = detectors.detector()
    found = identifier.identify([text])[0]
    assert detectors.language_mismatches(identifier, [(text, found, "en")]) == [False]
    # Read with its names, the paragraph is confidently German: what masking prevents.
    (lang, confidence), = identifier.detect(scripts.AMBIGUOUS["Latin"], [text])
    assert lang == "de" and confidence >= identifier.min_confidence


def test_function_word_lists_are_the_latin_script_languages():
    assert sorted(words.LANGUAGES) == sorted(scripts.AMBIGUOUS["Latin"])


@pytest.mark.parametrize("text, settled", [
    ("the director of the film was born in a small town and moved to the city after the war",
     "en"),
    ("der film wurde von dem regisseur in einer kleinen stadt gedreht und ist sehr bekannt",
     "de"),
    ("o filme foi dirigido por um homem que nasceu na cidade do porto", "pt"),
    # Spanish against French and Portuguese (9 : 7 : 7 points) is the detector's to read
    ("el director de la película nació en una pequeña ciudad y se mudó a la capital", None),
    ("the film was made in a city der film wurde in einer stadt gedreht und ist", None),
    ("the film", None),
    # a paragraph labelled German whose first sentence stayed French (XHotpotQA+): its
    # German rest leads overall (5 points to 2) but not in its first half
    (" faut bien le faire.   ist  des   of  .  vor - am  in  ", None),
])
def test_function_words_settle_plain_texts_and_leave_close_ones_open(text, settled):
    assert words.settle([text]) == [settled]


def test_identify_asks_the_detector_only_what_the_words_leave_open():
    counting = CountingIdentifier()
    english = ("The film was directed by a man who was born in the city and moved to the "
               "capital after the war.")
    spanish = "El director de la película nació en una pequeña ciudad y se mudó a la capital."
    found = counting.identify([english, spanish])
    assert [(d.lang, d.confidence) for d in found] == [("en", 1.0), ("en", 0.99)]
    assert counting.texts == 1     # only the Spanish text reached the detector


def test_function_words_never_settle_a_wrong_language_on_human_translations(realdata):
    """NTREX-128, 13 Latin-script languages, the first 600 lines of each as 3-line
    paragraphs and as single lines: no text is settled as another language, and most
    paragraphs never reach the detector."""
    files = {"en": "src.eng", "es": "ref.spa", "fr": "ref.fra", "pt": "ref.por",
             "id": "ref.ind", "de": "ref.deu", "sw": "ref.swa", "tr": "ref.tur",
             "vi": "ref.vie", "it": "ref.ita", "nl": "ref.nld", "pl": "ref.pol",
             "sv": "ref.swe"}
    identifier = detectors.detector()
    settled = {}
    for code in words.LANGUAGES:
        lines = (realdata / "ntrex128" / f"newstest2019-{files[code]}.txt").read_text(
            "utf-8").splitlines()[:600]
        paragraphs = [" ".join(lines[i:i + 3]) for i in range(0, 600, 3)]
        for kind, texts in (("lines", lines), ("paragraphs", paragraphs)):
            found = words.settle(identifier.prepare_texts("Latin", texts))
            assert {lang for lang in found if lang is not None} <= {code}, (code, kind)
            settled[code, kind] = sum(lang == code for lang in found) / len(texts)
    paragraph_share = sum(v for (_, kind), v in settled.items() if kind == "paragraphs") / 13
    assert paragraph_share > 0.85, settled


URDU = "پاکستان کا سب سے بڑا شہر کراچی ہے اور یہ سمندر کے کنارے واقع ہے۔"
PERSIAN = "تهران پایتخت ایران است و بزرگترین شهر این کشور به شمار می رود."
ARABIC = "القاهرة هي عاصمة مصر وأكبر مدينة في العالم العربي من حيث عدد السكان."


@pytest.mark.parametrize("text, settled", [
    (URDU, "ur"), (PERSIAN, "fa"), (ARABIC, "ar"),
    # Persian typed with Arabic yeh and kaf: its letters name no one language
    (PERSIAN.replace("ی", "ي").replace("ک", "ك"), None),
    # a Persian first sentence before Urdu: Urdu letters only in the second half
    (PERSIAN + " " + URDU, None),
    ("شهر", None),                      # too few letters to tell
])
def test_letters_settle_plain_arabic_script_texts_and_leave_the_rest_open(text, settled):
    assert letter_rule.settle([text]) == [settled]


def test_identify_asks_the_detector_only_what_the_letters_leave_open():
    counting = CountingIdentifier()
    mixed = PERSIAN + " " + URDU
    found = counting.identify([URDU, PERSIAN, ARABIC, mixed])
    assert [(d.lang, d.confidence) for d in found] == [
        ("ur", 1.0), ("fa", 1.0), ("ar", 1.0), ("ar", 0.99)]
    assert counting.texts == 1     # only the mixed text reached the detector


def test_letters_never_settle_a_wrong_language_on_human_translations(realdata):
    """NTREX-128 Arabic, Persian and Urdu, every line and the lines as 3-line paragraphs:
    no text is settled as another language, and most never reach the detector."""
    files = {"ar": "ref.arb", "fa": "ref.fas", "ur": "ref.urd"}
    identifier = detectors.detector()
    for code, name in files.items():
        lines = (realdata / "ntrex128" / f"newstest2019-{name}.txt").read_text(
            "utf-8").splitlines()
        paragraphs = [" ".join(lines[i:i + 3]) for i in range(0, len(lines), 3)]
        for kind, texts in (("lines", lines), ("paragraphs", paragraphs)):
            found = letter_rule.settle(identifier.prepare_texts("Arabic", texts))
            assert {lang for lang in found if lang is not None} <= {code}, (code, kind)
            assert sum(lang == code for lang in found) / len(texts) > 0.9, (code, kind)


# -------------------------------------------------------------------------------- cache

class CountingIdentifier(detectors.LanguageIdentifier):
    """A deterministic stand-in detector that counts what it is asked."""

    name = "counting"
    min_confidence = 0.7

    def __init__(self):
        self.texts = self.seconds = 0

    @property
    def version(self) -> str:
        return "counting-1"

    def detect(self, codes, texts, second_opinion=False):
        if second_opinion:
            self.seconds += len(texts)
        else:
            self.texts += len(texts)
        return [(codes[0], 0.99)] * len(texts)


def _release(tmp_path, records):
    from audit.io import release as readers
    from devkit import synth
    synth.write_release(records, tmp_path / "release")
    return readers.open_release(tmp_path / "release")


GERMAN = [["Donau", ["Die Donau ist ein langer Fluss, der durch viele Länder fließt.",
                     "Sie fließt von Westen nach Osten durch ganz Mitteleuropa.",
                     "Am Ende mündet sie über ein breites Delta ins Meer."], "German"],
          ["Rhein", ["Der Rhein entspringt in den Alpen und ist sehr lang.",
                     "Er fließt nach Norden bis zur Nordsee."], "German"],
          ["Seine", ["Die Seine fließt durch Paris."], "German"]]


def test_cache_is_reused_and_only_new_texts_are_detected(tmp_path):
    src = source()
    german = GERMAN
    cache = tmp_path / "cache"
    first = CountingIdentifier()
    done = langid.prepare(_release(tmp_path / "a", [record(src, german)]), cache, first)
    assert done.script_misses == done.script_texts > 0
    assert done.lang_misses == done.lang_texts > 0 and first.texts > 0
    # The stand-in calls every Latin text English: the German-assigned ones get a second
    # opinion, cached too.
    assert done.second_misses == done.suspects == first.seconds > 0
    parts = sorted(cache.rglob("part-*.parquet"))
    assert len(parts) == 3
    keys = set().union(*(pq.read_table(p).column("key").to_pylist() for p in parts))
    assert text_sha256("Welcher Fluss ist länger?") in keys
    assert sorted(k[64:] for k in keys if ":" in k) == [":en:de"] * first.seconds

    again = CountingIdentifier()
    done = langid.prepare(_release(tmp_path / "b", [record(src, german)]), cache, again)
    assert (done.script_misses, done.lang_misses, done.second_misses) == (0, 0, 0)
    assert (again.texts, again.seconds) == (0, 0)
    assert len(sorted(cache.rglob("part-*.parquet"))) == 3

    grown = CountingIdentifier()
    other = record(src, german, position=1,
                   question="In welchem Jahr wurde die älteste Brücke über diesen Fluss gebaut?")
    done = langid.prepare(_release(tmp_path / "c", [record(src, german), other]), cache,
                          grown)
    assert (done.script_misses, done.lang_misses, grown.texts) == (1, 1, 1)


def test_a_cold_fill_in_small_batches_gives_the_same_signals(tmp_path, monkeypatch):
    """Texts are counted and identified COMPUTE_BATCH at a time and written to the cache a
    part per APPEND_ROWS rows: in batches of 2 (parts of 3 rows) the judged units, the
    cached rows and the findings are those of one batch."""
    from audit.checks.language import LANGUAGE_CHECKS
    records = [record(source(_id=f"5a00000000000000000000{i:02d}"), GERMAN, position=i,
                      question=question)
               for i, question in enumerate(["Welcher Fluss fließt durch Paris und Wien?",
                                             "De rivier stroomt door veel landen in Europa.",
                                             "Which river flows through the most countries?"])]

    def judged(folder, cache):
        release = _release(folder, records)
        done = langid.prepare(release, cache)
        rows = release.con.sql("SELECT * FROM lang_judged ORDER BY ALL").fetchall()
        found = sorted(release.con.sql(LANGUAGE_CHECKS[1].query(release)).fetchall())
        return done, rows, found

    whole, rows, found = judged(tmp_path / "a", tmp_path / "one")
    monkeypatch.setattr(langid, "COMPUTE_BATCH", 2)
    monkeypatch.setattr(signal_cache, "APPEND_ROWS", 3)
    small, small_rows, small_found = judged(tmp_path / "b", tmp_path / "small")
    assert (small_rows, small_found) == (rows, found) and len(found) == 2
    assert (small.script_misses, small.lang_misses) == (whole.script_misses, whole.lang_misses)
    parts = sorted((tmp_path / "small").rglob("script/*/part-*.parquet"))
    assert len(parts) == -(-whole.script_misses // 4)     # flushed at 4 >= 3 rows
    assert sum(pq.read_metadata(p).num_rows for p in parts) == whole.script_misses
    # From BACKGROUND_FROM texts on, two forked children share the batches; lingua read in
    # parallel in this process above, so a child that used the parent's thread pool
    # would hang here instead of reading on its own core.
    monkeypatch.setattr(langid, "BACKGROUND_FROM", 1)
    apart, apart_rows, apart_found = judged(tmp_path / "c", tmp_path / "apart")
    assert (apart_rows, apart_found) == (rows, found)
    assert "apart" in apart.seconds and "lang" not in apart.seconds
    for signal in ("script", "lang"):
        cached = [sorted((row for p in (tmp_path / name).rglob(f"{signal}/*/part-*.parquet")
                          for row in pq.read_table(p).to_pylist()), key=lambda r: r["key"])
                  for name in ("one", "apart")]
        assert cached[0] == cached[1] and len(cached[0]) == {"script": 9, "lang": 7}[signal]
    assert not list((tmp_path / "apart").glob(".background-*"))   # the files went


def test_compaction_keeps_one_row_per_key(tmp_path):
    cache = signal_cache.SignalCache(tmp_path, "lang", "v", langid.LANG_SCHEMA)
    import pyarrow as pa
    for n in range(signal_cache.COMPACT_AFTER + 1):
        cache.append(pa.table({"key": [f"k{n}", "shared"], "lang": ["de", "de"],
                               "confidence": [0.9, 0.9], "letters": [30, 30],
                               "grp": ["Latin", "Latin"]}, schema=langid.LANG_SCHEMA))
    parts = cache.parts()
    assert len(parts) == 1
    keys = pq.read_table(parts[0]).column("key").to_pylist()
    assert sorted(keys) == sorted({f"k{n}" for n in range(signal_cache.COMPACT_AFTER + 1)}
                                  | {"shared"})
