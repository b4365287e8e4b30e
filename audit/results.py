"""A finished scan's outputs, remembered by everything that decides them (issue 25).

A rescan of the same files, sources, policy file and checks by the same code answers from
the remembered outputs: the files are copied into the new scan directory; nothing is opened,
recomputed, nor even imported (no DuckDB, Arrow or check module: this module reads paths and
bytes only, and ICU's version). The key holds what the scan's identity (`scan.identity`)
holds, as bytes: each input file's SHA-256 and role, the policy file's path and SHA-256, the
code (`code_fingerprint`); and what the identity leaves out but the results depend on: the
skipped checks and the split each source is read as. Entries live under
`<cache_dir>/results/<key>/`, written atomically; the RESULTS_KEPT most recently used stay.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .io.atomic import staged_directory, write_json
from .io.digests import file_sha256
from .paths import release_name, safe_name, split_of
from .settings import cache_dir, current

RESULTS_KEPT = 4
FILES = ("findings.parquet", "status.parquet", "descriptors.parquet", "summary.json",
         "manifest.json")
# Libraries whose release changes what a check finds (signals, SQL, Unicode data).
LIBRARIES = ("duckdb", "pyarrow", "numpy", "lingua-language-detector", "langdetect", "ftfy",
             "rapidfuzz", "PyICU")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of everything a finding depends on besides the inputs and the policy: this
    package's source files (rules, signal layers, SQL), the releases of the libraries that
    compute signals, the ICU and Unicode data PyICU runs on (a system library that can change
    under an unchanged PyICU), and Python's own (its `str` methods and `unicodedata`)."""
    import icu  # 11 ms; the rest of this module stays import-free

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    for release in [*_releases(), f"icu-{icu.ICU_VERSION}", f"unicode-{icu.UNICODE_VERSION}",
                    f"python-{sys.version}"]:
        digest.update(release.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _releases() -> list[str]:
    """The installed releases of LIBRARIES, as their dist-info directories name them
    (importlib.metadata alone costs 0.1–0.2 s of a start)."""
    wanted = {name.lower().replace("-", "_") for name in LIBRARIES}
    return sorted(folder.name for entry in sys.path if Path(entry).is_dir()
                  for folder in Path(entry).glob("*.dist-info")
                  if folder.name.split("-", 1)[0].lower() in wanted)


def scan_target(name: str, fingerprint: str, out: Path | None,
                scans: Path) -> tuple[str, Path]:
    """A new scan's id and directory: `out`, else a versioned one under `scans`."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    scan_id = f"{stamp}-{fingerprint[:8]}"
    return scan_id, Path(out) if out is not None else scans / safe_name(name) / scan_id


def manifest_inputs(paths: list[Path], source_paths: list[Path],
                    digests: dict[str, str]) -> list[dict[str, object]]:
    """A manifest's `inputs`: each file's path, size, SHA-256 and role."""
    return [{"path": str(p), "bytes": p.stat().st_size, "sha256": digests[str(p)],
             "role": role} for role, files in (("release", paths), ("source", source_paths))
            for p in files]


def input_digests(paths: list[Path], sources: list[str]) -> dict[str, str]:
    """SHA-256 of each release file and source file, by path (`Release.known_digests`)."""
    files = [*paths, *(split_of(spec)[1] for spec in sources)]
    return {str(p): file_sha256(p) for p in files if p.is_file()}


def key(paths: list[Path], sources: list[str], digests: dict[str, str],
        policy: str | None, skip: frozenset[str]) -> str | None:
    """The results' key, or None when some input or the policy file is not a file (opening
    them reports it)."""
    source_paths = [split_of(spec)[1] for spec in sources]
    if not all(str(p) in digests for p in [*paths, *source_paths]):
        return None
    if policy is not None and not Path(policy).is_file():
        return None
    content = {"inputs": [["release", digests[str(p)]] for p in paths]
               + [["source", digests[str(p)]] for p in source_paths],
               "policy": None if policy is None else [str(policy), file_sha256(Path(policy))],
               "skip": sorted(skip), "splits": [split_of(spec)[0] for spec in sources],
               "code": code_fingerprint()}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def restore(result_key: str, paths: list[Path], single_file: bool, sources: list[str],
            digests: dict[str, str], out: Path | None,
            say: Callable[[str], None]) -> tuple[Path, dict] | None:
    """A new scan directory holding the remembered outputs of `result_key` (its id, date,
    input paths and release name its own), and its summary; None when none is kept."""
    started = time.perf_counter()
    entry = cache_dir("results") / result_key
    if not entry.is_dir():
        return None
    try:
        summary = json.loads((entry / "summary.json").read_text(encoding="utf-8"))
        manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
        complete = all((entry / name).is_file() for name in FILES)
    except (OSError, ValueError):
        complete = False
    if not complete:    # damaged: dropped, so that this scan's outputs replace it
        shutil.rmtree(entry, ignore_errors=True)
        return None
    say(f"{summary['layout']} release, {summary['rows']:,} rows in {len(paths)} file(s)")
    say(f"scan {summary['scan_id']} had these inputs, policy, checks and code: its results "
        "are copied, nothing is recomputed (--fresh scans again)")
    source_paths = [split_of(spec)[1] for spec in sources]
    name = release_name(paths, single_file)
    scan_id, target = scan_target(name, manifest["fingerprint"], out, current().scans)
    with staged_directory(target) as staging:
        for file in FILES[:3]:
            shutil.copyfile(entry / file, staging / file)
        seconds = {"checks": 0.0, "whole_release_checks": 0.0, "findings_and_status": 0.0,
                   "total": round(time.perf_counter() - started, 3)}
        summary = {**summary, "scan_id": scan_id, "release": name,
                   "sources": [str(p) for p in source_paths], "seconds": seconds,
                   "reused": {"scan_id": summary["scan_id"], "seconds": summary["seconds"]}}
        write_json(staging / "summary.json", summary)
        write_json(staging / "manifest.json", {
            **manifest, "scan_id": scan_id,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "inputs": manifest_inputs(paths, source_paths, digests)})
    os.utime(entry)     # most recently used
    return target, summary


def remember(result_key: str, scan_dir: Path) -> None:
    """Keep a new scan's outputs under `result_key` (the first writer's copy stays), and
    only the RESULTS_KEPT most recently used entries."""
    entry = cache_dir("results") / result_key
    with staged_directory(entry, replace=True) as staging:
        for file in FILES:
            shutil.copyfile(scan_dir / file, staging / file)
    entries = sorted((p for p in entry.parent.iterdir() if p.is_dir()
                      and not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    for old in entries[:-RESULTS_KEPT]:
        shutil.rmtree(old, ignore_errors=True)
