"""The expression helpers the SQL-declared checks are written with: a finding struct, one
finding when a row condition holds, one per candidate, sentence or supporting fact meeting a
context condition, and the shared sub-expressions."""

from __future__ import annotations

from ..languages import CODES
from .model import NONE

_LANGS = "[" + ", ".join(f"'{code}'" for code in CODES) + "]"


def _f(p: str = "NULL", s: str = "NULL", d: str = "''", c: str = "NULL", e: str = "NULL") -> str:
    return (f"{{'p': {p}::VARCHAR, 's': ({s})::INTEGER, 'd': {d}, 'c': {c}::VARCHAR, "
            f"'e': {e}::VARCHAR}}")


def when(cond: str, d: str = "''", c: str = "NULL") -> str:
    """One finding, located at no unit, when `cond` holds."""
    return f"(CASE WHEN {cond} THEN [{_f(d=d, c=c)}] ELSE {NONE} END)"


def per_candidate(cond: str, d: str = "''") -> str:
    """A finding per candidate `c` meeting `cond`."""
    return (f"list_transform(list_filter(r.candidates, lambda c: {cond}), "
            f"lambda c: {_f(p='c.paragraph_id', d=d)})")


def per_sentence(cond: str, d: str = "''", c: str = "NULL", over: str = "sentences") -> str:
    """A finding per index `k` (0-based) of `c.<over>` meeting `cond`; in `cond`, `t` is the
    translated sentence and `src` the source sentence at k (NULL past the end)."""
    cond = cond.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    d = d.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    c = c.replace("{t}", "c.sentences[k + 1]")
    return (f"flatten(list_transform(r.candidates, lambda c: list_transform("
            f"list_filter(range(len(c.{over})), lambda k: {cond}), "
            f"lambda k: {_f(p='c.paragraph_id', s='k', d=d, c=c)})))")


def per_fact(cond: str, d: str = "''") -> str:
    """A finding per supporting fact `f` meeting `cond`, located at the fact."""
    return (f"list_transform(list_filter(r.supporting_facts, lambda f: {cond}), "
            f"lambda f: {_f(p='f.paragraph_id', s='f.sentence_index', d=d)})")


def concat(*parts: str) -> str:
    return "list_concat(" + ", ".join(parts) + ")"


# A candidate "has a source" when the release filled its source side (the reference leaves
# source_title "" and source_sentences [] when the source context had no valid entry).
HAS_SOURCE = "NOT (c.source_title = '' AND len(c.source_sentences) = 0)"
# Number of translated sentences of the candidate a fact points at; -1 when unresolved.
FACT_LEN = ("coalesce(list_max(list_transform(list_filter(r.candidates, "
            "lambda x: x.paragraph_id = f.paragraph_id), lambda x: len(x.sentences))), -1)")
FACT_SOURCE_LEN = ("coalesce(list_max(list_transform(list_filter(r.candidates, "
                   "lambda x: x.paragraph_id = f.paragraph_id AND NOT (x.source_title = '' "
                   "AND len(x.source_sentences) = 0)), lambda x: len(x.source_sentences))), -1)")
TITLE_MATCHES = "len(list_filter(r.candidates, lambda x: x.source_title = f.source_title))"
SOURCE_TITLE_MATCHES = "len(list_filter(s.ctx_titles, lambda t: t = f.source_title))"
PID = "'p' || lpad(CAST(k AS VARCHAR), 2, '0')"
