"""Language layer: the script profile and the language of release texts (SPEC §3, §4).

No Streamlit here. Two signals, both computed once per DISTINCT text and cached by content
hash, so a rescan costs seconds; `prepare(release)` puts them in DuckDB tables for the two
checks of audit/language_checks.py.

Script profile (deterministic, ICU's script property). Every letter or combining mark whose
ICU script is not Common/Inherited counts in one class: Latin, Han, Kana (Hiragana +
Katakana), Hangul, Devanagari, Bengali, Arabic, Cyrillic, Greek, Thai, Other. Digits,
punctuation, ZWNJ/ZWJ and harakat are Common or Inherited and ignored. `latin_names` counts
the Latin letters of tokens that start with an upper-case Latin letter not preceded by a
Latin letter ("BBC", "Tony Macaroni", "在Ballyhackamore"): names and acronyms, which
legitimately stay Latin inside non-Latin text.

Script rule for a unit (title, sentence, question, answer) assigned language L:
  accepted letters = Latin for the 13 Latin-script languages; Han for zh; Han + Kana for ja;
  Hangul for ko (some Han in Korean only lowers the share); Devanagari hi; Bengali bn;
  Arabic ar/fa/ur; Cyrillic ru; Greek el; Thai th.
  effective letters = all letters, minus `latin_names` when L is not a Latin-script language.
  The unit MISMATCHES when at least MIN_FOREIGN (4) effective letters are not accepted and
  the accepted ones are less than MIN_SHARE (half) of the effective letters — the assigned
  script is not the majority once names are set aside — or when L = zh and the text is
  kana-rich (>= KANA_MIN kana and >= KANA_SHARE of its Han + Kana): Chinese never uses kana.
  Fewer foreign letters leave the unit undetermined ("5 km²" in Japanese, "pig" in Korean).
  The finding names the dominant script group (the 10 of SPEC §4, Japanese = Han + kana).
  On NTREX-128 (24 x 1,997 human-translated lines) the rule fires only on the French
  quotation "Il faut bien le faire." that the translators kept in French.

Language ID (`LanguageIdentifier`), restricted to the 24 languages. The script group of the
text settles Cyrillic (ru), Greek (el), Thai (th), Hangul (ko), Devanagari (hi) and Bengali
(bn), with confidence = that group's share of the letters; a detector runs only inside the
ambiguous groups: the 13 Latin-script languages, the Arabic trio ar/fa/ur, and Han/Kana
(zh vs ja). The group is chosen with Latin names set aside, so a Chinese question full of
English names stays Chinese. Undetermined: name-like texts ("Marie Curie", "Mount
Kilimanjaro"), texts under LANGID_MIN_LETTERS (20) letters or with under LANGID_MIN_WORDS
(10) letters outside names, and Han/Kana/Hangul texts under LANGID_MIN_HAN (10) characters.
Latin-script text reaches the detector without its capitalised tokens (one rare name such as
"Bloemfontein" made lingua call an English paragraph German at 0.97), clipped to
MAX_DETECT_CHARS. A unit's language mismatches when the detected language differs from the
assigned one and is written in another script group, or shares its script, reaches
MIN_CONFIDENCE (0.7), and a second opinion names it again at MIN_CONFIDENCE: the text read
again by a detector knowing only those two languages (`confirm`). The default detector,
lingua, reads every text with its fast trigram models; langdetect, restricted to the two
languages, gives the second opinion on the few same-script disagreements
(`LinguaIdentifier`).

Both signals are computed for a whole batch of texts at once: `count_pieces` counts the
letters of every script class in numpy over all texts joined, and `script_verdicts` and
`routes` apply the rules to those counts as arrays (each tested against the one-text
implementations, `script_profile` and `script_mismatch`).

Cache: `<cache_dir>/<signal>/<version>/part-*.parquet`, one row per text keyed by the sha256
of its UTF-8 bytes; the version names the rule's constants, ICU's Unicode version, or the
detector and its settings, so changing any of them never reads stale rows. Misses are
appended as a new part file written under a temporary name and renamed into place (atomic),
under an exclusive file lock so two scans never cache a key twice; parts are compacted when
more than COMPACT_AFTER. A paragraph is cached as one text (its sentences joined with
U+001F) holding the script verdicts of each sentence, so each sentence is hashed once.
The release's list of units and text keys is cached too (`<cache_dir>/units/`, keyed by the
sha256 of the release files and of the SQL reading them): a warm rescan hashes no text.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import time
import unicodedata
import uuid
import weakref
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from . import arrays
from .io import canonical
from .languages import BY_CODE, CODES
from .io.files import REPO, read_parquet, staged_file
from .sqltext import NAME_CONNECTORS, create_table
from .sqlsafe import literal

CACHE_DIR = Path(os.environ.get("AUDIT_CACHE_DIR", REPO / "data" / "cache")) / "langid"

# ------------------------------------------------------------------ script classes & groups

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
LANGID_MIN_LETTERS = 20  # language ID: fewer letters -> undetermined
LANGID_MIN_WORDS = 10     # ... of them outside names
LANGID_MIN_HAN = 10      # ... for Han, Kana and Hangul text (a character carries more)
MIN_CONFIDENCE = 0.7     # language ID: a same-script disagreement needs this confidence
MAX_DETECT_CHARS = 200   # language ID reads at most this much of a text (cut at a space)


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


def count_pieces(texts: Sequence[str], split: bool = False):
    """`_count_tuple` of many texts at once, in numpy: one row of counts (CLASSES, then
    latin_names) per text, or, with `split`, per SEPARATOR-piece of each text in order
    (`text.split(SEPARATOR)`). Returns (counts, pieces per text)."""
    import numpy as np
    n = len(texts)
    pieces = [t.count(SEPARATOR) + 1 for t in texts] if split else [1] * n
    total = sum(pieces)
    if not n:
        return np.zeros((0, len(CLASSES) + 1), np.int64), pieces
    _, cps = _code_points(texts)
    if split:   # a piece ends at each separator (which is itself no letter)
        ends = np.flatnonzero(cps == ord(SEPARATOR)) + 1
    else:       # the separators joining the texts end the pieces
        ends = np.cumsum(np.fromiter(map(len, texts), np.int64, n) + 1)[:-1]
    sizes = np.diff(np.concatenate(([0], ends, [len(cps)])))
    piece = np.repeat(np.arange(total, dtype=np.int64), sizes)
    width = len(CLASSES) + 1
    counts = np.zeros((total, width + 1), np.int64)
    cls = _class_arrays()[0][cps]
    counts[:, :width] = np.bincount(piece * width + cls,
                                    minlength=total * width).reshape(total, width)
    first, last = _names(cps, cls)
    counts[:, -1] = np.bincount(piece[first], weights=last - first,
                                minlength=total).astype(np.int64)
    counts = counts[:, 1:]   # drop "not a letter"
    counts[:, -1] = np.minimum(counts[:, -1], counts[:, 0])
    return counts, pieces


def without_names(texts: Sequence[str]) -> list[str]:
    """Each text without its names (`_names`; `_tables`' name regex removed), for all texts
    at once."""
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


# ------------------------------------------------------------------------- language ID

def is_name_like(text: str) -> bool:
    """1–6 tokens, each capitalised, a number or a connector ("Marie Curie", "1661"): the
    same notion as the exact-copy category name_like. Names carry no language."""
    tokens = text.split()
    return 1 <= len(tokens) <= 6 and len(text) <= 60 and all(
        unicodedata.category(t[0]) in ("Lu", "Lt") or t.isdigit() or t in NAME_CONNECTORS
        for t in tokens)


def _clip(text: str) -> str:
    if len(text) <= MAX_DETECT_CHARS:
        return text
    cut = text.rfind(" ", MAX_DETECT_CHARS // 2, MAX_DETECT_CHARS)
    return text[:cut if cut > 0 else MAX_DETECT_CHARS]


@dataclass
class Detection:
    lang: str | None          # one of the 24, or None when undetermined
    confidence: float | None
    letters: int
    group: str | None


class LanguageIdentifier:
    """Routes texts by script group; subclasses detect inside the ambiguous groups."""

    name = "base"
    min_confidence = 0.0
    mask_names = True

    @property
    def settings(self) -> str:
        """The routing settings that change what is detected (part of the cache version)."""
        return (f"clip{MAX_DETECT_CHARS}-min{LANGID_MIN_LETTERS}.{LANGID_MIN_WORDS}."
                f"{LANGID_MIN_HAN}"
                f"{'-masked' if self.mask_names else ''}")

    def prepare_texts(self, group: str, texts: list[str]) -> list[str]:
        """What the detector reads: Latin-script text without its capitalised tokens (names,
        and German nouns: one rare name, "Bloemfontein", can otherwise outvote a paragraph
        of English function words; `routes` has made sure some letters remain), clipped to
        MAX_DETECT_CHARS."""
        if group == "Latin" and self.mask_names:
            texts = without_names(texts)
        return [_clip(text) for text in texts]

    @property
    def version(self) -> str:
        raise NotImplementedError

    @property
    def second_version(self) -> str:
        """What the second opinions depend on (their cache's version)."""
        return f"{self.version}-pairs"

    def detect(self, codes: tuple[str, ...], texts: list[str], second_opinion: bool = False
               ) -> list[tuple[str | None, float | None]]:
        """The most likely of `codes` for each text and its confidence; `second_opinion`: for
        a second opinion (see `confirm`)."""
        raise NotImplementedError

    def confirm(self, items: Sequence[tuple[str, str, str]]
                ) -> list[tuple[str | None, float | None]]:
        """A second opinion on (text, detected, assigned) items whose detection disagrees
        with an assigned language of the same script: each text read again by a detector
        that knows only those two languages."""
        out: list[tuple[str | None, float | None]] = [(None, None)] * len(items)
        pairs: dict[tuple[str, str], list[int]] = {}
        for i, (_, detected, assigned) in enumerate(items):
            pairs.setdefault(tuple(sorted((detected, assigned))), []).append(i)
        for pair, indices in pairs.items():
            group = GROUP_OF[pair[0]]
            found = self.detect(pair, self.prepare_texts(group, [items[i][0] for i in indices]),
                                second_opinion=True)
            for i, result in zip(indices, found):
                out[i] = result
        return out

    def identify(self, texts: Sequence[str], counts=None) -> list[Detection]:
        """Route each text by its script group (`routes`; `counts`: the texts'
        `count_pieces` when known), then detect the ambiguous ones group by group."""
        out = []
        batches: dict[str, list[int]] = {}
        for i, (group, letters, share) in enumerate(routes(texts, counts)):
            if group in SETTLED:
                out.append(Detection(SETTLED[group], share, letters, group))
                continue
            out.append(Detection(None, None, letters, group))
            if group in AMBIGUOUS:
                batches.setdefault(group, []).append(i)
        for group, indices in batches.items():
            found = self.detect(AMBIGUOUS[group],
                                self.prepare_texts(group, [texts[i] for i in indices]))
            for i, (lang, confidence) in zip(indices, found):
                out[i].lang, out[i].confidence = lang, confidence
        return out


def routes(texts: Sequence[str], counts=None) -> list[tuple[str | None, int, float | None]]:
    """Per text: the script group deciding its language (None when undetermined), its letter
    count, and, for a group that settles the language, its share of the letters (rounded to
    4 places). Capitalised Latin tokens are names (or German nouns), which say little about
    the language: they do not count for the group, and at least LANGID_MIN_WORDS other
    letters must remain besides LANGID_MIN_LETTERS letters in all (LANGID_MIN_HAN for Han,
    Kana and Hangul text). `counts`: the texts' `count_pieces`, when known."""
    import numpy as np
    counts = count_pieces(texts)[0] if counts is None else counts
    groups, _ = _group_matrix(counts, without_names=True)
    letters = counts[:, :len(CLASSES)].sum(axis=1)
    kept = groups.sum(axis=1)
    top = groups.argmax(axis=1)                       # ties: the first
    best = groups.max(axis=1)
    dense = np.isin(top, [GROUPS.index(g) for g in ("Han", "Japanese", "Hangul")])
    decided = (best > 0) & np.where(
        dense, kept >= LANGID_MIN_HAN,
        (letters >= LANGID_MIN_LETTERS) & (kept >= LANGID_MIN_WORDS))
    for i in np.flatnonzero(decided).tolist():
        if len(texts[i]) <= 60 and is_name_like(texts[i]):
            decided[i] = False
    settled = {GROUPS.index(g) for g in SETTLED}
    return [(GROUPS[g], n, round(b / k, 4) if g in settled else None) if ok else (None, n, None)
            for ok, g, n, b, k in zip(decided.tolist(), top.tolist(), letters.tolist(),
                                      best.tolist(), kept.tolist())]


class LinguaIdentifier(LanguageIdentifier):
    """lingua-language-detector restricted to each ambiguous group; batches run on every
    core through lingua's own thread pool. Mode "low" (the default) reads texts with
    lingua's trigram models only; mode "high" adds its 1-, 2-, 4- and 5-gram models for
    texts under ~180 characters (questions, answers, short paragraphs): 4-5x slower on them,
    and loading them costs ~0.13 s per language. Second opinions (`confirm`) come from
    langdetect restricted to the two languages (its profiles load in milliseconds).
    On bench/langid.py's sets the default finds more same-script substitutions than mode
    "high" alone did (NTREX single lines 97.6% vs 96.8%, XQuAD questions ~93% vs 85%) with
    as few false alarms (12 of 13,090 XQuAD questions, 1 of 1,022 HotpotQA paragraphs)."""

    name = "lingua"
    min_confidence = MIN_CONFIDENCE

    def __init__(self, mode: str = "low"):
        self.mode = mode
        self._detectors: dict[tuple[str, ...], object] = {}
        self._second = LangdetectIdentifier()

    @property
    def version(self) -> str:
        from importlib.metadata import version
        return (f"lingua-{version('lingua-language-detector')}-{self.mode}-{self.settings}")

    @property
    def second_version(self) -> str:
        return self._second.second_version

    def _detector(self, codes: tuple[str, ...]):
        if codes not in self._detectors:
            from lingua import IsoCode639_1, LanguageDetectorBuilder
            builder = LanguageDetectorBuilder.from_iso_codes_639_1(
                *[getattr(IsoCode639_1, c.upper()) for c in codes])
            if self.mode == "low":
                builder = builder.with_low_accuracy_mode()
            self._detectors[codes] = builder.build()
        return self._detectors[codes]

    def detect(self, codes: tuple[str, ...], texts: list[str], second_opinion: bool = False
               ) -> list[tuple[str | None, float | None]]:
        if second_opinion:
            return self._second.detect(codes, texts)
        out: list[tuple[str | None, float | None]] = []
        for values in self._detector(codes).compute_language_confidence_values_in_parallel(
                texts):
            top = values[0] if values else None
            out.append((top.language.iso_code_639_1.name.lower(), round(top.value, 4))
                       if top is not None and top.value > 0 else (None, None))
        return out


_LANGDETECT_PROFILES = {"zh": ("zh-cn", "zh-tw")}


class LangdetectIdentifier(LanguageIdentifier):
    """langdetect (the required baseline), seeded, one factory per ambiguous group loaded
    with only that group's profiles; `processes` > 1 spreads large batches over processes."""

    name = "langdetect"
    min_confidence = MIN_CONFIDENCE

    def __init__(self, processes: int = 1):
        self.processes = processes
        self._factories: dict[tuple, object] = {}

    @property
    def version(self) -> str:
        from importlib.metadata import version
        return f"langdetect-{version('langdetect')}-seed0-{self.settings}"

    def _factory(self, codes: tuple[str, ...]):
        if codes not in self._factories:
            import langdetect
            from langdetect.detector_factory import DetectorFactory
            root = Path(langdetect.__file__).parent / "profiles"
            profiles = [(root / name).read_text("utf-8") for code in codes
                        for name in _LANGDETECT_PROFILES.get(code, (code,))]
            factory = DetectorFactory()
            factory.load_json_profile(profiles)
            factory.seed = 0
            self._factories[codes] = factory
        return self._factories[codes]

    def _detect_one(self, codes: tuple[str, ...], text: str) -> tuple[str | None, float]:
        from langdetect.lang_detect_exception import LangDetectException
        detector = self._factory(codes).create()
        detector.append(text)
        try:
            ranked = detector.get_probabilities()
        except LangDetectException:
            return None, None
        merged: dict[str, float] = {}
        for item in ranked:
            code = "zh" if item.lang.startswith("zh") else item.lang
            merged[code] = merged.get(code, 0.0) + item.prob
        if not merged:
            return None, None
        code = max(merged, key=merged.get)
        return code, round(merged[code], 4)

    def detect(self, codes: tuple[str, ...], texts: list[str], second_opinion: bool = False
               ) -> list[tuple[str | None, float | None]]:
        if self.processes <= 1 or len(texts) < 2000:
            return [self._detect_one(codes, t) for t in texts]
        chunk = (len(texts) + self.processes - 1) // self.processes
        with ProcessPoolExecutor(self.processes) as pool:
            parts = pool.map(_langdetect_chunk, [(codes, texts[i:i + chunk])
                                                 for i in range(0, len(texts), chunk)])
            return [x for part in parts for x in part]


def _langdetect_chunk(job: tuple[tuple[str, ...], list[str]]) -> list:
    codes, texts = job
    identifier = LangdetectIdentifier()
    return [identifier._detect_one(codes, t) for t in texts]


DETECTORS = {"lingua": LinguaIdentifier, "langdetect": LangdetectIdentifier,
             "lingua-high": lambda: LinguaIdentifier("high")}
DEFAULT_DETECTOR = "lingua"
# Everything the language_mismatch verdict depends on besides the detector's own release.
LANGUAGE_RULE_VERSION = (f"{DEFAULT_DETECTOR}-low-clip{MAX_DETECT_CHARS}"
                         f"-min{LANGID_MIN_LETTERS}.{LANGID_MIN_WORDS}.{LANGID_MIN_HAN}"
                         f"-conf{MIN_CONFIDENCE}-second-langdetect-pairs")


@lru_cache(maxsize=4)
def detector(name: str = DEFAULT_DETECTOR) -> LanguageIdentifier:
    return DETECTORS[name]()


def language_mismatches(identifier: LanguageIdentifier,
                        items: Sequence[tuple[str, Detection, str]]) -> list[bool]:
    """The language_mismatch rule for (text, its detection, assigned language) items: the
    detected language is written in another script group, or it shares the assigned one's
    script, reaches min_confidence, and the second opinion (`confirm`) names it again at
    min_confidence. Python twin of `language_rule_sql`."""
    least = identifier.min_confidence
    out, suspects = [], []
    for i, (_, found, code) in enumerate(items):
        if found.lang is None or found.lang == code:
            out.append(False)
        elif GROUP_OF[found.lang] != GROUP_OF[code]:
            out.append(True)
        else:
            out.append(False)
            if (found.confidence or 0) >= least:
                suspects.append(i)
    seconds = identifier.confirm([(items[i][0], items[i][1].lang, items[i][2])
                                  for i in suspects])
    for i, (lang, confidence) in zip(suspects, seconds):
        out[i] = lang == items[i][1].lang and (confidence or 0) >= least
    return out


def group_sql(lang: str) -> str:
    """The SPEC §4 script group of a language-code expression."""
    return "CASE " + " ".join(f"WHEN {lang} = '{c}' THEN '{GROUP_OF[c]}'"
                              for c in CODES) + " END"


def language_rule_sql(j: str, s: str, min_confidence: float) -> str:
    """The language_mismatch rule over a lang_judged row alias `j` LEFT JOINed to its
    lang_second row `s` (see `language_mismatches`)."""
    least = literal(min_confidence)
    return (f"({j}.detected IS NOT NULL AND {j}.detected <> {j}.lang AND "
            f"({group_sql(f'{j}.detected')} <> {group_sql(f'{j}.lang')} OR "
            f"({j}.confidence >= {least} AND {s}.second = {j}.detected AND "
            f"{s}.second_confidence >= {least})))")


# ------------------------------------------------------------------------------ the cache

SCRIPT_VERSION = (f"script-4-f{MIN_FOREIGN}-s{MIN_SHARE}-k{KANA_MIN}.{KANA_SHARE}")
# Per piece (a paragraph's sentence, or the whole text): the failing-rule bitmask, the
# dominant group, the dominant group with Latin names set aside, kana-rich.
PART = pa.struct([("fails", pa.int16()), ("dom", pa.int8()), ("dom_nn", pa.int8()),
                  ("kana", pa.bool_())])
SCRIPT_SCHEMA = pa.schema([("key", pa.string()), ("fails", pa.int16()),
                           ("parts", pa.list_(PART))])
LANG_SCHEMA = pa.schema([("key", pa.string()), ("lang", pa.string()),
                         ("confidence", pa.float64()), ("letters", pa.int32()),
                         ("grp", pa.string())])
# Keyed by "<text key>:<detected>:<assigned>".
SECOND_SCHEMA = pa.schema([("key", pa.string()), ("lang", pa.string()),
                           ("confidence", pa.float64())])
COMPACT_AFTER = 16   # part files
SEPARATOR = "\x1f"   # joins a paragraph's sentences in its cache text (see _UNIT_TEXTS)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe(version: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", version)


class SignalCache:
    """Parquet parts under `<root>/<signal>/<version>/`, one row per text key."""

    def __init__(self, root: Path, signal: str, version: str, schema: pa.Schema):
        self.dir = Path(root) / signal / _safe(version)
        self.schema = schema

    def parts(self) -> list[Path]:
        return sorted(self.dir.glob("part-*.parquet")) if self.dir.is_dir() else []

    def sql(self) -> str | None:
        """A relation over every cached row (None when the cache is empty)."""
        parts = self.parts()
        if not parts:
            return None
        files = ", ".join(literal(str(p)) for p in parts)
        return f"read_parquet([{files}])"

    def _write(self, table: pa.Table) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.parquet"
        with staged_file(self.dir / name) as staging:   # readers see all of it or nothing
            pq.write_table(table.cast(self.schema), staging, compression="zstd")
        return self.dir / name

    def append(self, table: pa.Table) -> Path | None:
        if table.num_rows == 0:
            return None
        path = self._write(table)
        if len(self.parts()) > COMPACT_AFTER:
            self.compact()
        return path

    def compact(self) -> None:
        """Merge the parts into the newest one. The older parts go first and the merged
        file then replaces the newest atomically: a crash in between loses cached rows
        (recomputed on the next scan), never duplicates a key. Callers hold the lock."""
        parts = self.parts()
        if len(parts) < 2:
            return
        table = pa.concat_tables(read_parquet(p, self.schema) for p in parts)
        seen: set[str] = set()
        keep = [i for i, key in enumerate(table.column("key").to_pylist())
                if not (key in seen or seen.add(key))]
        handle, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=self.dir)
        os.close(handle)
        try:
            pq.write_table(table.take(keep), tmp, compression="zstd")
            for p in parts[:-1]:
                p.unlink(missing_ok=True)
            os.replace(tmp, parts[-1])
        finally:
            Path(tmp).unlink(missing_ok=True)


# ------------------------------------------------------------- signals for a whole release

# One unit per title, paragraph, question and answer whose language is one of the 24. A
# paragraph's text is its sentences joined with U+001F, so one cached row per paragraph
# holds a script profile per sentence (and its language, detected on the sentences joined
# with a space): each sentence is hashed once, as part of its paragraph. The warm path
# keeps only the key of each unit; texts are rebuilt only when some key is not cached.
# Titles and paragraphs once per distinct context (`ctx`), questions and answers per view
# (`rid`).
_UNIT_TEXTS = """
WITH c AS (
    SELECT ctx, unnest(list_transform(candidates, lambda c: {{
        'p': c.paragraph_id, 'l': c.language_code, 't': c.title, 's': c.sentences}})) AS c
    FROM contexts)
SELECT NULL::BIGINT AS rid, ctx, c.p AS paragraph_id, 'title' AS unit, c.l AS lang,
       c.t AS text
FROM c WHERE c.l IN {codes} AND c.t IS NOT NULL
UNION ALL
SELECT NULL, ctx, c.p, 'paragraph', c.l, array_to_string(c.s, chr(31))
FROM c WHERE c.l IN {codes} AND len(c.s) > 0
UNION ALL
SELECT rid, NULL, NULL, 'question', question_language, question
FROM views WHERE question_language IN {codes} AND question IS NOT NULL
UNION ALL
SELECT rid, NULL, NULL, 'answer', answer_language, answer
FROM views WHERE answer_language IN {codes} AND answer IS NOT NULL
"""


def units_sql() -> str:
    """Every judged unit of the release with its text (`text`)."""
    return _UNIT_TEXTS.format(codes="(" + ", ".join(f"'{c}'" for c in CODES) + ")")


@dataclass
class Prepared:
    """What `prepare` did: distinct texts per signal and how many were computed now."""
    detector: str
    min_confidence: float
    script_texts: int = 0
    script_misses: int = 0
    lang_texts: int = 0
    lang_misses: int = 0
    suspects: int = 0
    second_misses: int = 0
    seconds: dict = field(default_factory=dict)


# Per connection: a release's connection is prepared once, however many checks ask.
_PREPARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@contextmanager
def cache_lock(root: Path):
    """One process at a time looks up, computes and appends (so no key is cached twice)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_signals(con, cache: SignalCache, table: str, units: str,
                   missing: str) -> tuple[int, int]:
    """Fill table `table` with the cached signal of every distinct key of `units`, and
    table `missing` with the keys the cache lacks; returns (distinct keys, misses)."""
    source = cache.sql()
    if source:
        con.execute(f"""CREATE OR REPLACE TABLE {table} AS
            SELECT c.* FROM {source} c SEMI JOIN ({units}) u USING (key)""")
    else:
        create_table(con, table, cache.schema)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {missing} AS
        SELECT DISTINCT key FROM ({units}) u ANTI JOIN {table} c USING (key)""")
    misses = con.sql(f"SELECT count(*) FROM {missing}").fetchall()[0][0]
    return con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0] + misses, misses


