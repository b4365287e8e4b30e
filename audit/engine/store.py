"""Scans kept: the one way to get a release's scan (`scanned`: the remembered results of the
same identity, else a scan that is then remembered), a scan written to a directory with its
manifest (`write_scan`), a scan directory read back, and the saved scans of a release.

Results are remembered under `<cache_dir>/results/<identity>/` (audit/engine/identity.py:
the inputs' SHA-256s, the sources' splits, the policy, the checks left out and the code),
written atomically; the RESULTS_KEPT most recently used stay. A rescan of the same files from
the command line answers from them without opening the release, nor even importing DuckDB,
Arrow or a check module (`files_identity`, `restore`: this module imports them only in the
functions that need them); the workbench, compare, repair, evaluation and review specs open
the release and read the remembered tables into its connection (`scanned`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..io.atomic import staged_directory, write_json
from ..io.digests import file_sha256
from ..paths import release_name, safe_name, split_of
from ..settings import cache_dir, current
from . import identity as identities

if TYPE_CHECKING:
    import pyarrow as pa

    from ..io.model import Release
    from .policy import Policy
    from .scan import ScanResult

Progress = Callable[[str], None]
RESULTS_KEPT = 8
# A scan directory's files; descriptors.parquet where the layout has the language vector.
FILES = ("findings.parquet", "status.parquet", "descriptors.parquet", "summary.json",
         "manifest.json")
OPTIONAL = frozenset({"descriptors.parquet"})
TOOLS = ("duckdb", "pyarrow", "polars", "streamlit")


# ------------------------------------------------------------------ identity from files

def input_digests(paths: list[Path], sources: list[str]) -> dict[str, str]:
    """SHA-256 of each release file and source file, by path (`Release.known_digests`)."""
    files = [*paths, *(split_of(spec)[1] for spec in sources)]
    return {str(p): file_sha256(p) for p in files if p.is_file()}


def files_identity(paths: list[Path], sources: list[str], digests: dict[str, str],
                   policy: str | None, skip: frozenset[str]) -> str | None:
    """The identity of a scan of these files, sources and policy file, known before anything
    is opened; None when some input or the policy file is not a file (opening them reports
    it). Equal to the identity of the scan itself (`scan.identity`)."""
    source_paths = [split_of(spec)[1] for spec in sources]
    if not all(str(p) in digests for p in [*paths, *source_paths]):
        return None
    if policy is not None and not Path(policy).is_file():
        return None
    inputs = ([("release", digests[str(p)]) for p in paths]
              + [("source", digests[str(p)]) for p in source_paths])
    named = None if policy is None else (str(Path(policy)), file_sha256(Path(policy)))
    return identities.identity(inputs, [split_of(spec)[0] for spec in sources], named, skip)


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


# --------------------------------------------------------------- the remembered results

def _entry(identity: str) -> Path | None:
    """The complete remembered results of an identity; a damaged entry is dropped, so that
    the next scan's results replace it."""
    entry = cache_dir("results") / identity
    if not entry.is_dir():
        return None
    try:
        json.loads((entry / "summary.json").read_text(encoding="utf-8"))
        json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
        complete = all((entry / name).is_file() for name in FILES if name not in OPTIONAL)
    except (OSError, ValueError):
        complete = False
    if not complete:
        shutil.rmtree(entry, ignore_errors=True)
        return None
    os.utime(entry)     # most recently used
    return entry


