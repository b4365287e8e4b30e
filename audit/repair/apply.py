"""Apply corrections: a corrected release in the input's own layout, its correction record,
`repair_manifest.json` and `CHANGELOG.md`, in a new directory that appears whole or not
at all.

The order of things:
1. every correction is located and its old text verified (corrections.locate: a stale,
   unknown or malformed one stops everything before anything is written);
2. the latest decision on each (accepted, rejected, chosen: the workspace's record, then
   this run's) is read; identical corrections are one edit; disagreeing ones are held
   until one is chosen; rejected and unchanged ones are refused;
3. every text check judges the corrected units (probe.judge); an edit that still raises a
   blocking or review finding is held, unless a reviewer accepted it;
4. the applied edits' views (all views holding an edited context) get their flags and
   status re-derived by the release's own rule (probe.derive, where the layout ships a
   status), their provenance pointed at the record's digest and their checksum recomputed
   as the layout writes them (audit/io/layouts/);
5. the record (the workspace's rows and this run's), the release, the manifest and the
   changelog are written into a staging directory renamed into place; then this run's rows
   are appended to the workspace.
A leftover staging directory of a killed run is removed by the next apply to that target.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from collections import Counter, defaultdict
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from ..engine.policy import DEFAULT, Policy
from ..errors import InputError
from ..io.atomic import refuse_existing, staged_directory, write_json
from ..io.digests import file_sha256, text_sha256
from ..io.layouts.base import Corrected
from ..io.layouts.parquet import relative_names
from ..io.model import Release
from ..paths import REPAIR_MANIFEST
from ..sql.macros import among
from . import changelog, probe, record
from .corrections import Correction, Distances, Located, locate
from .edits import Edit, group, patches
from .record import Origin, Workspace

Progress = Callable[[str], None]
RECORD_FILE = "corrections.parquet"
CHANGELOG_FILE = "CHANGELOG.md"
MANIFEST_VERSION = "xhotpotqa-repair-v1"
_PID_FILE = ".repair-apply-pid"
_FLAGS = {"accepted": "--accept", "rejected": "--reject", "chosen": "--choose"}


@dataclass(frozen=True)
class Decision:
    """A reviewer's decision on a correction, given on the command line or a page."""

    action: str               # accepted | rejected | chosen
    correction_id: str
    author: str
    note: str = ""


@dataclass
class Outcome:
    """What became of one correction in this apply."""

    located: Located
    action: str               # applied | held | refused
    note: str = ""
    verdict: probe.Verdict | None = None
    held_for: list[str] = field(default_factory=list)


def from_record(row: dict, in_rows: bool = False) -> Correction:
    """A proposed correction read back from the record (a workspace's, e.g. a post-edit
    pull's); `in_rows`: a mapped release's, named by its row's language."""
    origin = Origin(**row["origin"])
    sentences = tuple(json.loads(row["new_text"])) if row["unit"] == "paragraph" else None
    return Correction(row_id=row["row_id"], unit=row["unit"], paragraph_id=row["paragraph_id"],
                      sentence_index=row["sentence_index"], old_sha256=row["old_sha256"],
                      new_text=row["new_text"], reason=row["reason"] or "",
                      author=row["author"], origin=origin, source_split=row["source_split"],
                      sentences=sentences, correction_id=row["correction_id"],
                      language=row["language"] if in_rows else None)


def _unit_columns(x: Located, release: Release) -> dict:
    c = x.correction
    return dict(correction_id=c.correction_id, release=release.content,
                layout=release.layout.name,
                row_id=c.row_id, source_split=x.source_split, source_id=x.source_id,
                unit=c.unit, paragraph_id=c.paragraph_id, sentence_index=c.sentence_index,
                language=x.language, views=x.views, old_sha256=c.old_sha256,
                old_text=x.old_text, new_text=c.new_text, new_sha256=text_sha256(c.new_text))


def propose(release: Release, corrections: list[Correction]) -> list[dict]:
    """The `proposed` rows of corrections from anywhere (a post-edit pull appends them to a
    workspace): each located and its old text verified, as an apply would."""
    located = locate(release, corrections)
    return proposed_rows(release, located, Distances(located).result(), _now())


def proposed_rows(release: Release, located: list[Located], measured: list[tuple],
                  now: str) -> list[dict]:
    """The record's `proposed` rows of these corrections, with edit distance and TER."""
    return [record.make_row(action="proposed", created_at=now, author=x.correction.author,
                            reason=x.correction.reason, origin=x.correction.origin,
                            edit_distance=edit, ter=ter, **_unit_columns(x, release))
            for x, (edit, ter) in zip(located, measured)]


