"""Where the bundled demo release lives, which files the workbench may serve, and one call
that scans a release for the views.

The workbench is reached by URL, so `?release=` is outside input: it may only name releases
under the data roots (`AUDIT_DATA_ROOTS`, paths separated by the OS path separator; by
default `data/`, which holds the upload area). Anything else is refused with one line that
does not say whether the path exists. The CLI, run by the operator on their own files,
reads any path and never calls `served_files`.
"""

from __future__ import annotations

import glob as globlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from . import readers, scan
from .errors import InputError
from .outputs import REPO

DEMO = REPO / "data" / "demo"
DEMO_RELEASE = DEMO / "release"
UPLOADS = REPO / "data" / "uploads"
_MAGIC = ("*", "?", "[")


class NotServed(InputError):
    """A path outside the data roots: the message names nothing about it."""

    PLURAL = {"release": "releases", "file": "files", "directory": "directories"}

    def __init__(self, what: str = "release") -> None:
        super().__init__(what, f"not available here: the workbench serves {self.PLURAL[what]} "
                         "under its data roots only (AUDIT_DATA_ROOTS)")


def data_roots() -> list[Path]:
    configured = os.environ.get("AUDIT_DATA_ROOTS", "")
    roots = [Path(p) for p in configured.split(os.pathsep) if p.strip()] or \
        [REPO / "data", UPLOADS]
    return [root.resolve() for root in roots]


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def served_files(spec: str) -> list[Path]:
    """The data files of a release named in the workbench (a file, a directory of shards or
    a glob), every one of them under a data root; NotServed otherwise. Nothing outside the
    roots is listed or stat'ed: a glob is walked only from a fixed prefix inside a root."""
    roots = data_roots()
    text = str(spec).strip()
    if not text or "\x00" in text:
        raise NotServed()
    parts = Path(text).parts
    fixed = [p for p in parts[:next((i for i, p in enumerate(parts)
                                    if any(m in p for m in _MAGIC)), len(parts))]]
    anchor = Path(*fixed).resolve() if fixed else Path.cwd().resolve()
    if not _inside(anchor, roots):
        raise NotServed()
    if len(fixed) == len(parts):
        found = readers.resolve_paths(anchor)
    else:
        found = sorted(Path(p) for p in globlib.glob(text, recursive=True))
        found = [p for p in found if p.is_file()]
        if not found:
            raise InputError(text, "the pattern matches no file")
    resolved = [p.resolve() for p in found]
    if not all(_inside(p, roots) for p in resolved):
        raise NotServed()
    return resolved


def served_directory(spec: str) -> Path:
    """A directory named in the workbench (a saved scan, say), under a data root."""
    text = str(spec).strip()
    if not text or "\x00" in text:
        raise NotServed("directory")
    path = Path(text).resolve()
    if not _inside(path, data_roots()) or not path.is_dir():
        raise NotServed("directory")
    return path


def served_file(spec: str) -> Path:
    """One file named in the workbench (a HotpotQA source, a policy, predictions), under a
    data root."""
    text = str(spec).strip()
    if not text or "\x00" in text:
        raise NotServed("file")
    path = Path(text).resolve()
    if not _inside(path, data_roots()):
        raise NotServed("file")
    if not path.is_file():
        raise InputError(text, "no such file")
    return path


def stamp(files: list[Path]) -> tuple:
    """What changes when a release's files change: path, mtime and size of each."""
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)


def demo_sources() -> list[str]:
    return [f"{split}={DEMO / f'hotpot_source_{split}.json'}"
            for split in ("train", "validation")]


def scan_release(path: str | Path | None = None, sources: list[str] | None = None,
                 files: list[Path] | None = None) -> scan.ScanResult:
    """Scan `path` (`files`: its data files, already resolved), or the demo release with
    its HotpotQA sources when no path is given."""
    if path is None:
        path, sources = DEMO_RELEASE, demo_sources()
    return scan.run(readers.open_release(path, sources, files))


class ScanCache:
    """Scans held in memory for the workbench: the most recent `size`, keyed by what was
    asked (paths, file stamps, sources, policy). A key is built by one caller at a time;
    others asking for it wait for that scan instead of starting their own."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._scans: OrderedDict[tuple, scan.ScanResult] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._guard = threading.Lock()

    def cached(self, key: tuple) -> scan.ScanResult | None:
        with self._guard:
            if key in self._scans:
                self._scans.move_to_end(key)
                return self._scans[key]
        return None

    def get(self, key: tuple, build: Callable[[], scan.ScanResult]) -> scan.ScanResult:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            found = self.cached(key)
            if found is not None:
                return found
            result = build()
            with self._guard:
                self._scans[key] = result
                while len(self._scans) > self.size:
                    old, _ = self._scans.popitem(last=False)
                    self._locks.pop(old, None)
            return result
