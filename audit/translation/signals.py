"""Translation-quality signals of one (English source, translation, language) pair.

Pure Python, no DuckDB: `audit.translation.layer` computes them once per distinct pair and caches
them; the benchmark (bench/heuristics.py) and the tests call them directly. Every function
is Unicode- and language-aware where the rule needs it (see each docstring).

numbers        numerals compared by value across digit systems (`unicodedata.digit`:
               Arabic-Indic, Persian, Devanagari, Bengali, Thai, full-width…), with
               thousands/decimal separators normalised, scale words (million, 万, 억, lakh,
               ล้าน…) applied, CJK compounds (1億4,200万) summed, clock and calendar
               conventions allowed (5 pm = 17:00, Thai Buddhist years, Persian solar years,
               Swahili hours), and imperial quantities allowed to be converted; for
               preservation, numbers in words too (English, and ICU's spellout forms of
               the translation's language).
repetition     the longest loop: a unit of 2–100 characters with a letter, repeated
               consecutively (whitespace between allowed), as OpusFilter's RepetitionFilter.
similarity     normalised Levenshtein similarity (rapidfuzz), as OpusFilter's
               SimilarityFilter.
mojibake       ftfy's repair (fix_encoding); failing that, a whole-text round trip through
               one of ftfy's single-byte codecs that yields valid UTF-8 in the language's own
               script (UTF-8 read as Windows-1251/1253, which ftfy's heuristic often misses).
brackets       per class (brackets: () [] {} 【】…; quotes: "“”„ «» 「」『』《》…) whether it is
               balanced; the first unmatched mark.
terminal       the class of the final punctuation mark (full stop . 。 । ۔, question ? ？ ؟ and
               Greek ;, exclamation ! ！, ellipsis, colon, none), closing quotes and brackets
               set aside.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..languages import base_language

# ------------------------------------------------------------------------------- numbers

# A numeral: digits of any system joined by separators. A space-like separator joins only a
# following group of exactly three digits ("1 000", not "par 3 16th"); ':' never joins
# (clock times and scores are compared part by part).
_DIGIT_SEPARATORS = ".,\u066b\u060c\u066c'\u2019"
_SPACE_SEPARATORS = " \u00a0\u202f\u2009"
_NUMERAL = re.compile(rf"(?<!\d)\d+(?:(?:[{_DIGIT_SEPARATORS}]|[{_SPACE_SEPARATORS}]"
                      r"(?=\d{3}(?!\d)))\d+)*")
_SPLIT = re.compile(rf"[{_DIGIT_SEPARATORS}{_SPACE_SEPARATORS}]")
# Scale words that follow a numeral, longest first: English, the CJK groups, the South
# Asian lakh/crore, and the words for thousand/million/billion of the other languages
# (a translation may move a figure between them: "$2 billion" = "2000 millones").
_SCALE_WORDS = {
    1e3: "thousand mil mille mila tausend duizend tusen bin ribu elfu nghìn ngàn тысяч тыс "
         "tysięcy tys χιλιάδες ألف آلاف هزار ہزار हज़ार हजार হাজার พัน",
    1e6: "million millions millones millón millionen mio milioni milione milhões milhão "
         "miljoen miljoner miljon milyon juta triệu миллион миллиона миллионов млн milion "
         "miliony milionów mln εκατομμύρια εκατομμύριο εκατ مليون ملايين میلیون ملین मिलियन "
         "মিলিয়ন ล้าน",
    1e9: "billion milliard milliards milliarden milliarde mrd miliardi miliardo bilhões "
         "bilião miljard miljarder milyar miliar bilioni tỷ tỉ миллиард миллиарда "
         "миллиардов млрд miliard miliardy miliardów mld δισεκατομμύρια δισ مليار میلیارد "
         "ارب अरब বিলিয়ন พันล้าน",
    1e12: "trillion",
}
SCALES = {word: factor for factor, words in _SCALE_WORDS.items() for word in words.split()}
SCALES.update({"千万": 1e7, "百万": 1e6, "十万": 1e5, "万亿": 1e12, "萬億": 1e12, "万": 1e4,
               "萬": 1e4, "亿": 1e8, "億": 1e8, "千": 1e3, "兆": 1e12, "천만": 1e7, "백만": 1e6,
               "십만": 1e5, "만": 1e4, "억": 1e8, "조": 1e12, "천": 1e3, "लाख": 1e5,
               "करोड़": 1e7, "करोड": 1e7, "লাখ": 1e5, "লক্ষ": 1e5, "কোটি": 1e7, "لاکھ": 1e5,
               "کروڑ": 1e7, "แสน": 1e5, "หมื่น": 1e4})
_ATTACHED_SCALES = {"bn": 1e9, "m": 1e6, "mn": 1e6, "k": 1e3}   # "£2.8bn", "$11m"
_CJK_SCALES = {"千万", "百万", "十万", "万亿", "萬億", "万", "萬", "亿", "億", "千", "兆",
               "천만", "백만", "십만", "만", "억", "조", "천"}
_SCALE = re.compile(r"[ \u00a0]?(?:多|余|餘|여|mil )?[ \u00a0]?("
                    + "|".join(map(re.escape, sorted(_CJK_SCALES, key=len, reverse=True)))
                    + "|(?:" + "|".join(map(re.escape, sorted(set(SCALES) - _CJK_SCALES,
                                                              key=len, reverse=True)))
                    + r")(?!\w))", re.IGNORECASE)
_ATTACHED = re.compile(r"(bn|mn|m|k)\b", re.IGNORECASE)
_PM = re.compile(r"\s?([ap])\.?\s?m\b\.?", re.IGNORECASE)
_CLOCK_HOUR = re.compile(r":\d\d")
_DECADE = re.compile(r"'?s\b")
# Imperial quantities a translator may convert: the numeral near one of these words
# (within three words either side) may come out as any value in the translation.
_IMPERIAL = re.compile(r"\b(?:miles?|mph|foot|feet|ft|inch(?:es)?|yards?|pounds?|lbs?|"
                       r"gallons?|acres?|ounces?|oz|degrees?|fahrenheit)\b|°\s?F",
                       re.IGNORECASE)


@dataclass
class Numeral:
    text: str
    start: int
    end: int
    values: set[float]
    parts: tuple[int, ...]     # the digit groups, zero groups dropped
    convertible: bool = False
    # A scaled decimal as whole and thousandths ("2.8bn" = "2 milliard 800 million").
    split: tuple[int, ...] = ()
    scale: float = 0.0         # the factor of the scale word that follows, if any


def _digits(text: str) -> str:
    return "".join(str(unicodedata.digit(ch)) for ch in text if ch.isdigit())


def _values(token: str) -> tuple[set[float], tuple[int, ...]]:
    """Every reading of a numeral: all separators as grouping ("1.000" = 1000), and the
    last one as a decimal mark ("3,5" = 3.5)."""
    groups = [_digits(g) for g in _SPLIT.split(token)]
    groups = [g for g in groups if g]
    values = {float(int("".join(groups)))}
    separators = _SPLIT.findall(token)
    if separators and separators[-1] not in _SPACE_SEPARATORS + "'\u2019":
        whole = int("".join(groups[:-1]))
        values.add(whole + int(groups[-1]) / 10 ** len(groups[-1]))
    return values, tuple(int(g) for g in groups if int(g))


# Burmese typists (and Zawgyi text) write letters with Myanmar digits: "၀" for wa, "႔"
# and "႕" (Shan digits) for Zawgyi's dot and ha marks. A digit written right after a
# Myanmar letter or sign is such a letter; a Myanmar numeral follows a space or a mark.
_MYANMAR_LETTER_DIGITS = re.compile(r"(?<=[\u1000-\u103f\u104a-\u108f\u109a-\u109f])"
                                    r"[\u1040-\u1049\u1090-\u1099]+")


def numerals(text: str, lang: str) -> list[Numeral]:
    """The numerals of a text with every value they can stand for in language `lang`."""
    found: list[Numeral] = []
    if base_language(lang) == "my":
        text = _MYANMAR_LETTER_DIGITS.sub(lambda m: "\u1000" * len(m.group()), text)
    for match in _NUMERAL.finditer(text):
        values, parts = _values(match.group())
        numeral = Numeral(match.group(), match.start(), match.end(), values, parts)
        tail = text[match.end():match.end() + 24]
        scale = _SCALE.match(tail)
        factor = None
        if scale:
            word = scale.group(1)
            factor = SCALES.get(word.lower(), SCALES.get(word))
        elif (attached := _ATTACHED.match(tail)):
            factor = _ATTACHED_SCALES[attached.group(1).lower()]
        if factor:
            numeral.values |= {v * factor for v in values}
            numeral.split = _split(values)
            numeral.scale = factor
        if lang == "en":
            pm = _PM.match(tail)
            if pm and pm.group(1).lower() == "p":
                numeral.values |= {v + 12 for v in values if v < 12}
                if parts and parts[0] < 12:
                    numeral.parts += (parts[0] + 12,)
            if _CLOCK_HOUR.match(tail):
                numeral.values |= {v - 12 for v in values if 12 < v < 24}
            if _DECADE.match(tail):
                numeral.values |= {v % 100 for v in values if v >= 1000}
            if 10 <= int(min(values)) <= 99 and len(values) == 1:   # "1950-53", "SS19"
                numeral.values |= {1900 + v for v in values} | {2000 + v for v in values}
            around = text[max(0, match.start() - 24):match.end() + 30]
            numeral.convertible = bool(_IMPERIAL.search(around))
        elif lang == "th":
            numeral.values |= {v - 543 for v in values if 2400 <= v <= 2700}
        elif lang == "fa":
            numeral.values |= {v + d for v in values if 1250 <= v <= 1500 for d in (621, 622)}
        elif lang == "sw":   # Swahili hours count from 6 a.m. / 6 p.m.
            numeral.values |= {(v + d) % 24 for v in values if v < 24 for d in (6, 18)}
        if any(numeral.values - {0.0}):
            found.append(numeral)
    _shared_scales(text, found)
    return _compounds(text, found)


# "30 to 50 thousand", "3到5万": the first figure of a range shares the second's scale.
_RANGE = re.compile(r"\s?(?:-|–|—|~|～|〜|到|至|to|bis|à|a|al|до|ve|và|hingga|sampai)\s?",
                    re.IGNORECASE)


def _shared_scales(text: str, found: list[Numeral]) -> None:
    for first, second in zip(found, found[1:]):
        if second.scale and not first.scale and _RANGE.fullmatch(text[first.end:second.start]):
            first.values |= {v * second.scale for v in first.values}


def _split(values: set[float]) -> tuple[int, ...]:
    """A decimal reading's whole part and its fraction in thousandths, zeros dropped."""
    fractional = [v for v in values if v != int(v)]
    if not fractional:
        return ()
    whole, rest = int(fractional[0]), round((fractional[0] % 1) * 1000)
    return tuple(p for p in (whole, rest) if p)


