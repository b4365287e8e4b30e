"""Where the bundled demo release lives, and one call that scans a release (or the demo,
when no path is given) for the views and the review loop. Which files the workbench may
serve is workbench/serving.py's rule."""

from __future__ import annotations

from pathlib import Path

from .engine import scan
from .io import release
from .settings import REPO

DEMO = REPO / "data" / "demo"
DEMO_RELEASE = DEMO / "release"


def demo_sources() -> list[str]:
    return [f"{split}={DEMO / f'hotpot_source_{split}.json'}"
            for split in ("train", "validation")]


def scan_release(path: str | Path | None = None, sources: list[str] | None = None,
                 files: list[Path] | None = None) -> scan.ScanResult:
    """Scan `path` (`files`: its data files, already resolved), or the demo release with
    its HotpotQA sources when no path is given."""
    if path is None:
        path, sources = DEMO_RELEASE, demo_sources()
    return scan.run(release.open_release(path, sources, files))
