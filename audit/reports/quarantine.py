"""The quarantine list: one row per blocked or review-required release row and reason."""

from __future__ import annotations

import pyarrow as pa

from ..sql.connection import connect
from ..sql.safe import strings


def quarantine(findings: pa.Table, status: pa.Table,
               statuses: tuple[str, ...] = ("quarantined", "review_required"),
               rows: list[int] | None = None) -> pa.Table:
    """One row per (release row, reason): id, split, status and each blocking/review finding
    with its location (the unit it sits on, its paragraph and sentence) and the row's
    language (a mapped release's rows are an item in one language); optionally only the
    given release rows (a filtered view)."""
    con = connect()
    con.register("findings", findings)
    con.register("status", status)
    con.register("wanted", pa.table({"row": pa.array(rows or [], pa.int64())}))
    wanted_statuses = strings(statuses)
    row_filter = 'AND s."row" IN (SELECT "row" FROM wanted)' if rows is not None else ""
    return con.sql(f"""
        SELECT s.id, s.source_split, s.status, f."check" AS reason, f.severity, f.origin,
               f.unit, f.paragraph_id, f.sentence_index, f.detail, s."row", s.language
        FROM status s JOIN findings f ON f."row" = s."row"
        WHERE list_contains({wanted_statuses}, s.status) AND f.severity <> 'info' {row_filter}
        ORDER BY s."row", f."check", f.paragraph_id NULLS FIRST, f.sentence_index NULLS FIRST
    """).to_arrow_table()
