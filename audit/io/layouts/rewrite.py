"""A mapped release's file written again with some of its records changed, in its own
format: every record no change reaches is the same bytes as before.

txt, jsonl, tsv and csv are rewritten line by line (a changed record is the only line
re-serialised: a JSONL record as JSON in the line's own style); a nested JSON file is written
again whole in the formatting `json.dumps` reproduces it with (found by trying the usual
ones; a file none reproduces is refused, not reformatted); a Parquet file keeps its schema,
its metadata and its compression, values of untouched rows unchanged.

A change is {field path: new text} for the record at a position (the record's place in its
file, as the mapped layout numbers them). In nested JSON a field found on an enclosing
object (XQuAD's context, on its paragraph) is changed there: every question of that
paragraph sees the new context.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from ..mapping import Mapping

Changes = dict[int, dict[str, str]]      # position → {field path: new text}
_STEP = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


def rewrite(mapping: Mapping, source: Path, target: Path, changes: Changes) -> None:
    """`source` with `changes` applied, written to `target` (a new file)."""
    fmt = mapping.format
    if fmt == "parquet":
        _parquet(source, target, changes)
        return
    raw = source.read_bytes()
    bom = raw.startswith(codecs.BOM_UTF8)
    text = raw[len(codecs.BOM_UTF8) if bom else 0:].decode("utf-8")
    if fmt == "txt":
        out = _lines(source, text, changes, _txt_line)
    elif fmt == "jsonl":
        out = _lines(source, text, changes, _jsonl_line, skip_blank=True)
    elif fmt == "tsv":
        out = _tsv(mapping, source, text, changes)
    elif fmt == "csv":
        out = _csv(mapping, source, text, changes)
    else:
        out = _json(mapping, source, text, changes)
    target.write_bytes((codecs.BOM_UTF8 if bom else b"") + out.encode("utf-8"))


def _one_line(path: Path, position: int, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise InputError(path, "a correction holds a line break", where=f"record {position}",
                         expected="one line: each line of this file is one record")
    return value


def _lines(path: Path, text: str, changes: Changes,
           edit: Callable[[Path, int, str, dict[str, str]], str], skip_blank: bool = False
           ) -> str:
    """Lines split on "\\n" (a "\\r" before it kept with its line); the changed records'
    lines replaced by `edit(path, position, line, fields)`."""
    lines = text.split("\n")
    position = -1
    for i, line in enumerate(lines):
        if i == len(lines) - 1 and line == "":
            break                       # the text ends with a line break
        body = line.removesuffix("\r")
        if skip_blank and not body.strip():
            continue
        position += 1
        if position in changes:
            lines[i] = edit(path, position, body, changes[position]) + line[len(body):]
    return "\n".join(lines)


def _txt_line(path: Path, position: int, body: str, fields: dict[str, str]) -> str:
    return _one_line(path, position, fields["text"])


def _jsonl_line(path: Path, position: int, body: str, fields: dict[str, str]) -> str:
    record = json.loads(body)
    for field, value in fields.items():
        _assign((record,), field, value)
    compact = '":' in body and '": ' not in body
    return json.dumps(record, ensure_ascii=body.isascii() and "\\u" in body,
                      separators=(",", ":") if compact else None)


def _tsv(mapping: Mapping, path: Path, text: str, changes: Changes) -> str:
    lines = text.split("\n")
    header = lines[0].removesuffix("\r").split("\t") if mapping.header else list(
        mapping.names or [])
    first = 1 if mapping.header else 0
    position = -1
    for i in range(first, len(lines)):
        body = lines[i].removesuffix("\r")
        if not body:
            continue
        position += 1
        if position in changes:
            cells = body.split("\t")
            for field, value in changes[position].items():
                if "\t" in value:
                    raise InputError(path, "a correction holds a tab", where=f"line {i + 1}",
                                     expected="a TSV cell without tabs")
                cells[header.index(field)] = _one_line(path, position, value)
            lines[i] = "\t".join(cells) + lines[i][len(body):]
    return "\n".join(lines)


def _csv(mapping: Mapping, path: Path, text: str, changes: Changes) -> str:
    physical = io.StringIO(text, newline="").readlines()
    reader = csv.reader(iter(physical))
    spans, start = [], 0
    for row in reader:
        spans.append((start, reader.line_num, row))
        start = reader.line_num
    header = spans[0][2] if mapping.header else list(mapping.names or [])
    records = [s for s in spans[1 if mapping.header else 0:] if s[2]]
    for position, fields in changes.items():
        begin, end, row = records[position]
        for field, value in fields.items():
            row[header.index(field)] = value
        ending = physical[end - 1][len(physical[end - 1].rstrip("\r\n")):] or "\n"
        out = io.StringIO()
        csv.writer(out, lineterminator=ending).writerow(row)
        physical[begin:end] = [out.getvalue()] + [""] * (end - begin - 1)
    return "".join(physical)


# JSON formattings tried, in order: (ensure_ascii, indent, separators).
_STYLES = [(ascii_, indent, seps) for ascii_ in (True, False) for indent in (2, 4, None, 1, "\t")
           for seps in (None, (",", ":"))]


def _json(mapping: Mapping, path: Path, text: str, changes: Changes) -> str:
    document = json.loads(text)
    style = next(((a, i, s, tail) for a, i, s in _STYLES for tail in ("\n", "")
                  if json.dumps(document, ensure_ascii=a, indent=i, separators=s) + tail == text),
                 None)
    if style is None:
        raise InputError(path, "cannot write this JSON file again byte for byte: json.dumps "
                         "reproduces none of its formatting", where=f"mapping {mapping.path}",
                         expected="a file written by json.dumps, or the records as JSONL")
    chains = _chains(mapping, document)
    for position, fields in changes.items():
        for field, value in fields.items():
            _assign(chains[position], field, value)
    ascii_, indent, seps, tail = style
    return json.dumps(document, ensure_ascii=ascii_, indent=indent, separators=seps) + tail


def _chains(mapping: Mapping, document: Any) -> list[tuple[Any, ...]]:
    """Each record with its enclosing objects, in the mapped layout's order."""
    chains: list[tuple[Any, ...]] = [(document,)]
    for step in (mapping.records or "").split(".") if mapping.records else []:
        name, many = step.removesuffix("[]"), step.endswith("[]")
        chains = [(item, *chain) for chain in chains
                  for item in (chain[0][name] if many else [chain[0][name]])]
    if not mapping.records:
        chains = [(item,) for item in document]
    return chains


