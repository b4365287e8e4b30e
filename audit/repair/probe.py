"""The registry's checks on corrected units, before anything is accepted.

A probe is a small release in the input's own layout, written into a scratch folder and
scanned by `audit.scan` like any other, so every check judges a correction exactly as it
would judge the release: set-based, nothing re-implemented here.

`judge`: for each edit, one view holding the unit, as it is (old) and with every candidate
edit applied (new). Each check's findings on the unit before and after give what the edit
fixes, what it introduces and what it still raises. Release-wide checks (ids, checksums,
the shipped flags' consistency, the sources, the sibling views' shared context) say nothing
about one unit's text and are not run; `length_ratio_outlier` is calibrated over the whole
release, so a probe cannot judge it: the re-scan of the corrected release does (UNJUDGED).

`derive`: every view an applied edit changes, corrected, scanned with the release's own
reference checks only; their findings are the rows' structural flags and, by the release's
rule, their status. A flag no probe can re-derive (the legacy input's, the source's shape
without the source) is kept as shipped: no text correction changes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa

from ..checks import registry
from ..checks.model import Check
from ..engine import scan
from ..engine.policy import Policy
from ..io import release as readers
from ..io.layouts.base import Layout
from ..io.model import Release
from ..sql.macros import among
from ..sql.safe import strings
from .edits import Edit, patches

Progress = Callable[[str], None]
# Checks about the release as a whole, not about one unit's text. A probe holds each row
# twice (as it is and corrected), so `view_context_drift` would see the two as siblings.
RELEASE_WIDE = frozenset({"record_hash_mismatch", "duplicate_id", "missing_source_id",
                          "unexpected_source_id", "status_mismatch",
                          "structural_flags_mismatch", "view_context_drift",
                          # a mapped release's alignment: a probe's rows are a subset
                          "row_missing", "row_extra", "blank_id", "row_count_mismatch",
                          "row_shifted", "language_unverified"})
UNJUDGED = {"length_ratio_outlier": "calibrated over the whole release's pairs: a probe of "
                                    "a few units cannot judge it; the re-scan does"}
HOLDING = ("blocking", "review")


@dataclass
class Verdict:
    """The checks' verdicts on one edit's unit."""

    checks_run: list[str]
    before: list[dict]
    after: list[dict]
    fixed: list[str]
    introduced: list[str]
    held_for: list[str]      # "check: detail" of each blocking or review finding that holds it


# ------------------------------------------------------------------- writing a probe

def write_rows(release: Release, folder: Path, selection: pa.Table, edits: list[Edit],
               contexts: pa.Table | None = None) -> Path:
    """The selected rows (`selection`: probe_rid, rid, patched) written by the release's
    layout into the new `folder`; a patched row carries every edit (`contexts`: the edits'
    patched contexts, when the caller has them). Returns what opens it."""
    return release.layout.write_rows(release, folder, selection, patches(edits), contexts)


def _selection(rids: list[int], versions: tuple[bool, ...]) -> pa.Table:
    """probe_rid, rid, patched: every rid once per version, versions one after the other."""
    rids = sorted(rids)
    return pa.table({
        "probe_rid": pa.array(range(len(rids) * len(versions)), pa.int64()),
        "rid": pa.array(rids * len(versions), pa.int64()),
        "patched": pa.array([v for v in versions for _ in rids], pa.bool_())})


def _open(path: Path) -> Release:
    return readers.open_release(path, cache=False)


# ------------------------------------------------------------------------- verdicts

def _representatives(release: Release, edits: list[Edit]) -> dict[int, int]:
    """{ctx: the first view holding it} for the contexts an edit changes."""
    ctxs = sorted({e.first.ctx for e in edits if not e.first.correction.in_row})
    if not ctxs:
        return {}
    con = release.con.cursor()
    try:
        return dict(con.sql(f"SELECT ctx, min(rid) FROM views WHERE ctx IN "
                            f"{among(con, ctxs, pa.int32())} GROUP BY ctx").fetchall())
    finally:
        con.close()


def _finding(f: dict) -> dict:
    return {k: f[k] for k in ("check", "severity", "paragraph_id", "sentence_index", "detail")}


def _on_unit(edit: Edit, f: dict) -> bool:
    """The finding sits on the edit's unit itself."""
    c = edit.first.correction
    if c.in_row:
        return f["unit"] == edit.unit
    if f["paragraph_id"] != c.paragraph_id:
        return False
    if edit.unit == "title":
        return f["unit"] == "title"
    if edit.unit == "sentence":
        return f["unit"] == "sentence" and f["sentence_index"] == c.sentence_index
    return f["unit"] in ("paragraph", "sentence", "fact")


def _near_unit(edit: Edit, f: dict) -> bool:
    """The finding sits where the edit may have caused it: its paragraph, or its row."""
    if edit.first.correction.in_row:
        return f["paragraph_id"] is None
    return f["paragraph_id"] == edit.first.correction.paragraph_id


