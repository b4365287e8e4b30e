"""The correction record: one append-only Parquet table per repair workspace.

Every row is an event about one correction, as Weblate's change records are: `proposed`
(a correction arrived, with its old and new text, author and origin), a reviewer's
`accepted` / `rejected` / `chosen`, and each apply's outcome, `applied`, `held` or
`refused`, carrying the checks' verdicts on the new text before it was accepted. Nothing
is rewritten: a later decision is a new row, and the latest decision on a correction wins.

A row's `entry` is the SHA-256 of its content without `created_at`, so appending the same
event twice (a pull run again, an apply repeated) adds nothing. The record's `digest` is
the SHA-256 of its sorted entries: what a corrected release's provenance points at; it
depends on what happened, not on when or where the file was written.

A workspace is a directory: `record/part-NNNNN-<digest>.parquet`, each part written
atomically under a lock, never changed after. `Origin` says where a correction came from:
a file and line today; a post-edit batch, Label Studio project, task and annotation for
the review loop's pull.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..io.atomic import staged_file

ACTIONS = ("proposed", "accepted", "rejected", "chosen", "applied", "held", "refused")
DECISIONS = ("accepted", "rejected", "chosen")
OUTCOMES = ("applied", "held", "refused")
ORIGIN_KINDS = ("file", "post-edit", "decision")

FINDING = pa.struct([("check", pa.string()), ("severity", pa.string()),
                     ("paragraph_id", pa.string()), ("sentence_index", pa.int32()),
                     ("detail", pa.string())])
ORIGIN = pa.struct([("kind", pa.string()), ("file", pa.string()), ("line", pa.int64()),
                    ("batch", pa.string()), ("project", pa.int64()), ("task", pa.int64()),
                    ("annotation", pa.int64())])
SCHEMA = pa.schema([
    ("entry", pa.string()), ("action", pa.string()), ("correction_id", pa.string()),
    ("created_at", pa.string()), ("author", pa.string()), ("reason", pa.string()),
    ("origin", ORIGIN),
    # What the correction is made against and where it lands.
    ("release", pa.list_(pa.string())), ("layout", pa.string()), ("row_id", pa.string()),
    ("source_split", pa.string()), ("source_id", pa.string()), ("unit", pa.string()),
    ("paragraph_id", pa.string()), ("sentence_index", pa.int32()), ("language", pa.string()),
    ("views", pa.int32()),
    # The text: a paragraph's is its sentences as compact JSON (audit/io/units.paragraph_text).
    ("old_sha256", pa.string()), ("old_text", pa.string()), ("new_text", pa.string()),
    ("new_sha256", pa.string()), ("edit_distance", pa.int64()), ("ter", pa.float64()),
    # An outcome's verdicts: the checks that judged the new text, the findings on the unit
    # before and after, and what holds it (findings, or the corrections it disagrees with).
    ("checks_run", pa.list_(pa.string())), ("before", pa.list_(FINDING)),
    ("after", pa.list_(FINDING)), ("fixed", pa.list_(pa.string())),
    ("introduced", pa.list_(pa.string())), ("held_for", pa.list_(pa.string())),
    ("note", pa.string()), ("apply_id", pa.string()),
])
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Origin:
    """Where a correction or decision came from: a corrections file and its line; a post-edit
    batch with its Label Studio project, task and annotation ids; or a reviewer's decision."""

    kind: str
    file: str | None = None
    line: int | None = None
    batch: str | None = None
    project: int | None = None
    task: int | None = None
    annotation: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ORIGIN_KINDS:
            raise ValueError(f"origin kind {self.kind!r} is not one of {ORIGIN_KINDS}")

    def where(self) -> str:
        if self.kind == "file":
            return f"{self.file}: line {self.line}"
        if self.kind == "post-edit":
            return (f"batch {self.batch}, project {self.project}, task {self.task}, "
                    f"annotation {self.annotation}")
        return "decision"


def entry_of(row: dict) -> str:
    """The SHA-256 of a row's content: every column but `entry` and `created_at`."""
    content = {k: v for k, v in row.items() if k not in ("entry", "created_at")}
    return hashlib.sha256(json.dumps(content, ensure_ascii=False, sort_keys=True,
                                     separators=(",", ":"), default=str).encode("utf-8")
                          ).hexdigest()


def make_row(**values) -> dict:
    """A record row with every column (missing ones empty) and its entry."""
    row = {f.name: None for f in SCHEMA}
    unknown = set(values) - set(row)
    if unknown:
        raise KeyError(f"not record columns: {sorted(unknown)}")
    row.update(values)
    if isinstance(row["origin"], Origin):
        row["origin"] = asdict(row["origin"])
    if row["action"] not in ACTIONS:
        raise ValueError(f"action {row['action']!r} is not one of {ACTIONS}")
    for name in ("release", "checks_run", "before", "after", "fixed", "introduced",
                 "held_for"):
        row[name] = list(row[name] or [])
    row["entry"] = entry_of(row)
    return row


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def digest(record: pa.Table) -> str:
    """The record's identity: SHA-256 of its sorted entries, one per line."""
    entries = sorted(set(record.column("entry").to_pylist()))
    return hashlib.sha256("\n".join(entries).encode("ascii")).hexdigest()


def verify(record: pa.Table) -> list[int]:
    """Positions of rows whose `entry` does not reproduce from their content."""
    return [i for i, row in enumerate(record.to_pylist()) if entry_of(row) != row["entry"]]


def latest_decisions(record: pa.Table) -> dict[str, dict]:
    """{correction_id: its latest accepted / rejected / chosen row}, in record order."""
    found: dict[str, dict] = {}
    for row in record.filter(pc.is_in(record.column("action"), pa.array(DECISIONS))).to_pylist():
        found[row["correction_id"]] = row
    return found


def write(record: pa.Table, path: Path) -> None:
    with staged_file(path) as staging:
        pq.write_table(record, staging, compression="zstd")


@dataclass
class Workspace:
    """A repair workspace: a directory whose `record/` holds the append-only parts."""

    root: Path
    parts: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.parts = self.root / "record"

    def files(self) -> list[Path]:
        """The record's parts, in order."""
        return sorted(self.parts.glob("part-*.parquet"))

    def read(self) -> pa.Table:
        files = self.files()
        if not files:
            return SCHEMA.empty_table()
        return pa.concat_tables(pq.ParquetFile(p).read().cast(SCHEMA) for p in files)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.parts.mkdir(parents=True, exist_ok=True)
        with (self.parts / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def append(self, rows: list[dict]) -> int:
        """Append the rows whose entry the record lacks, as one new part; returns how many
        were new. Concurrent appenders wait for each other."""
        with self._locked():
            known = set(self.read().column("entry").to_pylist())
            fresh, seen = [], set()
            for row in rows:
                if row["entry"] not in known and row["entry"] not in seen:
                    fresh.append(row)
                    seen.add(row["entry"])
            if fresh:
                part = table(fresh)
                number = len(list(self.parts.glob("part-*.parquet")))
                write(part, self.parts / f"part-{number:05d}-{digest(part)[:16]}.parquet")
            return len(fresh)


def is_sha256(value: object) -> bool:
    return isinstance(value, str) and bool(_HEX64.fullmatch(value))
