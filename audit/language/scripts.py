"""The script rule (SPEC §4): every letter's ICU script class, counted in numpy over many
texts at once, Latin names set aside, and the verdict of each rule for a text's pieces
(`audit.language.layer` describes the rule; `script_profile` and `script_mismatch` are the
one-text reference implementations)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Sequence

from ..io.units import SEPARATOR
from ..languages import BY_CODE, CODES
from ..sql.macros import NAME_CONNECTORS

CLASSES = ("latin", "han", "kana", "hangul", "devanagari", "bengali", "arabic", "cyrillic",
           "greek", "thai", "other")


_ICU_SETS = {"latin": "[:sc=Latn:]", "han": "[:sc=Hani:]",
             "kana": "[[:sc=Hira:][:sc=Kana:]]", "hangul": "[:sc=Hang:]",
             "devanagari": "[:sc=Deva:]", "bengali": "[:sc=Beng:]", "arabic": "[:sc=Arab:]",
             "cyrillic": "[:sc=Cyrl:]", "greek": "[:sc=Grek:]", "thai": "[:sc=Thai:]"}


# The 10 script groups of SPEC §4 (plus Other); Japanese = Han + Hiragana + Katakana.
GROUPS = ("Latin", "Han", "Japanese", "Hangul", "Devanagari", "Bengali", "Arabic", "Cyrillic",
          "Greek", "Thai", "Other")


GROUP_OF = {code: lang.script for code, lang in BY_CODE.items()}
# Letters that count for a language (class names); see the module doc.
ACCEPTED = {code: ("latin",) for code, lang in BY_CODE.items() if lang.script == "Latin"}
ACCEPTED.update({"zh": ("han",), "ja": ("han", "kana"), "ko": ("hangul",),
                 "hi": ("devanagari",), "bn": ("bengali",), "ar": ("arabic",),
                 "fa": ("arabic",), "ur": ("arabic",), "ru": ("cyrillic",),
                 "el": ("greek",), "th": ("thai",)})
assert set(ACCEPTED) == set(CODES)
# Groups whose script alone names the language.
SETTLED = {"Cyrillic": "ru", "Greek": "el", "Thai": "th", "Hangul": "ko", "Devanagari": "hi",
           "Bengali": "bn"}


# Groups in which a detector decides, and the languages it may answer.
AMBIGUOUS = {
    "Latin": tuple(c for c in CODES if GROUP_OF[c] == "Latin"),
    "Arabic": ("ar", "fa", "ur"),
    "Han": ("zh", "ja"),
}
AMBIGUOUS["Japanese"] = AMBIGUOUS["Han"]
MIN_FOREIGN = 4          # script: fewer letters outside the accepted script -> no finding
MIN_SHARE = 0.5          # script: accepted letters must be the majority of effective letters
KANA_MIN, KANA_SHARE = 2, 0.10   # zh text with this much kana is Japanese
# Planes 0-2 hold the letters of every script here (plane 3+ letters are not counted).
_TABLE_SIZE = 0x30000


def _ranges(uset) -> list[tuple[int, int]]:
    """[start, end) code point ranges of an ICU set, within planes 0-2."""
    return [(ord(a), min(ord(b) + 1, _TABLE_SIZE)) for a, b in uset.ranges()
            if ord(a) < _TABLE_SIZE]


@lru_cache(maxsize=1)
def _class_arrays():
    """Per code point of planes 0-2, plus one last slot standing for every code point above:
    its class (0: not a counted letter, 1..11: CLASSES) and whether it is an upper-case
    Latin letter (numpy arrays)."""
    import icu
    import numpy as np
    classes = np.zeros(_TABLE_SIZE + 1, np.uint8)
    known = icu.UnicodeSet()
    for index, name in enumerate(CLASSES[:-1]):
        letters = icu.UnicodeSet(f"[{_ICU_SETS[name]}&[[:L:][:M:]]]")
        known.addAll(letters)
        for start, end in _ranges(letters):
            classes[start:end] = 1 + index
    other = icu.UnicodeSet("[[[:L:][:M:]]-[:sc=Zyyy:]-[:sc=Zinh:]]")
    other.removeAll(known)
    for start, end in _ranges(other):
        classes[start:end] = len(CLASSES)
    upper = np.zeros(_TABLE_SIZE + 1, bool)
    for start, end in _ranges(icu.UnicodeSet(_UPPER_LATIN)):
        upper[start:end] = True
    return classes, upper


_UPPER_LATIN, _LATIN_LETTERS = "[[:sc=Latn:]&[:Lu:]]", "[[:sc=Latn:]&[[:L:][:M:]]]"


@lru_cache(maxsize=1)
def _tables() -> tuple[list, re.Pattern]:
    """For one text at a time: code point -> class marker (chr(1..11)) for str.translate,
    and the Latin-name regex. The table is a list over planes 0-2 (an index lookup is faster
    than a dict's); every other character of those planes maps to None, i.e. is deleted."""
    import icu
    table = [None if c == 0 else chr(c) for c in _class_arrays()[0][:-1].tolist()]

    def klass(uset) -> str:
        return "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}"
                       for a, b in uset.ranges())
    upper, latin = icu.UnicodeSet(_UPPER_LATIN), icu.UnicodeSet(_LATIN_LETTERS)
    # A token that starts with an upper-case Latin letter: its Latin letters are a name's.
    # Not preceded by a Latin letter: "在Ballyhackamore" is a name inside Chinese text.
    names = re.compile(rf"(?<![{klass(latin)}])[{klass(upper)}][{klass(latin)}]*")
    return table, names


