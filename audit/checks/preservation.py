"""answer_not_in_evidence and bridge_entity_lost: a filter each over the preservation
layer's units and signals (audit/translation/preservation.py, which describes what counts as
carrying an answer or an entity), with the thresholds in force applied in SQL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..languages import BY_CODE
from ..sql.safe import literal
from ..translation import preservation as layer
from ..translation.preservation import SCRIPT_KEYS, SIGNALS_VERSION, TARGETS, prepare, script_of
from .model import MULTIHOP, Check

if TYPE_CHECKING:
    from ..io.model import Release

# Per-script romanised-match thresholds (partial_ratio, 0–100): the lowest score that an
# unrelated sentence reaches for at most ~1 % of NTREX-128 names in every language of the
# script (bench/preservation.py prints the table: at 85 all stay within 0.8 %). Arabic
# script writes few vowels, so its true matches score lower and its unrelated ones too: at
# 80 it finds 28–50 % of the names (16–33 % at 85) for 0.2–1.0 % false matches.
SCRIPT_SCORES = {"latin_score": 85.0, "cyrillic_score": 85.0, "greek_score": 85.0,
                 "arabic_score": 80.0, "devanagari_score": 85.0, "bengali_score": 85.0,
                 "thai_score": 85.0, "hangul_score": 85.0, "japanese_score": 85.0,
                 "han_score": 85.0}
# Word by word (`word_score`: each significant word of a name against its best translated
# word, in any order, stems too), where the release holds no rendering: at 90 it finds
# 5–15 points more NTREX-128 names in their own translation (Cyrillic, Devanagari, Latin)
# for at most ~1 % more unrelated lines (bench/preservation.py --thresholds).
THRESHOLDS = {"rendering_score": 85.0, **SCRIPT_SCORES, "word_score": 90.0}


def _script_threshold(t: dict[str, Any]) -> str:
    """The romanised-match threshold of each unit's language, as SQL."""
    cases = " ".join(f"WHEN {literal(code)} THEN {literal(float(t[SCRIPT_KEYS[script_of(code)] + '_score']))}"
                     for code in TARGETS)
    return f"(CASE f.lang {cases} END)"


def _names_sql(column: str, mapping: dict[str, str]) -> str:
    cases = " ".join(f"WHEN {literal(k)} THEN {literal(v)}" for k, v in mapping.items())
    return f"(CASE {column} {cases} END)"