COMPUTE_BATCH = 50_000     # texts counted and identified at a time (bounded memory)
APPEND_ROWS = 300_000      # signal rows written per cache part at most


def _compute(con, identifier: LanguageIdentifier, scripts: SignalCache,
             languages: SignalCache, seconds: dict) -> None:
    """The script and language signals of the keys in lang_missing_script and
    lang_missing_lang (their texts in lang_unit_texts), COMPUTE_BATCH texts at a time: each
    text is read from DuckDB and its letters counted once for both. Appended to the caches
    and to lang_script / lang_detect."""
    con.execute("""CREATE OR REPLACE TEMP TABLE lang_todo AS
        SELECT t.key, t.text, s.key IS NOT NULL AS script, l.key IS NOT NULL AS lang
        FROM lang_unit_texts t LEFT JOIN lang_missing_script s USING (key)
        LEFT JOIN lang_missing_lang l USING (key);
        DROP TABLE lang_unit_texts; DROP TABLE IF EXISTS lang_texts""")
    total = con.sql("SELECT count(*) FROM lang_todo").fetchall()[0][0]
    seconds["script"] = seconds["lang"] = 0.0
    with SignalAppender(con, scripts, "lang_script") as script_rows, \
            SignalAppender(con, languages, "lang_detect") as language_rows:
        for start in range(0, total, COMPUTE_BATCH):
            batch = con.sql("SELECT key, text, script, lang FROM lang_todo "
                            "WHERE rowid >= ? AND rowid < ?",
                            params=[start, start + COMPUTE_BATCH]).fetchall()
            _compute_batch(identifier, *zip(*batch), script_rows, language_rows, seconds)


