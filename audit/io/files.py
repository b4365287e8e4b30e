"""Versioned, atomic output: a scan directory appears whole or not at all, and never
replaces an earlier one."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import InputError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


def safe_name(name: str) -> str:
    """A release's name as one harmless path component (it comes from file names)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "release"


def scan_target(name: str, fingerprint: str, out: Path | None,
                scans: Path) -> tuple[str, Path]:
    """A new scan's id and directory: `out`, else a versioned one under `scans`."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    scan_id = f"{stamp}-{fingerprint[:8]}"
    return scan_id, Path(out) if out is not None else scans / safe_name(name) / scan_id


def manifest_inputs(paths: list[Path], source_paths: list[Path],
                    digests: dict[str, str]) -> list[dict[str, Any]]:
    """A manifest's `inputs`: each file's path, size, SHA-256 and role."""
    return [{"path": str(p), "bytes": p.stat().st_size, "sha256": digests[str(p)],
             "role": role} for role, files in (("release", paths), ("source", source_paths))
            for p in files]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def refuse_existing(out: str | Path | None, what: str = "scan") -> None:
    """An output directory is new: an existing one is refused, never overwritten (the CLI
    asks before it spends minutes on the work)."""
    if out and Path(out).exists():
        raise InputError(out, f"already exists; a {what} never overwrites an earlier one",
                         expected="a new --out directory")


def progress_printer(started: float) -> Callable[[str], None]:
    """A progress callback for the CLI: each message on stderr with the seconds since
    `started`."""
    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)
    return say


@contextmanager
def staged_directory(target: Path, replace: bool = False, what: str = "scan"
                     ) -> Iterator[Path]:
    """Yield a temporary sibling of `target`; rename it into place only if the block
    succeeds. Refuses a target that already exists, unless `replace` (a cache entry, which
    another process may have written meanwhile: the first one stays)."""
    if not replace:
        refuse_existing(target, what)
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


def read_parquet(path: Path, schema: pa.Schema | None = None) -> pa.Table:
    """A whole Parquet file as an Arrow table, without pyarrow.dataset (whose import pulls
    in pandas: 0.2 s of every CLI start)."""
    import pyarrow.parquet as pq
    table = pq.ParquetFile(path).read()
    return table.cast(schema) if schema is not None else table


def cached_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether a cache entry `path` is a Parquet file DuckDB reads (its metadata); one it
    cannot read is deleted, so the caller computes it again."""
    import duckdb

    from ..sql.safe import literal
    if not path.is_file():
        return False
    try:
        con.sql(f"SELECT count(*) FROM read_parquet({literal(str(path))})").fetchall()
        return True
    except duckdb.Error:
        path.unlink(missing_ok=True)
        return False


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")
