"""Another member's work in a project: who (status names them) and giving the queue back.

Release (`review release`). A member who opens another's queue ("Label All Tasks")
takes tasks out of it: with maximum_annotations = 1 a task they submit counts as done
for the project, and the next task stays locked for them for TASK_LOCK_TTL (24 h; Label
Studio releases a lock only when its holder submits, and no API releases someone
else's). release() goes through each project (annotators' and adjudicators') with an
intrusion (an annotation or draft by someone else) and reports each one, with what it
did there (nothing where the only intrusion is an annotation credited to the annotator,
an edit of their label or one made on their behalf, which the annotator makes theirs by
saving it again): the refusals are appended to
refusals.jsonl first, then an intruder's annotation on a task the project's annotator
also worked on is deleted, and every other task of the batch in that project (no
annotation or draft by its annotator) is deleted and re-imported with the data it
held, which drops the intruder's annotations and locks (and anyone's unseen lock); the
new task comes last in the queue (on SQLite it may reuse a deleted id, so the refusal
log's task_id names the task as it was). A release cut short: the next `review push`
(`review adjudicate`) sends what is missing. A visit that left no annotation or draft
leaves nothing to detect: its lock expires.

Who did it. An annotation's completed_by is whom it is credited to and updated_by whose
login made its last change. Label Studio lets any login create an annotation credited to
someone else (the API's completed_by: "annotate as a user"); it then records the caller
as updated_by in the same save. So an annotation whose two differ and whose last change
is its creation (created_at and updated_at within ONE_SAVE) was made by updated_by on
behalf of completed_by: that person did nothing (an admin's annotation credited to the
assigned annotator is the admin's intrusion, not the annotator's work). Otherwise it is
the first of completed_by, updated_by who is not the project's annotator.

A push does not release: it reports, per project with an intrusion, who and what
`review release` would do there (release(dry_run=True): the same reading, nothing
changed on the server).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping, NamedTuple

from ..reports.render import plural
from .labelstudio.client import Server
from .pull import email_of, parse_export
from .sites import Sites, as_sites
from .workspace import Workspace

# Django stamps created_at and updated_at of one save microseconds apart (~40 µs measured
# on CE 1.23.2); an edit is another request, never within 10 ms of the creation.
ONE_SAVE = dt.timedelta(milliseconds=10)


class Intrusion(NamedTuple):
    """Someone other than a project's annotator, and how many of its annotations they made
    or last changed; on_behalf_of: whom they credited them to, when they made them for
    someone (module docstring)."""

    who: str
    annotations: int
    on_behalf_of: str | None = None

    def describe(self) -> str:
        """"bo@… 2 annotations", "admin@… 1 annotation made on behalf of ana@…"."""
        made = f"{self.who} {plural(self.annotations, 'annotation')}"
        return made + (f" made on behalf of {self.on_behalf_of}" if self.on_behalf_of else "")


def _made_in_one_save(refusal: dict) -> bool:
    try:
        created, updated = (dt.datetime.fromisoformat(refusal[name].replace("Z", "+00:00"))
                            for name in ("created_at", "updated_at"))
    except (AttributeError, TypeError, ValueError):   # a stamp missing: no claim
        return False
    return abs(updated - created) < ONE_SAVE


def _intruder(refusal: dict, assigned: str) -> tuple[str, str | None] | None:
    """(who made or last changed a refused annotation, whom they made it on behalf of),
    when that is not the assigned annotator's own doing (module docstring)."""
    if refusal["kind"] != "annotation":
        return None
    author, editor = refusal["completed_by"], refusal["updated_by"]
    if author and editor and author.lower() != editor.lower() and _made_in_one_save(refusal):
        return editor, author
    for who in (author, editor):
        if who and who.lower() != assigned.lower():
            return who, None
    return None