# Roman numerals of two letters or more ("Super Bowl XLIX", "World War II"): a translation
# may write them in digits. They explain a translation's numeral, never go missing (Chinese
# writes "Louis XIV" 路易十四).
_ROMAN = re.compile(r"\b(?=[MDCLXVI]{2,}\b)M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})"
                    r"(?:IX|IV|V?I{0,3})\b")
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def roman_values(text: str) -> list[float]:
    """The values of the Roman numerals of a text."""
    out = []
    for match in _ROMAN.finditer(text):
        digits = [_ROMAN_VALUES[ch] for ch in match.group()]
        out.append(float(sum(-d if d < nxt else d for d, nxt in zip(digits, digits[1:] + [0]))))
    return out


def _compounds(text: str, found: list[Numeral]) -> list[Numeral]:
    """CJK numerals written in scale groups ("1億4,200万", "22 억 5 천만", "37万5,000")
    also stand for their sum."""
    out: list[Numeral] = []
    for numeral in found:
        previous = out[-1] if out else None
        if previous is not None:
            gap = text[previous.end:numeral.start]
            scale = _SCALE.match(gap)
            if scale and scale.group(1) in _CJK_SCALES and not gap[scale.end():].strip():
                factor = SCALES[scale.group(1)]
                previous.values |= {p * factor + v for p in previous.values
                                    if p * factor >= 1e3 for v in numeral.values}
                previous.values |= {v + n for v in previous.values for n in numeral.values
                                    if v > n}
                previous.end = numeral.end
                previous.text = text[previous.start:numeral.end]
                previous.parts += numeral.parts
                continue
        out.append(numeral)
    return out


