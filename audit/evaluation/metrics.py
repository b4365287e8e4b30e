"""Answer, supporting-fact and joint metrics with the reference toolkit's semantics (SPEC §6).

Two answer protocols:

unicode_script_aware  the release protocol: NFKC, casefold, every Unicode P*/S* character to a
                      space, English articles removed for `en` only, whitespace collapsed
                      (audit.language.descriptors.normalize_answer, the one definition); tokens are
                      characters for Han, Japanese and Thai (zh, ja, th), else words.
legacy_hotpot         the historical HotpotQA/SQuAD normaliser: lower(), ASCII punctuation
                      removed, articles removed whatever the language, words as tokens.

Answer EM compares normalised strings; P/R/F1 come from the multiset token overlap. When
either normalised side is "yes", "no" or "noanswer" and the two differ, every answer score is
0. An empty side scores precision (recall) 1 only when the other side is empty too. Support
P/R/F1/EM compare the sets of (paragraph_id, sentence_id) pairs the same way. Joint
EM = EM_a·EM_s, joint P = P_a·P_s, joint R = R_a·R_s, joint F1 their harmonic mean.

A language outside the 24 (e.g. `und`) is scored as a non-English, word-tokenised language
(the reference raises instead); callers count such rows.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from ..language.descriptors import normalize_answer as release_normalize
from ..languages import BY_CODE

PROTOCOLS = ("unicode_script_aware", "legacy_hotpot")
DEFAULT_PROTOCOL = "unicode_script_aware"
SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})
CHARACTER_SCRIPTS = frozenset({"Han", "Japanese", "Thai"})
COMPONENTS = ("answer", "support", "joint")

_LEGACY_PUNCTUATION = str.maketrans("", "", string.punctuation)
_LEGACY_ARTICLES = re.compile(r"\b(a|an|the)\b", flags=re.IGNORECASE)

Fact = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Component:
    exact_match: float
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True, slots=True)
class ExampleScore:
    answer: Component
    support: Component
    joint: Component


def require_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown evaluation protocol {protocol!r} (expected one of "
                         f"{', '.join(PROTOCOLS)})")
    return protocol


def normalize(text: str, language: str, protocol: str = DEFAULT_PROTOCOL) -> str:
    if require_protocol(protocol) == "legacy_hotpot":
        value = _LEGACY_ARTICLES.sub(" ", text.lower().translate(_LEGACY_PUNCTUATION))
        return " ".join(value.split())
    return release_normalize(text, language)


def character_tokens(language: str, protocol: str = DEFAULT_PROTOCOL) -> bool:
    known = BY_CODE.get(language)
    return (protocol == "unicode_script_aware" and known is not None
            and known.script in CHARACTER_SCRIPTS)


def tokens(normalized: str, by_character: bool) -> tuple[str, ...]:
    if by_character:
        return tuple(ch for ch in normalized if not ch.isspace())
    return tuple(normalized.split())


def _ratio(numerator: int, denominator: int, other_empty: bool) -> float:
    if denominator:
        return numerator / denominator
    return 1.0 if other_empty else 0.0


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def compare_normalized(predicted: str, gold: str, by_character: bool) -> Component:
    """Answer scores of two already normalised strings."""
    if (predicted in SPECIAL_ANSWERS or gold in SPECIAL_ANSWERS) and predicted != gold:
        return Component(0.0, 0.0, 0.0, 0.0)
    pred_tokens, gold_tokens = tokens(predicted, by_character), tokens(gold, by_character)
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    precision = _ratio(overlap, len(pred_tokens), not gold_tokens)
    recall = _ratio(overlap, len(gold_tokens), not pred_tokens)
    return Component(float(predicted == gold), precision, recall, _f1(precision, recall))


def answer_score(predicted: str, gold: str, language: str,
                 protocol: str = DEFAULT_PROTOCOL) -> Component:
    return compare_normalized(normalize(predicted, language, protocol),
                              normalize(gold, language, protocol),
                              character_tokens(language, protocol))


def support_counts(overlap: int, n_predicted: int, n_gold: int) -> Component:
    """Support scores from set sizes: |P ∩ G|, |P|, |G| (sets, duplicates removed)."""
    precision = _ratio(overlap, n_predicted, n_gold == 0)
    recall = _ratio(overlap, n_gold, n_predicted == 0)
    exact = float(overlap == n_predicted == n_gold)
    return Component(exact, precision, recall, _f1(precision, recall))


def support_score(predicted: Iterable[Fact], gold: Iterable[Fact]) -> Component:
    predicted, gold = set(predicted), set(gold)
    return support_counts(len(predicted & gold), len(predicted), len(gold))


def joint(answer: Component, support: Component) -> Component:
    precision = answer.precision * support.precision
    recall = answer.recall * support.recall
    return Component(answer.exact_match * support.exact_match, precision, recall,
                     _f1(precision, recall))


def score_example(predicted_answer: str, gold_answer: str, language: str,
                  predicted_support: Iterable[Fact], gold_support: Iterable[Fact],
                  protocol: str = DEFAULT_PROTOCOL) -> ExampleScore:
    answer = answer_score(predicted_answer, gold_answer, language, protocol)
    support = support_score(predicted_support, gold_support)
    return ExampleScore(answer, support, joint(answer, support))
