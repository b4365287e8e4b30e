"""Write a scan to disk, export quarantine lists, build manifests."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from . import descriptors, registry
from .errors import InputError
from .outputs import SCANS, file_sha256, staged_directory, staged_file, write_json
from .scan import ScanResult

TOOLS = ("duckdb", "pyarrow", "polars", "streamlit")
QUARANTINE_FORMATS = ("csv", "jsonl", "parquet")
# Spreadsheet programs execute cells that start with these; CSV cells get a leading quote.
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def manifest(result: ScanResult, scan_id: str) -> dict:
    release = result.release
    inputs = [{"path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p),
               "role": "release"} for p in release.paths]
    inputs += [{"path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p),
                "role": "source"} for p in release.source_paths]
    summary = result.summary
    checks = registry.for_layout(release.layout)
    thresholds = result.policy.all_thresholds(checks)
    identity = {"inputs": [(i["role"], i["sha256"]) for i in inputs],
                "policy": result.policy.as_record(),
                "registry_version": registry.REGISTRY_VERSION,
                "thresholds": thresholds}
    fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return {
        "scan_id": scan_id,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "layout": release.layout,
        "inputs": inputs,
        "rows": summary["rows"],
        "rows_per_split": summary["rows_per_split"],
        "status_counts": summary["status_counts"],
        "check_counts": summary["check_counts"],
        "policy": result.policy.as_record(),
        "registry_version": registry.REGISTRY_VERSION,
        "checks": [{"name": c.name, "unit": c.unit, "severity": result.policy.severity(c.name),
                    "origin": c.origin, "description": c.description}
                   for c in checks],
        # The thresholds in force (registry defaults, tuned by the policy file).
        "thresholds": thresholds,
        "tools": _tool_versions(),
        # Same inputs, policy, thresholds and registry → same fingerprint: two scans are
        # comparable.
        "fingerprint": fingerprint,
    }


def write_scan(result: ScanResult, out: Path | None = None) -> Path:
    """Write findings, status, language descriptors, summary and manifest into a new
    directory, atomically."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    draft = manifest(result, scan_id="")
    scan_id = f"{stamp}-{draft['fingerprint'][:8]}"
    target = out if out is not None else SCANS / result.release.name / scan_id
    with staged_directory(Path(target)) as staging:
        pq.write_table(result.findings, staging / "findings.parquet")
        pq.write_table(result.status, staging / "status.parquet")
        language = descriptors.descriptors(result.release)
        pq.write_table(language, staging / "descriptors.parquet", compression="zstd")
        write_json(staging / "summary.json", {**result.summary, "scan_id": scan_id,
                                              "descriptor_counts": descriptors.counts(language)})
        write_json(staging / "manifest.json", {**draft, "scan_id": scan_id})
    return Path(target)


def load_scan(scan_dir: Path) -> tuple[pa.Table, pa.Table, dict]:
    scan_dir = Path(scan_dir)
    needed = ("findings.parquet", "status.parquet", "summary.json")
    missing = [name for name in needed if not (scan_dir / name).is_file()]
    if missing:
        raise InputError(scan_dir, f"not a scan directory (missing {', '.join(missing)})",
                         expected="a directory written by `python -m audit scan`")
    return (pq.read_table(scan_dir / "findings.parquet"),
            pq.read_table(scan_dir / "status.parquet"),
            json.loads((scan_dir / "summary.json").read_text(encoding="utf-8")))


def quarantine(findings: pa.Table, status: pa.Table,
               statuses: tuple[str, ...] = ("quarantined", "review_required"),
               rows: list[int] | None = None) -> pa.Table:
    """One row per (release row, reason): id, split, status and each blocking/review finding
    with its location; optionally only the given release rows (a filtered view)."""
    con = duckdb.connect()
    con.register("findings", findings)
    con.register("status", status)
    con.register("wanted", pa.table({"row": pa.array(rows or [], pa.int64())}))
    wanted_statuses = "[" + ", ".join(f"'{s}'" for s in statuses) + "]"
    row_filter = 'AND s."row" IN (SELECT "row" FROM wanted)' if rows is not None else ""
    return con.sql(f"""
        SELECT s.id, s.source_split, s.status, f."check" AS reason, f.severity, f.origin,
               f.paragraph_id, f.sentence_index, f.detail, s."row"
        FROM status s JOIN findings f ON f."row" = s."row"
        WHERE list_contains({wanted_statuses}, s.status) AND f.severity <> 'info' {row_filter}
        ORDER BY s."row", f."check", f.paragraph_id NULLS FIRST, f.sentence_index NULLS FIRST
    """).to_arrow_table()


def _neutralise(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        return "'" + value
    return value


def serialize(table: pa.Table, fmt: str, stream: BinaryIO) -> None:
    """Write a quarantine table as CSV (formula cells neutralised), JSONL or Parquet."""
    if fmt == "parquet":
        pq.write_table(table, stream)
        return
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
    if fmt == "jsonl":
        for row in table.to_pylist():
            text.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        writer = csv.writer(text)
        writer.writerow(table.column_names)
        for row in table.to_pylist():
            writer.writerow([_neutralise(row[name]) for name in table.column_names])
    text.flush()
    text.detach()


def to_bytes(table: pa.Table, fmt: str) -> bytes:
    buffer = io.BytesIO()
    serialize(table, fmt, buffer)
    return buffer.getvalue()


def write_quarantine(table: pa.Table, out: Path, fmt: str) -> Path:
    if fmt not in QUARANTINE_FORMATS:
        raise InputError(out, f"unknown format '{fmt}'", expected=" / ".join(QUARANTINE_FORMATS))
    with staged_file(Path(out)) as staging, staging.open("wb") as stream:
        serialize(table, fmt, stream)
    return Path(out)


def scan_history(release_name: str) -> list[dict]:
    """Saved scans of a release, newest first: id, directory and their summary counts."""
    root = SCANS / release_name
    scans = []
    for summary_path in sorted(root.glob("*/summary.json"), reverse=True):
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        scans.append({"scan_id": summary.get("scan_id", summary_path.parent.name),
                      "directory": str(summary_path.parent), "rows": summary["rows"],
                      **{f"{k}": v for k, v in summary["status_counts"].items()}})
    return scans