def _close(a: float, b: float, tolerance: float = 1e-9) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1.0)


@dataclass
class NumberMismatch:
    missing: list[str]      # source numerals the translation does not carry
    extra: list[str]        # translation numerals the source does not explain
    evidence: str           # the first extra numeral, as written in the translation


def number_mismatch(source: str, translation: str, lang: str) -> NumberMismatch | None:
    """A numeral of the source is missing from the translation AND the translation has a
    numeral the source does not explain: a number changed. A numeral matches by any of its
    values; failing that, by its digit groups ("10:15" = "10 h 15", "7.55am" = "7時55分").
    A dropped number alone is not reported (translators write "two" for 2), nor an added
    one (a year spelled out for context)."""
    ours = numerals(source, "en")
    theirs = numerals(translation, lang)
    if not ours or not theirs:
        return None
    missing = _missing(ours, theirs)
    if not missing:
        return None
    our_values = [v for n in ours for v in n.values] + roman_values(source)
    our_parts = {p for n in ours for p in n.parts + n.split} | {
        int(v) for n in ours for v in n.values if v == int(v)}
    converted = [c for n in ours if n.convertible for v in n.values for c in _converted(v)]
    extra = [n for n in theirs
             if not any(_close(v, w) for v in n.values for w in our_values)
             and not (n.parts and set(n.parts) <= our_parts)
             and not any(_close(v, c, 0.08) or abs(v - c) <= 1
                         for v in n.values for c in converted)]
    if not extra:
        return None
    return NumberMismatch([n.text for n in missing], [n.text for n in extra], extra[0].text)


