"""Faceted browsing over the language vector: a flat per-row index built once per scan,
filters that round-trip through a URL query string, facet counts and result pages.

Facet counts are disjunctive: each facet counts its values under every filter except its
own, so a selection can still be widened. Every query is a set-based scan of the index;
set-valued facets (gold/distractor languages, checks) are bitmasks, so neither filtering nor
counting them unnests anything. A row's `check` is a check with a review or blocking finding
on it; a check with only info findings there is a `note` (info is folded away everywhere).
"""

from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

import duckdb
import pyarrow as pa

from ..checks import registry
from ..engine.scan import ScanResult
from ..language import descriptors
from ..language.descriptors import applies
from ..languages import CODES, UNKNOWN_CODE
from ..sql.safe import identifier, literal, strings

PAGE_SIZE = 50
LANGUAGE_VOCABULARY = (*CODES, UNKNOWN_CODE)
CHECK_VOCABULARY = tuple(check.name for check in registry.REGISTRY)
_WORD = 63   # values per BIGINT mask word (the sign bit stays clear)


@dataclass(frozen=True)
class ListFacet:
    """A set-valued facet whose vocabulary is the release's own (a mapped release names its
    units after its columns): a list column, matched with list_has_any and counted by
    unnesting the rows under the filter."""

    column: str

    def condition(self) -> str:
        return f"list_has_any({identifier(self.column)}, ?::VARCHAR[])"


@dataclass(frozen=True)
class SetFacet:
    """A set-valued facet stored as bitmask words: `column`_0, `column`_1, … each holding
    63 values of the vocabulary, so a vocabulary of any size (every check of a growing
    registry) stays filterable without unnesting."""

    column: str
    list_column: str
    vocabulary: tuple[str, ...]

    @property
    def words(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(f"{self.column}_{i}", self.vocabulary[start:start + _WORD])
                for i, start in enumerate(range(0, len(self.vocabulary), _WORD))]

    def build_sql(self) -> str:
        """The SELECT-list expressions that compute every word from the list column."""
        return ", ".join(f"{_mask_of(self.list_column, values)} AS {identifier(column)}"
                         for column, values in self.words)

    def condition(self, chosen: list[str], require_all: bool) -> str:
        if require_all and not set(chosen) <= set(self.vocabulary):
            return "FALSE"      # a value no row can hold is required
        terms = []
        for column, values in self.words:
            bits = sum(1 << values.index(v) for v in chosen if v in values)
            if bits:
                wanted = literal(bits) + "::BIGINT"
                terms.append(f"({identifier(column)} & {wanted}) = {wanted}" if require_all
                             else f"({identifier(column)} & {wanted}) <> 0")
        if not terms:
            return "FALSE"      # only values outside the vocabulary: nothing matches
        return "(" + (" AND " if require_all else " OR ").join(terms) + ")"


def _mask_of(list_column: str, values: tuple[str, ...]) -> str:
    """SQL turning a list of values into the bitmask of their positions in `values`."""
    return (f"coalesce(list_sum(list_transform(list_distinct({list_column}), lambda x: "
            f"coalesce((1::BIGINT) << (list_position({strings(values)}, x) - 1), 0)))::BIGINT,"
            " 0)")


# facet name → its index column, or a SetFacet for a set of values per row.
FACETS: dict[str, str | SetFacet | ListFacet] = {
    "split": "source_split",
    "language": "language",
    "question_language": "question_language",
    "gold_language": SetFacet("gold_mask", "d.gold_languages", LANGUAGE_VOCABULARY),
    "distractor_language": SetFacet("distractor_mask", "d.distractor_languages",
                                    LANGUAGE_VOCABULARY),
    "stratum": "stratum",
    "script_relation": "script_relation",
    "role_condition": "role_condition",
    "pair_relation": "pair_relation",
    "question_type": "question_type",
    "status": "status",
    "structural_status": "structural_status",
    "check": SetFacet("check_mask", "f.checks", CHECK_VOCABULARY),
    "note": SetFacet("note_mask", "f.notes", CHECK_VOCABULARY),
    "unit": ListFacet("units"),
}
# The facets of a release without a language vector (a mapped or parallel one).
PLAIN_FACETS = ("language", "unit", "check", "note", "status")


K_C_RANGE = (1, 24)     # distinct candidate languages a row can have (the Browse slider)


