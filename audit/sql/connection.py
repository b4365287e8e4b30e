"""Every DuckDB connection of the product is made here, so each has the same guards: no
Python replacement scans (with them on, a query naming a table the connection lacks
silently reads a Python object of that name from the caller's scope; tables come only from
`register` or SQL), and no progress bar on stderr."""

from __future__ import annotations

from pathlib import Path

import duckdb


def connect(memory_limit: str | None = None, spill: Path | None = None
            ) -> duckdb.DuckDBPyConnection:
    """An in-memory connection; `memory_limit` and a `spill` directory for one that holds a
    whole release. Replacement scans are off for its cursors too (a global option); the
    progress bar is a cursor's own option (`quiet`)."""
    con = duckdb.connect(config={"python_enable_replacements": False})
    quiet(con)
    if memory_limit is not None:
        con.execute("SET memory_limit = ?", [memory_limit])
    if spill is not None:
        spill.mkdir(parents=True, exist_ok=True)
        con.execute("SET temp_directory = ?", [str(spill)])
    return con


def quiet(cursor: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor that draws no progress bar on stderr (a long query would)."""
    cursor.execute("SET enable_progress_bar = false")
    return cursor
