"""Which files a release spec names, and a release's label: what a command knows before it
opens anything (no DuckDB, no Arrow), so a remembered scan answers at once."""

from __future__ import annotations

import glob as globlib
import json
import re
from pathlib import Path

from .errors import InputError
from .io import mapping

JSONL_SUFFIXES = (".jsonl", ".ndjson")


def resolve_paths(spec: str | Path) -> list[Path]:
    """A file, a directory of shards, a glob or a mapping file → the sorted list of data
    files (a mapping's: the mapping first, then the files it names)."""
    text = str(spec)
    if mapping.is_mapping(text):      # the mapping file, then the files it names
        described = mapping.load(text)
        return [Path(text), *(f.path for f in mapping.files(described))]
    if any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in globlib.glob(text, recursive=True) if Path(p).is_file())
        if not found:
            raise InputError(text, "the pattern matches no file")
        return found
    path = Path(text)
    if path.is_dir() and (path / REPAIR_MANIFEST).is_file():
        return _repaired_files(path)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*")
                       if p.is_file() and p.suffix in (".parquet", *JSONL_SUFFIXES))
        if not found:
            raise InputError(path, "the directory holds no .parquet or .jsonl file")
        return found
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if not path.is_file():
        raise InputError(path, "not a regular file")
    return [path]


# A corrected release written by `repair apply` holds its correction record beside its
# shards; its manifest names the release files.
REPAIR_MANIFEST = "repair_manifest.json"


def _repaired_files(folder: Path) -> list[Path]:
    where = folder / REPAIR_MANIFEST
    try:
        names = json.loads(where.read_text(encoding="utf-8"))["release_files"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise InputError(where, f"unreadable repair manifest ({error})",
                         expected="a repair_manifest.json listing 'release_files'") from None
    files = [folder / name for name in names if isinstance(name, str)
             and not Path(name).is_absolute() and ".." not in Path(name).parts]
    if not files or len(files) != len(names) or not all(p.is_file() for p in files):
        raise InputError(where, "its release_files are not the files beside it",
                         expected="relative names of the release files in this directory")
    return files


def release_name(paths: list[Path], single_file: bool) -> str:
    """A release's short label (`Release.name`) from its files, before it is opened."""
    first = paths[0]
    if mapping.is_mapping(first):
        return mapping.load(first).name
    return first.stem if len(paths) == 1 and single_file else first.parent.name


def split_of(spec: str) -> tuple[str | None, Path]:
    """`SPLIT=PATH` or `PATH` → (split or None, path)."""
    if "=" in spec and spec.split("=", 1)[0] in ("train", "validation"):
        split, path = spec.split("=", 1)
        return split, Path(path)
    return None, Path(spec)


def safe_name(name: str) -> str:
    """A release's name as one harmless path component (it comes from file names)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "release"
