"""Open a release (V1.1 Parquet, V2 RC1 Parquet or canonical JSONL) and an optional HotpotQA
source, validate them, and expose one canonical layout in DuckDB.

Canonical view `release`: one row per release row, V1.1 field names; candidates carry
`language` (name) and `language_code` (code) as in V1.1, facts carry `sentence_index`. V2 and
JSONL are mapped into it; `rid` is the row's ordinal in file order (ids may repeat).
Derived views: `candidates`, `sentences`, `facts` (flat, for browsing and ad-hoc queries).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import wait
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import settings
from ..errors import InputError
from ..paths import JSONL_SUFFIXES, resolve_paths
from ..sql import macros
from ..sql.connection import connect
from ..sql.safe import literal
from . import layouts
from .canonical import (
    _CANONICAL,
    _RELEASE,
    CONTEXT_NUMBERING,
    _create_flat_views,
    _grouped_contexts,
)
from .digests import file_sha256
from .hotpot import attach_sources, parse_ahead
from .jsonl import _read_jsonl
from .model import Release


def open_release(spec: str | Path, sources: list[str] | None = None,
                 files: list[Path] | None = None, cache: bool = True,
                 known_digests: dict[str, str] | None = None) -> Release:
    """Open a release: a file, a directory of shards or a glob (`files`: its data files,
    when the caller resolved them already; `known_digests`: SHA-256s by path it computed
    already). `cache=False` never remembers its grouped contexts (a transient release,
    such as a repair's probe)."""
    paths = files if files is not None else resolve_paths(spec)
    # A whole XHotpotQA+ release is ~8 GB of text: DuckDB spills past its share of memory.
    con = connect(settings.current().memory_limit, settings.cache_dir("duckdb-spill"))
    macros.register(con)
    if all(p.suffix in JSONL_SUFFIXES for p in paths):
        layout = "jsonl"
        table = _read_jsonl(paths)
        con.register("jsonl_arrow", table)
        # Tables, not registered Arrow views, so every cursor of the connection sees them.
        con.execute("CREATE TABLE jsonl_rows AS SELECT * FROM jsonl_arrow")
        con.unregister("jsonl_arrow")
        con.execute("CREATE VIEW raw_release AS SELECT * FROM jsonl_rows")
    else:
        layout = _detect_parquet(paths)
        # The file list reaches DuckDB through its relation API, which quotes it itself; a
        # row's ordinal is its file's offset plus its row number in the file.
        offsets = literal(_row_offsets(paths))
        con.read_parquet([str(p) for p in paths], file_row_number=True).project(
            f"* EXCLUDE (file_row_number), "
            f"{offsets}[file_index::BIGINT + 1] + file_row_number AS rid"
        ).create_view("raw_release")
    known = dict(known_digests or {})
    digests = {str(p): known.get(str(p)) or file_sha256(p) for p in paths}
    parsing = parse_ahead(con, sources or [])
    try:
        remembering = _grouped_contexts(con, None if layout == "jsonl" or not cache else
                                        hashlib.sha256("\n".join(
                                            [CONTEXT_NUMBERING, layout, *digests.values()]
                                        ).encode("utf-8")).hexdigest())
    except BaseException:
        if parsing is not None:    # no thread outlives a release that failed to open
            wait([parsing])
        raise
    views, contexts = _CANONICAL[layout]
    con.execute(f"CREATE VIEW views AS {views}")
    con.execute(f"CREATE {'TABLE' if layout == 'v2' else 'VIEW'} contexts AS {contexts}")
    con.execute(f"CREATE VIEW release AS {_RELEASE}")
    _create_flat_views(con)
    rows = con.sql("SELECT count(*) FROM raw_views").fetchall()[0][0]
    if parsing is not None:       # the sources parsed meanwhile: attach_sources reads them
        known.update(parsing.result())
    if rows == 0:
        raise InputError(paths[0], "the release has no rows", expected="at least one row")
    capabilities = {layout}
    if layout in ("v1.1", "v2"):
        capabilities.add("record_hash")
    release = Release(paths=paths, layout=layout, root=con, rows=rows,
                      single_file=Path(str(spec)).is_file(),
                      capabilities=frozenset(capabilities),
                      known_digests={**known, **digests} if layout != "jsonl" else {})
    try:
        attach_sources(release, sources or [])
    finally:
        if remembering is not None:      # the contexts cache is complete (or absent) first
            wait([remembering])
    if remembering is not None:
        remembering.result()
    return release


def _detect_parquet(paths: list[Path]) -> str:
    found: set[str] = set()
    for path in paths:
        if path.suffix in JSONL_SUFFIXES:
            raise InputError(path, "mixes JSONL with Parquet files in one release")
        if path.stat().st_size == 0:
            raise InputError(path, "the file is empty", expected="a Parquet file")
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})",
                             expected="a complete Parquet file") from None
        layout = layouts.detect(schema)
        if layout is None:
            raise InputError(path, "not an XHotpotQA release: the columns match neither the "
                             "V1.1 (22 fields) nor the V2 RC1 (35 fields) layout",
                             expected=f"columns such as {', '.join(layouts.V11.names[:6])}, …")
        problems = layouts.mismatches(schema, layout)
        if problems:
            raise InputError(path, "; ".join(problems), where=f"{layout} layout")
        found.add(layout)
    if len(found) > 1:
        raise InputError(paths[0], f"files of different layouts in one release: {sorted(found)}")
    return found.pop()


def _row_offsets(paths: list[Path]) -> list[int]:
    """The ordinal of each file's first row in the release."""
    offsets, total = [], 0
    for path in paths:
        offsets.append(total)
        try:
            total += pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})") from None
    return offsets