def _missing(ours: list[Numeral], theirs: list[Numeral], strict: bool = False) -> list[Numeral]:
    """The numerals of `ours` that no numeral of `theirs` carries: by any of its values,
    failing that by its digit groups; a convertible (imperial) quantity never misses.
    `strict` (a text that must survive whole, an answer): a convertible quantity misses
    unless its value or a conversion of it is there, and a one-group numeral is not carried
    by a group of a longer one ("18%" by "19,018")."""
    their_values = [v for n in theirs for v in n.values]
    their_parts = {p for n in theirs for p in n.parts}

    def carried(n: Numeral) -> bool:
        if any(_close(v, w) for v in n.values for w in their_values):
            return True
        if n.convertible and (not strict or any(
                _close(c, w, 0.08) or abs(c - w) <= 1
                for v in n.values for c in _converted(v) for w in their_values)):
            return True
        if strict and len(n.parts) < 2:
            return False
        return bool((n.parts and set(n.parts) <= their_parts)
                    or (n.split and set(n.split) <= their_parts))

    return [n for n in ours if not carried(n)]


def missing_numerals(source: str, translation: str, lang: str,
                     spelled: bool = False) -> list[str]:
    """The numerals of an English text (an answer, a title) that the translation does not
    carry, compared as `number_mismatch` compares them (by value across digit systems,
    scale words, clock and calendar conventions). A number the translation writes in words
    carries its value ("vier" carries 4); with `spelled`, so do the English text's number
    words ("four", "ten million")."""
    ours = numerals(english_digits(source) if spelled else source, "en")
    if not ours:
        return []
    return [n.text for n in _missing(ours, numerals(translation, lang)
                                     + spelled_numerals(translation, lang), strict=True)]


# ------------------------------------------------------------------------ numbers in words

