"""Read-side queries behind the workbench pages: findings summaries, one instance with its
evidence. Pure functions over a scan; no Streamlit. Each query runs
on its own cursor, so concurrent app sessions can share one cached scan."""

from __future__ import annotations

import pyarrow as pa

from ..checks import registry
from ..engine.scan import ScanResult
from ..languages import BY_CODE


def _scoped(result: ScanResult, rows: list[int] | None):
    """A cursor whose view `scoped_findings` holds the findings of `rows` (all findings,
    release-level ones included, when rows is None)."""
    con = result.cursor()
    if rows is None:
        con.execute("CREATE OR REPLACE TEMP VIEW scoped_findings AS SELECT * FROM findings")
    else:
        con.register("scope_rows", pa.table({"row": pa.array(rows, pa.int64())}))
        con.execute("""CREATE OR REPLACE TEMP VIEW scoped_findings AS
            SELECT * FROM findings SEMI JOIN scope_rows USING ("row")""")
    return con


def findings_by_check(result: ScanResult, rows: list[int] | None = None) -> pa.Table:
    """One row per check and severity in force (a check whose categories carry different
    severities appears once per severity, with those categories): the units its findings
    sit on, findings, rows and share of the scope's rows."""
    meta = pa.table({
        "check": [c.name for c in registry.REGISTRY],
        "description": [c.description for c in registry.REGISTRY]})
    con = _scoped(result, rows)
    con.register("check_meta", meta)
    total = result.release.rows if rows is None else max(len(rows), 1)
    return con.sql("""
        SELECT f."check", f.severity, any_value(f.origin) AS origin,
               array_to_string(list_sort(list(DISTINCT f.unit)), ', ') AS units,
               coalesce(array_to_string(list_sort(list(DISTINCT f.category)), ', '), '')
                 AS categories,
               count(*) AS findings, count(DISTINCT f."row") AS rows,
               round(100.0 * count(DISTINCT f."row") / ?, 2) AS share_pct,
               any_value(m.description) AS description
        FROM scoped_findings f JOIN check_meta m USING ("check")
        GROUP BY f."check", f.severity
        ORDER BY CASE f.severity WHEN 'blocking' THEN 0 WHEN 'review' THEN 1 ELSE 2 END,
                 findings DESC, f."check"
    """, params=[total]).to_arrow_table()


def status_counts(result: ScanResult, rows: list[int] | None = None) -> dict[str, int]:
    """Derived status → rows, over the scope."""
    con = result.cursor()
    if rows is None:
        pairs = con.sql("SELECT status, count(*) FROM status GROUP BY 1").fetchall()
    else:
        con.register("scope_rows", pa.table({"row": pa.array(rows, pa.int64())}))
        pairs = con.sql("""SELECT status, count(*) FROM status SEMI JOIN scope_rows
                           USING ("row") GROUP BY 1""").fetchall()
    return dict(pairs)


def examples(result: ScanResult, check: str, limit: int = 50,
             rows: list[int] | None = None) -> pa.Table:
    """The first findings of a check in the scope, with their location."""
    return _scoped(result, rows).sql("""
        SELECT "row", id, source_split, severity, unit, paragraph_id, sentence_index,
               detail, category, evidence
        FROM scoped_findings WHERE "check" = ? ORDER BY "row" NULLS LAST LIMIT ?
    """, params=[check, limit]).to_arrow_table()


def language_check_counts(result: ScanResult, rows: list[int] | None = None,
                          info: bool = True) -> pa.Table:
    """Findings per (unit language, check): an answer's language for an answer's finding, a
    paragraph's own language where the finding sits in a paragraph, the question language
    otherwise; a mapped release's finding carries its language. Without `info`, info-level
    findings are not counted (as the pages fold them)."""
    held = "TRUE" if info else "f.severity <> 'info'"
    if result.release.layout.has("aligned"):
        return _scoped(result, rows).sql(f"""
            SELECT language, "check", count(*) AS findings FROM scoped_findings f
            WHERE language IS NOT NULL AND {held} GROUP BY ALL ORDER BY ALL""").to_arrow_table()
    return _scoped(result, rows).sql(f"""
        SELECT CASE WHEN f.unit = 'answer' THEN r.answer_language
                    ELSE coalesce(c.language_code, r.question_language) END AS language,
               f."check",
               count(*) AS findings
        FROM scoped_findings f JOIN release r ON r.rid = f."row"
        LEFT JOIN candidates c ON c.rid = f."row" AND c.paragraph_id = f.paragraph_id
        WHERE {held}
        GROUP BY ALL ORDER BY language, f."check"
    """).to_arrow_table()


