"""The preservation signal layer (issue 22): what the question needs survives translation —
the answer must still stand in the answer-bearing evidence, and the bridge entity must
still link the two gold paragraphs. Its two checks (audit/checks/preservation.py):

answer_not_in_evidence  a row whose English answer is a name, a number or a date
                        (`copy_category` name_like / number_or_date), at each supporting
                        sentence whose English text contains that answer (whole tokens,
                        release normalisation): the translated sentence must carry it
bridge_entity_lost      a bridge question, at each supporting sentence of one gold paragraph
                        whose English text mentions the title of the other gold paragraph
                        (its trailing "(…)" dropped; else the part before a comma): the
                        translated sentence must carry that entity

What counts as carrying it, per (language, what is looked for, translated sentence):
- verbatim: the English text itself (case-folded, fuzzy to `rendering_score` so that an
  inflected "Obamy" counts), or
- a rendering from the release itself, the release's own translations being the
  dictionary: every translated answer whose English answer is this text and every
  translated title whose English title is, in the sentence's language (so the row's own
  answer where the languages agree, and on XHotpotQA+ the answer of the sibling view in
  that language), case-folded, fuzzy to `rendering_score`, or
- transliterated: the sentence romanised by ICU (`Any-Latin; Latin-ASCII`, word by word;
  Thai, Chinese and Japanese split by ICU's word break rules) against the English text
  folded to ASCII, rapidfuzz
  `partial_ratio`, on the letters and on a phonetic key of both (vowels after a word's
  first letter, h and doubled letters dropped, w=v, c=k=q, y=i=j…), at least the threshold
  of the sentence's script (`<script>_score`: latin, cyrillic, greek, arabic, devanagari,
  bengali, thai, hangul, japanese, han), and
- where the release holds no rendering, word by word (`word_score`, at least the
  `word_score` threshold): each significant word of the English text against its best
  translated word or that word's first letters (inflection), in any order ("Océano
  Pacífico" carries "Pacific Ocean"), and
- every numeral of the English text carried by value (`textsignals.missing_numerals`:
  digit systems, scale words, calendars, Roman numerals, numbers in words: ICU's spellout
  forms of the sentence's language, cases and genders included, "четырьмя", "十年",
  "التسعينيات"), for numbers and dates whatever the script. A number or a date
  (`by_value_sql`: a digit, at most eight words, no capitalised word but a month, an era
  or a currency code: "October 6, 1973", "£30m", "66 million years ago", "1970s"; or a
  number in words, `spelled_number`: "four", "ten years") is eligible and judged by its
  numerals alone; an imperial quantity by its value or a metric conversion of it.
Texts of under MIN_FUZZY_CHARS letters ("UK", "BBC") match only a whole word exactly.

Verdicts. Found: no finding. A numeral missing, or no form found although the release holds
a rendering in the sentence's language: `lost` (review). Nothing found and no rendering to
compare with: `unverifiable` (info): romanisation alone cannot tell a translated name
("Océano Pacífico", "Верховный суд") from a lost one, whatever the script (measured on
XQuAD by `bench/preservation.py`), so the check says so rather than guess. The detail names
what was looked for, the best match and its score, and the threshold; `evidence` is the best
match in the translated sentence and `source_evidence` what was looked for in the English
one (the Instance page marks both).

Speed: the units are the supporting sentences of each distinct context (the 24 views of an
XHotpotQA+ source share one), the renderings one join against the release's distinct
(English, language, translation) pairs, both remembered per release content (`<cache>/
preservation/units/`, keyed like the heuristics' unit index), and the signals (best matches and scores) are
computed once per distinct (kind, language, English text, English sentence, translated
sentence, renderings) and cached by its sha256 (`<cache>/preservation/signals/<version>/`,
audit.io.signal_cache.SignalCache). Thresholds are applied in SQL, so a policy that tunes them
reuses the cache.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import unicodedata
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from .. import settings
from ..io import signal_cache
from ..language import descriptors
from ..languages import BY_CODE, CODES
from ..sql import arrays, macros
from ..sql.safe import literal
from . import signals as textsignals
from .layer import Prepared

if TYPE_CHECKING:
    from ..io.model import Release

TRANSLITERATION = "Any-Latin; Latin-ASCII"
TARGETS = tuple(code for code in CODES if code != "en")
UNSPACED = frozenset({"zh", "ja", "th"})
MIN_FUZZY_CHARS = 4
SIGNALS_VERSION = "pres-4"
# As a signal layer (`audit.checks.layers.SignalLayer`) of its two checks.
NAME, VERSION = "preservation", SIGNALS_VERSION
THREADED = False
# Script group (SPEC §4) -> the threshold naming it.
SCRIPT_KEYS = {"Latin": "latin", "Cyrillic": "cyrillic", "Greek": "greek", "Arabic": "arabic",
               "Devanagari": "devanagari", "Bengali": "bengali", "Thai": "thai",
               "Hangul": "hangul", "Japanese": "japanese", "Han": "han"}


def script_of(lang: str) -> str:
    return BY_CODE[lang].script


# ------------------------------------------------------------------ words and romanisation

_BREAKERS = threading.local()


def _breaker(lang: str):
    """ICU's word break iterator for a language: stateful, so one per thread."""
    import icu
    breakers = _BREAKERS.__dict__.setdefault("by_lang", {})
    if lang not in breakers:
        breakers[lang] = icu.BreakIterator.createWordInstance(icu.Locale(lang))
    return breakers[lang]


