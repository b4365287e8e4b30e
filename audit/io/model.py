"""An opened release: its files, layout, digests and a DuckDB connection with a cursor per
thread."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..paths import release_name
from ..sql.connection import quiet
from .digests import file_sha256
from .layouts.base import Layout, Remember


@dataclass
class Release:
    """An opened release: its files, layout, and a DuckDB connection (`root`) with the
    views; callers query it through `con`."""

    paths: list[Path]
    layout: Layout
    root: duckdb.DuckDBPyConnection
    rows: int
    single_file: bool = True
    source_paths: list[Path] = field(default_factory=list)
    source_splits: list[str | None] = field(default_factory=list)   # as given (None: inferred)
    capabilities: frozenset[str] = frozenset()

    known_digests: dict[str, str] = field(default_factory=dict)
    # The grouped contexts being remembered on a thread (audit/io/layouts/multihop.py):
    # the release is used meanwhile; `settle` waits for it. `unremembered`: that write, left
    # for `remember` to start.
    remembering: Future[None] | None = field(default=None, repr=False, compare=False)
    unremembered: Remember | None = field(default=None, repr=False, compare=False)
    _threads: threading.local = field(default_factory=threading.local, repr=False,
                                      compare=False)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor of the release's connection. The workbench shares one scan
        among all its sessions, each on its own thread; one DuckDB connection refuses a
        second caller while busy ("connection is busy with another call") and its
        registered tables are per connection, so each thread queries through its own
        cursor, which sees the release's views, tables and macros (dropped with the
        thread)."""
        cursor = getattr(self._threads, "cursor", None)
        if cursor is None:
            cursor = self._threads.cursor = quiet(self.root.cursor())
        return cursor

    def remember(self) -> None:
        """Start the cache write the opening left to the caller, if any."""
        start, self.unremembered = self.unremembered, None
        if start is not None:
            self.remembering = start()

    def settle(self) -> None:
        """Wait for what the opening left running (the contexts cache being written) and
        raise its error, if any."""
        pending, self.remembering = self.remembering, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Close the connection (every cursor with it), once the opening's work is done."""
        try:
            self.settle()
        finally:
            self.root.close()

    @property
    def digests(self) -> dict[str, str]:
        """SHA-256 of every input file (release, then sources), each hashed once."""
        for path in [*self.paths, *self.source_paths]:
            if str(path) not in self.known_digests:
                self.known_digests[str(path)] = file_sha256(path)
        return {str(p): self.known_digests[str(p)] for p in [*self.paths, *self.source_paths]}

    @property
    def content(self) -> list[str]:
        """The SHA-256s of the release's own files, sorted: what it holds, whatever the file
        names, sources or policy (a review batch names the releases it was drawn from)."""
        digests = self.digests
        return sorted(digests[str(p)] for p in self.paths)

    @property
    def name(self) -> str:
        """A short label: the directory of a sharded release, else the file's stem."""
        return release_name(self.paths, self.single_file)