def copy_categories(result: ScanResult, rows: list[int] | None = None) -> pa.Table:
    """Exact source copies by category and unit, with the severity the policy gives."""
    return _scoped(result, rows).sql("""
        SELECT category, unit, any_value(severity) AS severity, count(*) AS findings
        FROM scoped_findings WHERE "check" = 'exact_source_copy' GROUP BY ALL ORDER BY ALL
    """).to_arrow_table()


def _aligned(sentences: list[str], source: list[str]) -> list[dict]:
    """Translated and English sentences side by side by index; a missing or surplus
    sentence is None on its side."""
    return [{"index": k,
             "text": sentences[k] if k < len(sentences) else None,
             "source": source[k] if k < len(source) else None}
            for k in range(max(len(sentences), len(source)))]


def instance(result: ScanResult, row: int) -> dict:
    """One release row with everything the Instance page shows."""
    con = result.cursor()
    records = con.sql("SELECT * FROM release WHERE rid = ?", params=[row]).to_arrow_table(
    ).to_pylist()
    if not records:
        raise KeyError(f"no release row {row}")
    record = records[0]
    # (a scan saved before `source_evidence` existed has no such column)
    findings = con.sql("""SELECT * EXCLUDE (id, source_split, "row") FROM findings
                          WHERE "row" = ?
                          ORDER BY paragraph_id NULLS FIRST, sentence_index NULLS FIRST,
                                   "check" """,
                       params=[row]).to_arrow_table().to_pylist()
    status = con.sql('SELECT status, flags FROM status WHERE "row" = ?', params=[row]
                     ).fetchall()[0]
    gold = {f["paragraph_id"] for f in record["supporting_facts"] if f["paragraph_id"]}
    support = {(f["paragraph_id"], f["sentence_index"]) for f in record["supporting_facts"]}
    candidates = []
    for cand in record["candidates"]:
        pid, code = cand["paragraph_id"], cand["language_code"]
        lines = _aligned(cand["sentences"], cand["source_sentences"])
        for line in lines:
            line["support"] = (pid, line["index"]) in support
            line["findings"] = [f for f in findings if f["paragraph_id"] == pid
                                and f["sentence_index"] == line["index"]]
        candidates.append({
            **{k: cand[k] for k in ("paragraph_id", "candidate_index", "title",
                                    "source_title", "language", "language_code")},
            "script": BY_CODE[code].script if code in BY_CODE else "unknown",
            "gold": pid in gold, "lines": lines,
            "findings": [f for f in findings if f["paragraph_id"] == pid
                         and f["sentence_index"] is None]})
    # Facts whose paragraph is not a candidate keep their own place in the evidence.
    placed = {(c["paragraph_id"], line["index"]) for c in candidates for line in c["lines"]}
    return {
        "row": row, "status": status[0], "flags": status[1],
        **{k: record[k] for k in ("id", "source_id", "source_split", "question", "answer",
                                  "question_language", "answer_language", "source_question",
                                  "source_answer", "question_type", "difficulty", "status")
           if k != "status"},
        "shipped_status": record["status"],
        "row_findings": [f for f in findings if f["paragraph_id"] is None],
        "unplaced_findings": [f for f in findings if f["paragraph_id"] is not None
                              and f["sentence_index"] is not None
                              and (f["paragraph_id"], f["sentence_index"]) not in placed],
        "supporting_facts": record["supporting_facts"],
        "candidates": candidates,
    }


