"""What the signal layers share: a release's unit index remembered per content
(`unit_index`), and a content-addressed cache of slow signals — Parquet parts under
`<root>/<signal>/<version>/`, one row per text (or pair) key, appended atomically under an
exclusive file lock and compacted past COMPACT_AFTER parts; the lookup of a release's keys
against it, the appender that fills a table and the cache at once, and the computation of
the misses in two processes (`fill_signals`, `Background`)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ..sql import arrays
from ..sql.macros import create_table
from ..sql.safe import literal
from .atomic import staged_file
from .layouts.multihop import CONTEXT_NUMBERING
from .tables import read_parquet

if TYPE_CHECKING:
    from .model import Release

COMPACT_AFTER = 16   # part files
UNIT_INDEXES_KEPT = 8   # per layer: the unit indexes of the releases scanned last
# A layer's top-level signal function: columns of rows, as lists, to Arrow rows of its cache.
SignalTable = Callable[[dict[str, list[Any]]], pa.Table]


def unit_index(release: Release, root: Path, tables: Sequence[str], build: Callable[[], None],
               *parts: str, temp: bool = True) -> bool:
    """A layer's tables of units and their signal keys (no text): read from
    `<root>/units/<digest>-<table>.parquet` when remembered, else made by `build()` and
    remembered. The digest holds the release files' SHA-256s, the relations the units are
    read from (views, contexts, units), the context numbering and `parts` (the SQL and what
    else builds the tables), so a warm rescan reads no text at all. An unreadable entry is
    built again. Returns whether the tables were built now."""
    con = release.con
    relations = con.sql("SELECT view_name, sql FROM duckdb_views() WHERE view_name IN "
                        "('views', 'contexts', 'units') ORDER BY 1").fetchall()
    digest = hashlib.sha256("\n".join([*parts, repr(relations), CONTEXT_NUMBERING]
                                      ).encode("utf-8"))
    for path in release.paths:
        digest.update(release.digests[str(path)].encode("ascii"))
    files = {table: root / "units" / f"{digest.hexdigest()}-{table}.parquet"
             for table in tables}
    kind = "TEMP TABLE" if temp else "TABLE"
    if all(path.is_file() for path in files.values()):
        try:
            for table, path in files.items():
                con.execute(f"CREATE OR REPLACE {kind} {table} AS "
                            f"SELECT * FROM read_parquet({literal(str(path))})")
                os.utime(path)    # most recently used
            return False
        except duckdb.Error:      # unreadable: built again below
            pass
    build()
    root.joinpath("units").mkdir(parents=True, exist_ok=True)
    for table, path in files.items():
        with staged_file(path) as staging:
            con.execute(f"COPY {table} TO {literal(str(staging))} "
                        "(FORMAT parquet, COMPRESSION zstd)")
    first = tables[0]
    for old in sorted(root.joinpath("units").glob(f"*-{first}.parquet"),
                      key=lambda p: p.stat().st_mtime)[:-UNIT_INDEXES_KEPT]:
        for table in tables:
            Path(str(old).replace(f"-{first}.parquet", f"-{table}.parquet")).unlink(
                missing_ok=True)
    return True


def _safe(version: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", version)


class SignalCache:
    """Parquet parts under `<root>/<signal>/<version>/`, one row per text key."""

    def __init__(self, root: Path, signal: str, version: str, schema: pa.Schema):
        self.dir = Path(root) / signal / _safe(version)
        self.schema = schema

    def parts(self) -> list[Path]:
        return sorted(self.dir.glob("part-*.parquet")) if self.dir.is_dir() else []

    def sql(self) -> str | None:
        """A relation over every cached row (None when the cache is empty)."""
        parts = self.parts()
        if not parts:
            return None
        files = ", ".join(literal(str(p)) for p in parts)
        return f"read_parquet([{files}])"

    def _write(self, table: pa.Table) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.parquet"
        with staged_file(self.dir / name) as staging:   # readers see all of it or nothing
            pq.write_table(table.cast(self.schema), staging, compression="zstd")
        return self.dir / name

    def append(self, table: pa.Table) -> Path | None:
        if table.num_rows == 0:
            return None
        path = self._write(table)
        if len(self.parts()) > COMPACT_AFTER:
            self.compact()
        return path

    def compact(self) -> None:
        """Merge the parts into the newest one. The older parts go first and the merged
        file then replaces the newest atomically: a crash in between loses cached rows
        (recomputed on the next scan), never duplicates a key. Callers hold the lock."""
        parts = self.parts()
        if len(parts) < 2:
            return
        table = pa.concat_tables(read_parquet(p, self.schema) for p in parts)
        first: dict[str, int] = {}     # each key's first row
        for i, key in enumerate(table.column("key").to_pylist()):
            first.setdefault(key, i)
        keep = list(first.values())
        handle, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=self.dir)
        os.close(handle)
        try:
            pq.write_table(table.take(keep), tmp, compression="zstd")
            for p in parts[:-1]:
                p.unlink(missing_ok=True)
            os.replace(tmp, parts[-1])
        finally:
            Path(tmp).unlink(missing_ok=True)


@contextmanager
def cache_lock(root: Path) -> Iterator[None]:
    """One process at a time looks up, computes and appends (so no key is cached twice)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_signals(con: duckdb.DuckDBPyConnection, cache: SignalCache, table: str, units: str,
                   missing: str) -> tuple[int, int]:
    """Fill table `table` with the cached signal of every distinct key of `units`, and
    table `missing` with the keys the cache lacks; returns (distinct keys, misses)."""
    source = cache.sql()
    if source:
        con.execute(f"""CREATE OR REPLACE TABLE {table} AS
            SELECT c.* FROM {source} c SEMI JOIN ({units}) u USING (key)""")
    else:
        create_table(con, table, cache.schema)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {missing} AS
        SELECT DISTINCT key FROM ({units}) u ANTI JOIN {table} c USING (key)""")
    misses = con.sql(f"SELECT count(*) FROM {missing}").fetchall()[0][0]
    return con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0] + misses, misses


APPEND_ROWS = 300_000      # signal rows written per cache part at most


class SignalAppender:
    """New signal rows into table `table` at once, and into the cache a part file per
    `part_rows` (default APPEND_ROWS) rows (a cold XHotpotQA+ fill in small batches would otherwise write dozens
    of parts). Rows pending when the block fails are not cached: the next scan computes
    them again."""

    def __init__(self, con: duckdb.DuckDBPyConnection, cache: SignalCache, table: str,
                 part_rows: int | None = None) -> None:
        self.con, self.cache, self.table = con, cache, table
        self.part_rows = part_rows or APPEND_ROWS
        self.pending: list[pa.Table] = []

    def add(self, new: pa.Table) -> None:
        self.con.register("new_signals", new)
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM new_signals")
        self.con.unregister("new_signals")
        self.pending.append(new)
        if sum(t.num_rows for t in self.pending) >= self.part_rows:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.cache.append(pa.concat_tables(self.pending))
            self.pending = []

    def __enter__(self) -> "SignalAppender":
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.flush()


def fill_signals(con: duckdb.DuckDBPyConnection, cache: SignalCache, table: str, todo: str,
                 columns: Sequence[str], signal_table: SignalTable, count: int, batch: int, parallel_from: int,
                 part_rows: int | None = None) -> None:
    """The signals of the `count` rows of temp table `todo` (its `columns`, as lists, to the
    top-level function `signal_table`, which returns Arrow rows of the cache's schema),
    `batch` rows at a time, into table `table` and the cache. From `parallel_from` rows on,
    each batch is split over two processes (one pool serves every batch)."""
    with ExitStack() as stack:
        pool = stack.enter_context(ProcessPoolExecutor(2)) if count >= parallel_from else None
        signals = stack.enter_context(SignalAppender(con, cache, table, part_rows))
        for start in range(0, count, batch):
            rows = con.sql(f"SELECT * FROM {todo} WHERE rowid >= ? AND rowid < ?",
                           params=[start, start + batch]).to_arrow_table()
            lists = {name: arrays.values(rows.column(name)) for name in columns}
            if pool is None or rows.num_rows < parallel_from:
                signals.add(signal_table(lists))
                continue
            half = (rows.num_rows + 1) // 2
            halves = [{k: v[:half] for k, v in lists.items()},
                      {k: v[half:] for k, v in lists.items()}]
            signals.add(pa.concat_tables(pool.map(signal_table, halves)))


class Background:
    """`signal_table` (a top-level function, as for `fill_signals`) over the rows of a
    relation, in two forked child processes, while this process goes on: lingua holds the
    GIL while it reads, so no thread of ours would run meanwhile. The rows go to a Parquet
    file in row groups of at most `batch` (a child never holds more), and at most a
    SHARES-th of the `rows` each, so that both children stay busy to the end however few
    rows there are (one 250,000-row group left one child idle for 61,073 pairs); child k
    computes row groups k, k + 2, … and writes each result beside it; `tables` gives the
    results one file at a time in row-group order, each as soon as it is written, so this
    process takes them in while the children compute the rest."""

    SHARES = 8

    def __init__(self, con: duckdb.DuckDBPyConnection, relation: str, rows: int,
                 columns: Sequence[str], signal_table: SignalTable, batch: int,
                 workdir: Path) -> None:
        import multiprocessing
        batch = max(1, min(batch, -(-rows // self.SHARES)))
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=".background-", dir=workdir))
        source = self.dir / "todo.parquet"
        con.execute(f"COPY ({relation}) TO {literal(str(source))} "
                    f"(FORMAT parquet, ROW_GROUP_SIZE {int(batch)})")
        self.groups = pq.ParquetFile(source).num_row_groups
        fork = multiprocessing.get_context("fork")
        self.children, self.done = [], []
        for k in range(2):
            # Child k says each row group it finished; the pipe ends when the child does.
            receive, send = fork.Pipe(duplex=False)
            self.children.append(fork.Process(target=_background_share, daemon=True,
                                              args=(source, k, 2, tuple(columns),
                                                    signal_table, send)))
            self.children[-1].start()
            send.close()
            self.done.append(receive)

    def tables(self) -> Iterator[pa.Table]:
        try:
            for group in range(self.groups):
                child = group % 2
                try:
                    finished = self.done[child].recv()
                except EOFError:      # the child ended before it finished this row group
                    finished = None
                if finished != group:
                    self.children[child].join()
                    raise RuntimeError("computing signals failed in a child process "
                                       f"(exit code {self.children[child].exitcode})")
                yield read_parquet(self.dir / f"out-{group:06d}.parquet")
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stop the children (when the scan stops first) and remove the files."""
        for child in self.children:
            if child.is_alive():
                child.kill()
            child.join()
        for receive in self.done:
            receive.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _background_share(source: Path, k: int, n: int, columns: tuple[str, ...],
                      signal_table: SignalTable, done: Connection) -> None:
    """Child k of n of a `Background`: its row groups' signals, each into a file, each
    said on `done` once written."""
    file = pq.ParquetFile(source)
    for group in range(k, file.num_row_groups, n):
        rows = file.read_row_group(group, columns=list(columns), use_threads=False)
        table = signal_table({name: arrays.values(rows.column(name)) for name in columns})
        with staged_file(source.parent / f"out-{group:06d}.parquet") as staging:
            pq.write_table(table, staging, compression="zstd")
        done.send(group)
