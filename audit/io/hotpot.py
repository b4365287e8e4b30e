"""The HotpotQA source (SPEC §1.4): parsed once per content and attached to a release as
table `sources`."""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..paths import split_of
from ..settings import cache_dir
from ..sql import arrays, macros
from ..sql.safe import literal
from .atomic import staged_file
from .digests import file_sha256
from .model import Release
from .tables import cached_parquet

_SOURCE_SCHEMA = pa.schema([
    ("source_id", pa.string()), ("source_split", pa.string()), ("source_position", pa.int32()),
    ("question", pa.string()), ("answer", pa.string()), ("type", pa.string()),
    ("level", pa.string()), ("context_is_list", pa.bool_()), ("context_len", pa.int32()),
    ("ctx_valid", pa.list_(pa.bool_())), ("ctx_titles", pa.list_(pa.string())),
    ("ctx_sentences", pa.list_(pa.list_(pa.string()))),
    ("facts", pa.list_(pa.struct([("title", pa.string()), ("sentence_index", pa.int64()),
                                  ("valid", pa.bool_())]))),
    ("file", pa.string()),
])


def _source_entry(entry: Any) -> tuple[bool, str | None, list[str] | None]:
    ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
          and isinstance(entry[1], list) and all(isinstance(s, str) for s in entry[1]))
    # The reference joins support titles against [str, anything] pairs, valid or not.
    title = (entry[0] if isinstance(entry, list) and len(entry) == 2
             and isinstance(entry[0], str) else None)
    return ok, title, list(entry[1]) if ok else None


def _source_fact(fact: Any) -> dict[str, Any]:
    ok = (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
          and isinstance(fact[1], int) and not isinstance(fact[1], bool) and fact[1] >= 0)
    return {"title": fact[0] if ok else None, "sentence_index": fact[1] if ok else None,
            "valid": ok}


@contextmanager
def _no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: a parse allocates millions of containers that
    all stay alive, and the collections they trigger only traverse them (a third of the
    parse of a 140 MB source). Nothing parsed forms a cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_source(path: Path) -> pa.Table:
    """One HotpotQA JSON list as source rows (split and file left empty)."""
    with _no_collection():
        return _parse_records(path)


def _parse_records(path: Path) -> pa.Table:
    try:
        records = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(path, f"invalid UTF-8 at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"invalid JSON ({error.msg})", where=f"line {error.lineno}",
                         expected="a JSON list of HotpotQA records") from None
    if not isinstance(records, list):
        raise InputError(path, f"top level is a JSON {type(records).__name__}",
                         expected="a JSON list of HotpotQA records")
    rows = []
    for position, rec in enumerate(records):
        if not isinstance(rec, dict) or not isinstance(rec.get("_id", rec.get("id")), str):
            raise InputError(path, "record has no string '_id'", where=f"record {position}",
                             expected="{_id, question, answer, type, level, supporting_facts, "
                                      "context}")
        context = rec.get("context")
        entries = [_source_entry(e) for e in context] if isinstance(context, list) else []
        facts = rec.get("supporting_facts")
        rows.append({
            "source_id": rec.get("_id", rec.get("id")), "source_split": None,
            "source_position": position, "question": rec.get("question"),
            "answer": rec.get("answer"), "type": rec.get("type"), "level": rec.get("level"),
            "context_is_list": isinstance(context, list), "context_len": len(entries),
            "ctx_valid": [e[0] for e in entries], "ctx_titles": [e[1] for e in entries],
            "ctx_sentences": [e[2] for e in entries],
            "facts": [_source_fact(f) for f in facts] if isinstance(facts, list) else [],
            "file": None,
        })
    try:   # from buffers: Table.from_pylist imports pandas (0.15 s of a cold scan)
        return pa.Table.from_arrays([arrays.nested([r[f.name] for r in rows], f.type)
                                     for f in _SOURCE_SCHEMA], schema=_SOURCE_SCHEMA)
    except (AttributeError, TypeError, ValueError):   # a value of another type: Arrow's say
        return pa.Table.from_pylist(rows, schema=_SOURCE_SCHEMA)