def intruders(refused: list[dict], assigned: str) -> tuple[Intrusion, ...]:
    """Each one other than the assigned annotator, with how many refusals, by email."""
    counts: dict[tuple[str, str | None], int] = {}
    for refusal in refused:
        found = _intruder(refusal, assigned)
        if found is not None:
            counts[found] = counts.get(found, 0) + 1
    return tuple(Intrusion(who, n, behalf) for (who, behalf), n in
                 sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")))


@dataclass(frozen=True)
class ProjectRelease:
    key: str
    title: str
    annotator: str
    intrusions: tuple[Intrusion, ...]   # as status names them
    logged: int          # refusals newly appended to refusals.jsonl
    deleted: int         # intruders' annotations deleted from tasks the annotator worked on
    recreated: int       # tasks deleted and imported again with the data they held
    applied: bool = True   # False: what a release would delete and re-import (dry run)

    def describe(self) -> str:
        """"de · annotator 1: bo@… 2 annotations; 2 refusals logged, 1 annotation deleted,
        1 task re-imported", or in a dry run "…; would delete 1 annotation and re-import
        1 task"."""
        who = "; ".join(i.describe() for i in self.intrusions) or "drafts only"
        deleted, recreated = (plural(self.deleted, "annotation"),
                              plural(self.recreated, "task"))
        if not self.applied:
            return f"{self.key}: {who}; would delete {deleted} and re-import {recreated}"
        return (f"{self.key}: {who}; {plural(self.logged, 'refusal')} logged, {deleted} "
                f"deleted, {recreated} re-imported")


def release(servers: Server | Sites, batch_id: str, *, workspace: Path | None = None,
            dry_run: bool = False, only: Collection[str] | None = None
            ) -> list[ProjectRelease]:
    """Give each annotator's (and adjudicator's) queue back what another member took
    (module docstring): in every project with another member's annotation or draft, log
    the refusals, then delete the intruders' annotations on tasks the project's annotator
    worked on, and delete and re-import, with the data it holds, every other task of the
    batch (which also drops locks no API releases). dry_run: log the refusals and say
    what would be deleted and re-imported, changing nothing on the servers. only: these
    projects (ledger keys) alone."""
    files = Workspace(batch_id, workspace)
    ledger = files.ledger()
    sites = as_sites(servers)
    items = {row["item_id"]: row for row in files.items().to_pylist()}
    users: dict[str, dict] = {}
    released = []
    for key, entry in sorted(ledger["projects"].items()):
        if only is not None and key not in only:
            continue
        server = sites.server_for(entry["server"])
        if server.url not in users:
            users[server.url] = server.users(refresh=True)
        project_id, assigned = entry["project_id"], entry["annotator"]
        export = server.export_annotations(project_id, all_tasks=True)
        _, _, refused, _ = parse_export(export, ledger, entry, project_id, items,
                                        users[server.url], server.url)
        found = intruders(refused, assigned)
        # An annotation credited to the annotator (an edit of their label, or one made on
        # their behalf) is the annotator's to save again: it alone takes nothing back.
        theirs = [r for r in refused if r["kind"] == "annotation" and
                  (r["completed_by"] or "").lower() != assigned.lower()]
        takes = bool(theirs) or any(r["kind"] == "draft" for r in refused)
        if not found and not takes:
            continue
        logged = files.append_refusals(refused)   # before deleting
        doomed, recreate = (_taken(export, batch_id, items, entry, theirs, users[server.url])
                            if takes else ([], []))
        if not dry_run:
            _apply(server, project_id, doomed, recreate)
        released.append(ProjectRelease(key, entry["title"], assigned, found, logged,
                                       len(doomed), len(recreate), applied=not dry_run))
    return released


def _taken(export: list[dict], batch_id: str, items: Mapping[str, dict], entry: dict,
           theirs: list[dict], users: Mapping[int, object]) -> tuple[list[int], list[dict]]:
    """What a release gives back in one project: the intruders' annotations on the tasks
    its annotator worked on (ids), and every other task of the batch there (to re-import)."""
    doomed, recreate = [], []
    for task in sorted(export, key=lambda t: t["id"]):
        data = task.get("data") or {}
        if data.get("batch_id") != batch_id or data.get("item_id") not in items or \
                items[data["item_id"]]["group"] != entry["group"]:
            continue                      # not an item of this project: left alone
        if _worked_on(task, entry["annotator"], users):
            doomed += [r["annotation_id"] for r in theirs if r["task_id"] == task["id"]]
        else:
            recreate.append(task)
    return doomed, recreate


def _apply(server: Server, project_id: int, doomed: list[int], recreate: list[dict]) -> None:
    """Delete the intruders' annotations, then the tasks to recreate, and import them again
    with the data they held."""
    for annotation_id in doomed:
        server.delete_annotation(annotation_id)
    for task in recreate:
        server.delete_task(task["id"])
    if recreate:   # cut short here: `review push` (`review adjudicate`) sends the rest
        server.import_tasks(project_id, [task["data"] for task in recreate])


def _worked_on(task: dict, assigned: str, users: Mapping[int, object]) -> bool:
    """Whether the assigned annotator made an annotation or a draft on this task."""
    made = [a.get("completed_by") for a in task.get("annotations") or []] + \
        [d.get("user") for d in task.get("drafts") or []]
    return any((email_of(who, users) or "").lower() == assigned.lower() for who in made)
