"""Language identification restricted to the 24 languages (`LanguageIdentifier`): the
script group settles most texts, a detector (lingua by default, langdetect) decides inside
the ambiguous groups, and a second opinion confirms a same-script disagreement
(`audit.language.layer` describes the rule)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ..languages import CODES
from ..sql.safe import literal
from . import letters as letter_rule
from . import words
from .scripts import (
    AMBIGUOUS,
    CLASSES,
    GROUP_OF,
    GROUPS,
    SETTLED,
    _group_matrix,
    count_pieces,
    is_name_like,
    without_names,
)

LANGID_MIN_LETTERS = 20  # language ID: fewer letters -> undetermined
LANGID_MIN_WORDS = 10     # ... of them outside names
LANGID_MIN_HAN = 10      # ... for Han, Kana and Hangul text (a character carries more)
MIN_CONFIDENCE = 0.7     # language ID: a same-script disagreement needs this confidence
MAX_DETECT_CHARS = 200   # language ID reads at most this much of a text (cut at a space)


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
    # False in a forked child process: a thread pool the parent started does not exist there.
    parallel = True

    @property
    def settings(self) -> str:
        """The routing settings that change what is detected (part of the cache version)."""
        return (f"clip{MAX_DETECT_CHARS}-min{LANGID_MIN_LETTERS}.{LANGID_MIN_WORDS}."
                f"{LANGID_MIN_HAN}"
                f"{'-masked' if self.mask_names else ''}-{words.VERSION}-{letter_rule.VERSION}")

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
        `count_pieces` when known), settle what the function words (`words`) and the
        Arabic-script letters (`letters`) settle, then detect the rest of the ambiguous ones
        group by group."""
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
            read = self.prepare_texts(group, [texts[i] for i in indices])
            rule = _RULES.get(group)
            if rule is not None:
                # The detector reads only what the function-word (Latin) or letter (Arabic)
                # rule leaves open; a settled text has confidence 1 (no other language of
                # its script comes close).
                settled = rule(read)
                for i, lang in zip(indices, settled):
                    if lang is not None:
                        out[i].lang, out[i].confidence = lang, 1.0
                indices = [i for i, lang in zip(indices, settled) if lang is None]
                read = [text for text, lang in zip(read, settled) if lang is None]
            found = self.detect(AMBIGUOUS[group], read) if read else []
            for i, (lang, confidence) in zip(indices, found):
                out[i].lang, out[i].confidence = lang, confidence
        return out


# The rules that settle a text of an ambiguous group before the detector reads it.
_RULES = {"Latin": words.settle, "Arabic": letter_rule.settle}


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
        detector = self._detector(codes)
        for values in (detector.compute_language_confidence_values_in_parallel(texts)
                       if self.parallel else map(detector.compute_language_confidence_values,
                                                 texts)):
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
                         f"-conf{MIN_CONFIDENCE}-second-langdetect-pairs-{words.VERSION}"
                         f"-{letter_rule.VERSION}")


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
