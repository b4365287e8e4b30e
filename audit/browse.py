"""Faceted browsing over the language vector: a flat per-row index built once per scan,
filters that round-trip through a URL query string, facet counts and result pages.

Facet counts are disjunctive: each facet counts its values under every filter except its
own, so a selection can still be widened. Every query is a set-based scan of the index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields

import pyarrow as pa

from .descriptors import descriptors
from .scan import ScanResult

PAGE_SIZE = 50
# facet name → (index column, whether the column holds a list)
FACETS: dict[str, tuple[str, bool]] = {
    "split": ("source_split", False),
    "question_language": ("question_language", False),
    "gold_language": ("gold_languages", True),
    "distractor_language": ("distractor_languages", True),
    "stratum": ("stratum", False),
    "script_relation": ("script_relation", False),
    "role_condition": ("role_condition", False),
    "pair_relation": ("pair_relation", False),
    "question_type": ("question_type", False),
    "status": ("status", False),
    "check": ("checks", True),
}


@dataclass
class Filters:
    """A browse selection. Lists mean "any of"; gold_mode 'all' makes gold languages
    require every selected language."""

    split: list[str] = field(default_factory=list)
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
    check: list[str] = field(default_factory=list)
    k_c_min: int | None = None
    k_c_max: int | None = None

    @classmethod
    def from_query(cls, params: dict[str, str]) -> "Filters":
        """Parse `?question_language=fa,ur&k_c_min=3…`; unknown keys are ignored."""
        values: dict = {}
        for f in fields(cls):
            raw = params.get(f.name)
            if raw in (None, ""):
                continue
            if f.name in ("k_c_min", "k_c_max"):
                values[f.name] = int(raw) if str(raw).lstrip("-").isdigit() else None
            elif f.name == "gold_mode":
                values[f.name] = "all" if raw == "all" else "any"
            else:
                values[f.name] = [v for v in str(raw).split(",") if v]
        return cls(**values)

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
        for name, (column, is_list) in FACETS.items():
            chosen = getattr(self, name)
            if not chosen or name == skip:
                continue
            if is_list:
                test = ("list_has_all" if name == "gold_language" and self.gold_mode == "all"
                        else "list_has_any")
                terms.append(f"{test}({column}, ?::VARCHAR[])")
            else:
                terms.append(f"list_contains(?::VARCHAR[], {column})")
            params.append(chosen)
        if self.k_c_min is not None:
            terms.append("k_c >= ?")
            params.append(self.k_c_min)
        if self.k_c_max is not None:
            terms.append("k_c <= ?")
            params.append(self.k_c_max)
        return " AND ".join(terms), params


def build_index(result: ScanResult, table: pa.Table | None = None) -> None:
    """The flat per-row table browse queries read: descriptors, derived status, the checks
    that fired and the question text (so a result page never touches the nested rows)."""
    con = result.release.con
    con.register("descriptor_arrow", table if table is not None else descriptors(result.release))
    con.execute("CREATE OR REPLACE TABLE descriptors AS SELECT * FROM descriptor_arrow")
    con.unregister("descriptor_arrow")
    con.execute("""
        CREATE OR REPLACE TABLE browse_index AS
        SELECT d.rid, d.id, d.source_id, d.source_split, d.question_type,
               d.question_language, d.gold_languages, d.distractor_languages, d.stratum,
               d.script_relation, d.role_condition, d.pair_relation, d.k_c,
               s.status, s.flags, coalesce(f.checks, []::VARCHAR[]) AS checks,
               coalesce(f.findings, 0) AS findings, r.question
        FROM descriptors d
        JOIN status s ON s."row" = d.rid
        JOIN (SELECT rid, question FROM release) r ON r.rid = d.rid
        LEFT JOIN (SELECT "row", list_sort(list_distinct(list("check"))) AS checks,
                          count(*) AS findings FROM findings GROUP BY "row") f
          ON f."row" = d.rid
        ORDER BY d.rid
    """)


def descriptor_table(result: ScanResult) -> pa.Table:
    """The descriptors `build_index` stored for this scan."""
    return result.release.con.cursor().sql("SELECT * FROM descriptors ORDER BY rid"
                                           ).to_arrow_table()


@dataclass
class Page:
    total: int
    rows: pa.Table
    facets: dict[str, list[tuple[str, int]]]
    seconds: float


def facet_counts(result: ScanResult, filters: Filters) -> dict[str, list[tuple[str, int]]]:
    """For each facet, (value, rows) under every other filter, most frequent first."""
    cur = result.release.con.cursor()
    parts, params = [], []
    for name, (column, is_list) in FACETS.items():
        where, values = filters.where(skip=name)
        value = f"unnest({column})" if is_list else column
        parts.append(f"""SELECT '{name}' AS facet, CAST(v AS VARCHAR) AS value, count(*) AS n
            FROM (SELECT {"DISTINCT rid, " if is_list else ""}{value} AS v FROM browse_index
                  WHERE {where}) WHERE v IS NOT NULL GROUP BY v""")
        params += values
    counts: dict[str, list[tuple[str, int]]] = {name: [] for name in FACETS}
    for facet, value, n in cur.execute(" UNION ALL ".join(parts) + " ORDER BY facet, n DESC, "
                                       "value", params).fetchall():
        counts[facet].append((value, n))
    return counts


def search(result: ScanResult, filters: Filters, page: int = 0,
           page_size: int = PAGE_SIZE) -> Page:
    """Facet counts plus one page of matching rows (in release order)."""
    started = time.perf_counter()
    cur = result.release.con.cursor()
    where, params = filters.where()
    total = cur.execute(f"SELECT count(*) FROM browse_index WHERE {where}", params
                        ).fetchall()[0][0]
    rows = cur.sql(f"""
        SELECT rid AS "row", id, question, question_language, gold_languages, stratum,
               status, findings, checks
        FROM browse_index WHERE {where} ORDER BY rid LIMIT ? OFFSET ?""",
                   params=params + [page_size, page * page_size]).to_arrow_table()
    facets = facet_counts(result, filters)
    return Page(total, rows, facets, time.perf_counter() - started)


def matching_rows(result: ScanResult, filters: Filters) -> list[int]:
    """Every release row under the filter, in release order (export, previous/next)."""
    where, params = filters.where()
    cur = result.release.con.cursor()
    return [r for (r,) in cur.execute(f"SELECT rid FROM browse_index WHERE {where} "
                                      "ORDER BY rid", params).fetchall()]


def neighbours(result: ScanResult, filters: Filters, row: int) -> tuple[int | None, int | None]:
    """The previous and next matching rows around `row`."""
    where, params = filters.where()
    cur = result.release.con.cursor()
    before = cur.execute(f"SELECT max(rid) FROM browse_index WHERE {where} AND rid < ?",
                         params + [row]).fetchall()[0][0]
    after = cur.execute(f"SELECT min(rid) FROM browse_index WHERE {where} AND rid > ?",
                        params + [row]).fetchall()[0][0]
    return before, after