# A run of letters, marks and digits: Python's \w (fast) plus the combining marks it
# leaves out (Indic vowel signs, Arabic harakat, Latin diacritics written apart) and
# ZWNJ/ZWJ, which join Persian and Indic words.
_WORD = re.compile("[\\w\u0300-\u036f\u0483-\u0489\u0610-\u061a\u064b-\u065f\u0670"
                   "\u06d6-\u06ed\u0900-\u0dff\u200c\u200d]+")


def words(text: str, lang: str) -> list[tuple[int, int]]:
    """(start, end) of each word or number of a text: runs of letters, marks and digits,
    and in Thai, Chinese and Japanese the words of ICU's word break rules."""
    if lang not in UNSPACED:
        return [m.span() for m in _WORD.finditer(text)]
    breaker = _breaker(lang)
    breaker.setText(text)
    spans, start = [], breaker.first()
    for end in breaker:
        if breaker.getRuleStatus() != 0:
            spans.append((start, end))
        start = end
    return spans


@lru_cache(maxsize=1)
def _transliterator():
    import icu
    return icu.Transliterator.createInstance(TRANSLITERATION)


# Letters of Urdu (and Persian) that ICU's Arabic-Latin rules leave as they are: their
# Arabic counterparts first.
_ARABIC_FOLD = str.maketrans({"ہ": "ه", "ھ": "ه", "ۃ": "ة", "ں": "ن", "ے": "ي", "ۓ": "ي",
                              "ٹ": "ت", "ڈ": "د", "ڑ": "ر", "ک": "ك", "ی": "ي", "ۀ": "ه"})
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_PHONETIC = (("dzh", "j"), ("dz", "j"), ("zh", "j"), ("kh", "h"), ("ph", "f"), ("th", "t"),
             ("sch", "s"), ("sh", "s"), ("ch", "c"), ("gh", "g"), ("ck", "k"), ("mp", "b"),
             ("nt", "d"), ("w", "v"), ("q", "k"), ("c", "k"), ("x", "ks"), ("y", "i"),
             ("j", "i"))
_LATER_VOWELS = re.compile(r"(?<=.)[aeiouh]")
_DOUBLED = re.compile(r"(.)\1+")