def _compute_batch(identifier: LanguageIdentifier, keys, texts, script, language,
                   script_rows: "SignalAppender", language_rows: "SignalAppender",
                   seconds: dict) -> None:
    import numpy as np
    clock = time.perf_counter()
    counts, pieces = count_pieces(texts, split=True)
    starts = np.concatenate(([0], np.cumsum(pieces, dtype=np.int64)))
    totals = np.add.reduceat(counts, starts[:-1])     # a text's counts: its pieces' sum
    wanted = np.flatnonzero(script)
    if len(wanted):
        script_rows.add(_script_table([keys[i] for i in wanted],
                                      counts[np.repeat(np.array(script), pieces)],
                                      [pieces[i] for i in wanted]))
    seconds["script"] += time.perf_counter() - clock
    clock = time.perf_counter()
    wanted = np.flatnonzero(language)
    if len(wanted):
        found = identifier.identify([texts[i].replace(SEPARATOR, " ") for i in wanted],
                                    totals[wanted])
        language_rows.add(arrays.table(
            {"key": [keys[i] for i in wanted], "lang": [d.lang for d in found],
             "confidence": [d.confidence for d in found],
             "letters": [d.letters for d in found], "grp": [d.group for d in found]},
            LANG_SCHEMA))
    seconds["lang"] += time.perf_counter() - clock


