"""What the Repair page works with, headless: where a release's repairs are kept, the
applies made so far, one apply's outcomes read back from its record, and a character-level
diff of a correction.

A release's repair area is `<root>/<first 16 hex of its content digest>/`: `workspace/`
(the append-only record: proposals and decisions accumulate across applies, so an accept
needs no file again) and one `corrected-<UTC time>/` per apply (a corrected release, its
record, manifest and changelog; `repair.apply` writes it whole or not at all). The content
digest names it, so the same files reach the same area whatever their path or name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from diff_match_patch import diff_match_patch

from ..errors import InputError
from ..io.model import Release
from ..paths import REPAIR_MANIFEST
from . import record
from .apply import RECORD_FILE
from .record import Workspace

OUTCOME_COLUMNS = ("correction_id", "action", "row_id", "unit", "paragraph_id",
                   "sentence_index", "language", "views", "old_text", "new_text", "fixed",
                   "introduced", "held_for", "note", "before", "after", "author", "origin")


def area(root: Path, release: Release) -> Path:
    """The release's repair area under `root` (named by what the release holds)."""
    digest = hashlib.sha256("\n".join(release.content).encode("ascii")).hexdigest()
    return Path(root) / digest[:16]


def workspace(area_: Path) -> Workspace:
    return Workspace(area_ / "workspace")


def next_out(area_: Path, now: dt.datetime | None = None) -> Path:
    """A new directory name for the next apply: its UTC time, to the microsecond."""
    moment = now or dt.datetime.now(dt.timezone.utc)
    return area_ / f"corrected-{moment.strftime('%Y%m%dT%H%M%S%fZ')}"


def manifest(out: Path) -> dict:
    """An apply's repair_manifest.json; InputError naming the file when unreadable."""
    path = Path(out) / REPAIR_MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(path, f"unreadable ({type(error).__name__})",
                         expected="a repair_manifest.json written by `repair apply`") from None


def applies(area_: Path) -> list[dict]:
    """Every apply in the area, newest first: {out, created_at, counts} or {out, problem}."""
    found = []
    for out in sorted(Path(area_).glob("corrected-*"), reverse=True):
        if not (out / REPAIR_MANIFEST).is_file():
            continue
        try:
            m = manifest(out)
            found.append({"out": out, "created_at": m["created_at"], "counts": m["counts"]})
        except (InputError, KeyError) as error:
            found.append({"out": out, "problem": str(error)})
    return found


def outcomes(out: Path) -> pa.Table:
    """This apply's outcome of every correction with its old and new text, verdicts and
    author, read from the record written beside the release: held first (what waits for a
    decision), then applied, then refused, each by row and unit."""
    m = manifest(out)
    full = pq.read_table(Path(out) / RECORD_FILE).cast(record.SCHEMA)
    mine = full.filter(pc.and_(pc.equal(full.column("apply_id"), m["apply_id"]),
                               pc.is_in(full.column("action"), pa.array(record.OUTCOMES))))
    order = pc.index_in(mine.column("action"), pa.array(["held", "applied", "refused"]))
    return mine.append_column("order", order).sort_by(
        [("order", "ascending"), ("row_id", "ascending"), ("unit", "ascending"),
         ("paragraph_id", "ascending"), ("sentence_index", "ascending")]
    ).select(list(OUTCOME_COLUMNS))


def char_diff(old: str, new: str) -> list[tuple[int, str]]:
    """(op, text) pieces from old to new: -1 removed, 0 kept, 1 added; character-level,
    cleaned up to whole words and phrases where that reads better (diff-match-patch's
    semantic cleanup)."""
    differ = diff_match_patch()
    differ.Diff_Timeout = 1.0
    pieces = differ.diff_main(old or "", new or "")
    differ.diff_cleanupSemantic(pieces)
    return [(op, text) for op, text in pieces]


def paragraph_lines(unit: str, text: str | None) -> list[str]:
    """A unit's text as lines to compare: a paragraph's sentences (stored as compact JSON),
    else the one text."""
    if unit == "paragraph" and text:
        return list(json.loads(text))
    return [text or ""]


def select(work: pa.Table, statuses: list[str], checks: list[str], languages: list[str]
           ) -> pa.Table:
    """The work list's units of these statuses, with a finding of one of these checks, in
    these languages (an empty choice leaves that dimension open)."""
    frame = pl.from_arrow(work)
    if statuses:
        frame = frame.filter(pl.col("status").is_in(statuses))
    if checks:
        frame = frame.filter(pl.col("required_for").list.eval(
            pl.element().is_in(checks)).list.any())
    if languages:
        frame = frame.filter(pl.col("language").is_in(languages))
    return frame.to_arrow().cast(work.schema)
