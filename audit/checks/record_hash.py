"""record_hash_mismatch's signal layer: every row's record checksum verified by its
layout's rule (audit/io/layouts/checksum.py) on a thread of its own while the scan goes on,
the verdict remembered per content."""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..io.atomic import staged_file
from ..io.layouts import checksum as hashing
from ..io.layouts.base import Checksum
from ..io.layouts.multihop import CONTEXT_NUMBERING
from ..settings import cache_dir
from ..sql.macros import create_table
from ..sql.safe import literal

if TYPE_CHECKING:
    from ..io.model import Release

# As a signal layer (`audit.checks.layers.SignalLayer`) of record_hash_mismatch: the scan
# starts it first, on a thread of its own, and the check collects it. The verdict needs
# only the release's rows, and hashlib and DuckDB run without the GIL, so the hashing fills
# the core the language layer's Python leaves idle (XHotpotQA+: 8.3 s after the language
# layer's 20 s when run in turn).
NAME, VERSION = "record_hash", hashing.VERSION
THREADED = True


@dataclass
class Prepared:
    """What `prepare` did: rows verified now (0: the verdict was cached), mismatches."""
    rows: int = 0
    mismatches: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class _Pending:
    future: Future[dict[str, list[Any]]]
    stop: threading.Event
    started: float
    pool: ThreadPoolExecutor


_PREPARED: weakref.WeakKeyDictionary[Any, Prepared] = weakref.WeakKeyDictionary()
_STARTED: weakref.WeakKeyDictionary[Any, _Pending] = weakref.WeakKeyDictionary()


def _cache_path(release: Release) -> Path:
    """The verdict depends only on the files' bytes (their SHA-256s, which the scan's
    identity computes anyway), so a rescan of the same files reads it instead of hashing
    every row again."""
    key = hashlib.sha256("\n".join(
        [hashing.VERSION, release.layout.name, CONTEXT_NUMBERING]
        + [release.digests[str(p)] for p in release.paths]).encode("ascii")).hexdigest()
    return cache_dir("hashes") / f"{key}.parquet"


def _rule(release: Release) -> Checksum:
    rule = release.layout.checksum
    assert rule is not None     # the check requires the capability
    return rule


def start(release: Release) -> None:
    """Verify every row's checksum on a thread, unless the verdict is cached."""
    con = release.con
    if con in _PREPARED or con in _STARTED or _cache_path(release).is_file():
        return
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="record-hash")
    try:
        future = pool.submit(hashing.verdict, hashing.cursors(con), _rule(release), stop)
    finally:
        pool.shutdown(wait=False)
    _STARTED[con] = _Pending(future, stop, time.perf_counter(), pool)


def prepare(release: Release) -> Prepared:
    """Temp table hash_mismatches on the release's connection: from the cache, from what
    `start` began, else verified now; a verdict computed is cached."""
    con = release.con
    if con in _PREPARED:
        return _PREPARED[con]
    done = Prepared()
    clock = time.perf_counter()
    path = _cache_path(release)
    pending = _STARTED.pop(con, None)
    if pending is None and path.is_file():
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE hash_mismatches AS "
                        f"SELECT * FROM read_parquet({literal(str(path))})")
            done.seconds["cached"] = time.perf_counter() - clock
            return _done(con, done)
        except duckdb.Error:
            path.unlink(missing_ok=True)     # unreadable: verify again
    if pending is not None:
        found = pending.future.result()
        pending.pool.shutdown(wait=True)      # its thread too has ended
        done.seconds["wait"] = time.perf_counter() - clock
        done.seconds["since_start"] = time.perf_counter() - pending.started
    else:
        found = hashing.verdict(hashing.cursors(con), _rule(release))
        done.seconds["verify"] = time.perf_counter() - clock
    create_table(con, "hash_mismatches", hashing.VERDICT, found, temp=True)
    with staged_file(path) as staging:
        con.execute(f"COPY hash_mismatches TO {literal(str(staging))} (FORMAT parquet)")
    done.rows = release.rows
    return _done(con, done)


def _done(con: Any, done: Prepared) -> Prepared:
    done.mismatches = con.sql("SELECT count(*) FROM hash_mismatches").fetchall()[0][0]
    _PREPARED[con] = done
    return done


def discard(con: Any) -> Prepared | None:
    """Drop hash_mismatches; a verification still running (the scan stopped first) stops
    after its batch in hand and is waited for: no thread outlives the scan on its
    connection."""
    pending = _STARTED.pop(con, None)
    if pending is not None:
        pending.stop.set()
        try:
            pending.future.result()
        except Exception:   # noqa: BLE001 - the scan's own error is the one reported
            pass
        # The task's end is not its thread's: joined here, so none is left when this returns.
        pending.pool.shutdown(wait=True)
    con.execute("DROP TABLE IF EXISTS hash_mismatches")
    return _PREPARED.pop(con, None)


def verify_query(release: Release) -> str:
    """Findings for rows whose shipped checksum does not reproduce."""
    prepare(release)
    return """SELECT m.rid, v.id, v.source_split, 'record_hash_mismatch', 'instance', NULL,
        NULL,
        'shipped ' || coalesce(m.shipped, 'none') || ', computed ' || m.computed, NULL
        FROM hash_mismatches m JOIN views v USING (rid)"""