def phonetic(roman: str) -> str:
    """A coarse sound key of a romanised word, so that "dzhon elvej" meets "john elway":
    digraphs merged, w=v, c=k=q, y=i=j, vowels and h after the first letter dropped,
    doubled letters single."""
    for old, new in _PHONETIC:
        roman = roman.replace(old, new)
    return _DOUBLED.sub(r"\1", _LATER_VOWELS.sub("", roman))


@lru_cache(maxsize=500_000)
def word_forms(word: str) -> tuple[str, str, str]:
    """One word case-folded (NFKC), romanised (ICU `Any-Latin; Latin-ASCII`, lower-case
    ASCII letters and digits) and as its phonetic key."""
    latin = _transliterator().transliterate(word.translate(_ARABIC_FOLD))
    roman = _NOT_ALNUM.sub("", latin.lower())
    return unicodedata.normalize("NFKC", word).casefold(), roman, phonetic(roman)


def romanise(text: str, lang: str) -> str:
    """A text romanised word by word, as the check compares it."""
    return " ".join(word_forms(text[a:b])[1] for a, b in words(text, lang))


@dataclass
class _Joined:
    """Word forms of a text joined into one string, with each word's place in the string
    and in the text (so a match in the string names the words of the text it covers)."""
    text: str
    string: str
    places: list[tuple[int, int, int, int]]    # (string start, end, text start, end)

    def original(self, start: int, end: int) -> str:
        covered = [(a, b) for s, e, a, b in self.places if s < end and e > start]
        if not covered:
            return ""
        return self.text[covered[0][0]:covered[-1][1]]


@lru_cache(maxsize=4096)
def _joined(text: str, lang: str, joiner: str) -> tuple[_Joined, _Joined, _Joined]:
    """A text's words case-folded, romanised and as phonetic keys (`word_forms`), each
    form joined by `joiner`."""
    spans = words(text, lang)
    forms = [word_forms(text[a:b]) for a, b in spans]
    out = []
    for which in range(3):
        kept = [(form[which], span) for form, span in zip(forms, spans) if form[which]]
        places, at = [], 0
        for piece, (a, b) in kept:
            places.append((at, at + len(piece), a, b))
            at += len(piece) + len(joiner)
        out.append(_Joined(text, joiner.join(piece for piece, _ in kept), places))
    return tuple(out)


# ----------------------------------------------------------------------------- matching

@lru_cache(maxsize=1)
def _fuzz():
    from rapidfuzz import fuzz
    return fuzz


@dataclass
class Best:
    """The best match of one needle in a sentence: score 0–100 and the words it covers."""
    score: float = 0.0
    text: str = ""
    roman: str = ""


def _best(needle: _Joined, hay: _Joined, exact: bool) -> Best:
    """`partial_ratio` of a needle in a haystack (both joined word forms); with `exact`,
    only a run of whole words equal to the needle counts (score 100)."""
    if not needle.string or not hay.string:
        return Best()
    if exact:
        words_ = [hay.string[s:e] for s, e, _, _ in hay.places]
        wanted = [needle.string[s:e] for s, e, _, _ in needle.places]
        n = len(wanted)
        for i in range(len(words_) - n + 1):
            if words_[i:i + n] == wanted:
                return Best(100.0, hay.original(hay.places[i][0], hay.places[i + n - 1][1]),
                            hay.string[hay.places[i][0]:hay.places[i + n - 1][1]])
        return Best()
    found = _fuzz().partial_ratio_alignment(needle.string, hay.string)
    if found is None or found.score == 0:
        return Best()
    start, end = found.dest_start, found.dest_end     # always the haystack's span
    return Best(round(found.score, 1), hay.original(start, end), hay.string[start:end])


# Words of a name that do not name it: looked past when matching word by word.
_LINKING = frozenset("of the and for from with by in on at to an de la le les du des del "
                     "der den von van da di do dos das y e".split())