def _query(release: Release, t: dict[str, Any], kind: str, check: str) -> str:
    prepare(release)
    rendering = literal(float(t["rendering_score"]))
    script = _script_threshold(t)
    language = _names_sql("f.lang", {c: BY_CODE[c].name for c in TARGETS})
    group = _names_sql("f.lang", {c: script_of(c) for c in TARGETS})
    label = ("'answer ''' || f.target || ''''" if kind == "answer" else
             "'bridge entity ''' || f.target || ''' (title of ' || f.other || ')'")
    best = ("CASE WHEN coalesce(f.roman_score, 0) > greatest(f.en_score, coalesce(f.form_score, 0))"
            " THEN 'romanised' WHEN coalesce(f.form_score, 0) > f.en_score THEN 'rendering' "
            "ELSE 'english' END")
    score = "CASE b WHEN 'romanised' THEN f.roman_score WHEN 'rendering' THEN f.form_score ELSE f.en_score END"
    text = "CASE b WHEN 'romanised' THEN f.roman_match WHEN 'rendering' THEN f.form_match ELSE f.en_match END"
    # The verdict: thresholds applied here, so a tuned policy reuses the cached signals.
    word = literal(float(t["word_score"]))
    # Word by word only where the release holds no rendering: one that it holds decides.
    found = (f"(f.en_score >= {rendering} OR coalesce(f.form_score, 0) >= {rendering} "
             f"OR coalesce(f.roman_score, 0) >= {script} "
             f"OR (f.forms_n = 0 AND coalesce(f.word_score, 0) >= {word}))")
    numeric = f"(NOT regexp_matches(f.target, '\\p{{L}}') OR {layer.by_value_sql('f.target')})"
    via = (f"CASE b WHEN 'romanised' THEN 'romanised ''' || coalesce(f.roman_text, '') || "
           f"''' ' || printf('%.0f', {score}) || ' < ' || {group} || ' threshold ' || "
           f"printf('%.0f', {script}) WHEN 'rendering' THEN 'as the rendering ' || "
           f"printf('%.0f', {score}) || ' < ' || printf('%.0f', {rendering}) ELSE "
           f"'verbatim ' || printf('%.0f', {score}) || ' < ' || printf('%.0f', {rendering}) END")
    best_part = (f"CASE WHEN {text} IS NULL THEN 'no match at all' ELSE 'best match ''' || "
                 f"{text} || ''' (' || {via} || ')' END")
    detail = f"""CASE
        WHEN f.num_missing IS NOT NULL THEN {label} || ' lost: numeral ' || f.num_missing ||
             ' is not in the translated sentence'
        WHEN f.forms_n > 0 THEN {label} || ' lost: not verbatim, not as the release''s ' ||
             {language} || ' rendering ''' || f.form || ''', not romanised (' || {group} ||
             ', ICU); ' || {best_part}
        ELSE {label} || ' not confirmed: the release holds no ' || {language} ||
             ' rendering of it and romanised (' || {group} || ', ICU) it does not match; ' ||
             {best_part} || ': a translated name cannot be told from a lost one' END"""
    found_units = f"""SELECT f.*, {best} AS b FROM pres_found f
        WHERE f.kind = {literal(kind)} AND (f.num_missing IS NOT NULL
              OR (NOT ({numeric}) AND NOT {found}))"""
    located = f"""SELECT v.rid, v.id, v.source_split, f.paragraph_id, f.sentence_index,
               {detail} AS detail,
               CASE WHEN f.num_missing IS NOT NULL OR f.forms_n > 0 THEN 'lost'
                    ELSE 'unverifiable' END AS category,
               CASE WHEN f.num_missing IS NULL THEN {text} END AS evidence,
               f.src_match AS source_evidence
        FROM ({found_units}) f JOIN views v ON v.ctx = f.ctx AND """ + (
        "v.source_answer = f.target" if kind == "answer" else "v.question_type = 'bridge'")
    return f"""SELECT rid, id, source_split, {literal(check)} AS "check", 'sentence' AS unit,
                      paragraph_id, sentence_index, detail, category, evidence, source_evidence
               FROM ({located})"""


def _answer_not_in_evidence(release: Release, t: dict[str, Any]) -> str:
    return _query(release, t, "answer", "answer_not_in_evidence")


def _bridge_entity_lost(release: Release, t: dict[str, Any]) -> str:
    return _query(release, t, "bridge", "bridge_entity_lost")


def _check(name: str, description: str, query: Callable[..., str]) -> Check:
    return Check(name, ("sentence",), "review", "translation", description, MULTIHOP,
                 query=query, thresholds=tuple(THRESHOLDS.items()),
                 categories=("lost", "unverifiable"),
                 category_severity=(("unverifiable", "info"),), version=SIGNALS_VERSION,
                 layers=(layer,))


PRESERVATION_CHECKS = (
    _check("answer_not_in_evidence",
           "A name, number or date answer that the English supporting sentence contains is "
           "not in its translation: not verbatim, not as the release's own rendering in that "
           "language, not romanised (ICU, per-script fuzzy thresholds); info where no "
           "rendering exists and romanisation cannot tell.", _answer_not_in_evidence),
    _check("bridge_entity_lost",
           "A bridge question's supporting sentence mentions the other gold paragraph's title "
           "in English, and its translation does not: not verbatim, not as a translated title "
           "of that entity in the release, not romanised; info where no rendering exists.",
           _bridge_entity_lost),
)
PRESERVATION_NAMES = tuple(check.name for check in PRESERVATION_CHECKS)