# English number words: a run of them ("twenty-five", "two hundred") is read as its value,
# so that an answer written in words ("four", "ten years", "five million") is checked by
# value like "4". Larger scales are SCALES' ("ten million" = "10 million").
_EN_UNITS = {w: float(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_EN_TENS = {w: 10.0 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
EN_NUMBER_WORDS: tuple[str, ...] = (*_EN_UNITS, *_EN_TENS, "hundred")
_EN_WORD = "(?:" + "|".join(EN_NUMBER_WORDS) + ")"
_EN_RUN = re.compile(rf"\b{_EN_WORD}(?:[\s-]+{_EN_WORD})*\b", re.IGNORECASE)


def _run_value(run: str) -> float:
    value = 0.0
    for word in re.split(r"[\s-]+", run.lower()):
        if word == "hundred":
            value = max(value, 1.0) * 100
        else:
            value += _EN_UNITS.get(word, _EN_TENS.get(word, 0.0))
    return value


def english_digits(text: str) -> str:
    """An English text with its number words written as digits ("ten million" →
    "10 million", "twenty-five" → "25")."""
    return _EN_RUN.sub(lambda m: f"{_run_value(m.group()):g}", text)


# Languages whose ICU has no spellout rules of its own (it answers in English): their
# cardinals one to ten, and Chinese's other two (两, 兩 beside 二).
_HAND_CARDINALS = {
    "bn": "এক দুই তিন চার পাঁচ ছয় সাত আট নয় দশ",
    "ur": "ایک دو تین چار پانچ چھ سات آٹھ نو دس",
}
_EXTRA_FORMS = {"zh": {"两": 2.0, "兩": 2.0, "俩": 2.0}}
# Arabic counts a feminine noun with the short form (خمس سنوات) and writes the tens in the
# oblique case (عشرين) as in its decades (الخمسينيات, أربعينات); ICU gives neither.
_EXTRA_FORMS["ar"] = {
    **{f: float(v) for v, fs in enumerate(
        ("واحدة", "اثنين اثنتين اثنتان", "ثلاث", "أربع اربع", "خمس", "ست", "سبع",
         "ثماني ثمان", "تسع", "عشر"), 1) for f in fs.split()},
    **{f: 10.0 * v for v, fs in enumerate(
        ("عشرين", "ثلاثين", "أربعين اربعين", "خمسين", "ستين", "سبعين", "ثمانين", "تسعين"), 2)
       for f in fs.split()}}
# Spellout values in the lexicon: what an answer in words says (above a hundred, digits).
_SPELLED_VALUES = (*range(1, 101), *range(200, 1000, 100), 1000)
# A form this short must end at a word boundary (Turkish "on" = 10, not "onlar").
_SHORT_FORM = 2


@lru_cache(maxsize=None)
def _spelled_lexicon(lang: str) -> tuple[re.Pattern | None, dict[str, set[float]]]:
    """Every cardinal form of every value of _SPELLED_VALUES in language `lang` (ICU's
    spellout rule sets: genders and cases included, "четырьмя", "vierte" not), case-folded,
    and the pattern that finds them in a case-folded text."""
    import icu

    base = base_language(lang)
    forms: dict[str, set[float]] = {}
    if base in _HAND_CARDINALS:
        for value, form in enumerate(_HAND_CARDINALS[base].split(), 1):
            forms.setdefault(form, set()).add(float(value))
    elif base != "en":
        rules = icu.RuleBasedNumberFormat(icu.URBNFRuleSetTag.SPELLOUT, icu.Locale(base))
        names = [rules.getRuleSetName(i) for i in range(rules.getNumberOfRuleSetNames())]
        names = [n for n in names if "cardinal" in n or n.endswith(("numbering", "verbose"))]
        if rules.format(4) != "four":
            for name in names:
                for value in _SPELLED_VALUES:
                    form = rules.format(value, name).casefold()
                    if not any(ch.isdigit() for ch in form):
                        # Hindi writes पाँच and पांच: the candrabindu's nasal as anusvara too
                        for variant in {form, form.replace("\u0901", "\u0902")}:
                            forms.setdefault(variant, set()).add(float(value))
    for form, value in _EXTRA_FORMS.get(base, {}).items():
        forms.setdefault(form, set()).add(value)
    if not forms:
        return None, forms
    unspaced = base in UNSPACED or base in _CLITIC_PREFIXED
    alternatives = []
    for form in sorted(forms, key=len, reverse=True):
        tail = r"(?!\w)" if len(form) <= _SHORT_FORM and base not in UNSPACED else ""
        alternatives.append(re.escape(form) + tail)
    before = "" if unspaced else r"(?<!\w)"
    return re.compile(before + "(?:" + "|".join(alternatives) + ")"), forms


# Arabic script languages attach "and", "by", "to" and the article to a word (بأربعة).
_CLITIC_PREFIXED = frozenset({"ar", "fa", "ur"})


def spelled_numerals(text: str, lang: str) -> list[Numeral]:
    """The numbers a translation writes in words, with a scale word that follows applied
    ("пяти миллионов" = 5,000,000, "五百万"). A form may go on inflected or compounded
    ("четырьмя", "Zweidrittelmehrheit"): it is found at a word's start."""
    pattern, forms = _spelled_lexicon(lang)
    if pattern is None:
        return []
    folded = text.casefold()
    found = []
    for match in pattern.finditer(folded):
        values = set(forms[match.group()])
        scale = _SCALE.match(folded[match.end():match.end() + 24])
        if scale:
            factor = SCALES.get(scale.group(1).lower(), SCALES.get(scale.group(1)))
            if factor:
                values |= {v * factor for v in values}
        # by value only: a word is no digit group of another numeral ("八" in "2.8")
        found.append(Numeral(match.group(), match.start(), match.end(), values, ()))
    return found


# Imperial → metric factors: miles, feet (m, cm), inches (cm, mm), yards, pounds, gallons,
# acres, ounces.
_FACTORS = (1.609344, 0.3048, 30.48, 2.54, 25.4, 0.9144, 0.453592, 3.785, 0.4047, 28.35)


def _converted(value: float) -> list[float]:
    """What a translator may have converted an imperial quantity to (°F → °C included)."""
    return [value * f for f in _FACTORS] + [(value - 32) * 5 / 9]


# ---------------------------------------------------------------------------- repetition

# OpusFilter's RepetitionFilter pattern: a unit starting with a non-space, repeated with
# optional spaces between; here the unit has 2–100 characters and counts only with a letter,
# and it is searched in the case-folded text, in spaced languages with punctuation blanked
# ("No, no, no" is "no" three times).
_LOOP = re.compile(r"(\S.{1,99}?)(?:\s*\1){2,}", re.DOTALL)
# In languages written with spaces a loop is whole words, repeated with spaces between
# ("nana na" inside a Swahili word, "nini", and the Turkish suffixes of "günününün" are not).
_WORD_LOOP = re.compile(r"(?<!\S)(\S.{1,99}?)(?:\s+\1){2,}(?!\S)", re.DOTALL)
# Written without spaces between words: a loop may start and end anywhere.
UNSPACED = frozenset({"zh", "ja", "th"})


@dataclass
class Loop:
    unit: str
    count: int        # occurrences in a row (a unit once is no loop)
    span: str         # the looping stretch of the text, as written


class _PunctuationToSpace(dict):
    """A str.translate table: every punctuation mark and symbol (P*, S*) to a space, every
    other character to itself; filled as characters are met (building it for all 1.1 M
    code points cost 0.3 s in every process that computes signals)."""

    def __missing__(self, cp: int) -> int:
        self[cp] = 32 if unicodedata.category(chr(cp))[0] in "PS" else cp
        return self[cp]


_PUNCTUATION_TO_SPACE = _PunctuationToSpace()


def _blank_punctuation(text: str) -> str:
    return " ".join(text.translate(_PUNCTUATION_TO_SPACE).split()).casefold()


def longest_loop(text: str, lang: str) -> Loop | None:
    """The unit repeated most often in a row (ties: the longer stretch), or None."""
    # Punctuation is part of a unit in unspaced text ("说。说。说。"), a separator in spaced.
    folded = text.casefold() if lang in UNSPACED else _blank_punctuation(text)
    best: tuple[str, int] | None = None
    for match in (_LOOP if lang in UNSPACED else _WORD_LOOP).finditer(folded):
        unit = match.group(1).strip()
        if not any(ch.isalpha() for ch in unit):
            continue
        count = match.group(0).count(unit)
        if best is None or (count, len(unit)) > (best[1], len(best[0])):
            best = (unit, count)
    if best is None:
        return None
    unit, count = best
    # The same stretch in the text as written (punctuation and case as they were).
    word = r"[\W_]*".join(re.escape(ch) for ch in unit)
    written = re.search(rf"{word}(?:[\W_]*{word}){{{count - 1}}}", text, re.IGNORECASE)
    return Loop(unit, count, written.group(0) if written else unit)


_WORD = re.compile(r"\w+")
MAX_LOOP_STEP = 12   # pieces between the repeats that `may_loop` looks for


def may_loop(text: str, lang: str) -> bool:
    """A cheap necessary condition for a loop of three: some word piece (in text written
    without spaces, some pair of characters) occurs three times at equal steps, as the first
    piece of a repeated unit does."""
    folded = text.casefold()
    pieces = ([a + b for a, b in zip(folded, folded[1:])] if lang in UNSPACED
              else _WORD.findall(folded))
    if len(pieces) - len(set(pieces)) < 2:
        return False
    where: dict[str, list[int]] = {}
    for i, piece in enumerate(pieces):
        where.setdefault(piece, []).append(i)
    for positions in where.values():
        if len(positions) >= 3 and _three_at_equal_steps(positions):
            return True
    return False


def _three_at_equal_steps(positions: list[int]) -> bool:
    """Whether p, p + step and p + 2 step are all among the (ascending) positions for some
    step up to MAX_LOOP_STEP: each close pair is extended by its own step, so only pairs
    within MAX_LOOP_STEP of each other are tried, not every step from every position."""
    seen = set(positions)
    for i, first in enumerate(positions):
        for second in positions[i + 1:]:
            step = second - first
            if step > MAX_LOOP_STEP:
                break
            if second + step in seen:
                return True
    return False


# ---------------------------------------------------------------------------- similarity

def similarity(source: str, translation: str) -> float:
    """Normalised Levenshtein similarity in [0, 1] (OpusFilter's SimilarityFilter)."""
    from rapidfuzz.distance import Levenshtein
    return Levenshtein.normalized_similarity(source, translation)


def similarity_bound(source: str, translation: str) -> float:
    """An upper bound of `similarity` that costs nothing: characters of one text that the
    other cannot hold (a non-ASCII letter against an ASCII source) never match."""
    longest = max(len(source), len(translation)) or 1
    if source.isascii():
        return min(len(source), len(translation.encode("ascii", "ignore"))) / longest
    return min(len(source), len(translation)) / longest


# ------------------------------------------------------------------------------ mojibake

@dataclass
class Mojibake:
    repaired: str     # the whole text as ftfy (or the round trip) repairs it
    codec: str        # the codec the UTF-8 bytes were wrongly decoded with
    bad: str          # the first mangled stretch, as written
    good: str         # ... and what it should read


def _changed_stretch(bad: str, good: str) -> tuple[str, str]:
    """The stretch where two texts differ (common prefix and suffix set aside)."""
    start = 0
    while start < min(len(bad), len(good)) and bad[start] == good[start]:
        start += 1
    end = 0
    while (end < min(len(bad), len(good)) - start
           and bad[len(bad) - 1 - end] == good[len(good) - 1 - end]):
        end += 1
    return bad[start:len(bad) - end], good[start:len(good) - end]


# Zawgyi, the legacy Burmese font encoding, stores the vowel sign "ေ" before its consonant
# (Unicode: after) and writes stacked and medial forms with code points that Unicode gives
# to Mon, Shan and Karen letters and Shan digits. Burmese text in Unicode has neither.
ZAWGYI = (r"(?:^|[^\u1000-\u109f])\u1031[\u1000-\u1021]|[\u1060-\u1097]")
_ZAWGYI = re.compile(ZAWGYI)
_ZAWGYI_MIN = 2    # marks: one may be a typo


def zawgyi(text: str, lang: str) -> Mojibake | None:
    """Burmese text in the Zawgyi encoding (reported, not converted): the first word
    holding one of its marks."""
    if base_language(lang) != "my":
        return None
    marks = list(_ZAWGYI.finditer(text))
    if len(marks) < _ZAWGYI_MIN:
        return None
    at = marks[0].end() - 1
    start = max(text.rfind(" ", 0, at), text.rfind("\n", 0, at)) + 1
    word = text[start:].split(maxsplit=1)[0]
    return Mojibake("", "Zawgyi", word[:30], "")


def mojibake(text: str, lang: str) -> Mojibake | None:
    """ftfy's repair of the text's encoding, else a round trip through one of ftfy's
    single-byte codecs (the text re-encoded, then read as UTF-8) whose result is written in
    the language's own script, else Burmese in the Zawgyi encoding (`zawgyi`). Nothing is
    changed: the repair is only reported."""
    if (legacy := zawgyi(text, lang)) is not None:
        return legacy
    import ftfy
    import ftfy.bad_codecs  # noqa: F401  (registers the sloppy-windows-* codecs)
    from ftfy.chardata import CHARMAP_ENCODINGS
    fixed, steps = ftfy.fix_encoding_and_explain(text)
    codec = next((arg for op, arg in steps if op == "encode"), None)
    if fixed == text:
        fixed = None
        for candidate in CHARMAP_ENCODINGS:
            try:
                repaired = text.encode(candidate).decode("utf-8")
            except (UnicodeEncodeError, UnicodeDecodeError):
                continue
            if repaired != text and _in_own_script(repaired, lang):
                fixed, codec = repaired, candidate
                break
        if fixed is None:
            return None
    bad, good = _changed_stretch(text, fixed)
    return Mojibake(fixed, codec or "utf-8 repair", bad, good)


def _in_own_script(text: str, lang: str) -> bool:
    """Every letter is Latin (names, loans) or in one of the language's own scripts."""
    from ..language import scripts
    profile = scripts.script_profile(text)
    # A language beyond the 24 writes in a script of its own: "other" to this profile.
    own = set(scripts.ACCEPTED.get(lang, ("other",))) | {"latin"}
    return not any(profile[c] for c in scripts.CLASSES if c not in own)


# ------------------------------------------------------------------------------ brackets

# Families of marks, each (openers, closers): full-width and ASCII parentheses close each
# other (a common slip that changes nothing). Guillemets pair either way round (»…« in
# German and Danish), so they count; the symmetric double quotes, which open and close
# alike in some languages („…“, ”…”), count by parity.
BRACKETS = (("(（", ")）"), ("[［【〔〖", "]］】〕〗"), ("{｛", "}｝"))
QUOTES = (("「", "」"), ("『", "』"), ("《", "》"), ("〈", "〉"))
COUNTED_QUOTES = ("«»", "‹›")
SYMMETRIC_QUOTES = '"“”„‟〝〞＂'


_MARKS = re.compile("[" + re.escape("".join(o + c for o, c in BRACKETS + QUOTES)
                                      + "".join(COUNTED_QUOTES) + SYMMETRIC_QUOTES) + "]")


def unmatched(text: str, families: tuple[tuple[str, str], ...], counted: tuple[str, ...] = (),
              symmetric: str = "") -> int | None:
    """Offset of the first mark of `text` that has no partner, or None when balanced."""
    role = _roles(families)
    stack: list[tuple[int, int]] = []
    quotes: list[int] = []
    counts = Counter()
    for match in _MARKS.finditer(text):
        ch, i = match.group(), match.start()
        if ch in symmetric:
            quotes.append(i)
        if ch in counted_chars(counted):
            counts[ch] += 1
        if ch not in role:
            continue
        family, opening = role[ch]
        if opening:
            stack.append((family, i))
        elif stack and stack[-1][0] == family:
            stack.pop()
        else:
            return i
    if stack:
        return stack[0][1]
    for pair in counted:
        left, right = counts[pair[0]], counts[pair[1]]
        if left != right:
            return text.index(pair[0] if left > right else pair[1])
    return quotes[-1] if len(quotes) % 2 else None


@lru_cache(maxsize=8)
def _roles(families: tuple[tuple[str, str], ...]) -> dict[str, tuple[int, bool]]:
    role = {ch: (k, True) for k, (opens, _) in enumerate(families) for ch in opens}
    return role | {ch: (k, False) for k, (_, closes) in enumerate(families) for ch in closes}


@lru_cache(maxsize=8)
def counted_chars(counted: tuple[str, ...]) -> str:
    return "".join(counted)


_QUOTE_MARKS = frozenset(SYMMETRIC_QUOTES + "«»‹›「」『』")


def quote_marks(text: str) -> int:
    """How many quotation marks a text has (double quotes of every style, guillemets,
    corner brackets)."""
    return sum(m.group() in _QUOTE_MARKS for m in _MARKS.finditer(text))


@dataclass
class Unbalanced:
    kind: str         # "bracket" or "quote"
    mark: str
    evidence: str     # the unmatched mark and what follows it (up to 30 characters)


def unbalanced(source: str, translation: str) -> Unbalanced | None:
    """Brackets, or quotes, balanced in the source and not in the translation. Quotes are
    judged only where the translation has fewer quotation marks than the source (one went
    missing): a sentence that opens a quotation the next one closes is unbalanced on both
    sides, and a translator's own extra quotes carry no source to compare with."""
    at = unmatched(translation, BRACKETS)
    if at is not None and unmatched(source, BRACKETS) is None:
        return Unbalanced("bracket", translation[at], translation[at:at + 30])
    if quote_marks(translation) < quote_marks(source) and unmatched(
            source, QUOTES, COUNTED_QUOTES, SYMMETRIC_QUOTES) is None:
        at = unmatched(translation, QUOTES, COUNTED_QUOTES, SYMMETRIC_QUOTES)
        if at is not None:
            return Unbalanced("quote", translation[at], translation[at:at + 30])
    return None


# --------------------------------------------------------------------- terminal punctuation

# Beyond the 24: the Armenian, Ethiopic, Khmer, Myanmar and Tibetan full stops and the
# Ethiopic question mark (a mapped release may be in any language).
TERMINALS = {"full_stop": ".。।॥۔．｡։።។။།༎", "question": "?？؟፧", "exclamation": "!！",
             "ellipsis": "…", "colon": ":："}
_CLASS_OF = {ch: name for name, marks in TERMINALS.items() for ch in marks}
CLOSING = "\"'“”„‘’»«›‹」』》〉)）]］}｝】〕〗*_ \u00a0\u3000\t\r\n"
# Bengali and Hindi typists often write the danda as a vertical bar.
_DANDA_BAR = {"bn", "hi"}
# Armenian ends a sentence with "։" (often typed ":") and marks a question on its stressed
# word ("՞"), not at the end, and often leaves the "՞" out where an interrogative word
# carries the question (what, why, how, where, when, who, which, how much, how many,
# whether). The language rules here name a language by its base code (`base_language`).
_ARMENIAN_ASKS = re.compile(r"(?<!\w)(?:ինչ|ինչու|ինչպես|որտեղ|երբ|ով|ովքեր|ում|որ|որն|որը|"
                            r"որքան|քանի|արդյոք)(?!\w)", re.IGNORECASE)
# Scripts that may end a sentence with no mark: Thai, Lao, and Tibetan after some letters.
_BARE_ENDINGS = {"th", "lo", "bo", "dz"}


def terminal(text: str, lang: str) -> str:
    """The class of a text's final punctuation mark, closing quotes and brackets set
    aside: full_stop, question, exclamation, ellipsis, colon or none. "..." is an ellipsis;
    ';' is a question mark in Greek; '|' a danda in Bengali and Hindi."""
    stripped = text.rstrip(CLOSING)
    if not stripped:
        return "none"
    if stripped.endswith("..."):
        return "ellipsis"
    last = stripped[-1]
    base = base_language(lang)
    if base == "hy":
        if "\u055e" in stripped:
            return "question"
        if last in ":\u0589":
            return "full_stop"
    if last in ";\u037e":
        return "question" if base == "el" else "none"
    if last == "|" and base in _DANDA_BAR:
        return "full_stop"
    return _CLASS_OF.get(last, "none")


def _asks(text: str, lang: str) -> bool:
    """Whether a question mark of the language stands anywhere in the text."""
    base = base_language(lang)
    marks = TERMINALS["question"] + {"hy": "\u055e", "el": ";\u037e"}.get(base, "")
    return any(ch in marks for ch in text)


def terminal_mismatch(source: str, translation: str, lang: str) -> tuple[str, str, str] | None:
    """(category, source class, translation class) when a source that ends with a full
    stop, question or exclamation mark ends otherwise in the translation. Categories:
    question_lost (a question whose translation has no question mark left anywhere),
    question_added (a question mark the source has nowhere), dropped (no final
    mark, or a comma), changed (another mark). Thai writes neither full stops nor, often,
    question marks: a bare Thai ending is no mismatch."""
    ours = terminal(source, "en")
    if ours not in ("full_stop", "question", "exclamation"):
        return None
    theirs = terminal(translation, lang)
    base = base_language(lang)
    if base == "hy" and ours != "question" and theirs == "question":
        # "՞" marks a question on any word: a quoted or indirect one inside a statement
        theirs = terminal(translation.replace("\u055e", ""), lang)
    if theirs == ours or (base in _BARE_ENDINGS and theirs == "none"):
        return None
    # Burmese asks with a particle and ends the question with its full stop "။".
    if base == "my" and ours == "question" and theirs in ("full_stop", "none"):
        return None
    if base == "hy" and ours == "question" and _ARMENIAN_ASKS.search(translation):
        return None
    if ours == "question":
        # A question mark left inside (a quoted question, then "he said") is no lost one.
        return None if _asks(translation, lang) else ("question_lost", ours, theirs)
    if theirs == "question":
        return None if _asks(source, "en") else ("question_added", ours, theirs)
    return ("dropped" if theirs == "none" else "changed"), ours, theirs