@dataclass
class Filters:
    """A browse selection. Lists mean "any of"; gold_mode 'all' makes gold languages
    require every selected language."""

    split: list[str] = field(default_factory=list)
    language: list[str] = field(default_factory=list)
    question_language: list[str] = field(default_factory=list)
    gold_language: list[str] = field(default_factory=list)
    gold_mode: str = "any"
    distractor_language: list[str] = field(default_factory=list)
    stratum: list[str] = field(default_factory=list)
    script_relation: list[str] = field(default_factory=list)
    role_condition: list[str] = field(default_factory=list)
    pair_relation: list[str] = field(default_factory=list)
    question_type: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    # the status the release's own structural rules (its reference checks) alone give
    structural_status: list[str] = field(default_factory=list)
    check: list[str] = field(default_factory=list)     # a review or blocking finding
    note: list[str] = field(default_factory=list)      # an info finding and no other
    unit: list[str] = field(default_factory=list)
    k_c_min: int | None = None
    k_c_max: int | None = None

    @classmethod
    def from_query(cls, params: dict[str, str]) -> "Filters":
        """Parse `?question_language=fa,ur&k_c_min=3…`; unknown keys are ignored."""
        return cls.parse(params)[0]

    @classmethod
    def parse(cls, params: dict[str, str]) -> tuple["Filters", list[tuple[str, str, str]]]:
        """The filters of a query and what was done with each value that could not be used
        as given: (key, raw value, what was done), e.g. ("k_c_min", "50", "is above 24;
        using 24"). K_C bounds are clamped to K_C_RANGE; a maximum below the minimum and
        any value that is not a whole number are dropped."""
        values: dict = {}
        notes: list[tuple[str, str, str]] = []
        low, high = K_C_RANGE
        for f in fields(cls):
            raw = params.get(f.name)
            if raw in (None, ""):
                continue
            raw = str(raw)
            if f.name in ("k_c_min", "k_c_max"):
                if not re.fullmatch(r"-?[0-9]{1,6}", raw.strip()):
                    notes.append((f.name, raw, "is not a whole number; not applied"))
                    continue
                value = min(max(int(raw), low), high)
                if value != int(raw):
                    notes.append((f.name, raw, f"is outside {low}–{high}; using {value}"))
                values[f.name] = value
            elif f.name == "gold_mode":
                values[f.name] = "all" if raw == "all" else "any"
                if raw not in ("all", "any"):
                    notes.append((f.name, raw, "is neither any nor all; using any"))
            else:
                values[f.name] = [v for v in raw.split(",") if v]
        if values.get("k_c_max", high) < values.get("k_c_min", low):
            notes.append(("k_c_max", params["k_c_max"],
                          f"is below k_c_min {values['k_c_min']}; not applied"))
            del values["k_c_max"]
        return cls(**values), notes

    def to_query(self) -> dict[str, str]:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "gold_mode":
                if value == "all" and self.gold_language:
                    out[f.name] = value
            elif isinstance(value, list):
                if value:
                    out[f.name] = ",".join(value)
            elif value is not None:
                out[f.name] = str(value)
        return out

    def where(self, skip: str | None = None) -> tuple[str, list]:
        """SQL condition and parameters for every filter except facet `skip`."""
        terms, params = ["TRUE"], []
        for name, facet in FACETS.items():
            chosen = getattr(self, name)
            if not chosen or name == skip:
                continue
            if isinstance(facet, SetFacet):
                terms.append(facet.condition(
                    chosen, require_all=name == "gold_language" and self.gold_mode == "all"))
            elif isinstance(facet, ListFacet):
                terms.append(facet.condition())
                params.append(chosen)
            else:
                terms.append(f"list_contains(?::VARCHAR[], {identifier(facet)})")
                params.append(chosen)
        if self.k_c_min is not None:
            terms.append("k_c >= ?")
            params.append(self.k_c_min)
        if self.k_c_max is not None:
            terms.append("k_c <= ?")
            params.append(self.k_c_max)
        return " AND ".join(terms), params


FILTER_KEYS = frozenset(f.name for f in fields(Filters))   # the URL query keys


