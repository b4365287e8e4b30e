"""The expression helpers the SQL-declared checks are written with: a finding struct (on its
unit), one finding when a row condition holds, one per candidate, sentence or supporting
fact meeting a context condition, one per translated unit meeting a unit condition, and the
shared sub-expressions."""

from __future__ import annotations

from ..io.units import kinds_sql
from ..languages import CODES
from ..sql.safe import literal
from .model import NONE

_LANGS = "[" + ", ".join(f"'{code}'" for code in CODES) + "]"


def _f(u: str, p: str = "NULL", s: str = "NULL", d: str = "''", c: str = "NULL",
       e: str = "NULL") -> str:
    """A finding on unit `u` (SQL)."""
    return (f"{{'u': {u}::VARCHAR, 'p': {p}::VARCHAR, 's': ({s})::INTEGER, 'd': {d}, "
            f"'c': {c}::VARCHAR, 'e': {e}::VARCHAR}}")


def when(cond: str, d: str = "''", c: str = "NULL", unit: str = "instance") -> str:
    """One finding on a row's `unit` (no paragraph) when `cond` holds."""
    return f"(CASE WHEN {cond} THEN [{_f(literal(unit), d=d, c=c)}] ELSE {NONE} END)"


def per_candidate(cond: str, d: str = "''", unit: str = "paragraph") -> str:
    """A finding per candidate `c` meeting `cond`, on its paragraph (or its `unit`)."""
    return (f"list_transform(list_filter(r.candidates, lambda c: {cond}), "
            f"lambda c: {_f(literal(unit), p='c.paragraph_id', d=d)})")


def per_sentence(cond: str, d: str = "''", c: str = "NULL", over: str = "sentences") -> str:
    """A finding per index `k` (0-based) of `c.<over>` meeting `cond`; in `cond`, `t` is the
    translated sentence and `src` the source sentence at k (NULL past the end)."""
    cond = cond.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    d = d.replace("{t}", "c.sentences[k + 1]").replace("{src}", "c.source_sentences[k + 1]")
    c = c.replace("{t}", "c.sentences[k + 1]")
    return (f"flatten(list_transform(r.candidates, lambda c: list_transform("
            f"list_filter(range(len(c.{over})), lambda k: {cond}), "
            f"lambda k: {_f(literal('sentence'), p='c.paragraph_id', s='k', d=d, c=c)})))")


def per_fact(cond: str, d: str = "''") -> str:
    """A finding per supporting fact `f` meeting `cond`, located at the fact."""
    return (f"list_transform(list_filter(r.supporting_facts, lambda f: {cond}), "
            f"lambda f: {_f(literal('fact'), p='f.paragraph_id', s='f.sentence_index', d=d)})")


def per_unit(cond: str, d: str = "''", c: str = "NULL", units: tuple[str, ...] = ()) -> str:
    """One finding on a translated unit `u` (a row of `units`) of the kinds `units` that
    meets `cond`."""
    return (f"(CASE WHEN u.unit IN {kinds_sql(units)} AND ({cond}) THEN "
            f"[{_f('u.unit', p='u.paragraph_id', s='u.sentence_index', d=d, c=c)}] "
            f"ELSE {NONE} END)")


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