# ---------------------------------------------------------------------------- deciding

def _components(edits: list[Edit]) -> list[list[int]]:
    """Groups of edits linked by disagreement."""
    seen, out = set(), []
    for i in range(len(edits)):
        if i in seen or not edits[i].conflicts:
            continue
        stack, component = [i], []
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            component.append(j)
            stack.extend(edits[j].conflicts)
        out.append(sorted(component))
    return out


def _decided(edit: Edit, latest: dict[str, dict], action: str) -> dict | None:
    return next((latest[i] for i in edit.ids if latest.get(i, {}).get("action") == action), None)


def decide(edits: list[Edit], latest: dict[str, dict]) -> tuple[list[Edit], dict[int, Outcome]]:
    """The edits to judge, and the outcome of those settled already (conflicts)."""
    settled: dict[int, Outcome] = {}
    for component in _components(edits):
        chosen = [i for i in component if _decided(edits[i], latest, "chosen")]
        for i in component:
            others = sorted({cid for j in component if j != i for cid in edits[j].ids})
            if len(chosen) == 1 and i != chosen[0]:
                settled[i] = Outcome(edits[i].first, "refused",
                                     note=f"another correction was chosen: "
                                          f"{', '.join(edits[chosen[0]].ids)}")
            elif len(chosen) != 1:
                settled[i] = Outcome(edits[i].first, "held",
                                     note="disagrees with another correction of the unit; "
                                          "choose one",
                                     held_for=[f"disagrees with {cid}" for cid in others])
    return [e for i, e in enumerate(edits) if i not in settled], settled


# ---------------------------------------------------------------------------- staging

