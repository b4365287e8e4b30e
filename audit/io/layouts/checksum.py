"""The record checksums of SPEC §1 (sha256 of canonical JSON), reproduced from a release's
rows, by the rule of its layout (`Checksum`: the field, left out or blanked).

A row's canonical JSON is its fields in key order. Views of one source share their
candidates and supporting facts, so the JSON of those two values is built once per distinct
context in SQL, the JSON of each row's other fields (the segments between them) once per
row, and the pieces are fed to hashlib in order: no row's full text is ever assembled.
hashlib (OpenSSL, SHA extensions) hashes several times faster than DuckDB's sha256 and
releases the GIL on large pieces, so one thread hashes a batch while the next is read. (A
second hashing thread only added GIL hand-offs: XHotpotQA+ 13.6 -> 12.8 s CPU with one.)
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import duckdb
import pyarrow as pa

from ...sql import arrays
from ...sql.macros import create_table
from ...sql.safe import identifier, literal
from .base import Checksum
from .multihop import NESTED

# Views per batch handed to a thread. Three batches in flight hold ~0.3 GiB of texts at
# 553,584 views; 65,536 held 1.1 GiB, the peak of the whole scan. A smaller release is cut
# into at least BATCHES batches, so that reading one overlaps hashing another (23,760
# views: 0.50 s in batches of 4,096 against 0.64 s in two of 16,384).
CHUNK, MIN_CHUNK, BATCHES = 16_384, 2_048, 6
HASHERS = 2


def _chunk(rows: int) -> int:
    return max(MIN_CHUNK, min(CHUNK, rows // BATCHES))


def json_value_sql(expr: str, type_: pa.DataType) -> str:
    """SQL for a value whose to_json() text has its keys sorted at every depth."""
    if pa.types.is_struct(type_):
        fields = sorted(type_, key=lambda f: f.name)
        return "struct_pack(" + ", ".join(
            f"{identifier(f.name)} := {json_value_sql(f'{expr}.{identifier(f.name)}', f.type)}"
            for f in fields) + ")"
    if pa.types.is_list(type_) and pa.types.is_struct(type_.value_type):
        return f"list_transform({expr}, lambda x: {json_value_sql('x', type_.value_type)})"
    return expr


def python_escapes(column: str) -> str:
    """A to_json() text as Python's json.dumps would have written it: DuckDB escapes
    control characters with upper-case hex (\\u001B), Python with lower case; only texts
    holding such a character pay for the rewrite."""
    fixed = column
    for code in ("0B", "0E", "0F", "1A", "1B", "1C", "1D", "1E", "1F"):
        fixed = f"replace({fixed}, '\\u00{code}', '\\u00{code.lower()}')"
    return f"CASE WHEN regexp_matches({column}, '\\\\u00[01][A-F]') THEN {fixed} ELSE {column} END"


def _segments(schema: pa.Schema, rule: Checksum) -> list[str | list[pa.Field]]:
    """The canonical key order cut at the nested fields: [fields, 'candidates', fields,
    'supporting_facts', fields], empty runs dropped; the checksum field left out unless the
    rule blanks it."""
    out: list[str | list[pa.Field]] = []
    for column in sorted(schema, key=lambda f: f.name):
        if column.name == rule.field and not rule.blanked:
            continue
        if column.name in NESTED:
            out.append(column.name)
        elif out and isinstance(out[-1], list):
            out[-1].append(column)
        else:
            out.append([column])
    return out


def _segment_sql(fields: list[pa.Field], rule: Checksum) -> str:
    """The to_json() text of some scalar fields of view `v` (with its braces), a blanked
    checksum as ""."""
    return "to_json(struct_pack(" + ", ".join(
        f"{identifier(f.name)} := " + ("''" if f.name == rule.field else
                                       json_value_sql(f"v.{identifier(f.name)}", f.type))
        for f in fields) + "))"


Cursors = tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]
# ("row", SQL of a row's text) | ("context", nested column): what is fed to the hash, in order.
Piece = tuple[str, str]


def _pieces(segments: list[Any]) -> list[Piece]:
    """The canonical JSON as pieces in order: each nested value (the JSON of its context),
    and between them one text per row made in SQL: the braces and commas, the nested keys,
    and the row's fields (each segment's JSON stripped of its braces). A row then takes
    five hashlib calls, not one per field run and punctuation mark."""
    out: list[Piece] = []
    text: list[str] = []     # SQL parts of the row text being built
    for i, segment in enumerate(segments):
        text.append(literal("," if i else "{"))
        if isinstance(segment, str):
            text.append(literal(f'"{segment}":'))
            out += [("row", " || ".join(text)), ("context", segment)]
            text = []
        else:
            name = f"seg{i}"
            text.append(f"substr({python_escapes(name)}, 2, length({name}) - 2)")
    return out + [("row", " || ".join(text + [literal("}")]))]


def _hash_rows(columns: list[list[bytes]]) -> list[str]:
    """The SHA-256 of each row's pieces (`columns`: one list per piece, in order), joined
    first: one call per row, on more than hashlib's 2 KiB, releases the GIL for the whole
    row, where the small pieces' calls held it (23,760 views on two threads: 0.23 -> 0.18 s)."""
    sha256, join = hashlib.sha256, b"".join
    return [sha256(join(values)).hexdigest() for values in zip(*columns)]


