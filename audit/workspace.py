"""Where the bundled demo release lives, and one call that scans a release for the views."""

from __future__ import annotations

from pathlib import Path

from . import readers, scan
from .outputs import REPO

DEMO = REPO / "data" / "demo"
DEMO_RELEASE = DEMO / "release"


def demo_sources() -> list[str]:
    return [f"{split}={DEMO / f'hotpot_source_{split}.json'}"
            for split in ("train", "validation")]


def scan_release(path: str | Path | None = None, sources: list[str] | None = None
                 ) -> scan.ScanResult:
    """Scan `path`, or the demo release with its HotpotQA sources when no path is given."""
    if path is None:
        path, sources = DEMO_RELEASE, demo_sources()
    return scan.run(readers.open_release(path, sources))