def _word_score(target: str, translation: str, lang: str) -> float | None:
    """Word by word, in any order: each significant word of the English text (three letters
    or more, not a linking word or a numeral) against its best word of the translation,
    romanised and as phonetic keys (`ratio`), also against the translated word's first
    letters (an inflected "Аберкромби", "Obamy", "Джеймса"); in Thai, Chinese and Japanese
    against runs of up to three words. The mean of the words' best scores (None when the
    text has no significant word): "генерал-майора Джеймса Аберкромби" carries "Major
    General James Abercrombie" although no span does in order."""
    fuzz = _fuzz()
    spans = words(translation, lang)
    forms = [word_forms(translation[a:b])[1:] for a, b in spans]
    if lang in UNSPACED:
        forms += [(a[0] + b[0], phonetic(a[0] + b[0])) for a, b in zip(forms, forms[1:])]
        forms += [(a[0] + b[0] + c[0], phonetic(a[0] + b[0] + c[0]))
                  for a, b, c in zip(forms, forms[1:], forms[2:])]
    forms = [f for f in forms if f[0]]
    wanted = [word_forms(target[a:b])[1:] for a, b in words(target, "en")]
    wanted = [w for w in wanted if len(w[0]) >= 3 and w[0] not in _LINKING
              and not w[0].isdigit()]
    if not wanted or not forms:
        return None
    scores = []
    for roman, sound in wanted:
        best = 0.0
        for their_roman, their_sound in forms:
            best = max(best, fuzz.ratio(roman, their_roman),
                       fuzz.ratio(roman, their_roman[:len(roman) + 1]))
            if len(sound) >= 4:
                best = max(best, fuzz.ratio(sound, their_sound),
                           fuzz.ratio(sound, their_sound[:len(sound)]))
        scores.append(best)
    return round(sum(scores) / len(scores), 1)


def _letters(text: str) -> int:
    """Letters, digits and marks (an Indic vowel sign is part of its word's length)."""
    return sum(ch.isalnum() or unicodedata.category(ch)[0] == "M" for ch in text)


def match_signals(kind: str, lang: str, target: str, source: str, translation: str,
                  renderings: Sequence[str] = ()) -> dict:
    """Every signal of one unit: where the English text stands in the English sentence
    (`src_match`), its best verbatim match in the translation (`en_*`), the best match of
    the release's renderings (`form_*`, `form`), the best romanised match (`roman_*`, the
    larger of the letters' and the phonetic keys' scores; not computed, NULL, when a
    verbatim or rendered match scores 100), and the English text's numerals the translation
    does not carry (`num_missing`, ', '-joined, None when none). `kind` (answer, bridge)
    only keys the cache."""
    joiner = "" if lang in UNSPACED else " "
    exact = _letters(target) < MIN_FUZZY_CHARS and lang not in UNSPACED
    row: dict = {"forms_n": len(renderings), "src_match": _english_span(target, source)}
    hay, hay_roman, hay_sound = _joined(translation, lang, joiner)
    en_native, en_roman, en_sound = _joined(target, "en", joiner)
    verbatim = _best(en_native, hay, exact)
    row.update(en_score=verbatim.score, en_match=verbatim.text or None)
    best_form, best = (renderings[0] if renderings else None), Best()
    for rendering in renderings:
        found = _best(_joined(rendering, lang, joiner)[0], hay,
                      _letters(rendering) < MIN_FUZZY_CHARS and lang not in UNSPACED)
        if found.score > best.score:
            best_form, best = rendering, found
    row.update(form_score=best.score if renderings else None, form_match=best.text or None,
               form=best_form)
    if max(verbatim.score, best.score) < 100:
        roman = _best(en_roman, hay_roman, exact)
        if len(en_sound.string) >= MIN_FUZZY_CHARS and not exact:
            sound = _best(en_sound, hay_sound, False)
            roman = roman if roman.score >= sound.score else sound
        row.update(roman_score=roman.score, roman_match=roman.text or None,
                   roman_text=romanise(roman.text, lang) if roman.text else None,
                   word_score=None if exact else _word_score(target, translation, lang))
    missing = textsignals.missing_numerals(target, translation, lang,
                                           spelled=spelled_number(target))
    if missing and (romans := textsignals.roman_values(translation)):
        # "the 19th century" = "siglo XIX": a Roman numeral carries the value too
        missing = [m for m in missing if not any(
            v in romans for n in textsignals.numerals(m, "en") for v in n.values)]
    row["num_missing"] = ", ".join(missing) if missing else None
    return row


