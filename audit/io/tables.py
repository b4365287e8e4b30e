"""Write a table (a quarantine list, a report) as CSV, JSONL or Parquet: the one writer of
tables, whose CSV cells a spreadsheet shows and never evaluates."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from .files import staged_file

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


