"""Language-mixing statistics over a descriptor table (SPEC §4; paper §3.3 and Table 11).

`mixing(descriptors)` returns plain pyarrow tables in a dict, so the CLI, JSON output and the
app render the same numbers:

rates         expected vs realised, per group ('all', each split, each question language):
              interface crossing I, composition crossing C, question-language absence
              (proportions with Wilson 95% intervals) and K_C (mean with a t 95% interval).
              Expected values are the closed forms under independent uniform assignment of
              L languages, evaluated for each item's own gold count g and candidate count m
              and averaged: P[I] = 1 − L^−g, P[C] = 1 − L^(1−g), P[ℓq absent] = (1 − 1/L)^m,
              E[K_C] = L(1 − (1 − 1/L)^m). I and C are over items with g ≥ 1.
distribution  Table 11: per language and split — questions, support (supporting-fact
              occurrences by their paragraph's language), docs (candidate occurrences).
counts        facet ∈ stratum / script_relation / family_relation / pair_relation /
              role_condition, per split and 'all' (NULL values appear as 'none').
matrix        ℓq × gold language: items whose gold set holds that language (G_ℓ, Eq 15: an
              item counts once per language), per split and 'all'.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from ..languages import BY_CODE, CODES
from ..sql.connection import connect

L_DEFAULT = len(CODES)
ALL = "all"
FACETS = ("stratum", "script_relation", "family_relation", "pair_relation", "role_condition")
MEASURES = ("I", "C", "question_language_absent", "K_C")


# ----------------------------------------------------------------- closed forms (SPEC §4)

def expected_interface(L: int, g: int) -> float:
    """P[I]: some gold paragraph's language differs from ℓq."""
    return 1.0 - float(L) ** -g


def expected_composition(L: int, g: int) -> float:
    """P[C]: the g gold paragraphs do not all share one language."""
    return 1.0 - float(L) ** (1 - g)


def expected_absence(L: int, m: int) -> float:
    """P[ℓq absent from all m candidates]."""
    return (1.0 - 1.0 / L) ** m


def expected_k_c(L: int, m: int) -> float:
    """E[K_C]: expected number of distinct languages among m candidates."""
    return L * (1.0 - (1.0 - 1.0 / L) ** m)