def across_languages(result: ScanResult, row: int) -> dict:
    """A mapped release's item: the row's id in every language beside the source, per
    mapped column ({name, role}), each language's row with its status, values and the
    findings on it (a finding on a column sits in `findings[column]`, the rest under
    None). Rows missing from a language are shown as missing."""
    layout = result.release.layout
    columns = list(layout.values)
    values = ", ".join(f"{layout.column_sql(c.name)}" for c in columns)
    sources = ", ".join(f"{layout.column_sql(c.name, 's')}" for c in columns)
    with result.cursor() as con:
        (id_,) = con.execute("SELECT id FROM views WHERE rid = ?", [row]).fetchone()
        rows = con.execute(f"""
            SELECT v.rid, v.language, v.missing, v.extra, v.file, v.position, s.status,
                   [{values}], [{sources}]
            FROM views v JOIN status s ON s."row" = v.rid
            WHERE v.id IS NOT DISTINCT FROM ? ORDER BY v.rid""", [id_]).fetchall()
        found = con.execute("""
            SELECT "row", "check", severity, unit, detail, evidence FROM findings
            WHERE "row" IN (SELECT rid FROM views WHERE id IS NOT DISTINCT FROM ?)
            ORDER BY "row", "check" """, [id_]).fetchall()
    names = {c.name for c in columns}
    by_row: dict[int, dict] = {}
    for rid, check, severity, unit, detail, evidence in found:
        place = unit if unit in names else None
        by_row.setdefault(rid, {}).setdefault(place, []).append(
            {"check": check, "severity": severity, "unit": unit, "detail": detail,
             "evidence": evidence})
    source = next((r[8] for r in rows if r[8] is not None and any(v is not None
                                                                for v in r[8])), None)
    return {
        "id": id_, "source_language": layout.mapping.source_language,
        "columns": [{"name": c.name, "role": c.role} for c in columns],
        "source": dict(zip((c.name for c in columns), source or [None] * len(columns))),
        "rows": [{"row": rid, "language": language, "missing": missing, "extra": extra,
                  "file": file, "position": position, "status": status,
                  "values": dict(zip((c.name for c in columns), vals)),
                  "findings": by_row.get(rid, {})}
                 for rid, language, missing, extra, file, position, status, vals, _ in rows],
    }


def status_drivers(result: ScanResult, disagreeing: bool = False) -> pa.Table:
    """Which checks put how many rows into each status: a quarantined row's blocking
    checks, a review row's review checks (a row with two counts under both). With
    `disagreeing`, only the rows whose shipped status differs from the derived one."""
    shipped = "AND s.shipped_status IS NOT NULL AND s.shipped_status <> s.status" \
        if disagreeing else ""
    with result.cursor() as con:
        return con.sql(f"""
            SELECT s.status, f."check", count(DISTINCT s."row") AS rows
            FROM status s JOIN findings f ON f."row" = s."row"
            WHERE rank_status(severity_rank(f.severity)) = s.status
              AND s.status <> 'accepted' {shipped}
            GROUP BY s.status, f."check"
            ORDER BY s.status = 'review_required', rows DESC, f."check"
        """).to_arrow_table()


def splits_without_source(result: ScanResult) -> dict[str, int]:
    """The splits whose rows have no HotpotQA source attached though another split has one
    (split → rows): their source checks do not run there."""
    if "source" not in result.release.capabilities:
        return {}
    with result.cursor() as con:
        return dict(con.execute("""SELECT source_split, count(*) FROM release
            WHERE source_split NOT IN (SELECT DISTINCT source_split FROM sources)
            GROUP BY 1 ORDER BY 1""").fetchall())


def structural_status_counts(result: ScanResult) -> dict[str, int]:
    """Rows per status when only the release's own structural rules count (its reference
    checks, at the severity the policy gives them): the view the reference toolkit has."""
    with result.cursor() as con:
        return dict(con.execute("""SELECT structural_status, count(*) FROM browse_index
                                   GROUP BY 1""").fetchall())


def status_by_language(result: ScanResult) -> pa.Table:
    """Rows per status in each language of a mapped release, the language with the largest
    share of quarantined rows first (a pooled count never hides the language that fails)."""
    with result.cursor() as con:
        return con.sql("""
            SELECT language, count(*) AS rows,
                   count(*) FILTER (WHERE status = 'accepted') AS accepted,
                   count(*) FILTER (WHERE status = 'review_required') AS review_required,
                   count(*) FILTER (WHERE status = 'quarantined') AS quarantined,
                   round(100.0 * count(*) FILTER (WHERE status = 'quarantined') / count(*), 2)
                     AS quarantined_pct
            FROM status GROUP BY language
            ORDER BY quarantined_pct DESC, language""").to_arrow_table()


def release_findings(result: ScanResult) -> pa.Table:
    """The findings on the release as a whole (no row): a file's row count, a language the
    checks cannot read."""
    with result.cursor() as con:
        return con.sql("""SELECT "check", severity, language, detail FROM findings
                          WHERE "row" IS NULL ORDER BY severity, "check", language"""
                       ).to_arrow_table()
