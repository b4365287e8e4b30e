"""Open a release in any layout (audit/io/layouts/) and an optional HotpotQA source,
validate them, and expose the layout's canonical relations in DuckDB: `views` (one row per
release row, `rid` its ordinal in file order: ids may repeat) and `units` (one row per
translated text) in every layout, and for multi-hop layouts `contexts`, `release` (V1.1
field names; candidates carry `language` (name) and `language_code` (code), facts
`sentence_index`) and the flat `candidates`, `sentences` and `facts`.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import wait
from pathlib import Path

from .. import settings
from ..errors import InputError
from ..paths import resolve_paths
from ..sql import macros
from ..sql.connection import connect
from .digests import file_sha256
from .hotpot import attach_sources, parse_ahead
from .layouts import registry
from .layouts.multihop import CONTEXT_NUMBERING
from .model import Release


def open_release(spec: str | Path, sources: list[str] | None = None,
                 files: list[Path] | None = None, cache: bool = True,
                 known_digests: dict[str, str] | None = None,
                 remember_later: bool = False) -> Release:
    """Open a release: a file, a directory of shards or a glob (`files`: its data files,
    when the caller resolved them already; `known_digests`: SHA-256s by path it computed
    already). `cache=False` never remembers what it derives (a transient release, such as
    a repair's probe); `remember_later` leaves writing it to the cache to
    `Release.remember` (a first view, which needs both cores)."""
    paths = files if files is not None else resolve_paths(spec)
    layout = registry.detect(paths)
    if sources and not layout.has("contexts"):
        raise InputError("--source", f"a HotpotQA source is compared with a release's "
                         f"contexts; the {layout.description} layout has none",
                         expected="no --source for this release")
    # A whole XHotpotQA+ release is ~8 GB of text: DuckDB spills past its share of memory.
    con = connect(settings.current().memory_limit, settings.cache_dir("duckdb-spill"))
    macros.register(con)
    layout.read(con, paths)
    known = dict(known_digests or {})
    digests = {str(p): known.get(str(p)) or file_sha256(p) for p in paths}
    parsing = parse_ahead(con, sources or [])
    try:
        key = hashlib.sha256("\n".join([CONTEXT_NUMBERING, layout.name, *digests.values()]
                                       ).encode("utf-8")).hexdigest()
        remember = layout.open(con, key if cache else None)
        remembering = remember() if remember is not None and not remember_later else None
    except BaseException:
        if parsing is not None:    # no thread outlives a release that failed to open
            wait([parsing])
        raise
    rows = con.sql("SELECT count(*) FROM views").fetchall()[0][0]
    if parsing is not None:       # the sources parsed meanwhile: attach_sources reads them
        known.update(parsing.result())
    if rows == 0:
        raise InputError(paths[0], "the release has no rows", expected="at least one row")
    release = Release(paths=paths, layout=layout, root=con, rows=rows,
                      single_file=Path(str(spec)).is_file(),
                      capabilities=layout.capabilities, known_digests={**known, **digests},
                      remembering=remembering,
                      unremembered=remember if remember_later else None)
    try:
        attach_sources(release, sources or [])
    except BaseException:
        if remembering is not None:      # no thread outlives a release that failed to open
            wait([remembering])
        raise
    return release
