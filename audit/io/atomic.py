"""Outputs that appear whole or not at all, and never replace an earlier one unless asked:
a directory or file is written beside its target and renamed into place."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import InputError


def refuse_existing(out: str | Path | None, what: str = "scan") -> None:
    """An output directory is new: an existing one is refused, never overwritten (the CLI
    asks before it spends minutes on the work)."""
    if out and Path(out).exists():
        raise InputError(out, f"already exists; a {what} never overwrites an earlier one",
                         expected="a new --out directory")


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


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")