def _english_span(target: str, source: str) -> str | None:
    """The English text as it stands in the English sentence (case-insensitive)."""
    at = source.casefold().find(target.casefold())
    if at >= 0 and len(source.casefold()) == len(source):
        return source[at:at + len(target)]
    return target if target in source else None


# ------------------------------------------------------------------ the signals per unit

SIGNAL_SCHEMA = pa.schema([
    ("key", pa.string()), ("forms_n", pa.int16()), ("src_match", pa.string()),
    ("en_score", pa.float64()), ("en_match", pa.string()),
    ("form_score", pa.float64()), ("form_match", pa.string()), ("form", pa.string()),
    ("roman_score", pa.float64()), ("roman_match", pa.string()), ("roman_text", pa.string()),
    ("word_score", pa.float64()), ("num_missing", pa.string()),
])
COLUMNS = ("key", "kind", "lang", "target", "src", "tgt", "forms")


def signal_table(columns: dict[str, list]) -> pa.Table:
    rows = [match_signals(kind, lang, target, src, tgt, forms or ())
            for kind, lang, target, src, tgt, forms in
            zip(*(columns[name] for name in COLUMNS[1:]))]
    values = {f.name: [r.get(f.name) for r in rows] for f in SIGNAL_SCHEMA if f.name != "key"}
    return arrays.table({"key": columns["key"], **values}, SIGNAL_SCHEMA)


@lru_cache(maxsize=1)
def cache_version() -> str:
    """The rules' code, ICU's and rapidfuzz's versions: a change to any never reads stale
    rows."""
    from importlib.metadata import version

    import icu
    rules = hashlib.sha256(Path(__file__).read_bytes() + Path(textsignals.__file__)
                           .read_bytes()).hexdigest()[:12]
    return (f"{SIGNALS_VERSION}-{rules}-icu{icu.ICU_VERSION}-rapidfuzz{version('rapidfuzz')}"
            f"-unicode{unicodedata.unidata_version}")


# ------------------------------------------------------------------ units of a release

_CODES = "(" + ", ".join(literal(c) for c in TARGETS) + ")"
# A title's trailing disambiguation "(film)", "（电影）" is not part of how a text names it.
_PAREN = r"'[\s\p{Z}]*[(（][^()（）]*[)）][\s\p{Z}]*$'"

# Each supporting sentence of each distinct context (its sentence unit: language, English
# and translated text) with the context's gold paragraphs (id, English title): the facts
# whose paragraph is a candidate, each paragraph id read as its first candidate.
_SUPPORT = f"""
CREATE OR REPLACE TEMP TABLE pres_support AS
WITH facts AS (
    SELECT DISTINCT ctx, f.paragraph_id AS p, f.sentence_index AS k
    FROM (SELECT ctx, unnest(supporting_facts) AS f FROM contexts)
    WHERE f.paragraph_id IS NOT NULL AND f.sentence_index >= 0),
titles AS (
    SELECT ctx, paragraph_id AS p, src AS title, position
    FROM units WHERE unit = 'title' AND paragraph_id IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY ctx, paragraph_id ORDER BY position) = 1),
resolved AS (SELECT f.*, t.title, t.position FROM facts f JOIN titles t USING (ctx, p)),
gold AS (
    SELECT ctx, list(DISTINCT {{'p': p, 'title': title}}) AS gold FROM resolved GROUP BY ctx)
SELECT r.ctx, r.p AS paragraph_id, r.k::INTEGER AS sentence_index, s.lang, s.src, s.tgt,
       g.gold
FROM resolved r JOIN gold g USING (ctx)
JOIN units s ON s.unit = 'sentence' AND s.ctx = r.ctx AND s.position = r.position
            AND s.sentence_index = r.k
WHERE s.lang IN {_CODES} AND s.src IS NOT NULL AND s.tgt IS NOT NULL
  AND NOT is_blank(s.src) AND NOT is_blank(s.tgt)
"""