def _utf8(column: pa.Array | pa.ChunkedArray) -> list[bytes]:
    """A string column's values as their UTF-8 bytes, read as binary: no value is decoded
    into a str and encoded back."""
    return arrays.values(column.cast(pa.binary()))


def mismatches(con: duckdb.DuckDBPyConnection, rule: Checksum) -> None:
    """Temp table hash_mismatches: (rid, shipped, computed) of every row whose shipped
    checksum does not reproduce."""
    create_table(con, "hash_mismatches", VERDICT, verdict(cursors(con), rule), temp=True)


def cursors(con: duckdb.DuckDBPyConnection) -> Cursors:
    """The two cursors `verdict` reads through (made by the connection's own thread)."""
    return con.cursor(), con.cursor()


def verdict(pair: Cursors, rule: Checksum,
            stop: threading.Event | None = None) -> dict[str, list[Any]]:
    """The columns of hash_mismatches, read through two cursors of the release's connection
    (and closing them), so it may run on a thread of its own. `stop` set: it ends after the
    batch in hand, rows unfinished."""
    try:
        return _hash_rows_of(pair[0], pair[1], rule, stop)
    finally:
        for cursor in pair:
            cursor.close()


def _hash_rows_of(reading: duckdb.DuckDBPyConnection, side: duckdb.DuckDBPyConnection,
                  rule: Checksum, stop: threading.Event | None) -> dict[str, list[Any]]:
    # `reading` streams the views; `side` fetches the contexts each batch needs meanwhile.
    schema = reading.sql("SELECT * EXCLUDE (rid) FROM raw_release LIMIT 0").to_arrow_table().schema
    segments = _segments(schema, rule)
    pieces = _pieces(segments)
    nested = {f.name: f.type for f in schema if f.name in NESTED}
    context_sql = f"""
        SELECT ctx, {", ".join(f"{python_escapes(f'to_json({json_value_sql(identifier(n), t)})')} "
                               f"AS {identifier(n)}" for n, t in nested.items())}
        FROM raw_contexts WHERE list_contains(?::INTEGER[], ctx)"""

    def contexts_of(batch: pa.RecordBatch) -> dict[str, dict[int, bytes]]:
        """The context JSON of the contexts one batch of views needs: no more is held at
        once (24 views of a source are neighbours, so a batch needs few)."""
        numbers = sorted(set(batch.column("ctx").to_pylist()))
        table = side.sql(context_sql, params=[numbers]).to_arrow_table()
        ids = table.column("ctx").to_pylist()
        return {name: dict(zip(ids, _utf8(table.column(name)))) for name in nested}

    row_segments = {f"seg{i}": seg for i, seg in enumerate(segments) if isinstance(seg, list)}
    texts = {f"piece{i}": sql for i, (kind, sql) in enumerate(pieces) if kind == "row"}
    reader = reading.sql(f"""
        SELECT rid, ctx, shipped, {", ".join(f"{sql} AS {name}" for name, sql in texts.items())}
        FROM (SELECT rid, ctx, {identifier(rule.field)} AS shipped, {", ".join(
            f"{_segment_sql(seg, rule)} AS {name}" for name, seg in row_segments.items())}
              FROM raw_views v)""").to_arrow_reader(
        _chunk(reading.sql("SELECT count(*) FROM raw_views").fetchall()[0][0]))
    found: dict[str, list[Any]] = {"rid": [], "shipped": [], "computed": []}

    def collect(batch: pa.RecordBatch, job: Future[list[str]]) -> None:
        for rid, ship, computed in zip(batch.column("rid").to_pylist(),
                                       batch.column("shipped").to_pylist(), job.result()):
            if ship != computed:
                found["rid"].append(rid)
                found["shipped"].append(ship)
                found["computed"].append(computed)

    def columns(batch: pa.RecordBatch) -> list[list[bytes]]:
        contexts, ctx = contexts_of(batch), batch.column("ctx").to_pylist()
        return [_utf8(batch.column(f"piece{i}")) if kind == "row" else
                [contexts[name][c] for c in ctx] for i, (kind, name) in enumerate(pieces)]

    # At most three batches in flight, so a release's row texts are never all held at once.
    with ThreadPoolExecutor(max_workers=HASHERS) as pool:
        pending: deque[tuple[pa.RecordBatch, Future[list[str]]]] = deque()
        for batch in reader:
            if stop is not None and stop.is_set():
                break
            pending.append((batch, pool.submit(_hash_rows, columns(batch))))
            if len(pending) > 2:
                collect(*pending.popleft())
        while pending:
            collect(*pending.popleft())
    return found


# Part of the verdict cache's key: change it when the canonical JSON rules change.
VERSION = "pieces-1"
VERDICT = pa.schema([("rid", pa.int64()), ("shipped", pa.string()), ("computed", pa.string())])