# Part of the parsed-source cache's key: change it when _parse_source changes.
SOURCE_PARSING = "hotpot-source-1"


def _cached_source(con: duckdb.DuckDBPyConnection, path: Path, digest: str) -> Path:
    """`_parse_source`, remembered per content (a 150 MB source is parsed once): the parsed
    source's Parquet file. The warm path reads it in DuckDB only; no Python value becomes an
    Arrow array (the first such conversion imports pandas, 0.15 s)."""
    key = hashlib.sha256(f"{SOURCE_PARSING}\n{digest}".encode("ascii")).hexdigest()
    cached = cache_dir("sources") / f"{key}.parquet"
    if not cached_parquet(con, cached):
        with staged_file(cached) as staging:
            pq.write_table(_parse_source(path), staging)
    return cached


def parse_ahead(con: duckdb.DuckDBPyConnection, specs: list[str]
                ) -> Future[dict[str, str]] | None:
    """Hash and parse the sources into the cache on a thread of its own while the release's
    contexts are grouped (DuckDB runs without the GIL; the parse is Python on one core).
    The future gives each parsed file's SHA-256 by path. A source that fails here is left
    to `attach_sources`, which parses it again and reports it in turn."""
    paths = [path for _, path in map(split_of, specs) if path.is_file()]
    if not paths:
        return None
    cursor = con.cursor()      # made here: a connection is not shared between threads

    def parse() -> dict[str, str]:
        digests = {}
        try:
            for path in paths:
                digest = file_sha256(path)
                _cached_source(cursor, path, digest)
                digests[str(path)] = digest
        except Exception:   # noqa: BLE001 - attach_sources reports it, parsing in turn
            pass
        finally:
            cursor.close()
        return digests

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="source-parse")
    try:
        return pool.submit(parse)
    finally:
        pool.shutdown(wait=False)


def _source_sql(con: duckdb.DuckDBPyConnection, spec: str,
                digest: Callable[[Path], str] = file_sha256) -> str:
    """The rows of one HotpotQA JSON list, as SQL; the split comes from `split=path` or the
    release rows whose source ids it shares."""
    split, path = split_of(spec)
    if not path.is_file():
        raise InputError(path, "no such file", expected="a HotpotQA JSON file")
    parsed = f"read_parquet({literal(str(_cached_source(con, path, digest(path))))})"
    if split is None:
        seen = [s for (s,) in con.sql(f"""
            SELECT DISTINCT v.split FROM {parsed} s JOIN (
                SELECT source_id, any_value(source_split) AS split FROM views
                GROUP BY source_id) v USING (source_id) ORDER BY 1""").fetchall()]
        if len(seen) != 1:
            raise InputError(path, "cannot tell which split this source belongs to "
                             f"(release splits matched: {seen or 'none'})",
                             expected="--source train=PATH or --source validation=PATH")
        split = seen[0]
    return (f"SELECT * REPLACE ({literal(split)} AS source_split, "
            f"{literal(str(path))} AS file) FROM {parsed}")


def attach_sources(release: Release, specs: list[str]) -> None:
    """Load the HotpotQA sources into table `sources` (empty without any, so the checks'
    SQL always binds; checks that need a source are gated by the capability)."""

    def digest(path: Path) -> str:    # hashed once: the scan's identity needs it too
        if str(path) not in release.known_digests:
            release.known_digests[str(path)] = file_sha256(path)
        return release.known_digests[str(path)]

    con = release.con
    if specs:
        con.execute("CREATE OR REPLACE TABLE sources AS "
                    + " UNION ALL ".join(_source_sql(con, spec, digest) for spec in specs))
        release.source_paths = [split_of(s)[1] for s in specs]
        release.source_splits = [split_of(s)[0] for s in specs]
        release.capabilities = release.capabilities | {"source"}
    else:
        macros.create_table(con, "sources", _SOURCE_SCHEMA)
