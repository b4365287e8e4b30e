"""A mapped release: any machine-translated benchmark, described by a mapping file
(audit/io/mapping.py). Its files hold rows in the source language and in each translated
language; rows of one id (or, aligned by row, of one position in the source language's
file) are one item.

Reading turns every file into rows of one table `raw_release` (its language, file, position,
id and each mapped column's value as text). Opening yields:

    views   one row per (item, translated language): a row present in its language's file,
            or a source id with no row there (`missing`); its id, `language` (the code as the
            files give it), file, position and, per mapped column, its value (`v<i>`) beside
            the source language's (`s<i>`)
    units   each present row's text and answer columns (kind `text` or `answer`): the column's
            name is the unit's part (`paragraph_id` inside a scan), the name its findings carry

Every text check reads the units; the alignment checks (checks/aligned.py) read the views.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from ...languages import normalized
from ...sql.safe import identifier, literal
from .. import mapping as mappings
from ..mapping import Column, DataFile, Mapping
from ..units import Patch
from . import rewrite
from .base import Corrected, Layout, Opened, Progress, Remember

_STEP = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")
_MISSING = object()
PROBE_ID = "__probe_id__"     # a probe's id column (audit/repair/probe.py)


class Mapped(Layout):
    """The layout of one mapping file (an instance per mapping)."""

    name = "mapped"
    description = "a release described by a mapping file"
    remembers = False
    part_units = True
    copies_in_context = "mapped_answers_in_text"

    def __init__(self, mapping: Mapping) -> None:
        self.mapping = mapping
        caps = {"aligned"} | ({"row_order"} if mapping.align == "row" else set())
        self.capabilities = frozenset(caps)       # type: ignore[misc]
        self.values = tuple(c for c in mapping.columns if c.role != "id")

    def claims(self, path: Path, schema: pa.Schema | None) -> bool:
        return False       # never detected: a mapping names its layout

    # ------------------------------------------------------------------------ reading

    def read(self, con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
        files = mappings.files(self.mapping)
        tables = [self._table(f, i) for i, f in enumerate(files)]
        con.register("_mapped_rows", pa.concat_tables(tables))
        con.execute("CREATE TABLE raw_release AS SELECT * FROM _mapped_rows")
        con.unregister("_mapped_rows")

    def _table(self, data: DataFile, index: int) -> pa.Table:
        records = list(_records(self.mapping, data.path))
        mapping, columns = self.mapping, self.values
        id_column = mapping.id_column
        if not records:
            raise InputError(data.path, "the file holds no records",
                             where=f"mapping {mapping.path.name}",
                             expected="at least one record (or [input] records = ...)")
        # Each record holds every language ("{lang}" in its fields), or one.
        every = self._nested_languages(records[0][1]) if mappings.nested(mapping) else [None]
        found = {c.name: False for c in mapping.columns}
        langs, ids, positions = [], [], []
        values: list[list[str | None]] = [[] for _ in columns]
        for position, (where, record) in enumerate(records):
            for nested in every:
                if nested is not None:
                    lang: Any = nested
                elif data.language is not None:
                    lang = data.language
                else:
                    lang = _lookup(record, mapping.language_column or "")
                    if lang is _MISSING or not isinstance(lang, str):
                        raise InputError(data.path, f"no language in column "
                                         f"{mapping.language_column!r}", where=where,
                                         expected="a language code")
                langs.append(lang)
                positions.append(position)
                if id_column is not None and mapping.align == "id":
                    value = _lookup(record, id_column.field)
                    found[id_column.name] |= value is not _MISSING
                    ids.append(_text(value, data.path, where, id_column, scalar=True))
                else:
                    ids.append(str(position))
                for column, into in zip(columns, values):
                    value = _lookup(record, column.field.replace(mappings.LANG, lang))
                    found[column.name] |= value is not _MISSING
                    into.append(_text(value, data.path, where, column,
                                      scalar=column.role not in mappings.TEXT_ROLES))
        absent = [name for name, seen in found.items() if not seen
                  and (name != getattr(id_column, "name", None) or mapping.align == "id")]
        if absent:
            column = next(c for c in mapping.columns if c.name == absent[0])
            raise InputError(mapping.path, f"field {column.field!r} is in no record of "
                             f"{data.path}", where=f"[columns] {column.name}",
                             expected="a field every record has (README: Mapping a benchmark)")
        bad = sorted({lang for lang in langs if not mappings.LANG_CODE.match(lang)})
        if bad:
            mappings.language_code(mapping.path, "[input] language", bad[0])
        n = len(langs)
        table = {"lang": langs, "file": [data.path.name] * n, "file_index": [index] * n,
                 "position": positions, "id": ids}
        table.update({f"v{i}": v for i, v in enumerate(values)})
        return pa.table(table, schema=pa.schema(
            [("lang", pa.string()), ("file", pa.string()), ("file_index", pa.int32()),
             ("position", pa.int64()),
             ("id", pa.string())] + [(f"v{i}", pa.string()) for i in range(len(columns))]))

    def _nested_languages(self, first: tuple[Any, ...]) -> list[str]:
        """The languages a record holds: the mapping's, else the keys of the object that
        the first "{lang}" field's path leads to in the first record."""
        mapping = self.mapping
        if mapping.languages:
            return [mapping.source_language, *(c for c in mapping.languages
                                               if c != mapping.source_language)]
        column = next(c for c in mapping.columns if mappings.LANG in c.field)
        holder = _lookup(first, column.field.split(mappings.LANG)[0].rstrip("."))
        if not isinstance(holder, dict):
            raise InputError(mapping.path, f"the first record has no object of languages at "
                             f"{column.field!r}", where=f"[columns] {column.name}",
                             expected="an object keyed by language code, or [release] "
                                      "languages")
        return sorted(holder, key=lambda code: code != mapping.source_language)

    # ------------------------------------------------------------------------ opening

    def languages(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """The translated languages, in the order their files were given."""
        return [r[0] for r in con.execute(
            "SELECT lang FROM raw_release WHERE lang <> $s GROUP BY lang ORDER BY min(rowid)",
            {"s": self.mapping.source_language}).fetchall()]

    def open(self, con: duckdb.DuckDBPyConnection, cache_key: str | None
             ) -> Remember | None:
        mapping = self.mapping
        langs = self.languages(con)
        if mapping.languages:
            langs = [code for code in mapping.languages if code != mapping.source_language]
        order = ", ".join(f"({literal(code)}, {i}, {literal(normalized(code))})"
                          for i, code in enumerate(langs)) or "(NULL, 0, NULL)"
        n = len(self.values)
        values = "".join(f", t.v{i}, s.v{i} AS s{i}" for i in range(n))
        # Each translated row with its source row, and each source id a language lacks
        # (unless languages hold subsets: `partial`); item by item in the source's order,
        # each in language order (rows the source lacks last).
        con.execute(f"""
            CREATE TABLE mapped_languages AS
            SELECT * FROM (VALUES {order}) l(language, ord, unit_lang);
            CREATE TABLE mapped_source AS
            SELECT * EXCLUDE (k) FROM (
                SELECT *, row_number() OVER (PARTITION BY id ORDER BY file_index, position) AS k,
                       row_number() OVER (ORDER BY file_index, position) - 1 AS ordinal
                FROM raw_release WHERE lang = {literal(mapping.source_language)}
                  AND nullif(trim(id), '') IS NOT NULL) WHERE k = 1;
            CREATE TABLE raw_views AS
            SELECT (row_number() OVER (ORDER BY coalesce(source_position, 9e18), ord,
                                       position) - 1)::BIGINT AS rid, * EXCLUDE (ord)
            FROM (
              SELECT l.ord, t.id, l.language, l.unit_lang, t.file, t.file_index, t.position,
                     s.ordinal AS source_position, false AS missing,
                     s.position IS NULL AS extra {values}
              FROM raw_release t JOIN mapped_languages l ON l.language = t.lang
              LEFT JOIN mapped_source s ON s.id = t.id
              UNION ALL
              SELECT l.ord, s.id, l.language, l.unit_lang, NULL, NULL, NULL, s.ordinal, true,
                     false {values.replace('t.v', 'NULL AS v')}
              FROM mapped_source s CROSS JOIN mapped_languages l
              ANTI JOIN raw_release t ON t.lang = l.language AND t.id = s.id
              WHERE NOT {str(mapping.partial).lower()})""")
        con.execute("""
            CREATE VIEW views AS
            SELECT rid, NULL::INTEGER AS ctx, 'mapped' AS layout, id, id AS source_id,
                   NULL::VARCHAR AS source_split, NULL::VARCHAR AS status,
                   []::VARCHAR[] AS structural_flags, []::VARCHAR[] AS quality_flags,
                   NULL::VARCHAR AS shipped_hash, language, * EXCLUDE (rid, id, language)
            FROM raw_views""")
        units = [f"""SELECT rid, NULL::INTEGER AS ctx,
                            {literal('answer' if c.role == 'answer' else 'text')} AS unit,
                            {literal(c.name)} AS paragraph_id, NULL::INTEGER AS sentence_index,
                            NULL::INTEGER AS position, unit_lang AS lang, s{i} AS src,
                            v{i} AS tgt, {literal(c.name + ':')} || rid AS key
                     FROM raw_views WHERE NOT missing"""
                 for i, c in enumerate(self.values) if c.role in mappings.TEXT_ROLES]
        con.execute("CREATE VIEW units AS " + " UNION ALL ".join(units))
        # Answers that stand in their translated text: copied from the source, they are the
        # span an extractive answer must be.
        standing = [f"""SELECT rid, {literal(c.name)} AS part FROM raw_views
                        WHERE NOT missing AND NOT is_blank(coalesce(v{i}, ''))
                          AND contains(squeezed(v{self._index(c.within or "")}),
                                       squeezed(v{i}))"""
                    for i, c in enumerate(self.values) if c.role == "answer"]
        con.execute("CREATE TABLE mapped_answers_in_text AS " + (" UNION ALL ".join(standing)
                    or "SELECT NULL::BIGINT AS rid, NULL::VARCHAR AS part WHERE false"))
        return None

    def _index(self, name: str) -> int:
        return next(i for i, c in enumerate(self.values) if c.name == name)

    # ------------------------------------------------------------ corrected releases

    def write_rows(self, release: Opened, folder: Path, selection: pa.Table,
                   patches: list[Patch], contexts: pa.Table | None = None) -> Path:
        """A probe: the selected rows as a small mapped release of JSONL files (one id per
        selected row, `p<probe_rid>`, beside its source row; languages hold subsets), so
        its rows are numbered in selection order."""
        folder.mkdir(parents=True)
        columns = {c.name: i for i, c in enumerate(self.values)}
        by_rid: dict[int, dict[str, str]] = {}
        for patch in patches:
            by_rid.setdefault(patch.rid or 0, {})[patch.unit] = patch.text
        wanted = selection.to_pylist()
        with release.con.cursor() as con:
            con.register("probe_selection", selection)
            rows = con.sql(f"""SELECT language, [{', '.join(f'v{i}' for i in columns.values())}],
                                      [{', '.join(f's{i}' for i in columns.values())}]
                               FROM probe_selection p JOIN raw_views v USING (rid)
                               ORDER BY p.probe_rid""").fetchall()
        files: dict[str, list[dict[str, Any]]] = {self.mapping.source_language: []}
        for pick, (language, values, sources) in zip(wanted, rows):
            key = {PROBE_ID: f"p{pick['probe_rid']}"}
            record = dict(zip(columns, values))
            if pick["patched"]:
                record.update(by_rid.get(pick["rid"], {}))
            files[self.mapping.source_language].append({**key, **dict(zip(columns, sources))})
            files.setdefault(language, []).append({**key, **record})
        for language, records in files.items():
            (folder / f"probe.{language}.jsonl").write_text("".join(
                json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        raw = {"release": {"name": "probe", "source_language": self.mapping.source_language,
                           "scripts": self.mapping.scripts, "partial": True},
               "input": {"files": "probe.{lang}.jsonl", "format": "jsonl", "align": "id"},
               "columns": {PROBE_ID: "id", **{c.name: {"role": c.role, **(
                   {"in": c.within} if c.within else {})} for c in self.values}}}
        (folder / "probe.toml").write_text(mappings.dumps(raw), encoding="utf-8")
        return folder / "probe.toml"

    def write(self, release: Opened, staging: Path, names: list[str], corrected: Corrected,
              progress: Progress | None = None) -> None:
        """The mapping (its paths leading to the files beside it) and every file under
        its name in `names`: a file no patch reaches is copied, one it reaches rewritten in
        its own format (audit/io/layouts/rewrite.py)."""
        fields = {c.name: c.field for c in self.values}
        with release.con.cursor() as con:
            where = {rid: (index, position, language) for rid, index, position, language
                     in con.execute("SELECT rid, file_index, position, language FROM raw_views "
                                    "WHERE NOT missing").fetchall()}
        changes: dict[int, dict[int, dict[str, str]]] = {}
        for patch in corrected.patches:
            index, position, language = where[patch.rid or 0]
            # A record holding every language names the row's in its field path.
            field = fields[patch.unit].replace(mappings.LANG, language)
            changes.setdefault(index, {}).setdefault(position, {})[field] = patch.text
        paths = release.paths
        for i, (path, name) in enumerate(zip(paths, names)):
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if i == 0:
                target.write_text(self._moved(target.parent), encoding="utf-8")
            elif i - 1 in changes:
                rewrite.rewrite(self.mapping, path, target, changes[i - 1])
            else:
                shutil.copyfile(path, target)

    def _moved(self, folder: Path) -> str:
        """The mapping written into `folder`, its files and source named relative to it as
        the original's are relative to the original (the corrected release mirrors the
        tree the files and the mapping share)."""
        raw = json.loads(json.dumps(self.mapping.raw))
        here = self.mapping.folder.resolve()
        for key in ("files", "source"):
            if key in raw.get("input", {}):
                absolute = mappings.resolved(self.mapping, raw["input"][key])
                raw["input"][key] = os.path.relpath(absolute, here)
        return mappings.dumps(raw)

    def column_sql(self, name: str, side: str = "v") -> str:
        """The views column holding a mapped column's value (`side` v) or its source's (s)."""
        index = next(i for i, c in enumerate(self.values) if c.name == name)
        return identifier(f"{side}{index}")


# ------------------------------------------------------------------------------ records

def _records(mapping: Mapping, path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) of every record of one file, in order; a record is a dict, or for
    nested JSON a chain of dicts (the record, then its enclosing objects)."""
    fmt = mapping.format
    if fmt == "parquet":
        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})") from None
        for i, row in enumerate(rows):
            yield f"row {i}", (row,)
        return
    text = _decoded(path)
    if fmt == "txt":
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for i, line in enumerate(lines):
            yield f"line {i + 1}", ({"text": line.removesuffix("\r")},)
    elif fmt == "jsonl":
        # Split on line feeds only: a JSON string may hold U+2028 and its kin unescaped.
        for i, line in enumerate(text.split("\n")):
            line = line.removesuffix("\r")
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(path, f"not valid JSON ({error.msg})", where=f"line {i + 1}",
                                 expected="one JSON object per line") from None
            if not isinstance(record, dict):
                raise InputError(path, "not a JSON object", where=f"line {i + 1}",
                                 expected="one JSON object per line")
            yield f"line {i + 1}", (record,)
    elif fmt == "json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(path, f"not valid JSON ({error.msg})",
                             where=f"line {error.lineno}", expected="a JSON document") from None
        yield from _nested(mapping, path, document)
    else:
        yield from _delimited(mapping, path, text)


def _decoded(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise InputError(path, f"not UTF-8 (byte {error.start})", where=f"line {line}",
                         expected="UTF-8 text") from None


def _nested(mapping: Mapping, path: Path, document: Any) -> Iterator[tuple[str, Any]]:
    steps = (mapping.records or "[]").split(".") if mapping.records else []
    chains: list[tuple[str, tuple[Any, ...]]] = [("", (document,))]
    for step in steps:
        name, many = step.removesuffix("[]"), step.endswith("[]")
        nxt = []
        for where, chain in chains:
            value: Any = (chain[0].get(name, _MISSING) if isinstance(chain[0], dict)
                          else _MISSING)
            if value is _MISSING or (many and not isinstance(value, list)):
                raise InputError(mapping.path, f"{path.name}{where} has no "
                                 f"{'list' if many else 'field'} {name!r}",
                                 where="[input] records",
                                 expected=f"a path to the records, such as {mapping.records!r}")
            items: Any = enumerate(value) if many else [(None, value)]
            for i, item in items:
                here = f"{where}.{name}" + (f"[{i}]" if i is not None else "")
                nxt.append((here, (item, *chain)))
        chains = nxt
    if not steps:
        if not isinstance(document, list):
            raise InputError(mapping.path, f"{path.name} is not a list of records",
                             where="[input] records",
                             expected='a path to the records, such as "data[]"')
        chains = [(f"[{i}]", (item,)) for i, item in enumerate(document)]
    for where, chain in chains:
        if not isinstance(chain[0], dict):
            raise InputError(path, "a record is not a JSON object", where=where.lstrip("."),
                             expected="records that are objects")
        yield (where.lstrip(".") or "record"), chain


def _delimited(mapping: Mapping, path: Path, text: str) -> Iterator[tuple[str, Any]]:
    if mapping.format == "tsv":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t",
                            quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as error:
        raise InputError(path, f"not valid {mapping.format.upper()} ({error})",
                         where=f"line {reader.line_num}") from None
    names = list(mapping.names or [])
    first = 0
    if mapping.header:
        if not rows:
            raise InputError(path, "the file is empty", expected="a header line")
        names, first = rows[0], 1
    for column in mapping.columns:
        if column.field not in names:
            raise InputError(mapping.path, f"no column {column.field!r} in {path.name} (its "
                             f"columns: {', '.join(names[:12])})", where=f"[columns] {column.name}",
                             expected="a column of the file's header (or [input] columns)")
    for i, row in enumerate(rows[first:], start=first + 1):
        if not row:
            continue
        if len(row) != len(names):
            raise InputError(path, f"{len(row)} fields where the header has {len(names)}",
                             where=f"line {i}", expected=f"{len(names)} fields")
        yield f"line {i}", (dict(zip(names, row)),)


def _lookup(chain: tuple[Any, ...], field: str) -> Any:
    """A field path's value in a record, or in the nearest enclosing object that has its
    first name (XQuAD's question sees its paragraph's context); _MISSING where none has."""
    steps = _STEP.findall(field)
    first = steps[0][0]
    for record in chain:
        if isinstance(record, dict) and first in record:
            value: Any = record
            for name, indexes in steps:
                if not isinstance(value, dict) or name not in value:
                    return None
                value = value[name]
                for index in re.findall(r"\d+", indexes):
                    if not isinstance(value, list) or int(index) >= len(value):
                        return None
                    value = value[int(index)]
            return value
    return _MISSING


def _text(value: Any, path: Path, where: str, column: Column, scalar: bool) -> str | None:
    """A value as the text a unit or a comparison reads: a text column takes strings only,
    the others any scalar (written as JSON) or a list (compared as JSON)."""
    if value is None or value is _MISSING:
        return None
    if isinstance(value, str):
        return value
    if not scalar:
        raise InputError(path, f"field {column.field!r} holds {type(value).__name__} "
                         f"{json.dumps(value, ensure_ascii=False)[:60]}", where=where,
                         expected=f"text (column {column.name!r} has role {column.role})")
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