def _assign(chain: tuple[Any, ...], field: str, value: str) -> None:
    """Set a field path in the nearest object of the chain holding its first name (as the
    layout reads it)."""
    steps = _STEP.findall(field)
    holder = next(r for r in chain if isinstance(r, dict) and steps[0][0] in r)
    container: Any = holder
    path = [(name, [int(i) for i in re.findall(r"\d+", indexes)]) for name, indexes in steps]
    keys: list[Any] = [key for name, indexes in path for key in (name, *indexes)]
    for key in keys[:-1]:
        container = container[key]
    container[keys[-1]] = value


def _parquet(source: Path, target: Path, changes: Changes) -> None:
    table = pq.read_table(source)
    meta = pq.read_metadata(source)
    columns: dict[str, dict[int, str]] = {}
    for position, fields in changes.items():
        for field, value in fields.items():
            if field not in table.column_names:
                raise InputError(source, f"cannot correct {field!r}: not a top-level column",
                                 expected="a correction of a column of the table")
            columns.setdefault(field, {})[position] = value
    for name, edits in columns.items():
        values = table.column(name).to_pylist()
        for position, value in edits.items():
            values[position] = value
        index = table.column_names.index(name)
        table = table.set_column(index, table.schema.field(index),
                                 pa.array(values, table.schema.field(index).type))
    codec = meta.row_group(0).column(0).compression if meta.num_row_groups else "ZSTD"
    rows = meta.row_group(0).num_rows if meta.num_row_groups else None
    pq.write_table(table, target, compression=codec.lower() if codec != "UNCOMPRESSED"
                   else "none", row_group_size=rows or None)