_MARKERS = tuple(chr(i) for i in range(1, len(CLASSES) + 1))


def _count_tuple(text: str) -> tuple[int, ...]:
    """Letters per class (CLASSES order) and then latin_names."""
    table, names = _tables()
    mapped = text.translate(table)
    counts = tuple(mapped.count(marker) for marker in _MARKERS)
    # A name's combining marks are Latin letters the regex may not reach: cap at Latin.
    latin_names = min(sum(map(len, names.findall(text))), counts[0]) if counts[0] else 0
    return counts + (latin_names,)


def _code_points(texts: Sequence[str]):
    """The texts joined by SEPARATOR as code points, and the same capped at _TABLE_SIZE (the
    class tables' last slot, standing for every code point above)."""
    import numpy as np
    raw = np.frombuffer(SEPARATOR.join(texts).encode("utf-32-le"), np.uint32)
    return raw, np.minimum(raw, _TABLE_SIZE)


def _names(cps, cls):
    """[first, last) of each name among capped code points of classes `cls`: a maximal run
    of Latin letters that starts with an upper-case one, what the name regex matches."""
    import numpy as np
    latin = np.zeros(len(cps) + 2, bool)
    latin[1:-1] = cls == 1
    first = np.flatnonzero(latin[1:] & ~latin[:-1])
    last = np.flatnonzero(latin[:-1] & ~latin[1:])
    named = _class_arrays()[1][cps[first]]
    return first[named], last[named]


# Texts are counted a slice of about this many characters at a time: numpy's temporaries
# (several per code point) then stay a few MB, reused from the heap, instead of fresh pages
# the kernel must zero for each batch (a 50,000-text batch at once: 2-4x slower).
SLICE_CHARS = 1 << 19


def _slices(texts: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) runs of texts of about SLICE_CHARS characters each (at least one text)."""
    runs, start, size = [], 0, 0
    for i, text in enumerate(texts):
        size += len(text) + 1
        if size >= SLICE_CHARS:
            runs.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts):
        runs.append((start, len(texts)))
    return runs


def count_pieces(texts: Sequence[str], split: bool = False):
    """`_count_tuple` of many texts at once, in numpy: one row of counts (CLASSES, then
    latin_names) per text, or, with `split`, per SEPARATOR-piece of each text in order
    (`text.split(SEPARATOR)`). Returns (counts, pieces per text)."""
    import numpy as np
    pieces = [t.count(SEPARATOR) + 1 for t in texts] if split else [1] * len(texts)
    if not texts:
        return np.zeros((0, len(CLASSES) + 1), np.int64), pieces
    parts = [_count_slice(texts[a:b], pieces[a:b], split) for a, b in _slices(texts)]
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), pieces


def _count_slice(texts: Sequence[str], pieces: list[int], split: bool):
    """`count_pieces`' counts of a few texts (`pieces`: their piece counts)."""
    import numpy as np
    n, total = len(texts), sum(pieces)
    _, cps = _code_points(texts)
    if split:   # a piece ends at each separator (which is itself no letter)
        ends = np.flatnonzero(cps == ord(SEPARATOR)) + 1
    else:       # the separators joining the texts end the pieces
        ends = np.cumsum(np.fromiter(map(len, texts), np.int64, n) + 1)[:-1]
    width = len(CLASSES) + 1
    # Each code point's piece: the running count of piece ends before it (a cumulative sum
    # over one small integer array, cheaper than repeating each piece's number).
    index = np.int32 if total * width < 2**31 else np.int64
    piece = np.zeros(len(cps), index)
    piece[ends[ends < len(cps)]] = 1
    np.cumsum(piece, out=piece)
    counts = np.zeros((total, width + 1), np.int64)
    cls = _class_arrays()[0][cps]
    counts[:, :width] = np.bincount(piece * index(width) + cls,
                                    minlength=total * width).reshape(total, width)
    first, last = _names(cps, cls)
    counts[:, -1] = np.bincount(piece[first], weights=last - first,
                                minlength=total).astype(np.int64)
    counts = counts[:, 1:]   # drop "not a letter"
    counts[:, -1] = np.minimum(counts[:, -1], counts[:, 0])
    return counts