# answer units: (ctx, English answer) for each eligible answer a view of the context has,
# at the supporting sentences whose English text contains it; bridge units: at the
# supporting sentences of a bridge context whose English text mentions the title of
# another gold paragraph (without its "(…)"; failing that, the part before a comma).
_UNITS = f"""
CREATE OR REPLACE TEMP TABLE pres_norms AS
SELECT s, ' ' || answer_norm_en(s) || ' ' AS n FROM (
    SELECT src AS s FROM pres_support
    UNION SELECT source_answer FROM pres_answers
    UNION SELECT unnest(mentions) FROM (
        SELECT list_transform(gold, lambda g: regexp_replace(g.title, {_PAREN}, '')) ||
               list_transform(gold, lambda g: split_part(regexp_replace(g.title, {_PAREN}, ''),
                                                         ',', 1)) AS mentions
        FROM pres_support));
CREATE OR REPLACE TEMP TABLE pres_units AS
SELECT s.ctx, 'answer' AS kind, s.paragraph_id, s.sentence_index, s.lang, a.source_answer
         AS target, NULL::VARCHAR AS other, s.src, s.tgt
FROM pres_support s JOIN pres_answers a USING (ctx)
JOIN pres_norms ns ON ns.s = s.src JOIN pres_norms na ON na.s = a.source_answer
WHERE na.n <> '  ' AND contains(ns.n, na.n)
UNION ALL
SELECT ctx, 'bridge', paragraph_id, sentence_index, lang,
       CASE WHEN contains(ns.n, nf.n) THEN m.full ELSE m.head END, other, src, tgt
FROM (SELECT s.*, g.p AS other, regexp_replace(g.title, {_PAREN}, '') AS full,
             split_part(regexp_replace(g.title, {_PAREN}, ''), ',', 1) AS head
      FROM (SELECT *, unnest(gold) AS g FROM pres_support
            SEMI JOIN (SELECT DISTINCT ctx FROM views WHERE question_type = 'bridge')
            USING (ctx) WHERE len(gold) >= 2) s
      WHERE g.p <> s.paragraph_id) m
JOIN pres_norms ns ON ns.s = m.src
JOIN pres_norms nf ON nf.s = m.full JOIN pres_norms nh ON nh.s = m.head
WHERE (nf.n <> '  ' AND contains(ns.n, nf.n))
   OR (m.head <> m.full AND length(nh.n) >= 6 AND contains(ns.n, nh.n));
"""
# Month names, eras and currency codes: the capitalised words a number or a date may hold.
_DATE_WORDS = ("january|february|march|april|may|june|july|august|september|october|"
               "november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|bce|bc|"
               "ad|ce|am|pm|us|usd|gbp|eur|a\\.m|p\\.m|a\\.d|b\\.c")


# "one" is left out: it is a pronoun or an article more often than a number ("one-stop").
_NUMBER_WORDS = "|".join(w for w in textsignals.EN_NUMBER_WORDS if w not in ("zero", "one"))
# A number in words: at most four words ("four", "every five years", "ten million").
MAX_SPELLED_WORDS = 4


