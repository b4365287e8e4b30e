"""One kind of signal cache fresh for a benchmark run, every other kind the configured
cache's own (the language cache stays warm while the heuristics' starts cold)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from audit import settings

KINDS = ("langid", "heuristics", "preservation", "hashes", "results", "contexts", "sources",
         "descriptors", "duckdb-spill")


def isolate(kind: str, folder: Path) -> Path:
    """Configure a cache root whose `kind` is `folder` and whose other kinds link to the
    configured ones; returns the root (a temporary directory of links)."""
    base = settings.current().cache
    root = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    for name in KINDS:
        if name != kind:
            (base / name).mkdir(parents=True, exist_ok=True)
            (root / name).symlink_to(base / name)
    folder.mkdir(parents=True, exist_ok=True)
    (root / kind).symlink_to(folder)
    settings.configure(dataclasses.replace(settings.current(), cache=root))
    return root