def build_index(result: ScanResult, table: pa.Table | None = None) -> None:
    """The flat per-row table browse queries read: descriptors, derived status, the checks
    that fired, the units they sit on and the question text (so a result page never
    touches the nested rows). A release without a language vector (mapped, parallel) gets
    its rows' language in its place and its first text as the question."""
    con = result.cursor()
    release = result.release
    if has_vector(result):
        descriptors.into_table(release, table)
        texts = "SELECT rid, question FROM views"
    else:
        language = "language" if release.layout.has("aligned") else "NULL::VARCHAR"
        con.execute(f"""CREATE OR REPLACE TABLE main.descriptors AS
            SELECT rid, id, source_id, source_split, NULL::VARCHAR AS question_type,
                   {language} AS question_language, []::VARCHAR[] AS gold_languages,
                   []::VARCHAR[] AS distractor_languages, NULL::VARCHAR AS stratum,
                   NULL::VARCHAR AS script_relation, NULL::VARCHAR AS role_condition,
                   NULL::VARCHAR AS pair_relation, NULL::INTEGER AS k_c
            FROM views""")
        # A row's first text in the mapping's column order (the units' order).
        texts = """SELECT rid, first(tgt) AS question FROM units
                   WHERE rid IS NOT NULL GROUP BY rid"""
    # Per scan, as its findings and status: it holds the scan's status and checks.
    index = result.tables["findings"].replace("findings", "browse_index")
    con.execute(f"""
        CREATE OR REPLACE TABLE main.{identifier(index)} AS
        SELECT d.rid, d.id, d.source_id, d.source_split, d.question_type,
               d.question_language, d.question_language AS language, d.gold_languages, d.distractor_languages, d.stratum,
               d.script_relation, d.role_condition, d.pair_relation, d.k_c,
               s.status, coalesce(f.structural_status, 'accepted') AS structural_status,
               s.flags, coalesce(f.checks, []::VARCHAR[]) AS checks,
               coalesce(f.blocking, []::VARCHAR[]) AS blocking,
               coalesce(f.notes, []::VARCHAR[]) AS notes,
               coalesce(f.findings, 0) AS findings,
               coalesce(f.units, []::VARCHAR[]) AS units, r.question,
               {", ".join(f.build_sql() for f in FACETS.values() if isinstance(f, SetFacet))}
        FROM descriptors d
        JOIN status s ON s."row" = d.rid
        LEFT JOIN ({texts}) r ON r.rid = d.rid
        LEFT JOIN ({_ROW_CHECKS.format(reference=strings(REFERENCE_CHECKS))}) f
          ON f."row" = d.rid
    """)
    con.close()
    # One assignment: a reader in another session sees the old mapping or the new one.
    result.tables = {**result.tables, "browse_index": index}


# The release's own structural rules: the checks the reference toolkit derives its status from.
REFERENCE_CHECKS = tuple(check.name for check in registry.REGISTRY if check.reference)
# A row's checks by the worst severity each has on it: `checks` the review and blocking
# ones (the reasons a row is held; blocking first), `blocking` those that block, `notes`
# the checks with only info findings there, folded away as every page folds them.
_ROW_CHECKS = """
SELECT "row", list_concat(blocking, list_filter(held, lambda c: NOT list_contains(blocking, c)))
              AS checks,
       blocking, list_filter(noted, lambda c: NOT list_contains(held, c)) AS notes, units,
       findings, rank_status(structural) AS structural_status
FROM (SELECT "row",
             max(severity_rank(severity)) FILTER (list_contains({reference}, "check"))
                 AS structural,
             list_sort(coalesce(list(DISTINCT "check") FILTER (severity <> 'info'), []))
                 AS held,
             list_sort(coalesce(list(DISTINCT "check") FILTER (severity = 'blocking'), []))
                 AS blocking,
             list_sort(coalesce(list(DISTINCT "check") FILTER (severity = 'info'), []))
                 AS noted,
             list_sort(list_distinct(list(unit))) AS units, count(*) AS findings
      FROM findings GROUP BY "row")
"""


def check_kinds(result: ScanResult) -> dict[str, str]:
    """Each check that fired → its worst severity in this scan (blocking, review, info)."""
    with result.cursor() as cur:
        return dict(cur.execute("""
            SELECT "check", arg_max(severity, severity_rank(severity))
            FROM findings GROUP BY 1""").fetchall())


def has_vector(result: ScanResult) -> bool:
    """Whether the release has XHotpotQA's language vector (audit/language/descriptors.py):
    the facets and pages built on it apply."""
    return applies(result.release)


def descriptor_table(result: ScanResult) -> pa.Table:
    """The descriptors `build_index` stored for this scan."""
    with result.cursor() as cursor:
        return cursor.sql("SELECT * FROM descriptors ORDER BY rid").to_arrow_table()


@dataclass
class Page:
    total: int
    rows: pa.Table
    facets: dict[str, list[tuple[str, int]]]
    seconds: float


class QueryTimeout(Exception):
    """A browse query ran past its time limit and was interrupted."""