def by_value_sql(column: str) -> str:
    """SQL: the English text is a number or a date, checked by the value of its numerals
    alone: it has a digit, at most eight words, and no capitalised word but a month name,
    an era or a currency code ("October 6, 1973", "66 million years ago", "1970s", "£30m",
    "between 1920 and 1930"; not "Super Bowl 50", which is a name) — or it is a number in
    words (`spelled_number`)."""
    words = f"len(string_split(trim({column}), ' '))"
    return (f"((regexp_matches({column}, '\\p{{Nd}}') AND length({column}) <= 60 "
            f"AND {words} <= 8 "
            f"AND NOT regexp_matches(regexp_replace({column}, '(?i)\\b(?:{_DATE_WORDS})\\b', "
            f"'', 'g'), '\\p{{Lu}}')) OR ({spelled_number_sql(column)}))")


def spelled_number_sql(column: str) -> str:
    """SQL twin of `spelled_number`."""
    return (f"NOT regexp_matches({column}, '\\p{{Nd}}') "
            f"AND regexp_matches({column}, '(?i)\\b(?:{_NUMBER_WORDS})\\b') "
            f"AND len(string_split(trim({column}), ' ')) <= {MAX_SPELLED_WORDS} "
            f"AND NOT regexp_matches(regexp_replace({column}, "
            f"'(?i)\\b(?:{_DATE_WORDS}|{_NUMBER_WORDS})\\b', '', 'g'), '\\p{{Lu}}')")