class SignalAppender:
    """New signal rows into table `table` at once, and into the cache a part file per
    `part_rows` (default APPEND_ROWS) rows (a cold XHotpotQA+ fill in small batches would otherwise write dozens
    of parts). Rows pending when the block fails are not cached: the next scan computes
    them again."""

    def __init__(self, con, cache: SignalCache, table: str, part_rows: int | None = None):
        self.con, self.cache, self.table = con, cache, table
        self.part_rows = part_rows or APPEND_ROWS
        self.pending: list[pa.Table] = []

    def add(self, new: pa.Table) -> None:
        self.con.register("new_signals", new)
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM new_signals")
        self.con.unregister("new_signals")
        self.pending.append(new)
        if sum(t.num_rows for t in self.pending) >= self.part_rows:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.cache.append(pa.concat_tables(self.pending))
            self.pending = []

    def __enter__(self) -> "SignalAppender":
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is None:
            self.flush()


def fill_signals(con, cache: SignalCache, table: str, todo: str, columns: Sequence[str],
                 signal_table, count: int, batch: int, parallel_from: int,
                 part_rows: int | None = None) -> None:
    """The signals of the `count` rows of temp table `todo` (its `columns`, as lists, to the
    top-level function `signal_table`, which returns Arrow rows of the cache's schema),
    `batch` rows at a time, into table `table` and the cache. From `parallel_from` rows on,
    each batch is split over two processes (one pool serves every batch)."""
    with ExitStack() as stack:
        pool = stack.enter_context(ProcessPoolExecutor(2)) if count >= parallel_from else None
        signals = stack.enter_context(SignalAppender(con, cache, table, part_rows))
        for start in range(0, count, batch):
            rows = con.sql(f"SELECT * FROM {todo} WHERE rowid >= ? AND rowid < ?",
                           params=[start, start + batch]).to_arrow_table()
            lists = {name: rows.column(name).to_pylist() for name in columns}
            if pool is None or rows.num_rows < parallel_from:
                signals.add(signal_table(lists))
                continue
            half = (rows.num_rows + 1) // 2
            halves = [{k: v[:half] for k, v in lists.items()},
                      {k: v[half:] for k, v in lists.items()}]
            signals.add(pa.concat_tables(pool.map(signal_table, halves)))