def _stale_staging(target: Path) -> None:
    """Remove staging directories of earlier applies to `target` whose process is gone."""
    for folder in target.parent.glob(f".{target.name}.*"):
        marker = folder / _PID_FILE
        try:
            pid = int(marker.read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue


@contextmanager
def _staged(target: Path) -> Iterator[Path]:
    _stale_staging(target)
    with staged_directory(target, what="repair") as staging:
        (staging / _PID_FILE).write_text(str(os.getpid()))
        yield staging
        (staging / _PID_FILE).unlink()


# ----------------------------------------------------------------------------- applying

@dataclass
class Result:
    out: Path
    manifest: dict


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _apply_id(release: Release, located: list[Located], latest: dict[str, dict]) -> str:
    content = {"release": release.content,
               "corrections": sorted({x.correction.correction_id for x in located}),
               "decisions": sorted(row["entry"] for row in latest.values())}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def _decision_rows(release: Release, decisions: list[Decision],
                   by_id: dict[str, Located], now: str) -> list[dict]:
    rows = []
    for d in decisions:
        if d.action not in record.DECISIONS:
            raise ValueError(f"{d.action!r} is not one of {record.DECISIONS}")
        if d.correction_id not in by_id:
            raise InputError(_FLAGS[d.action],
                             f"no correction '{d.correction_id}' among the corrections given "
                             "or the workspace's", expected="an id from the manifest or record")
        rows.append(record.make_row(action=d.action, created_at=now, author=d.author,
                                    note=d.note, origin=Origin("decision"),
                                    **_unit_columns(by_id[d.correction_id], release)))
    return rows


def _outcome_row(release: Release, outcome: Outcome, apply_id: str, now: str) -> dict:
    v = outcome.verdict
    verdicts = dict(checks_run=v.checks_run, before=v.before, after=v.after, fixed=v.fixed,
                    introduced=v.introduced) if v else {}
    return record.make_row(action=outcome.action, created_at=now,
                           author=outcome.located.correction.author,
                           origin=outcome.located.correction.origin, note=outcome.note,
                           held_for=outcome.held_for, apply_id=apply_id, **verdicts,
                           **_unit_columns(outcome.located, release))


def _settle(located: list[Located], by_id: dict[str, Located], latest: dict[str, dict]
            ) -> tuple[dict[str, Outcome], list[Edit]]:
    """The outcomes decided before any check runs (rejected, unchanged, disagreeing), and
    the edits left to judge."""
    outcomes: dict[str, Outcome] = {}
    for cid, x in by_id.items():
        decision = latest.get(cid)
        if decision is not None and decision["action"] == "rejected":
            outcomes[cid] = Outcome(x, "refused", note=f"rejected by {decision['author']}")
        elif x.unchanged:
            outcomes[cid] = Outcome(x, "refused", note="unchanged: the new text is the old text")
    edits = group([x for x in located if x.correction.correction_id not in outcomes])
    judged, settled = decide(edits, latest)
    for i, outcome in settled.items():
        for cid in edits[i].ids:
            outcomes[cid] = Outcome(by_id[cid], outcome.action, outcome.note,
                                    held_for=outcome.held_for)
    return outcomes, judged


def _judged(judged: list[Edit], verdicts: list[probe.Verdict], latest: dict[str, dict],
            by_id: dict[str, Located], outcomes: dict[str, Outcome]) -> list[Edit]:
    """Record each judged edit's outcome; returns the edits to apply: those the checks do
    not fault, and those a reviewer accepted."""
    applied = []
    for edit, verdict in zip(judged, verdicts):
        accepted = _decided(edit, latest, "accepted")
        held = bool(verdict.held_for) and accepted is None
        if not held:
            applied.append(edit)
        note = ("still raises a blocking or review finding; a reviewer may accept it" if held
                else f"accepted by {accepted['author']} despite its findings"
                if accepted and verdict.held_for else "")
        for cid in edit.ids:
            outcomes[cid] = Outcome(by_id[cid], "held" if held else "applied", note, verdict,
                                    verdict.held_for if held else [])
    return applied


def apply(release: Release, corrections: list[Correction], out: Path, *,
          workspace: Workspace | None = None, decisions: list[Decision] = (),
          policy: Policy = DEFAULT, skip: frozenset[str] = frozenset(),
          inputs: list[Path] = (), progress: Progress | None = None) -> Result:
    """Apply the corrections (and the workspace's proposals for this release) to the
    release; write the corrected release and its record under `out` (see the module doc)."""
    say = progress or (lambda message: None)
    out = Path(out)
    refuse_existing(out, "repair")
    now = _now()
    earlier = workspace.read() if workspace is not None else record.SCHEMA.empty_table()
    pending = [from_record(row, release.layout.has("aligned")) for row in earlier.to_pylist()
               if row["action"] == "proposed" and row["release"] == release.content]
    say(f"locating {len(corrections):,} correction(s)"
        + (f" and {len(pending):,} from the workspace" if pending else ""))
    located = locate(release, pending + list(corrections))
    fresh = located[len(pending):]
    by_id: dict[str, Located] = {}
    for x in located:
        by_id.setdefault(x.correction.correction_id, x)
    decided = _decision_rows(release, list(decisions), by_id, now)
    latest = record.latest_decisions(record.table(earlier.to_pylist() + decided))
    outcomes, judged = _settle(located, by_id, latest)
    apply_id = _apply_id(release, located, latest)
    # Edit distances and TER are measured in two processes while the checks run.
    with closing(Distances(fresh)) as measuring, _staged(out) as staging:
        scratch = staging / ".probe"
        scratch.mkdir()
        # Patched once: the same contexts serve the verdicts and, when every judged edit is
        # applied, the corrected rows.
        patched = (release.layout.patched_contexts(release, patches(judged))
                   if release.layout.has("shipped_status") and judged else None)
        applied = _judged(judged, probe.judge(release, judged, scratch, policy, skip, say,
                                              patched), latest, by_id, outcomes)
        new_rows = proposed_rows(release, fresh, measuring.result(), now) + decided
        new_rows += [_outcome_row(release, outcomes[cid], apply_id, now) for cid in by_id]
        full = record.table(_unique(earlier.to_pylist() + new_rows))
        digest = record.digest(full)
        record.write(full, staging / RECORD_FILE)
        names = relative_names(release.paths)
        changed, transitions = _write_release(
            release, applied, scratch, staging, names, digest, say,
            patched if len(applied) == len(judged) else None)
        shutil.rmtree(scratch)
        manifest = _manifest(release, inputs, workspace, staging, names, digest, full,
                             new_rows, outcomes, changed, transitions, apply_id, now)
        write_json(staging / REPAIR_MANIFEST, manifest)
        (staging / CHANGELOG_FILE).write_text(changelog.render(manifest, release.name),
                                              encoding="utf-8")
        say(f"applied {manifest['counts']['applied']:,}, held {manifest['counts']['held']:,}, "
            f"refused {manifest['counts']['refused']:,}; {len(changed):,} row(s) changed")
    if workspace is not None:
        manifest["record"]["appended"] = workspace.append(new_rows)
    return Result(out, manifest)


def _unique(rows: list[dict]) -> list[dict]:
    seen, out = set(), []
    for row in rows:
        if row["entry"] not in seen:
            seen.add(row["entry"])
            out.append(row)
    return out


def _changed_rows(release: Release, applied: list[Edit]) -> list[int]:
    ctxs = sorted({e.first.ctx for e in applied if not e.first.correction.in_row})
    rids = {e.first.rid for e in applied if e.first.correction.in_row}
    if ctxs:
        con = release.con.cursor()
        rids |= {rid for (rid,) in con.sql(
            f"SELECT rid FROM views WHERE ctx IN {among(con, ctxs, pa.int32())}"
        ).fetchall()}
        con.close()
    return sorted(rids)


def _write_release(release: Release, applied: list[Edit], scratch: Path, staging: Path,
                   names: list[str], digest: str, say: Progress, patched: pa.Table | None
                   ) -> tuple[list[int], Counter]:
    """Write the corrected release files through its layout; returns the changed rows and
    the status transitions (old → new) among them (a layout that ships a status has its
    corrected rows' flags and status re-derived first)."""
    rids = _changed_rows(release, applied)
    derived = (probe.derive(release, applied, scratch, rids, say, patched)
               if rids and release.layout.has("shipped_status") else None)
    transitions: Counter = Counter()
    try:
        release.layout.write(release, staging, names,
                             Corrected(patches(applied), rids, digest, derived), say)
        if derived is not None:
            new = dict(derived.con.sql("SELECT rid, status FROM final_rows").fetchall())
            con = release.con.cursor()
            old = dict(con.sql(f"SELECT rid, status FROM views WHERE rid IN "
                               f"{among(con, rids)}").fetchall())
            con.close()
            transitions.update(f"{old[r]} → {new[r]}" for r in rids)
    finally:
        if derived is not None:
            derived.close()
    return rids, transitions


def _file(path: Path, role: str) -> dict:
    return {"path": str(path), "role": role, "bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def _entry(o: Outcome) -> dict:
    x, c = o.located, o.located.correction
    entry = {"correction_id": c.correction_id, "id": c.row_id, "source_split": x.source_split,
             "unit": c.unit, "paragraph_id": c.paragraph_id,
             "sentence_index": c.sentence_index, "language": x.language, "views": x.views,
             "origin": c.origin.where()}
    if o.verdict is not None:
        entry.update(fixed=o.verdict.fixed, introduced=o.verdict.introduced)
    if o.held_for:
        entry["held_for"] = o.held_for
    if o.note:
        entry["note"] = o.note
    return entry


def _manifest(release: Release, inputs: list[Path], workspace: Workspace | None,
              staging: Path, names: list[str], digest: str, full: pa.Table,
              new_rows: list[dict], outcomes: dict[str, Outcome], changed: list[int],
              transitions: Counter, apply_id: str, now: str) -> dict:
    by_action: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes.values():
        by_action[o.action].append(o)
    fixed = Counter(check for o in by_action["applied"] for check in o.verdict.fixed)
    introduced = Counter(check for o in by_action["applied"]
                         for check in o.verdict.introduced)
    languages: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes.values():
        languages[o.located.language][o.action] += 1
        if o.action == "applied":
            languages[o.located.language]["views"] += o.located.views
    proposals = sum(1 for r in new_rows if r["action"] == "proposed")
    return {
        "manifest_version": MANIFEST_VERSION, "created_at": now, "apply_id": apply_id,
        "layout": release.layout.name,
        "inputs": [_file(p, "release") for p in release.paths]
                  + [_file(Path(p), "corrections") for p in inputs],
        "workspace": str(workspace.root) if workspace is not None else None,
        "release_files": names,
        "outputs": {n: {"bytes": (staging / n).stat().st_size,
                        "sha256": file_sha256(staging / n)} for n in [*names, RECORD_FILE]},
        "record": {"file": RECORD_FILE, "digest": digest, "entries": full.num_rows,
                   "new_entries": len(new_rows)},
        "provenance": {"field": release.layout.provenance_field,
                       "appended": f"+repair.{digest}",
                       "checksum": release.layout.checksum_field},
        "counts": {"proposed": proposals, "corrections": len(outcomes),
                   "duplicates": proposals - len({r["correction_id"] for r in new_rows
                                                  if r["action"] == "proposed"}),
                   **{a: len(by_action[a]) for a in record.OUTCOMES},
                   "rows_changed": len(changed)},
        "fixed_per_check": dict(sorted(fixed.items())),
        "introduced_per_check": dict(sorted(introduced.items())),
        "per_language": {lang: dict(sorted(c.items())) for lang, c in sorted(languages.items())},
        "status_transitions": dict(sorted(transitions.items())),
        "not_judged_on_the_unit": probe.UNJUDGED,
        **{a: [_entry(o) for o in by_action[a]] for a in record.OUTCOMES},
    }
