"""A V1.1 release of ALIGNED real text, with translation-quality defects planted at seeded
places: the ground truth for audit/translation/layer.py (tests/test_heuristics.py and
bench/heuristics.py).

NTREX-128 is sentence-aligned across languages (ntrex128/SOURCE.md): English line i is the
source of line i in every other language, all human translations. Each release row holds
one candidate of up to four consecutive lines of one language: the English lines are its
source sentences, their translations its sentences (question and answer stay English, so
only paragraphs are judged). Planted rows hold one line each: a copy of a clean pair with
one defect. The third-party text is read from ../shared/realdata at run time; only the
scratch `out_dir` receives the release.

Defects (each planter returns the corrupted translation, or None where it cannot apply):
number_mismatch     one digit of a numeral the source shares is changed (same digit system)
length_ratio_outlier the translation truncated by 40–75 % (words; characters for zh/ja/th)
repetition_loop     a word or short phrase repeated 3–8 times in a row (at the end, or inside)
near_source_copy    the English source with one word replaced by a word of the translation
mojibake            the UTF-8 bytes decoded with a single-byte codec (whole text, or one
                    stretch for Windows-1252 and Latin-1)
unbalanced_brackets a closing bracket or quote removed (source and translation balanced)
terminal_punctuation_mismatch the final . ? ! (in the script's own form) dropped or changed
"""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path

import realdata_release
from realdata_release import UNSPACED

from audit.languages import BY_CODE
from audit.translation import signals as textsignals
from devkit import synth

# The plants' languages, in the order that fixes the seeded draws the tests pin.
TARGETS = ("zh", "hi", "es", "ar", "fr", "ru", "pt", "bn", "ur", "id", "ja", "de", "sw", "tr",
           "vi", "ko", "it", "fa", "th", "nl", "pl", "el", "sv")
KINDS = ("number_mismatch", "length_ratio_outlier", "repetition_loop", "near_source_copy",
         "mojibake", "unbalanced_brackets", "terminal_punctuation_mismatch")
MOJIBAKE_CODECS = ("sloppy-windows-1252", "latin-1", "sloppy-windows-1251", "macroman",
                   "cp437", "sloppy-windows-1250", "sloppy-windows-1253", "iso-8859-2")
SEED = 20261212
LINES_PER_ROW = 4


def load_ntrex() -> dict[str, list[str]]:
    """{code: lines} for English and the 23 other languages."""
    return realdata_release.load_ntrex(english=True)


# ------------------------------------------------------------------------------ planters

def _words(text: str, lang: str) -> list[str]:
    return list(text) if lang in UNSPACED else text.split(" ")


def _join(words: list[str], lang: str) -> str:
    return "".join(words) if lang in UNSPACED else " ".join(words)


def plant_number(source: str, translation: str, lang: str, rng: random.Random) -> str | None:
    """Change one digit of a translation numeral whose value the source also has, to a digit
    of the same system, so that no source numeral has the new value."""
    ours = textsignals.numerals(source, "en")
    values = {v for n in ours for v in n.values}
    shared = [n for n in textsignals.numerals(translation, lang) if n.values & values]
    if not shared or textsignals.number_mismatch(source, translation, lang):
        return None
    numeral = rng.choice(shared)
    positions = [i for i in range(numeral.start, numeral.end) if translation[i].isdigit()]
    for _ in range(20):
        i = rng.choice(positions)
        zero = ord(translation[i]) - unicodedata.digit(translation[i])
        digit = rng.choice([d for d in range(10) if d != unicodedata.digit(translation[i])])
        changed = translation[:i] + chr(zero + digit) + translation[i + 1:]
        if textsignals.number_mismatch(source, changed, lang):
            return changed
    return None


def plant_truncation(source: str, translation: str, lang: str,
                     rng: random.Random) -> str | None:
    """Keep the first 25–60 % of the translation (a cut of 40–75 %)."""
    words = _words(translation, lang)
    if len(source) < 20 or len(words) < 4:
        return None
    keep = max(1, round(len(words) * (1 - rng.uniform(0.40, 0.75))))
    return _join(words[:keep], lang)


def plant_loop(source: str, translation: str, lang: str, rng: random.Random) -> str | None:
    """A unit repeated 3–8 times in a row, as a decoder stuck in a loop: the last word(s)
    of the text repeated at its end, or a word inside repeated in place."""
    words = _words(translation, lang)
    size = rng.choice((2, 3, 4)) if lang in UNSPACED else rng.choice((1, 2))
    if len(words) < size + 2:
        return None
    repeats = rng.randint(3, 8)
    if rng.random() < 0.5:
        unit = words[-size:]
        looped = words[:-size] + unit * repeats
    else:
        at = rng.randrange(0, len(words) - size)
        unit = words[at:at + size]
        looped = words[:at] + unit * repeats + words[at + size:]
    if not any(ch.isalpha() for ch in "".join(unit)):
        return None
    return _join(looped, lang)