def without_names(texts: Sequence[str]) -> list[str]:
    """Each text without its names (`_names`; `_tables`' name regex removed), for all texts
    at once (a slice of SLICE_CHARS at a time)."""
    return [text for a, b in _slices(texts) for text in _without_names(texts[a:b])]


def _without_names(texts: Sequence[str]) -> list[str]:
    import numpy as np
    if not texts:
        return []
    raw, cps = _code_points(texts)
    first, last = _names(cps, _class_arrays()[0][cps])
    edges = np.zeros(len(cps) + 2, np.int32)     # runs never touch: a +1 and a -1 per name
    edges[first] = 1
    edges[last] = -1
    keep = np.cumsum(edges[:-1], dtype=np.int32) == 0
    starts = np.cumsum([0] + [len(t) + 1 for t in texts])    # text i: [starts[i], +len)
    keep[starts[1:] - 1] = False                 # the joining separators, and the pad
    kept = np.add.reduceat(keep, starts[:-1], dtype=np.int64).tolist()
    joined = raw[keep[:-1]].tobytes().decode("utf-32-le")
    ends = np.cumsum(kept).tolist()
    return [joined[end - n:end] for n, end in zip(kept, ends)]


def kana_rich(han: int, kana: int) -> bool:
    return kana >= KANA_MIN and kana >= KANA_SHARE * (han + kana)


def group_counts(counts: dict[str, int], without_names: bool = False) -> dict[str, int]:
    """Letters per script group; with `without_names`, capitalised Latin tokens set aside."""
    han, kana = counts["han"], counts["kana"]
    japanese = kana_rich(han, kana)
    latin = counts["latin"] - (counts["latin_names"] if without_names else 0)
    return {"Latin": latin, "Han": 0 if japanese else han,
            "Japanese": han + kana if japanese else kana, "Hangul": counts["hangul"],
            "Devanagari": counts["devanagari"], "Bengali": counts["bengali"],
            "Arabic": counts["arabic"], "Cyrillic": counts["cyrillic"],
            "Greek": counts["greek"], "Thai": counts["thai"], "Other": counts["other"]}


def dominant(groups: dict[str, int]) -> str | None:
    best = max(groups, key=lambda g: groups[g])   # ties: the first in GROUPS order
    return best if groups[best] > 0 else None


def _part_row(counts: tuple) -> dict:
    """The script signal from `_count_tuple` counts: counts, letters, dominant groups."""
    row = dict(zip(CLASSES, counts[:-1]))
    row["latin_names"] = counts[-1]
    row["letters"] = sum(counts[:-1])
    row["dominant"] = dominant(group_counts(row))
    row["dominant_without_names"] = dominant(group_counts(row, without_names=True))
    return row


def script_profile(text: str) -> dict:
    """The script signal of one text (what the cache holds per sentence)."""
    return _part_row(_count_tuple(text))