def _keep(identity: str, write: Callable[[Path], None]) -> None:
    """Remember the results `write` puts into a folder as those of `identity` (the first
    writer's copy stays), and only the RESULTS_KEPT most recently used entries."""
    entry = cache_dir("results") / identity
    with staged_directory(entry, replace=True) as staging:
        write(staging)
    entries = sorted((p for p in entry.parent.iterdir() if p.is_dir()
                      and not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    for old in entries[:-RESULTS_KEPT]:
        shutil.rmtree(old, ignore_errors=True)


def remember(identity: str, scan_dir: Path) -> None:
    """Keep a scan directory's outputs as the results of `identity`."""
    def copy(staging: Path) -> None:
        for name in FILES:
            if (scan_dir / name).is_file():
                shutil.copyfile(scan_dir / name, staging / name)
    _keep(identity, copy)


def restore(identity: str, paths: list[Path], single_file: bool, sources: list[str],
            digests: dict[str, str], out: Path | None, say: Progress
            ) -> tuple[Path, dict[str, Any]] | None:
    """A new scan directory holding the remembered results of `identity` (its id, date,
    input paths and release name its own), and its summary; None when none is kept."""
    started = time.perf_counter()
    entry = _entry(identity)
    if entry is None:
        return None
    summary = json.loads((entry / "summary.json").read_text(encoding="utf-8"))
    manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
    say(f"{summary['layout']} release, {summary['rows']:,} rows in {len(paths)} file(s)")
    say(f"scan {summary['scan_id']} had these inputs, policy, checks and code: its results "
        "are copied, nothing is recomputed (--fresh scans again)")
    source_paths = [split_of(spec)[1] for spec in sources]
    name = release_name(paths, single_file)
    scan_id, target = scan_target(name, identity, out, current().scans)
    with staged_directory(target) as staging:
        for file in FILES[:3]:
            if (entry / file).is_file():
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
    return target, summary


def remembered(release: Release, policy: Policy, skip: frozenset[str] = frozenset(),
               progress: Progress | None = None
               ) -> tuple[ScanResult, pa.Table | None] | None:
    """The remembered results of the release's scan read into its connection, and its
    descriptors when they were remembered; None when none are kept or they cannot be read."""
    from .scan import identity
    say = progress or (lambda message: None)
    known = _entry(identity(release, policy, skip))
    if known is None:
        return None
    say("the results of a scan with these inputs, policy, checks and code are "
        "remembered: reading them instead of scanning again")
    try:
        return load_result(release, policy, known)
    except (OSError, ValueError, InputError) as error:
        say(f"the remembered results cannot be read ({type(error).__name__}): "
            "scanning again")
        return None


def scanned(release: Release, policy: Policy, skip: frozenset[str] = frozenset(),
            progress: Progress | None = None, fresh: bool = False
            ) -> tuple[ScanResult, pa.Table | None]:
    """The release's scan, and its descriptors when they were remembered: the remembered
    results of the same identity (`remembered`), else the release is scanned (unless
    `fresh`, always) and its results remembered."""
    from .scan import run
    known = None if fresh else remembered(release, policy, skip, progress)
    if known is not None:
        return known
    result = run(release, policy, progress=progress, skip=skip, describe=True)
    _keep(result.identity,
          lambda staging: _write(result, staging, f"remembered-{result.identity[:12]}"))
    return result, None


# ------------------------------------------------------------------- scan directories

def _tool_versions() -> dict[str, str]:
    from importlib import metadata
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def manifest(result: ScanResult, scan_id: str) -> dict[str, Any]:
    from ..checks import registry
    release = result.release
    inputs = manifest_inputs(release.paths, release.source_paths, release.digests)
    summary = result.summary
    checks = registry.for_layout(release.layout)
    thresholds = result.policy.all_thresholds(checks)
    return {
        "scan_id": scan_id,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "layout": release.layout.name,
        "inputs": inputs,
        "rows": summary["rows"],
        "rows_per_split": summary["rows_per_split"],
        "status_counts": summary["status_counts"],
        "check_counts": summary["check_counts"],
        "policy": result.policy.as_record(),
        "registry_fingerprint": registry.FINGERPRINT,
        "checks": [{"name": c.name, "units": list(c.units),
                    "severity": result.policy.severity(c.name),
                    "origin": c.origin, "description": c.description}
                   for c in checks],
        # The thresholds in force (registry defaults, tuned by the policy file).
        "thresholds": thresholds,
        "tools": _tool_versions(),
        # Same inputs, policy, checks and code → same fingerprint: two scans are comparable.
        "fingerprint": result.identity,
    }


def _write(result: ScanResult, staging: Path, scan_id: str) -> None:
    """Findings, status, language descriptors (where the layout has them), summary and
    manifest into `staging`, straight from DuckDB. A partial scan (audit/engine/staged.py)
    is refused: it would be read as complete."""
    from ..language import descriptors
    from ..sql.safe import literal
    if result.summary.get("checks_pending"):
        raise ValueError("a partial scan is never written: it lacks the checks "
                         + ", ".join(result.summary["checks_pending"]))
    cursor = result.cursor()
    for name in ("findings", "status"):
        cursor.table(name).write_parquet(str(staging / f"{name}.parquet"), compression="zstd")
    summary = {**result.summary, "scan_id": scan_id}
    if descriptors.applies(result.release):
        language = descriptors.cached(result.release)
        shutil.copyfile(language, staging / "descriptors.parquet")
        summary["descriptor_counts"] = descriptors.counts(
            cursor, f"read_parquet({literal(str(language))})")
    write_json(staging / "summary.json", summary)
    write_json(staging / "manifest.json", manifest(result, scan_id))


def write_scan(result: ScanResult, out: Path | None = None) -> Path:
    """Write findings, status, language descriptors, summary and manifest into a new
    directory, atomically; the results are remembered too."""
    scan_id, target = scan_target(result.release.name, result.identity, out, current().scans)
    with staged_directory(target) as staging:
        _write(result, staging, scan_id)
    remember(result.identity, target)
    return target


def _scan_dir(scan_dir: Path) -> Path:
    scan_dir = Path(scan_dir)
    needed = ("findings.parquet", "status.parquet", "summary.json")
    missing = [name for name in needed if not (scan_dir / name).is_file()]
    if missing:
        raise InputError(scan_dir, f"not a scan directory (missing {', '.join(missing)})",
                         expected="a directory written by `python -m audit scan`")
    return scan_dir


def load_scan(scan_dir: Path) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """A scan directory's findings, status and summary; the findings of a scan made before
    findings carried their unit get an empty `unit` column, and tables made before they
    carried a row's language an empty `language` column."""
    import pyarrow as pa

    from ..io.tables import read_parquet
    scan_dir = _scan_dir(scan_dir)
    findings = read_parquet(scan_dir / "findings.parquet")
    if "unit" not in findings.column_names:
        findings = findings.append_column("unit", pa.nulls(findings.num_rows, pa.string()))
    status = read_parquet(scan_dir / "status.parquet")
    findings, status = (t if "language" in t.column_names else
                        t.append_column("language", pa.nulls(t.num_rows, pa.string()))
                        for t in (findings, status))
    return (findings, status,
            json.loads((scan_dir / "summary.json").read_text(encoding="utf-8")))


def load_result(release: Release, policy: Policy, scan_dir: Path
                ) -> tuple[ScanResult, pa.Table | None]:
    """A scan directory (or remembered results) of `release` as a ScanResult whose tables
    are on the release's connection, and its descriptors: nothing is computed again."""
    import duckdb

    from ..io.tables import read_parquet
    from ..sql.safe import identifier, literal
    from .scan import ScanResult, table_names
    scan_dir = _scan_dir(scan_dir)
    summary = json.loads((scan_dir / "summary.json").read_text(encoding="utf-8"))
    described = scan_dir / "descriptors.parquet"
    language = read_parquet(described) if described.is_file() else None
    tables = table_names()
    try:
        for name, table in tables.items():   # DuckDB reads them: no Python-side copy
            release.con.execute(f"CREATE TABLE {identifier(table)} AS SELECT * FROM "
                                f"read_parquet({literal(str(scan_dir / f'{name}.parquet'))})")
    except duckdb.Error as error:
        raise InputError(scan_dir, f"unreadable scan tables ({error})") from None
    return ScanResult(release, policy, summary, tables), language


def from_scan_dir(scan_dir: Path, policy: Policy, say: Progress) -> ScanResult:
    """The scan a directory holds, on its release reopened from the files its manifest
    names (each must still have the SHA-256 the scan read)."""
    from ..io.release import open_release
    manifest_path = _scan_dir(scan_dir) / "manifest.json"
    try:
        inputs = [i for i in json.loads(manifest_path.read_text(encoding="utf-8")).get(
            "inputs", []) if i.get("role") == "release"]
    except (OSError, ValueError, AttributeError) as error:
        raise InputError(manifest_path, f"unreadable manifest ({error})") from None
    files = [Path(i["path"]) for i in inputs]
    for entry, file in zip(inputs, files):
        if not file.is_file() or file_sha256(file) != entry["sha256"]:
            raise InputError(file, "the scan's release file is missing or changed since "
                             "the scan", expected=f"SHA-256 {entry['sha256']}")
    say(f"reading the scan {Path(scan_dir).name}")
    release = open_release(files[0] if len(files) == 1 else files[0].parent, files=files)
    return load_result(release, policy, scan_dir)[0]


def saved_scan(release: Release, identity: str) -> Path | None:
    """The newest scan saved under the scans folder with these very inputs, policy, checks
    and code (the same fingerprint), if any."""
    for manifest_path in sorted((current().scans / safe_name(release.name)).glob(
            "*/manifest.json"), reverse=True):
        try:
            if json.loads(manifest_path.read_text(encoding="utf-8")).get(
                    "fingerprint") == identity:
                return manifest_path.parent
        except (OSError, json.JSONDecodeError):
            continue
    return None


def scan_history(release: Release) -> list[dict[str, Any]]:
    """Saved scans of this release's very files (whatever their sources or policy), newest
    first: id, directory and their summary counts; a scan whose manifest or summary cannot
    be read is listed with its `problem` instead. Saved scans are filed under the release's
    name, which another release can share (every shard is validation-00000.parquet), so the
    manifest's input digests decide."""
    content = set(release.content)
    scans = []
    for summary_path in sorted((current().scans / safe_name(release.name)).glob(
            "*/summary.json"), reverse=True):
        folder = summary_path.parent
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            inputs = manifest.get("inputs", [])
            if not content <= {entry.get("sha256") for entry in inputs}:
                continue
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            counts = {f"{k}": int(v) for k, v in summary["status_counts"].items()}
            scans.append({"scan_id": str(summary.get("scan_id", folder.name)),
                          "directory": str(folder), "rows": int(summary["rows"]), **counts})
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            # One damaged scan is listed as such; it never hides the others.
            scans.append({"scan_id": folder.name, "directory": str(folder),
                          "problem": f"unreadable ({type(error).__name__}): not used"})
    return scans
