"""Repair units: what one correction replaces, how its old text is guarded, and which
findings sit on it.

A unit is a row's question or answer, or a context's title, sentence or paragraph (its
sentences: the unit a sentence-count defect needs). Views of an XHotpotQA+ source share
their context, so a context unit is one text however many views hold it.

The guard of a correction (`old_sha256`) is the SHA-256 of the UTF-8 text it replaces; for a
paragraph, of its sentences as compact JSON (`ensure_ascii=False`).
"""

from __future__ import annotations

import uuid

import pyarrow as pa

from ..checks import registry
from ..io.digests import text_sha256 as digest
from ..io.units import CONTEXT_UNITS, CORRECTABLE_UNITS, paragraph_text
from ..sql.safe import strings

__all__ = ["CONTEXT_UNITS", "digest", "paragraph_text"]

UNITS = CORRECTABLE_UNITS
ROW_UNITS = ("question", "answer")

# Checks whose findings no text correction can change: a unit's language assignment, or
# the shape of the context (a candidate missing, out of order, a paragraph id); plus every
# check of source or release origin (inherited anomalies, checksums, ids).
NOT_TEXT = frozenset({
    "unknown_question_language", "unknown_candidate_language", "invalid_context",
    "candidate_count_mismatch", "invalid_candidate",
    "xhotpot:unknown_question_language", "xhotpot:unknown_answer_language",
    "xhotpot:unknown_candidate_language", "xhotpot:question_answer_language_mismatch",
    "xhotpot:candidate_order_mismatch", "xhotpot:invalid_paragraph_id",
    "xhotpot:candidate_count_mismatch",
}) | {c.name for c in registry.REGISTRY if c.origin != "translation"}
# A paragraph whose sentence count is wrong is repaired whole: one text per source sentence.
SENTENCE_COUNT = ("paragraph_sentence_shortfall", "paragraph_sentence_surplus",
                  "xhotpot:sentence_count_mismatch")
# Checks about a title that name no 'title' in their detail.
TITLE_CHECKS = ("duplicate_normalized_translated_title", "xhotpot:blank_translated_title")
FACT_CHECKS = tuple(c.name for c in registry.REGISTRY if c.unit == "fact")


def finding_unit_sql(f: str = "f") -> str:
    """SQL: the unit a finding (alias `f`, a row of a scan's findings) sits on — 'question',
    'answer', 'title', 'sentence', 'paragraph', 'fact' (a supporting fact located at a
    sentence), or 'row' (the instance as a whole) — the way compare.py places findings,
    with titles apart."""
    check, detail = f'{f}."check"', f"coalesce({f}.detail, '')"
    return f"""(CASE
        WHEN {f}.paragraph_id IS NULL THEN CASE
            WHEN {check} LIKE '%question%' OR regexp_matches({detail}, '^(English )?question')
              THEN 'question'
            WHEN {check} LIKE '%answer%' OR regexp_matches({detail}, '^(English )?answer')
              THEN 'answer'
            ELSE 'row' END
        WHEN list_contains({strings(FACT_CHECKS)}, {check}) THEN 'fact'
        WHEN {f}.sentence_index IS NOT NULL THEN 'sentence'
        WHEN list_contains({strings(TITLE_CHECKS)}, {check}) OR {detail} LIKE 'title%'
          THEN 'title'
        ELSE 'paragraph' END)"""


def text_check_sql(f: str = "f") -> str:
    """SQL: whether a correction of text can change this finding."""
    return f'(NOT list_contains({strings(sorted(NOT_TEXT))}, {f}."check"))'


def among(con, values, type_: pa.DataType = pa.int64()) -> str:
    """SQL `(SELECT k FROM …)` of the values, registered on `con` under a name of its own:
    for `x IN …`, a join, where a long list literal would be compared with every row."""
    name = f"repair_keys_{uuid.uuid4().hex}"
    con.register(name, pa.table({"k": pa.array(sorted(set(values)), type_)}))
    return f"(SELECT k FROM {name})"
