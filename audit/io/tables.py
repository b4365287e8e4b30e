"""Tables in and out: a whole Parquet file read as Arrow, a cache entry DuckDB can read, the
objects of a JSON-lines file, and the one writer of tables (a quarantine list, a report) as CSV, JSONL or Parquet, whose CSV
cells a spreadsheet shows and never evaluates."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from .atomic import staged_file

if TYPE_CHECKING:
    import duckdb

QUARANTINE_FORMATS = ("csv", "jsonl", "parquet")
# A spreadsheet evaluates a cell whose first character, after any blanks it skips and under
# compatibility folding (full-width ＝), is one of these, or that starts with tab or CR: such
# CSV cells get a leading apostrophe.
_FORMULA_START = frozenset("=+-@")


def neutralise(value: object) -> object:
    """A CSV cell a spreadsheet will show, never evaluate."""
    if not isinstance(value, str):
        return value
    first = value.lstrip()[:1]
    if value[:1] in ("\t", "\r") or unicodedata.normalize("NFKC", first)[:1] in _FORMULA_START:
        return "'" + value
    return value


def _cell(value: object) -> object:
    if isinstance(value, (list, dict)):
        value = json.dumps(value, ensure_ascii=False)
    return neutralise(value)


def serialize(table: pa.Table, fmt: str, stream: BinaryIO) -> None:
    """Write a table as CSV (list cells as JSON, formula cells neutralised), JSONL or
    Parquet. The one CSV writer: every CSV the tool produces goes through it."""
    if fmt == "parquet":
        pq.write_table(table, stream)
        return
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
    if fmt == "jsonl":
        for row in table.to_pylist():
            text.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    else:
        writer = csv.writer(text)
        writer.writerow([neutralise(name) for name in table.column_names])
        for row in table.to_pylist():
            writer.writerow([_cell(row[name]) for name in table.column_names])
    text.flush()
    text.detach()


def to_bytes(table: pa.Table, fmt: str) -> bytes:
    buffer = io.BytesIO()
    serialize(table, fmt, buffer)
    return buffer.getvalue()


def write_table(table: pa.Table, out: Path, fmt: str) -> Path:
    """Write a table (a quarantine list, a report) atomically in one of the formats."""
    if fmt not in QUARANTINE_FORMATS:
        raise InputError(out, f"unknown format '{fmt}'", expected=" / ".join(QUARANTINE_FORMATS))
    with staged_file(Path(out)) as staging, staging.open("wb") as stream:
        serialize(table, fmt, stream)
    return Path(out)


def read_parquet(path: Path, schema: pa.Schema | None = None) -> pa.Table:
    """A whole Parquet file as an Arrow table, without pyarrow.dataset (whose import pulls
    in pandas: 0.2 s of every CLI start)."""
    table = pq.ParquetFile(path).read()
    return table.cast(schema) if schema is not None else table


def cached_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether a cache entry `path` is a Parquet file DuckDB reads (its metadata); one it
    cannot read is deleted, so the caller computes it again."""
    import duckdb

    from ..sql.safe import literal
    if not path.is_file():
        return False
    try:
        con.sql(f"SELECT count(*) FROM read_parquet({literal(str(path))})").fetchall()
        return True
    except duckdb.Error:
        path.unlink(missing_ok=True)
        return False


def iter_jsonl_objects(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`line N`, object) for each non-blank line; bad UTF-8, bad JSON or a non-object line
    is an InputError naming the line."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            where = f"line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(path, f"invalid UTF-8 at byte {error.start}", where=where,
                                 expected="UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(path, f"invalid JSON ({error.msg}, column {error.colno})",
                                 where=where, expected="one JSON object per line") from None
            if not isinstance(obj, dict):
                raise InputError(path, f"a JSON {type(obj).__name__}", where=where,
                                 expected="a JSON object")
            yield where, obj