def plant_near_copy(source: str, translation: str, lang: str,
                    rng: random.Random) -> str | None:
    """The English source with one of its words (3+ letters) replaced by a word of the
    translation: a sentence the model left in English but for one word."""
    words = source.split(" ")
    places = [i for i, w in enumerate(words) if sum(ch.isalpha() for ch in w) >= 3]
    theirs = [w for w in _words(translation, lang) if w.strip() and w not in words]
    if not places or not theirs:
        return None
    i = rng.choice(places)
    replacement = rng.choice(theirs)
    if lang in UNSPACED:   # a few characters, as a word
        start = rng.randrange(len(translation) - 1)
        replacement = translation[start:start + rng.randint(2, 4)].strip() or replacement
    words[i] = replacement
    changed = " ".join(words)
    return changed if changed != source else None


def plant_mojibake(source: str, translation: str, lang: str,
                   rng: random.Random) -> tuple[str, str] | None:
    """(corrupted text, codec): the UTF-8 bytes decoded with a single-byte codec, the whole
    text, or (half the Windows-1252 and Latin-1 plants) one stretch of 1–3 words."""
    import ftfy.bad_codecs  # noqa: F401  (registers sloppy-windows-*)
    codec = rng.choice(MOJIBAKE_CODECS)
    if codec in ("sloppy-windows-1252", "latin-1") and rng.random() < 0.5:
        words = translation.split(" ")
        mangled = [i for i, w in enumerate(words) if not w.isascii()]
        if not mangled:
            return None
        i = rng.choice(mangled)
        j = min(len(words), i + rng.randint(1, 3))
        words[i:j] = [" ".join(words[i:j]).encode("utf-8").decode(codec)]
        changed = " ".join(words)
    else:
        changed = translation.encode("utf-8").decode(codec)
    return (changed, codec) if changed != translation else None


_CLOSERS = ("".join(closes for _, closes in textsignals.BRACKETS + textsignals.QUOTES)
            + "»›" + textsignals.SYMMETRIC_QUOTES)


def plant_bracket(source: str, translation: str, lang: str,
                  rng: random.Random) -> str | None:
    """Remove one closing bracket or quote (or one of a pair of symmetric quotes) from a
    translation that is balanced, like its source."""
    families = ((textsignals.BRACKETS, (), ""),
                (textsignals.QUOTES, textsignals.COUNTED_QUOTES, textsignals.SYMMETRIC_QUOTES))
    if any(textsignals.unmatched(text, *family) is not None
           for text in (source, translation) for family in families):
        return None
    marks = [i for i, ch in enumerate(translation) if ch in _CLOSERS]
    if not marks:
        return None
    i = rng.choice(marks)
    return translation[:i] + translation[i + 1:]


_OWN_MARKS = {"full_stop": {"zh": "。", "ja": "。", "hi": "।", "bn": "।", "ur": "۔"},
              "question": {"zh": "？", "ja": "？", "ar": "؟", "fa": "؟", "ur": "؟", "el": ";"},
              "exclamation": {"zh": "！", "ja": "！"}}


def plant_terminal(source: str, translation: str, lang: str,
                   rng: random.Random) -> str | None:
    """Drop the final . ? ! of the translation, or change it to another class (written the
    way the language writes it). Thai is only changed: Thai writing ends sentences, and
    often questions, without a mark, so a dropped one is no defect there."""
    if textsignals.terminal_mismatch(source, translation, lang) is not None:
        return None
    ours = textsignals.terminal(source, "en")
    theirs = textsignals.terminal(translation, lang)
    if ours not in ("full_stop", "question", "exclamation") or theirs != ours:
        return None
    stripped = translation.rstrip(textsignals.CLOSING)
    tail = translation[len(stripped):]
    body = stripped[:-1]
    if rng.random() < 0.5 and lang != "th":
        return body + tail
    other = rng.choice([c for c in ("full_stop", "question", "exclamation") if c != ours])
    mark = _OWN_MARKS.get(other, {}).get(lang, {"full_stop": ".", "question": "?",
                                                "exclamation": "!"}[other])
    return body + mark + tail


PLANTERS = {"number_mismatch": plant_number, "length_ratio_outlier": plant_truncation,
            "repetition_loop": plant_loop, "near_source_copy": plant_near_copy,
            "mojibake": plant_mojibake, "unbalanced_brackets": plant_bracket,
            "terminal_punctuation_mismatch": plant_terminal}


# ------------------------------------------------------------------------------- release