def wilson(count: np.ndarray | int, nobs: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score 95% interval (statsmodels)."""
    return proportion_confint(count, nobs, alpha=0.05, method="wilson")


def t_interval(mean: float, sd: float, n: int) -> tuple[float | None, float | None]:
    """Student-t 95% interval for a mean (scipy); None when n < 2."""
    if n < 2 or mean is None:
        return None, None
    if not sd:
        return mean, mean
    low, high = stats.t.interval(0.95, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return float(low), float(high)


# ---------------------------------------------------------------------------- tables

def _grouped(select: str, where: str = "") -> str:
    """The same aggregate for 'all', per split and per question language."""
    return f"""
        SELECT '{ALL}' AS "group", '{ALL}' AS value, {select} FROM d {where}
        UNION ALL
        SELECT 'split', source_split, {select} FROM d {where} GROUP BY source_split
        UNION ALL
        SELECT 'question_language', question_language, {select} FROM d {where}
        GROUP BY question_language"""


def _order(column: str) -> str:
    codes = ", ".join(f"'{c}'" for c in CODES)
    return f"coalesce(list_position([{codes}], {column}), 99), {column}"


def _rates(con: duckdb.DuckDBPyConnection, L: int) -> pa.Table:
    rows = con.sql(f"""
        SELECT * FROM ({_grouped(f'''
            count(*) FILTER (WHERE gold_count > 0) AS n_gold,
            count_if(interface_crossing) AS n_i,
            avg(1 - pow({L}, -gold_count)) FILTER (WHERE gold_count > 0) AS e_i,
            count_if(composition_crossing) AS n_c,
            avg(1 - pow({L}, 1 - gold_count)) FILTER (WHERE gold_count > 0) AS e_c,
            count(*) AS n_all,
            count_if(question_language_absent) AS n_abs,
            avg(pow(1 - 1 / {L}, candidate_count)) AS e_abs,
            avg(k_c) AS k_mean, stddev_samp(k_c) AS k_sd,
            avg({L} * (1 - pow(1 - 1 / {L}, candidate_count))) AS e_k''')})
        ORDER BY CASE "group" WHEN '{ALL}' THEN 0 WHEN 'split' THEN 1 ELSE 2 END,
                 {_order('value')}""").fetchall()
    out: dict[str, list] = {k: [] for k in ("group", "value", "measure", "n", "count",
                                            "realised", "ci_low", "ci_high", "expected")}

    def add(group, value, measure, n, count, realised, low, high, expected):
        for key, item in zip(out, (group, value, measure, n, count, realised, low, high,
                                   expected)):
            out[key].append(item)

    for (group, value, n_gold, n_i, e_i, n_c, e_c, n_all, n_abs, e_abs, k_mean, k_sd,
         e_k) in rows:
        for measure, count, n, expected in (("I", n_i, n_gold, e_i), ("C", n_c, n_gold, e_c),
                                            ("question_language_absent", n_abs, n_all,
                                             e_abs)):
            if n:
                low, high = wilson(count, n)
                add(group, value, measure, n, count, count / n, float(low), float(high),
                    expected)
            else:
                add(group, value, measure, 0, 0, None, None, None, None)
        low, high = t_interval(k_mean, k_sd, n_all)
        add(group, value, "K_C", n_all, None, k_mean, low, high, e_k)
    return pa.table(out, schema=pa.schema([
        ("group", pa.string()), ("value", pa.string()), ("measure", pa.string()),
        ("n", pa.int64()), ("count", pa.int64()), ("realised", pa.float64()),
        ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("expected", pa.float64())]))


def _distribution(con: duckdb.DuckDBPyConnection) -> pa.Table:
    names = ", ".join(f"('{c}', '{BY_CODE[c].name}')" for c in CODES)
    return con.sql(f"""
        WITH q AS (SELECT source_split AS split, question_language AS language,
                          count(*) AS questions FROM d GROUP BY ALL),
             s AS (SELECT split, language, count(*) AS support FROM (
                     SELECT source_split AS split, unnest(support_languages) AS language
                     FROM d) GROUP BY ALL),
             c AS (SELECT split, language, count(*) AS docs FROM (
                     SELECT source_split AS split, unnest(candidate_languages) AS language
                     FROM d) GROUP BY ALL),
             keys AS (SELECT split, n.code AS language
                      FROM (SELECT DISTINCT source_split AS split FROM d),
                           (VALUES {names}) n(code, name)
                      UNION SELECT split, language FROM q UNION SELECT split, language FROM s
                      UNION SELECT split, language FROM c)
        SELECT k.language, coalesce(n.name, k.language) AS language_name, k.split,
               coalesce(q.questions, 0) AS questions, coalesce(s.support, 0) AS support,
               coalesce(c.docs, 0) AS docs
        FROM keys k LEFT JOIN (VALUES {names}) n(code, name) ON n.code = k.language
        LEFT JOIN q USING (split, language) LEFT JOIN s USING (split, language)
        LEFT JOIN c USING (split, language)
        ORDER BY {_order('k.language')}, k.split""").to_arrow_table()


def _counts(con: duckdb.DuckDBPyConnection) -> pa.Table:
    parts = [f"""SELECT '{facet}' AS facet, coalesce({facet}, 'none') AS value,
                        coalesce(source_split, '{ALL}') AS split, count(*) AS n
                 FROM d GROUP BY GROUPING SETS ((coalesce({facet}, 'none')),
                                                (coalesce({facet}, 'none'), source_split))"""
             for facet in FACETS]
    facet_order = ", ".join(f"'{f}'" for f in FACETS)
    return con.sql(f"""SELECT * FROM ({' UNION ALL '.join(parts)})
                       ORDER BY list_position([{facet_order}], facet), value,
                                split = '{ALL}' DESC, split""").to_arrow_table()


def _matrix(con: duckdb.DuckDBPyConnection) -> pa.Table:
    return con.sql(f"""
        SELECT question_language, gold_language, coalesce(split, '{ALL}') AS split,
               count(*) AS n
        FROM (SELECT question_language, source_split AS split,
                     unnest(list_distinct(gold_languages)) AS gold_language FROM d)
        GROUP BY GROUPING SETS ((question_language, gold_language),
                                (question_language, gold_language, split))
        ORDER BY split = '{ALL}' DESC, split, {_order('question_language')},
                 {_order('gold_language')}""").to_arrow_table()


def mixing(descriptor_table: pa.Table, L: int = L_DEFAULT) -> dict[str, pa.Table]:
    """All mixing statistics of one descriptor table (see the module docstring)."""
    con = connect()
    con.register("d", descriptor_table)
    return {"rows": descriptor_table.num_rows, "L": L, "rates": _rates(con, L),
            "distribution": _distribution(con), "counts": _counts(con),
            "matrix": _matrix(con)}


# ------------------------------------------------------------------------ rendering

def to_json(result: dict) -> dict:
    """Tables as lists of records; NaN as None."""
    def clean(value):
        return None if isinstance(value, float) and math.isnan(value) else value
    return {key: ([{k: clean(v) for k, v in row.items()} for row in value.to_pylist()]
                  if isinstance(value, pa.Table) else value)
            for key, value in result.items()}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.3f}%"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_report(result: dict) -> str:
    lines = [f"Language mixing over {result['rows']:,} rows (L = {result['L']})", ""]
    lines.append("Expected vs realised (Wilson 95% for rates, t 95% for mean K_C)")
    lines.append(f"{'group':<22}{'measure':<26}{'n':>8}{'realised':>11}"
                 f"{'95% interval':>24}{'expected':>11}")
    rates = result["rates"].to_pylist()
    for r in rates:
        if r["group"] == "question_language":
            continue
        label = r["value"] if r["group"] == ALL else f"{r['group']}={r['value']}"
        fmt = _num if r["measure"] == "K_C" else _pct
        interval = ("—" if r["ci_low"] is None else
                    f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]")
        lines.append(f"{label:<22}{r['measure']:<26}{r['n']:>8,}{fmt(r['realised']):>11}"
                     f"{interval:>24}{fmt(r['expected']):>11}")
    lines += ["", "Per question language: realised (expected); intervals in --json"]
    lines.append(f"{'ℓq':<6}{'n':>7}{'I':>21}{'C':>21}{'ℓq absent':>21}{'K_C':>17}")
    per: dict[str, dict] = {}
    for r in rates:
        if r["group"] == "question_language":
            per.setdefault(r["value"], {"n": 0})[r["measure"]] = r
            per[r["value"]]["n"] = max(per[r["value"]]["n"], r["n"])
    for value, cells in per.items():
        text = f"{str(value):<6}{cells['n']:>7,}"
        for measure, width in (("I", 21), ("C", 21), ("question_language_absent", 21),
                               ("K_C", 17)):
            r = cells[measure]
            fmt = _num if measure == "K_C" else _pct
            text += f"{fmt(r['realised']) + ' (' + fmt(r['expected']) + ')':>{width}}"
        lines.append(text)
    lines += ["", "Language distribution (Table 11: questions / support occurrences / "
                  "candidate occurrences)"]
    dist = result["distribution"].to_pylist()
    splits = sorted({r["split"] for r in dist})
    header = f"{'language':<18}" + "".join(f"{s + ' Q':>13}{'S':>9}{'D':>10}" for s in splits)
    lines.append(header)
    by_language: dict[str, dict] = {}
    for r in dist:
        by_language.setdefault(r["language_name"], {})[r["split"]] = r
    totals = {s: [0, 0, 0] for s in splits}
    for name, per in by_language.items():
        cells = ""
        for s in splits:
            r = per.get(s, {"questions": 0, "support": 0, "docs": 0})
            totals[s] = [a + b for a, b in zip(totals[s], (r["questions"], r["support"],
                                                            r["docs"]))]
            cells += f"{r['questions']:>13,}{r['support']:>9,}{r['docs']:>10,}"
        lines.append(f"{name[:18]:<18}{cells}")
    lines.append(f"{'Total':<18}" + "".join(f"{t[0]:>13,}{t[1]:>9,}{t[2]:>10,}"
                                            for t in totals.values()))
    counts = result["counts"].to_pylist()
    all_splits = [ALL] + splits
    for facet in FACETS:
        lines += ["", f"{facet} counts", f"{'value':<26}" + "".join(f"{s:>12}"
                                                                   for s in all_splits)]
        values: dict[str, dict] = {}
        for r in counts:
            if r["facet"] == facet:
                values.setdefault(r["value"], {})[r["split"]] = r["n"]
        for value, per in values.items():
            lines.append(f"{value:<26}" + "".join(f"{per.get(s, 0):>12,}" for s in all_splits))
    lines += ["", "Question language × gold language (items with that gold language; "
                  "all splits)"]
    matrix = [r for r in result["matrix"].to_pylist() if r["split"] == ALL]
    columns = [c for c in CODES if any(r["gold_language"] == c for r in matrix)]
    columns += sorted({r["gold_language"] for r in matrix} - set(columns) - {None})
    rows = [c for c in CODES if any(r["question_language"] == c for r in matrix)]
    rows += sorted({r["question_language"] for r in matrix} - set(rows) - {None})
    cell = {(r["question_language"], r["gold_language"]): r["n"] for r in matrix}
    lines.append("ℓq\\gold" + "".join(f"{c:>6}" for c in columns))
    for q in rows:
        lines.append(f"{q:<7}" + "".join(f"{cell.get((q, c), 0):>6}" for c in columns))
    return "\n".join(lines) + "\n"