class Background:
    """`signal_table` (a top-level function, as for `fill_signals`) over the rows of a
    relation, in two forked child processes, while this process goes on: lingua holds the
    GIL while it reads, so no thread of ours would run meanwhile. The rows go to a Parquet
    file in row groups of `batch` (a child never holds more); child k computes row groups
    k, k + 2, … and writes each result beside it; `tables` waits for both and gives the
    results one file at a time (in row-group order)."""

    def __init__(self, con, relation: str, columns: Sequence[str], signal_table, batch: int,
                 workdir: Path):
        import multiprocessing
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=".background-", dir=workdir))
        source = self.dir / "todo.parquet"
        con.execute(f"COPY ({relation}) TO {literal(str(source))} "
                    f"(FORMAT parquet, ROW_GROUP_SIZE {int(batch)})")
        fork = multiprocessing.get_context("fork")
        self.children = [fork.Process(target=_background_share, daemon=True,
                                      args=(source, k, 2, tuple(columns), signal_table))
                         for k in range(2)]
        for child in self.children:
            child.start()

    def tables(self):
        try:
            for child in self.children:
                child.join()
            if any(child.exitcode for child in self.children):
                raise RuntimeError("computing signals failed in a child process "
                                   f"(exit codes {[c.exitcode for c in self.children]})")
            for path in sorted(self.dir.glob("out-*.parquet")):
                yield read_parquet(path)
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stop the children (when the scan stops first) and remove the files."""
        for child in self.children:
            if child.is_alive():
                child.kill()
            child.join()
        shutil.rmtree(self.dir, ignore_errors=True)


def _background_share(source: Path, k: int, n: int, columns: tuple[str, ...],
                      signal_table) -> None:
    """Child k of n of a `Background`: its row groups' signals, each into a file."""
    file = pq.ParquetFile(source)
    for group in range(k, file.num_row_groups, n):
        rows = file.read_row_group(group, columns=list(columns), use_threads=False)
        table = signal_table({name: rows.column(name).to_pylist() for name in columns})
        with staged_file(source.parent / f"out-{group:06d}.parquet") as staging:
            pq.write_table(table, staging, compression="zstd")


