"""Saved scans: a scan written to disk with its manifest, the newest saved scan of the same
identity found and read back, a release's scan history."""

from __future__ import annotations

import datetime as dt
import json
import platform
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import duckdb
import pyarrow as pa

from ..checks import registry
from ..errors import InputError
from ..io.atomic import staged_directory, write_json
from ..io.model import Release
from ..io.tables import read_parquet
from ..language import descriptors
from ..paths import safe_name
from ..results import manifest_inputs, scan_target
from ..settings import current
from ..sql.safe import identifier, literal
from .policy import Policy
from .scan import ScanResult, table_names
from .scan import identity as scan_identity
from .scan import run as run_scan

TOOLS = ("duckdb", "pyarrow", "polars", "streamlit")


def _tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def manifest(result: ScanResult, scan_id: str) -> dict[str, Any]:
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
        # Same inputs, policy and registry → same fingerprint: two scans are comparable.
        "fingerprint": result.identity,
    }


def write_scan(result: ScanResult, out: Path | None = None) -> Path:
    """Write findings, status, language descriptors, summary and manifest into a new
    directory, atomically."""
    draft = manifest(result, scan_id="")
    scan_id, target = scan_target(result.release.name, draft["fingerprint"], out, current().scans)
    with staged_directory(target) as staging:
        # Straight from DuckDB: millions of findings never become Python-side Arrow.
        cursor = result.cursor()
        for name in ("findings", "status"):
            cursor.table(name).write_parquet(str(staging / f"{name}.parquet"),
                                             compression="zstd")
        language = descriptors.cached(result.release)
        shutil.copyfile(language, staging / "descriptors.parquet")
        write_json(staging / "summary.json", {**result.summary, "scan_id": scan_id,
                   "descriptor_counts": descriptors.counts(
                       cursor, f"read_parquet({literal(str(language))})")})
        write_json(staging / "manifest.json", {**draft, "scan_id": scan_id})
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
    findings carried their unit get an empty `unit` column."""
    scan_dir = _scan_dir(scan_dir)
    findings = read_parquet(scan_dir / "findings.parquet")
    if "unit" not in findings.column_names:
        findings = findings.append_column("unit", pa.nulls(findings.num_rows, pa.string()))
    return (findings, read_parquet(scan_dir / "status.parquet"),
            json.loads((scan_dir / "summary.json").read_text(encoding="utf-8")))


def saved_scan(release: Release, identity: str) -> Path | None:
    """The newest saved scan of these very inputs, policy and registry (the same
    fingerprint), if any."""
    for manifest_path in sorted((current().scans / safe_name(release.name)).glob("*/manifest.json"),
                                reverse=True):
        try:
            if json.loads(manifest_path.read_text(encoding="utf-8")).get(
                    "fingerprint") == identity:
                return manifest_path.parent
        except (OSError, json.JSONDecodeError):
            continue
    return None


def load_result(release: Release, policy: Policy, scan_dir: Path) -> tuple[ScanResult, pa.Table]:
    """A saved scan of `release` as a ScanResult whose tables are on the release's
    connection, and its descriptors: nothing the scan saved is computed again."""
    scan_dir = _scan_dir(scan_dir)
    summary = json.loads((scan_dir / "summary.json").read_text(encoding="utf-8"))
    language = read_parquet(scan_dir / "descriptors.parquet")
    tables = table_names()
    for name, table in tables.items():   # DuckDB reads them: no Python-side copy
        release.con.execute(f"CREATE TABLE {identifier(table)} AS SELECT * FROM "
                            f"read_parquet({literal(str(scan_dir / f'{name}.parquet'))})")
    return ScanResult(release, policy, summary, tables), language


def saved_or_scanned(release: Release, policy: Policy,
                     progress: Callable[[str], None] | None = None
                     ) -> tuple[ScanResult, pa.Table | None]:
    """The release's scan and, from a saved scan, its descriptors: the newest saved scan of
    the same inputs, policy and registry is read when there is one, else the release is
    scanned (descriptors None)."""
    say = progress or (lambda message: None)
    saved = saved_scan(release, scan_identity(release, policy))
    if saved is not None:
        say(f"the saved scan {saved.name} has these inputs, policy and checks: reading it "
            "instead of scanning again")
        try:
            return load_result(release, policy, saved)
        except (OSError, ValueError, InputError, duckdb.Error) as error:
            say(f"the saved scan {saved.name} cannot be read ({type(error).__name__}): "
                "scanning again")
    return run_scan(release, policy, progress=progress), None


def scan_history(release: Release) -> list[dict[str, Any]]:
    """Saved scans of this release's very files (whatever their sources or policy), newest
    first: id, directory and their summary counts; a scan whose manifest or summary cannot
    be read is listed with its `problem` instead. Saved scans are filed under the release's
    name, which another release can share (every shard is validation-00000.parquet), so the
    manifest's input digests decide."""
    content = set(release.content)
    scans = []
    for summary_path in sorted((current().scans / safe_name(release.name)).glob("*/summary.json"),
                               reverse=True):
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