_SPELLED_WORD = re.compile(rf"\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
_SPELLED_OR_DATE = re.compile(rf"\b(?:{_DATE_WORDS}|{_NUMBER_WORDS})\b", re.IGNORECASE)


def spelled_number(text: str) -> bool:
    """The English text is a number in words, judged by its value like a digit: no digit,
    an English number word, at most MAX_SPELLED_WORDS words, and no capitalised word but a
    number word, a month, an era or a currency code ("Six", "ten years", "a two-thirds
    majority"; not "The Three Musketeers", a name)."""
    return (not any(ch.isdigit() for ch in text) and bool(_SPELLED_WORD.search(text))
            and len(text.strip().split(" ")) <= MAX_SPELLED_WORDS
            and not any(ch.isupper() for ch in _SPELLED_OR_DATE.sub("", text)))


_ELIGIBLE_ANSWERS = f"""
CREATE OR REPLACE TEMP TABLE pres_answers AS
SELECT DISTINCT ctx, source_answer FROM views
WHERE source_answer IS NOT NULL AND NOT is_blank(source_answer)
  AND (copy_category(source_answer) IN ('name_like', 'number_or_date')
       OR {by_value_sql('source_answer')})
"""
# The release's own translations of each English text the units look for, in the units'
# languages: translated titles (without their "(…)") and translated answers; one left in
# English is a rendering too (that language writes the name as English does).
_RENDERINGS = f"""
CREATE OR REPLACE TEMP TABLE pres_wanted AS
SELECT DISTINCT title_key(target) AS k, lang FROM pres_units;
CREATE OR REPLACE TEMP TABLE pres_dictionary AS
SELECT DISTINCT w.k, w.lang, d.form FROM (
    SELECT title_key(regexp_replace(src, {_PAREN}, '')) AS k, lang,
           regexp_replace(tgt, {_PAREN}, '') AS form
    FROM units WHERE unit = 'title'
    UNION ALL
    SELECT title_key(src), lang, tgt FROM units WHERE unit = 'answer' AND src IS NOT NULL) d
JOIN pres_wanted w ON w.k = d.k AND w.lang = d.lang
WHERE d.form IS NOT NULL AND NOT is_blank(d.form);
CREATE OR REPLACE TEMP TABLE pres_keyed AS
SELECT u.*, sha256(u.kind || chr(31) || u.lang || chr(31) || u.target || chr(31) || u.src ||
                   chr(31) || u.tgt || chr(31) || array_to_string(u.forms, chr(30))) AS key
FROM (SELECT u.*, coalesce((SELECT list_sort(list(DISTINCT d.form)) FROM pres_dictionary d
                            WHERE d.k = title_key(u.target) AND d.lang = u.lang),
                           []::VARCHAR[]) AS forms
      FROM pres_units u) u;
"""


_PREPARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
BATCH = 50_000
PARALLEL_FROM = 5_000


def start(release: "Release") -> None:
    """Nothing runs ahead: the signals are computed when the first check asks."""


def prepare(release: "Release", cache_dir: Path | None = None,
            force: bool = False) -> Prepared:
    """Table pres_found on the release's connection: every unit (ctx, kind, paragraph_id,
    sentence_index, lang, target, other, forms) with its signals; once per connection
    unless `force`."""
    con = release.con
    if con in _PREPARED and not force:
        return _PREPARED[con]
    descriptors.register(con)       # answer_norm_en
    done = Prepared()
    root = Path(cache_dir) if cache_dir is not None else settings.cache_dir("preservation")
    clock = time.perf_counter()
    _units(release, root)
    done.seconds["units"] = time.perf_counter() - clock
    cache = signal_cache.SignalCache(root, "signals", cache_version(), SIGNAL_SCHEMA)
    with signal_cache.cache_lock(root):
        clock = time.perf_counter()
        done.pairs, done.computed = signal_cache.cached_signals(
            con, cache, "pres_signals", "SELECT DISTINCT key FROM pres_keyed", "pres_missing")
        done.seconds["lookup"] = time.perf_counter() - clock
        if done.computed:
            clock = time.perf_counter()
            con.execute("""CREATE OR REPLACE TEMP TABLE pres_todo AS
                SELECT DISTINCT ON (key) key, kind, lang, target, src, tgt, forms
                FROM pres_keyed SEMI JOIN pres_missing USING (key)""")
            signal_cache.fill_signals(con, cache, "pres_signals", "pres_todo", COLUMNS,
                                signal_table, done.computed, BATCH, PARALLEL_FROM)
            con.execute("DROP TABLE pres_todo")
            done.seconds["compute"] = time.perf_counter() - clock
    clock = time.perf_counter()
    con.execute("""CREATE OR REPLACE TEMP TABLE pres_found AS
        SELECT u.* EXCLUDE (key, src, tgt), s.* EXCLUDE (key)
        FROM pres_keyed u JOIN pres_signals s USING (key);
        DROP TABLE pres_missing; DROP TABLE pres_keyed; DROP TABLE pres_signals""")
    done.seconds["found"] = time.perf_counter() - clock
    done.units = con.sql("SELECT count(*) FROM pres_found").fetchall()[0][0]
    done.seconds["total"] = sum(done.seconds.values())
    _PREPARED[con] = done
    return done


def _units(release: "Release", root: Path) -> None:
    """Table pres_keyed: every unit with its renderings, texts and signal key, remembered per
    release content and what builds it (the SQL, the macros and normalisation it calls:
    `signal_cache.unit_index`): a warm rescan reads it instead of reading every view's
    answer and every candidate's title again."""
    def build() -> None:
        for sql in (_SUPPORT, _ELIGIBLE_ANSWERS, _UNITS, _RENDERINGS):
            release.con.execute(sql)
        release.con.execute("""DROP TABLE pres_support; DROP TABLE pres_norms;
            DROP TABLE pres_answers; DROP TABLE pres_units; DROP TABLE pres_wanted;
            DROP TABLE pres_dictionary""")
    signal_cache.unit_index(release, root, ["pres_keyed"], build, _SUPPORT, _ELIGIBLE_ANSWERS,
                            _UNITS, _RENDERINGS, macros.MACROS, unicodedata.unidata_version,
                            Path(descriptors.__file__).read_text("utf-8"))   # answer_norm_en


def discard(con) -> Prepared | None:
    """Drop what `prepare` put on a connection and return what it did."""
    con.execute("DROP TABLE IF EXISTS pres_found")
    return _PREPARED.pop(con, None)
