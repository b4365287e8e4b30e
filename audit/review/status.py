"""A batch's progress.

Progress (status): per project, annotator and language, done / skipped / remaining of
the project's own annotator only, judged as the pull judges it (pull.parse_export over the
export of the annotated tasks, plus the project sizes and the users, one request each
per server). A project whose counters and latest-changed task (one small request per
annotated project) are those of the last reading is not exported again, so polling a
batch in progress exports only the projects someone worked in. Label Studio's own
counters are not used: they count any member's annotation as done. Annotations by
anyone else are named per project as intrusions (who, how many, and on whose behalf when
they credited them to someone: intrusions.py). A MAPLE batch has no language: its one
group (routing.NO_LANGUAGE) is not a language and is left out of the per-language totals.
Blinding does not apply to a kind with one editor per item (post-edit). Polling, not
webhooks: a webhook is sent once with a 1 s timeout and never retried, so a receiver
that is down or busy loses events and polling would be needed anyway; the pages poll
every few seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import kinds
from .intrusions import Intrusion, intruders
from .kinds.base import ReviewKind
from .labelstudio.client import Server, Size
from .pull import parse_export
from .routing import NO_LANGUAGE, ROLES
from .sites import Sites, as_sites
from .workspace import Workspace

STATUS = "status.json"
ONE_EDITOR = "not applicable (one editor per item)"


def blinding(kind: ReviewKind, recorded: str | None) -> str | None:
    """The batch's blinding as said to people: the recorded mode ("enforced" by separate
    servers, or "detected"), except that with one editor per item there is no second
    reader to keep them from."""
    return ONE_EDITOR if kind.per_item == 1 else recorded


@dataclass(frozen=True)
class ProjectProgress:
    """One project's progress: only its own annotator's work, as the pull decides it."""

    key: str
    role: str
    group: str
    annotator: str
    tasks: int
    done: int                # tasks with an accepted annotation by the annotator
    skipped: int             # tasks the annotator skipped
    remaining: int
    missing: bool = False    # the project is gone from the server
    intrusions: tuple[Intrusion, ...] = ()   # someone else's annotations, by email


STATUS_COLUMNS = ("group", "role", "annotator", "tasks", "done", "skipped", "remaining")


@dataclass(frozen=True)
class Status:
    batch_id: str
    blinding: str | None
    projects: list[ProjectProgress]
    left_out: int                       # sampled units no pair could take

    def rows(self) -> list[dict]:
        return [{name: getattr(p, name) for name in STATUS_COLUMNS} | {"missing": p.missing}
                for p in self.projects]

    def by(self, column: str) -> list[dict]:
        """Totals per annotator or per group (language; none for MAPLE's NO_LANGUAGE)."""
        totals: dict[str, dict] = {}
        for p in self.projects:
            if column == "group" and p.group == NO_LANGUAGE:
                continue
            row = totals.setdefault(getattr(p, column), {column: getattr(p, column),
                                                         "tasks": 0, "done": 0,
                                                         "skipped": 0, "remaining": 0})
            for name in ("tasks", "done", "skipped", "remaining"):
                row[name] += getattr(p, name)
        return [totals[key] for key in sorted(totals)]

    def intrusions(self) -> list[dict]:
        """One row per project and member who annotated (or changed an annotation) in a
        project assigned to someone else; on_behalf_of: whom they credited it to, when they
        made it for someone (intrusions.py)."""
        return [{"project": p.key, "annotator": p.annotator, "intruder": i.who,
                 "annotations": i.annotations, "on_behalf_of": i.on_behalf_of}
                for p in self.projects for i in p.intrusions]


def status(servers: Server | Sites, batch_id: str, *, workspace: Path | None = None) -> Status:
    """Progress per project: the project sizes (one request per server), then, where a
    project holds an annotation, its latest change; a project whose counters and latest
    change are those of the last reading keeps that reading (status.json), any other is
    exported and judged as the pull judges it (pull.parse_export), so another member's
    annotation is not counted as done but named as an intrusion."""
    files = Workspace(batch_id, workspace)
    ledger = files.ledger()
    sites = as_sites(servers)
    entries = ledger["projects"]
    items = {row["item_id"]: row for row in files.items().to_pylist()} if entries else {}
    readings = _read_readings(files.path(STATUS))
    by_server: dict[str, list[str]] = {}
    for key, entry in entries.items():
        by_server.setdefault(entry["server"], []).append(key)
    projects, kept = [], {}
    for url, keys in by_server.items():
        server = sites.server_for(url)
        sizes = server.project_sizes([entries[k]["project_id"] for k in keys])
        annotated = [entries[k]["project_id"] for k in keys
                     if sizes.get(entries[k]["project_id"], Size(0, False)).annotated]
        changes = server.latest_changes(annotated)
        stamps = {k: _stamp(entries[k]["project_id"], sizes.get(entries[k]["project_id"]),
                            changes.get(entries[k]["project_id"])) for k in keys}
        stale = [k for k in keys if entries[k]["project_id"] in annotated and
                 readings.get(k, {}).get("stamp") != stamps[k]]
        users = server.users(refresh=True) if stale else {}
        exports = server.exports([entries[k]["project_id"] for k in stale])
        for key in keys:
            entry = entries[key]
            size = sizes.get(entry["project_id"])
            if size is None:
                projects.append(ProjectProgress(key, entry["role"], entry["group"],
                                                entry["annotator"], 0, 0, 0, 0, missing=True))
                continue
            if key in stale:
                _, accepted, refused, skipped = parse_export(
                    exports[entry["project_id"]], ledger, entry, entry["project_id"], items,
                    users, server.url)
                reading = {"stamp": stamps[key],
                           "done": len({r["task_id"] for r in accepted}),
                           "skipped": len({r["task_id"] for r in skipped}),
                           "intrusions": [list(i) for i in
                                          intruders(refused, entry["annotator"])]}
            elif entry["project_id"] in annotated:
                reading = readings[key]
            else:
                reading = {"stamp": stamps[key], "done": 0, "skipped": 0, "intrusions": []}
            kept[key] = reading
            done, skips = reading["done"], reading["skipped"]
            projects.append(ProjectProgress(
                key, entry["role"], entry["group"], entry["annotator"], size.tasks, done,
                skips, max(size.tasks - done - skips, 0),
                intrusions=tuple(Intrusion(*i) for i in reading["intrusions"])))
    if kept != readings:
        files.write_json(STATUS, kept)
    projects.sort(key=lambda p: (p.group, ROLES.index(p.role)))
    left_out = len(files.routing().get("left_out", []))
    return Status(batch_id, blinding(kinds.of_config(ledger["config"]), ledger.get("blinding")),
                  projects, left_out)


def _stamp(project_id: int, size: Size | None, change: tuple[int, str] | None) -> list:
    """What must be unchanged for a project's last reading to hold: its id, task and
    annotation counters, and its latest-changed task and when."""
    return [project_id, size.tasks if size else None, size.annotations if size else None,
            size.skips if size else None, *(change or (None, None))]


def _read_readings(path: Path) -> dict[str, dict]:
    """The last status reading per project (status.json); none when the file is missing
    or unreadable (it is only a shortcut: everything is read again)."""
    try:
        readings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(readings, dict):
        return {}
    return {key: reading for key, reading in readings.items() if _well_formed(reading)}


def _well_formed(reading: object) -> bool:
    return isinstance(reading, dict) and isinstance(reading.get("stamp"), list) and \
        all(isinstance(reading.get(name), int) for name in ("done", "skipped")) and \
        isinstance(reading.get("intrusions"), list) and \
        all(isinstance(i, list) and len(i) == len(Intrusion._fields) and
            isinstance(i[0], str) and isinstance(i[1], int) and
            isinstance(i[2], (str, type(None))) for i in reading["intrusions"])