def script_mismatch(text: str | dict, code: str) -> str | None:
    """The dominant script group when a text (or its `script_profile`) fails the script rule
    for language `code`, else None. The one implementation of the rule: the cache stores its
    verdict for every rule (`script_verdicts`)."""
    p = script_profile(text) if isinstance(text, str) else text
    latin_language = GROUP_OF[code] == "Latin"
    letters = p["letters"] - (0 if latin_language else p["latin_names"])
    accepted = sum(p[c] for c in ACCEPTED[code])
    if code == "zh" and kana_rich(p["han"], p["kana"]):
        return "Japanese"
    if letters - accepted >= MIN_FOREIGN and accepted < MIN_SHARE * letters:
        return p["dominant"] if latin_language else p["dominant_without_names"]
    return None


# The script rule depends on the assigned language only through its accepted letters:
# one rule for the 13 Latin-script languages, one for the Arabic trio, one each for the
# other 8. A cached piece of text stores, per rule, whether it fails (a bitmask) and the
# groups a finding names, so the check is a bit test, not arithmetic per language.
RULES = ("Latin", "zh", "ja", "ko", "hi", "bn", "Arabic", "ru", "el", "th")
RULE_OF = {code: ("Latin" if GROUP_OF[code] == "Latin" else
                  "Arabic" if GROUP_OF[code] == "Arabic" else code) for code in CODES}


def _group_matrix(counts, without_names: bool = False):
    """`group_counts` of every row of `count_pieces` counts (columns in GROUPS order)."""
    import numpy as np
    latin, han, kana = counts[:, 0], counts[:, 1], counts[:, 2]
    rich = (kana >= KANA_MIN) & (kana >= KANA_SHARE * (han + kana))
    return np.column_stack([latin - counts[:, -1] if without_names else latin,
                            np.where(rich, 0, han), np.where(rich, han + kana, kana),
                            counts[:, 3:len(CLASSES)]]), rich


def script_verdicts(counts) -> tuple:
    """Per row of `count_pieces` counts: the failing-rule bitmask, the dominant group, the
    dominant group with Latin names set aside (indices into GROUPS, -1 for none) and
    kana-richness, as numpy arrays: the rule of `script_mismatch` unrolled over RULES (a
    test compares the two for every language), because it runs once per sentence."""
    import numpy as np
    (latin, han, kana, hangul, deva, beng, arab, cyr, grek, thai,
     _, names) = counts.T
    letters = counts[:, :len(CLASSES)].sum(axis=1)
    groups, rich = _group_matrix(counts)
    e = letters - names           # effective letters for the non-Latin rules

    def fails(accepted, total):
        return (total - accepted >= MIN_FOREIGN) & (accepted < MIN_SHARE * total)
    bits = (fails(latin, letters), rich | fails(han, e), fails(han + kana, e),
            fails(hangul, e), fails(deva, e), fails(beng, e), fails(arab, e), fails(cyr, e),
            fails(grek, e), fails(thai, e))
    mask = sum(bit.astype(np.int64) << i for i, bit in enumerate(bits))
    best = np.where(letters > 0, groups.argmax(axis=1), -1)   # ties: the first
    groups[:, 0] -= names
    nameless = np.where(groups.max(axis=1) > 0, groups.argmax(axis=1), -1)
    return mask, best, nameless, rich


def rule_sql(lang: str) -> str:
    """The bit of a language-code expression's script rule in the verdict bitmask."""
    return "CASE " + " ".join(f"WHEN {lang} = '{c}' THEN {RULES.index(RULE_OF[c])}"
                              for c in CODES) + " END"


def group_name_sql(index: str) -> str:
    """GROUPS[index] in SQL (index 0-based, as stored)."""
    return "[" + ", ".join(f"'{g}'" for g in GROUPS) + f"][{index} + 1]"


def is_name_like(text: str) -> bool:
    """1–6 tokens, each capitalised, a number or a connector ("Marie Curie", "1661"): the
    core of the exact-copy category name_like (which also admits codes, symbols and
    translated list connectors). Names carry no language."""
    tokens = text.split()
    return 1 <= len(tokens) <= 6 and len(text) <= 60 and all(
        unicodedata.category(t[0]) in ("Lu", "Lt") or t.isdigit() or t in NAME_CONNECTORS
        for t in tokens)


SCRIPT_VERSION = (f"script-4-f{MIN_FOREIGN}-s{MIN_SHARE}-k{KANA_MIN}.{KANA_SHARE}")


@lru_cache(maxsize=1)
def _unicode_version() -> str:
    import icu
    return icu.UNICODE_VERSION