def _script_table(keys: list[str], counts, pieces: list[int]) -> pa.Table:
    """The script signal rows of texts from their pieces' `count_pieces` counts (`pieces`
    of them per text): the verdicts of each piece, and their union in `fails`."""
    import numpy as np
    fails, best, nameless, rich = script_verdicts(counts)
    offsets = np.concatenate(([0], np.cumsum(pieces, dtype=np.int64)))
    union = np.bitwise_or.reduceat(fails, offsets[:-1]) if keys else fails
    parts = pa.ListArray.from_arrays(
        arrays.numbers(offsets, pa.int32()),
        pa.StructArray.from_arrays([arrays.numbers(column, f.type) for column, f in
                                    zip((fails, best, nameless, rich), PART)],
                                   fields=list(PART)))
    return arrays.table({"key": keys, "fails": arrays.numbers(union, pa.int16()),
                         "parts": parts}, SCRIPT_SCHEMA)


UNIT_INDEXES_KEPT = 8


def _units(release, root: Path) -> None:
    """Table lang_units: every judged unit and the sha256 key of its text. Hashing every
    text is most of a warm scan's cost, so the table is itself cached, keyed by the sha256 of
    the release files (hashlib: ~0.05 s per 100 MB) and of the SQL that reads them."""
    con = release.con
    views = con.sql("SELECT view_name, sql FROM duckdb_views() WHERE view_name IN "
                    "('views', 'contexts') ORDER BY 1").fetchall()
    digest = hashlib.sha256((units_sql() + repr(views) + canonical.CONTEXT_NUMBERING
                             ).encode("utf-8"))
    for path in release.paths:
        digest.update(release.digests[str(path)].encode("ascii"))
    index = root / "units" / f"{digest.hexdigest()}.parquet"
    if index.is_file():
        try:
            con.execute(f"CREATE OR REPLACE TABLE lang_units AS SELECT * FROM "
                        f"read_parquet({literal(str(index))})")
            os.utime(index)   # most recently used
            return
        except duckdb.Error:
            index.unlink(missing_ok=True)   # unreadable: rebuild it
    # Built now: the texts are kept (temp table lang_texts) for the signals the cache lacks,
    # so each text is hashed once.
    con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_texts AS
            SELECT *, sha256(text) AS key FROM ({units_sql()});
        CREATE OR REPLACE TABLE lang_units AS SELECT * EXCLUDE (text) FROM lang_texts""")
    with staged_file(index) as staging:
        con.execute(f"COPY lang_units TO {literal(str(staging))} (FORMAT parquet, "
                    "COMPRESSION zstd)")
    for old in sorted(index.parent.glob("*.parquet"),
                      key=lambda p: p.stat().st_mtime)[:-UNIT_INDEXES_KEPT]:
        old.unlink(missing_ok=True)


def prepare(release, cache_dir: Path | None = None,
            identifier: LanguageIdentifier | None = None, force: bool = False) -> Prepared:
    """Create tables lang_judged (every judged unit: rid or ctx, paragraph_id, unit, lang, text
    key, failing script rules, detected language and confidence), lang_script (per text:
    script verdicts per piece), lang_detect and lang_second (the second opinions) on the
    release's connection, once per connection unless `force` (or until `discard`)."""
    con = release.con
    if con in _PREPARED and not force:
        return _PREPARED[con]
    identifier = identifier or detector()
    root = Path(cache_dir) if cache_dir is not None else CACHE_DIR
    done = Prepared(identifier.name, identifier.min_confidence)
    clock = time.perf_counter()
    _units(release, root)
    done.seconds["units"] = time.perf_counter() - clock

    scripts = SignalCache(root, "script", f"{SCRIPT_VERSION}-unicode{_unicode_version()}",
                          SCRIPT_SCHEMA)
    languages = SignalCache(root, "lang", identifier.version, LANG_SCHEMA)
    with cache_lock(root):
        clock = time.perf_counter()
        done.script_texts, done.script_misses = cached_signals(
            con, scripts, "lang_script", "SELECT key FROM lang_units", "lang_missing_script")
        done.lang_texts, done.lang_misses = cached_signals(
            con, languages, "lang_detect", "SELECT key FROM lang_units WHERE unit <> 'title'",
            "lang_missing_lang")
        done.seconds["lookup"] = time.perf_counter() - clock
        if done.script_misses or done.lang_misses:
            clock = time.perf_counter()
            _unit_texts(con, "SELECT key FROM lang_missing_script "
                             "UNION SELECT key FROM lang_missing_lang")
            done.seconds["texts"] = time.perf_counter() - clock
            _compute(con, identifier, scripts, languages, done.seconds)
        clock = time.perf_counter()
        con.execute("""CREATE OR REPLACE TABLE lang_judged AS
            SELECT u.rid, u.ctx, u.paragraph_id, u.unit, u.lang, u.key, s.fails,
                   d.lang AS detected, d.confidence
            FROM lang_units u JOIN lang_script s USING (key) LEFT JOIN lang_detect d USING (key);
            DROP TABLE lang_units;""")   # (one copy of the units: 8.5 M rows for XHotpotQA+)
        done.seconds["join"] = time.perf_counter() - clock
        clock = time.perf_counter()
        done.suspects, done.second_misses = _second_opinions(
            con, identifier,
            SignalCache(root, "second", identifier.second_version, SECOND_SCHEMA))
        done.seconds["second"] = time.perf_counter() - clock
    for table in ("lang_texts", "lang_unit_texts", "lang_todo", "lang_missing_script",
                  "lang_missing_lang", "lang_missing_second"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    done.seconds["total"] = sum(done.seconds.values())
    _PREPARED[con] = done
    return done


def _unit_texts(con, keys: str) -> None:
    """Temp table lang_unit_texts: the text of each key of the relation `keys`, from the
    texts `_units` kept, else by hashing every text of the release again (a warm scan never
    needs any)."""
    texts = ("lang_texts" if _exists(con, "lang_texts") else
             f"(SELECT sha256(text) AS key, text FROM ({units_sql()}))")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_unit_texts AS
        SELECT DISTINCT ON (key) key, text FROM {texts} SEMI JOIN ({keys}) USING (key)""")


def _exists(con, table: str) -> bool:
    return con.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                   params=[table]).fetchall()[0][0] > 0


def _second_opinions(con, identifier: LanguageIdentifier, cache: SignalCache
                     ) -> tuple[int, int]:
    """Table lang_second (key, detected, lang, second, second_confidence): the second
    opinion (`LanguageIdentifier.confirm`) on each judged text whose detection names
    another language of its assigned language's script at min_confidence, cached per
    (text, detected, assigned). Returns (such distinct suspects, computed now)."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE lang_suspects AS
        SELECT DISTINCT key || ':' || detected || ':' || lang AS pair, key, detected, lang
        FROM lang_judged
        WHERE unit <> 'title' AND detected <> lang AND {group_sql('detected')} = {group_sql('lang')}
          AND confidence >= {literal(identifier.min_confidence)}""")
    suspects, misses = cached_signals(con, cache, "lang_confirmed",
                                      "SELECT pair AS key FROM lang_suspects",
                                      "lang_missing_second")
    if misses:
        needed = ("SELECT key FROM lang_suspects s SEMI JOIN lang_missing_second m "
                  "ON m.key = s.pair")
        source = "lang_todo"     # the texts a cold fill just read, when they cover these
        if not _exists(con, source) or con.sql(
                f"SELECT count(*) FROM ({needed}) ANTI JOIN {source} USING (key)"
                ).fetchall()[0][0]:
            _unit_texts(con, needed)
            source = "lang_unit_texts"
        pairs, texts, detected, assigned = zip(*con.sql(f"""
            SELECT s.pair, replace(t.text, chr(31), ' '), s.detected, s.lang
            FROM lang_suspects s JOIN {source} t USING (key)
            SEMI JOIN lang_missing_second m ON m.key = s.pair""").fetchall())
        found = identifier.confirm(list(zip(texts, detected, assigned)))
        new = arrays.table({"key": list(pairs), "lang": [lang for lang, _ in found],
                            "confidence": [c for _, c in found]}, SECOND_SCHEMA)
        with SignalAppender(con, cache, "lang_confirmed") as confirmed:
            confirmed.add(new)
    con.execute("""CREATE OR REPLACE TABLE lang_second AS
        SELECT s.key, s.detected, s.lang, c.lang AS second, c.confidence AS second_confidence
        FROM lang_suspects s JOIN lang_confirmed c ON c.key = s.pair;
        DROP TABLE lang_suspects; DROP TABLE lang_confirmed""")
    return suspects, misses


def discard(con) -> Prepared | None:
    """Drop what `prepare` put on a connection (its checks have run: the memory goes to
    collecting findings) and return what it did; a later `prepare` builds it again."""
    for table in ("lang_judged", "lang_script", "lang_detect", "lang_second"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return _PREPARED.pop(con, None)


@lru_cache(maxsize=1)
def _unicode_version() -> str:
    import icu
    return icu.UNICODE_VERSION