@contextmanager
def time_limit(cur, seconds: float):
    """Interrupt the cursor's running query after `seconds` instead of freezing a page."""
    timer = threading.Timer(seconds, cur.interrupt)
    timer.start()
    try:
        yield
    except duckdb.InterruptException:
        raise QueryTimeout(f"the query ran longer than {seconds:g} s and was stopped; "
                           "narrow the filter") from None
    finally:
        timer.cancel()


def facet_counts(result: ScanResult, filters: Filters, cur=None, limit_seconds: float = 10.0
                 ) -> dict[str, list[tuple[str, int]]]:
    """For each facet, (value, rows) under every other filter, most frequent first. One
    statement for every facet: a page's counts cost one round trip, not one per facet
    (under concurrent sessions each query waits its turn for the engine's threads)."""
    cur = cur or result.cursor()
    parts, params, decode = [], [], []
    for name, facet in FACETS.items():
        where, values = filters.where(skip=name)
        if isinstance(facet, ListFacet):
            parts.append(f"""SELECT {len(decode)} AS part, k, count(*) AS n FROM (
                SELECT unnest({identifier(facet.column)}) AS k FROM browse_index
                WHERE {where}) GROUP BY 2""")
            params += values
            decode.append((name, None))
            continue
        if isinstance(facet, str):
            column = identifier(facet)
            parts.append(f"SELECT {len(decode)} AS part, CAST({column} AS VARCHAR) AS k, "
                         f"count(*) AS n FROM browse_index WHERE {where} AND {column} IS NOT "
                         "NULL GROUP BY 2")
            params += values
            decode.append((name, None))
            continue
        # Rows share few distinct masks: count per mask, then spread each count over its bits.
        for column, vocabulary in facet.words:
            parts.append(f"""SELECT {len(decode)} AS part, CAST(bit AS VARCHAR) AS k,
                sum(n)::BIGINT AS n FROM (
                    SELECT {identifier(column)} AS mask, count(*) AS n FROM browse_index
                    WHERE {where} GROUP BY 1) JOIN range({len(vocabulary)}) r(bit)
                    ON (mask >> bit) & 1 = 1
                GROUP BY bit""")
            params += values
            decode.append((name, vocabulary))
    with time_limit(cur, limit_seconds):
        found = cur.execute(" UNION ALL ".join(parts), params).fetchall()
    counts: dict[str, list[tuple[str, int]]] = {name: [] for name in FACETS}
    for part, key, n in found:
        name, vocabulary = decode[part]
        counts[name].append((key if vocabulary is None else vocabulary[int(key)], n))
    return {name: sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
            for name, pairs in counts.items()}


def search(result: ScanResult, filters: Filters, page: int = 0,
           page_size: int = PAGE_SIZE, limit_seconds: float = 10.0) -> Page:
    """Facet counts plus one page of matching rows (in release order); raises QueryTimeout
    past `limit_seconds`."""
    started = time.perf_counter()
    cur = result.cursor()
    where, params = filters.where()
    with time_limit(cur, limit_seconds):
        total = cur.execute(f"SELECT count(*) FROM browse_index WHERE {where}", params
                            ).fetchall()[0][0]
        rows = cur.sql(f"""
            SELECT rid AS "row", id, question, question_language, gold_languages, stratum,
                   status, findings, checks, blocking, notes, language, units
            FROM browse_index WHERE {where} ORDER BY rid LIMIT ? OFFSET ?""",
                       params=params + [page_size, page * page_size]).to_arrow_table()
    facets = facet_counts(result, filters, cur, limit_seconds)
    return Page(total, rows, facets, time.perf_counter() - started)


def count(result: ScanResult, filters: Filters) -> int:
    """Rows under the filter."""
    where, params = filters.where()
    return result.cursor().execute(
        f"SELECT count(*) FROM browse_index WHERE {where}", params).fetchall()[0][0]


def matching_rows(result: ScanResult, filters: Filters) -> list[int]:
    """Every release row under the filter, in release order (export, previous/next)."""
    where, params = filters.where()
    cur = result.cursor()
    return [r for (r,) in cur.execute(f"SELECT rid FROM browse_index WHERE {where} "
                                      "ORDER BY rid", params).fetchall()]


def neighbours(result: ScanResult, filters: Filters, row: int) -> tuple[int | None, int | None]:
    """The previous and next matching rows around `row`."""
    where, params = filters.where()
    cur = result.cursor()
    before = cur.execute(f"SELECT max(rid) FROM browse_index WHERE {where} AND rid < ?",
                         params + [row]).fetchall()[0][0]
    after = cur.execute(f"SELECT min(rid) FROM browse_index WHERE {where} AND rid > ?",
                        params + [row]).fetchall()[0][0]
    return before, after