def _signature(f: dict) -> tuple:
    return (f["check"], f["paragraph_id"], f["sentence_index"], f["detail"])


def judge(release: Release, edits: list[Edit], folder: Path, policy: Policy,
          skip: frozenset[str] = frozenset(), progress: Progress | None = None,
          contexts: pa.Table | None = None) -> list[Verdict]:
    """The checks' verdicts on each edit's unit (see the module doc)."""
    if not edits:
        return []
    say = progress or (lambda message: None)
    reps = _representatives(release, edits)
    row_of = [e.first.rid if e.first.correction.in_row else reps[e.first.ctx]
              for e in edits]
    rids = sorted(set(row_of))
    probe = _open(write_rows(release, folder / "verdicts", _selection(rids, (False, True)),
                             edits, contexts))
    try:
        said = [f"{len(edits):,} edit(s) on {len(rids):,} row(s)"]
        say(f"checking the corrected units: {said[0]}, every text check as in a scan")
        result = scan.run(probe, policy, skip=RELEASE_WIDE | frozenset(UNJUDGED) | skip)
        found = result.cursor().sql("""
            SELECT f."row", f."check", f.severity, f.paragraph_id, f.sentence_index, f.detail,
                   f.unit
            FROM findings f ORDER BY f."row", f."check", f.paragraph_id NULLS FIRST,
                 f.sentence_index NULLS FIRST, f.detail""").to_arrow_table().to_pylist()
        checks_run = sorted(result.summary["checks_run"])
    finally:
        probe.close()
    per_row: dict[int, list[dict]] = {}
    for f in found:
        per_row.setdefault(f["row"], []).append(f)
    position = {rid: i for i, rid in enumerate(rids)}
    sharing: dict[int, list[Edit]] = {}
    for edit, rid in zip(edits, row_of):
        sharing.setdefault(rid, []).append(edit)
    return [_verdict(edit, per_row.get(position[rid], []),
                     per_row.get(len(rids) + position[rid], []), checks_run,
                     [e for e in sharing[rid] if e is not edit])
            for edit, rid in zip(edits, row_of)]


def _verdict(edit: Edit, old: list[dict], new: list[dict], checks_run: list[str],
             others: list[Edit]) -> Verdict:
    """`others`: the edits sharing the probe row; a finding on one of their units is
    theirs, not this edit's."""
    before = [f for f in old if _on_unit(edit, f)]
    after = [f for f in new if _on_unit(edit, f)]
    near_before = {_signature(f) for f in old if _near_unit(edit, f)}
    introduced = [f for f in new if _near_unit(edit, f) and _signature(f) not in near_before
                  and not any(_on_unit(other, f) for other in others)]
    holding = [f for f in after if f["severity"] in HOLDING]
    holding += [f for f in introduced if f["severity"] in HOLDING and f not in holding]
    after_checks = {f["check"] for f in after}
    return Verdict(
        checks_run=checks_run, before=[_finding(f) for f in before],
        after=[_finding(f) for f in after],
        fixed=sorted({f["check"] for f in before} - after_checks),
        introduced=sorted({f["check"] for f in introduced}),
        held_for=[f"{f['check']}: {f['detail']}" for f in holding])


# ------------------------------------------------------------ flags by the release's rule

def reference_checks(layout: Layout) -> tuple[Check, ...]:
    return tuple(c for c in registry.for_layout(layout) if c.reference)


def derive(release: Release, edits: list[Edit], folder: Path, rids: list[int],
           progress: Progress | None = None, contexts: pa.Table | None = None) -> Release:
    """A probe of the corrected `rids` (every view an applied edit changes), in rid order,
    whose `raw_views` carry the re-derived flags and status (see the module doc). The
    caller closes its connection."""
    say = progress or (lambda message: None)
    probe = _open(write_rows(release, folder / "corrected", _selection(rids, (True,)), edits,
                             contexts))
    reference = reference_checks(release.layout)
    say(f"re-deriving flags and status of {len(rids):,} corrected row(s) by the release's "
        "own rule")
    names = {c.name for c in registry.for_layout(release.layout)}
    result = scan.run(probe, skip=frozenset(names - {c.name for c in reference}))
    exhaustive = [c.name for c in reference if c.name in result.summary["checks_run"]]
    review = [c.name for c in reference if c.severity != "blocking"]
    con = result.cursor()   # derived_flags: temporary, on this cursor as later statements
    con.execute(f"""CREATE OR REPLACE TEMP TABLE derived_flags AS
        SELECT "row" AS rid, list_sort(list_distinct(list("check"))) AS found
        FROM findings WHERE list_contains({strings(c.name for c in reference)}, "check")
        GROUP BY "row" """)

    def kept(column: str) -> str:      # shipped flags no probe re-derives
        return (f"list_filter(v.{column}, lambda x: NOT list_contains("
                f"{strings(exhaustive)}, x))")

    found = "coalesce(d.found, []::VARCHAR[])"
    con.execute("CREATE OR REPLACE TABLE raw_views AS "
                + release.layout.status_rule(found, kept, review))
    return probe
