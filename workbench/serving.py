"""Which files the workbench may serve, where uploads are kept, the scans it holds in
memory.

The workbench is reached by URL, so every path it is given (`?release=`, `?old=`, the
sources and policy, every path box, the paths uploads are kept at) is outside input: one
rule serves it, only under the data roots (`AUDIT_DATA_ROOTS`, paths separated by the OS
path separator; by default `data/`; the upload area `uploads/` under AUDIT_DATA_DIR always). Anything else —
a path outside, a `..` part, a symlink out of a root, a glob that matches nothing there, a
file that is missing — is refused with the same one line (NotServed), which does not say
whether the path exists. The CLI, run by the operator on their own files, reads any path
and never calls this rule.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from audit import paths
from audit.errors import InputError
from audit.io.mapping import is_mapping
from audit.paths import safe_name
from audit.settings import current


def upload_name(name: str, data: bytes, suffixes: tuple[str, ...]) -> str:
    """The file name an upload is kept under: its content hash, which makes it unique, then
    its own name sanitised, which people call it by ("3f2a…-xhotpot_v2.parquet"); the
    uploaded name is never used as a path. A suffix not in `suffixes` becomes the first."""
    suffix = Path(name).suffix.lower()
    suffix = suffix if suffix in suffixes else suffixes[0]
    stem = safe_name(Path(name).stem)[:60]
    return f"{hashlib.sha256(data).hexdigest()[:16]}-{stem}{suffix}"


_MAGIC = ("*", "?", "[")


class NotServed(InputError):
    """The one refusal of the serving rule: the same line whatever the path was (outside
    the roots, through `..` or a symlink, a glob, a file that exists or not)."""

    def __init__(self, what: str = "release") -> None:
        super().__init__(what, f"not available here: no {what} by that name under the "
                         "workbench's data roots (AUDIT_DATA_ROOTS)")
        # The page's own words name what could not be opened ("Cannot open the release:
        # …"): the line is the problem alone, not "release: …" once more.
        self.args = (self.problem,)


def uploads_root() -> Path:
    """The upload area: `uploads/` under the data directory (AUDIT_DATA_DIR), where every
    upload is kept and always served."""
    return current().uploads


def data_roots() -> list[Path]:
    """AUDIT_DATA_ROOTS, else data/; the upload area is always one."""
    return [root.resolve() for root in (*current().data_roots, uploads_root())]


def repairs_root() -> Path:
    """Where the Repair page keeps each release's repair area: under the first data root,
    so every corrected release it writes is served back to Compare and Browse."""
    return data_roots()[0] / "repairs"


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _parts(spec: str, what: str) -> tuple[str, ...]:
    """The parts of a path typed or linked in the workbench; NotServed for an empty text,
    a NUL or a `..` part (never resolved, so a glob cannot walk up after a wildcard)."""
    text = str(spec).strip()
    parts = Path(text).parts if text and "\x00" not in text else ()
    if not parts or ".." in parts:
        raise NotServed(what)
    return parts


def _entries(directory: Path, roots: list[Path]) -> list[tuple[Path, bool]]:
    """(path, is a directory inside the roots) of each entry; a symlinked directory that
    resolves outside the roots is never entered."""
    try:
        with os.scandir(directory) as scanning:
            found = sorted(scanning, key=lambda entry: entry.name)
    except OSError:
        return []
    out = []
    for entry in found:
        path = Path(entry.path)
        try:
            inside = _inside(path.resolve(), roots) if entry.is_symlink() else True
            out.append((path, inside and entry.is_dir()))
        except OSError:
            continue
    return out


def _walk(directory: Path, pattern: tuple[str, ...], roots: list[Path],
          seen: frozenset[Path] = frozenset()) -> Iterator[Path]:
    """The paths under `directory` that match the pattern's parts (glob's rules: `*`, `?`,
    `[...]` within a part, `**` any depth, no hidden names unless asked), listing nothing
    outside the roots."""
    if not pattern:
        yield directory
        return
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        here = directory.resolve()
        if here in seen:            # a symlink loop
            return
        yield from _walk(directory, rest, roots, seen | {here})
        for path, is_dir in _entries(directory, roots):
            if path.name.startswith("."):
                continue
            if is_dir:
                yield from _walk(path, pattern, roots, seen | {here})
            elif not rest:
                yield path
        return
    for path, is_dir in _entries(directory, roots):
        if path.name.startswith(".") and not head.startswith("."):
            continue
        if fnmatch.fnmatchcase(path.name, head) and (is_dir or not rest):
            yield from _walk(path, rest, roots, seen)


def served_files(spec: str) -> list[Path]:
    """The data files of a release named in the workbench (a file, a directory of shards, a
    glob, or a mapping file and the files it names), every one resolved under a data root; NotServed otherwise. The fixed part of
    the path must lie in a root; below it only directories inside the roots are listed,
    and matches that resolve outside them are dropped before anything is decided."""
    roots = data_roots()
    parts = _parts(spec, "release")
    magic = next((i for i, p in enumerate(parts) if any(m in p for m in _MAGIC)), len(parts))
    anchor = Path(*parts[:magic]).resolve() if magic else Path.cwd().resolve()
    if not _inside(anchor, roots):
        raise NotServed()
    if magic < len(parts):
        found = _walk(anchor, parts[magic:], roots)
    elif is_mapping(anchor) and anchor.is_file():
        # A mapping file and the files it names, each of which must lie in a root too.
        named = [p.resolve() for p in paths.resolve_paths(anchor)]
        if not all(_inside(p, roots) and p.is_file() for p in named):
            raise NotServed()
        return named                # the mapping first, as every reader expects
    elif anchor.is_dir():           # its shards (pathlib never enters a symlinked folder)
        try:
            found = paths.resolve_paths(anchor)
        except InputError:
            found = []
    else:
        found = [anchor]
    files = sorted({p.resolve() for p in found})
    files = [p for p in files if _inside(p, roots) and p.is_file()]
    if not files:
        raise NotServed()
    return files


def served_directory(spec: str) -> Path:
    """A directory named in the workbench (a saved scan, say), under a data root."""
    path = Path(*_parts(spec, "directory")).resolve()
    if not _inside(path, data_roots()) or not path.is_dir():
        raise NotServed("directory")
    return path


def served_file(spec: str) -> Path:
    """One file named in the workbench (a HotpotQA source, a policy, predictions, MAPLE
    pairs), under a data root."""
    path = Path(*_parts(spec, "file")).resolve()
    if not _inside(path, data_roots()) or not path.is_file():
        raise NotServed("file")
    return path


def shown_path(path: str | Path) -> str:
    """A served file as a path box prefills it: relative to the working directory, against
    which the serving rule resolves relative paths (the default data root, data/, lies
    there), so a page never shows the server's absolute layout; a path elsewhere is
    returned as it is."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def stamp(files: list[Path]) -> tuple:
    """What changes when a release's files change: path, mtime and size of each."""
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)


T = TypeVar("T")


class ScanCache(Generic[T]):
    """Scans held in memory for the workbench: the most recent `size`, keyed by what was
    asked (paths, file stamps, sources, policy). A key is built by one caller at a time;
    others asking for it wait for that scan instead of starting their own."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._scans: OrderedDict[tuple, T] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._guard = threading.Lock()

    def cached(self, key: tuple) -> T | None:
        with self._guard:
            if key in self._scans:
                self._scans.move_to_end(key)
                return self._scans[key]
        return None

    def values(self) -> list[T]:
        with self._guard:
            return list(self._scans.values())

    def drop(self, key: tuple) -> None:
        """Forget a key's scan (one that failed): the next ask builds it again."""
        with self._guard:
            self._scans.pop(key, None)

    def get(self, key: tuple, build: Callable[[], T]) -> T:
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