def _record(n: int, lang: str, source_lines: list[str], translated: list[str]) -> dict:
    title = f"NTREX block {n}"
    source = {"_id": f"ntrex{n:06d}", "question": "Which block is this?", "answer": title,
              "type": "bridge", "level": "hard", "supporting_facts": [[title, 0]],
              "context": [[title, source_lines]]}
    context = [[title, translated, BY_CODE[lang].name]]
    return synth.build_v11_record(source, context, source["question"], source["answer"],
                                  "English", split="validation", source_position=n,
                                  release_position=n, view_index=0)


def build(out_dir: Path, languages: tuple[str, ...] = TARGETS, per_kind: int = 80,
          kinds: tuple[str, ...] = KINDS, seed: int = SEED) -> dict:
    """Write out_dir/release (V1.1 Parquet) of every aligned line of `languages` in blocks
    of four, plus `per_kind` planted copies per kind and language.

    Returns {"release": path, "units": {(id, paragraph_id, sentence_index): unit}} where a
    unit is {"lang", "line", "kind" (None for a clean pair), "source", "translation", and for
    a plant "original" (the clean translation) and "codec" (mojibake)}."""
    ntrex = load_ntrex()
    rng = random.Random(seed)
    records, units = [], {}

    def add(lang: str, lines: list[int], translated: list[str], kind: str | None,
            extra: dict | None = None) -> None:
        n = len(records)
        record = _record(n, lang, [ntrex["en"][i] for i in lines], translated)
        records.append(record)
        for k, line in enumerate(lines):
            units[(record["id"], "p00", k)] = {
                "lang": lang, "line": line, "kind": kind, "source": ntrex["en"][line],
                "translation": translated[k], **(extra or {})}

    total = len(ntrex["en"])
    for lang in languages:
        for start in range(0, total, LINES_PER_ROW):
            lines = list(range(start, min(total, start + LINES_PER_ROW)))
            add(lang, lines, [ntrex[lang][i] for i in lines], None)
        for kind in kinds:
            order = list(range(total))
            rng.shuffle(order)
            done = 0
            for line in order:
                planted = PLANTERS[kind](ntrex["en"][line], ntrex[lang][line], lang, rng)
                if planted is None:
                    continue
                extra = {"original": ntrex[lang][line]}
                if kind == "mojibake":
                    planted, extra["codec"] = planted
                add(lang, [line], [planted], kind, extra)
                done += 1
                if done == per_kind:
                    break
    release = Path(out_dir) / "release"
    synth.write_release(records, release)
    return {"release": release, "units": units}


# -------------------------------------------------------------------- a small release

SMALL_ROWS, SMALL_PLANTS, SMALL_KEEP = 117, 16, 0.40
# A shard of two languages (two groups of 210 pairs: they calibrate themselves), one of
# four (about 105 pairs each: too few) and a sample of all 23 (about 18 each).
SMALL_RELEASES = {"shard of 2": ("de", "fr"), "shard of 4": ("de", "ru", "zh", "ar"),
                  "sample of 23": TARGETS}


def build_small(out_dir: Path, languages: tuple[str, ...], rows: int = SMALL_ROWS,
                plants: int = SMALL_PLANTS, keep: float = SMALL_KEEP,
                seed: int = SEED) -> dict:
    """A release of `rows` rows, as a shard or a sample is: `rows - plants` rows of four
    consecutive NTREX-128 lines (languages in turn, each language's blocks one after the
    other from a seeded line, so no pair repeats), and `plants` rows
    of one line cut to its first `keep` of words (characters for zh/ja/th), languages in
    turn. Returns {"release", "units"} as `build` does (kind None or
    "length_ratio_outlier")."""
    ntrex = load_ntrex()
    rng = random.Random(seed)
    records, units = [], {}
    total = len(ntrex["en"])

    def add(lang: str, lines: list[int], translated: list[str], kind: str | None) -> None:
        record = _record(len(records), lang, [ntrex["en"][i] for i in lines], translated)
        records.append(record)
        for k, line in enumerate(lines):
            units[(record["id"], "p00", k)] = {
                "lang": lang, "line": line, "kind": kind, "source": ntrex["en"][line],
                "translation": translated[k], "original": ntrex[lang][line]}

    offset = rng.randrange(total)
    for n in range(rows - plants):
        lang = languages[n % len(languages)]
        start = (offset + LINES_PER_ROW * (n // len(languages))) % (total - LINES_PER_ROW)
        lines = list(range(start, start + LINES_PER_ROW))
        add(lang, lines, [ntrex[lang][i] for i in lines], None)
    done = 0
    while done < plants:
        lang, line = languages[done % len(languages)], rng.randrange(total)
        source, words = ntrex["en"][line], _words(ntrex[lang][line], lang)
        if len(source) < 20 or len(words) < 4:
            continue
        add(lang, [line], [_join(words[:max(1, round(len(words) * keep))], lang)],
            "length_ratio_outlier")
        done += 1
    release = Path(out_dir) / "release"
    synth.write_release(records, release)
    return {"release": release, "units": units}
