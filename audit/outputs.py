"""Versioned, atomic output: a scan directory appears whole or not at all, and never
replaces an earlier one."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import InputError

REPO = Path(__file__).resolve().parent.parent
# AUDIT_SCANS moves saved scans (benchmarks, a second workbench on one machine).
SCANS = Path(os.environ.get("AUDIT_SCANS") or REPO / "data" / "scans")


def cache_dir(kind: str) -> Path:
    """Where one kind of cached signal lives: `AUDIT_CACHE_DIR` (read at call time) or
    data/cache, then `kind`."""
    return Path(os.environ.get("AUDIT_CACHE_DIR") or REPO / "data" / "cache") / kind


def safe_name(name: str) -> str:
    """A release's name as one harmless path component (it comes from file names)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "release"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def staged_directory(target: Path, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of `target`; rename it into place only if the block
    succeeds. Refuses a target that already exists, unless `replace` (a cache entry, which
    another process may have written meanwhile: the first one stays)."""
    if target.exists() and not replace:
        raise InputError(target, "already exists; a scan never overwrites an earlier one",
                         expected="a new --out directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield staging
        try:
            os.rename(staging, target)
        except OSError:
            if not (replace and target.exists()):
                raise
            shutil.rmtree(staging, ignore_errors=True)    # another process was first
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@contextmanager
def staged_file(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside `target` and move it into place on success."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    staging = Path(name)
    try:
        yield staging
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def read_parquet(path: Path, schema=None):
    """A whole Parquet file as an Arrow table, without pyarrow.dataset (whose import pulls
    in pandas: 0.2 s of every CLI start)."""
    import pyarrow.parquet as pq
    table = pq.ParquetFile(path).read()
    return table.cast(schema) if schema is not None else table


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")
