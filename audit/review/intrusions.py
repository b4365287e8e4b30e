"""Another member's work in a project: who (status names them) and giving the queue back.

Release (`review release`). A member who opens another's queue ("Label All Tasks")
takes tasks out of it: with maximum_annotations = 1 a task they submit counts as done
for the project, and the next task stays locked for them for TASK_LOCK_TTL (24 h; Label
Studio releases a lock only when its holder submits, and no API releases someone
else's). release() goes through each project (annotators' and adjudicators') with an
intrusion (an annotation or draft by someone else): the refusals are appended to
refusals.jsonl first, then an intruder's annotation on a task the project's annotator
also worked on is deleted, and every other task of the batch in that project (no
annotation or draft by its annotator) is deleted and re-imported with the data it
held, which drops the intruder's annotations and locks (and anyone's unseen lock); the
new task comes last in the queue (on SQLite it may reuse a deleted id, so the refusal
log's task_id names the task as it was). A release cut short: the next `review push`
(`review adjudicate`) sends what is missing. A visit that left no annotation or draft
leaves nothing to detect: its lock expires.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .labelstudio.client import Server
from .pull import email_of, parse_export
from .sites import Sites, as_sites
from .workspace import Workspace


def _intruder(refusal: dict, assigned: str) -> str | None:
    """Who other than the assigned annotator made or last changed a refused annotation."""
    if refusal["kind"] != "annotation":
        return None
    for who in (refusal["completed_by"], refusal["updated_by"]):
        if who and who.lower() != assigned.lower():
            return who
    return None


def intruders(refused: list[dict], assigned: str) -> tuple[tuple[str, int], ...]:
    """(someone other than the assigned annotator, how many refusals) by email."""
    counts: dict[str, int] = {}
    for refusal in refused:
        who = _intruder(refusal, assigned)
        if who is not None:
            counts[who] = counts.get(who, 0) + 1
    return tuple(sorted(counts.items()))


@dataclass(frozen=True)
class ProjectRelease:
    key: str
    title: str
    annotator: str
    intrusions: tuple[tuple[str, int], ...]   # as status names them
    logged: int          # refusals newly appended to refusals.jsonl
    deleted: int         # intruders' annotations deleted from tasks the annotator worked on
    recreated: int       # tasks deleted and imported again with the data they held


def release(servers: Server | Sites, batch_id: str, *, workspace: Path | None = None
            ) -> list[ProjectRelease]:
    """Give each annotator's (and adjudicator's) queue back what another member took
    (module docstring): in every project with another member's annotation or draft, log
    the refusals, then delete the intruders' annotations on tasks the project's annotator
    worked on, and delete and re-import, with the data it holds, every other task of the
    batch (which also drops locks no API releases)."""
    files = Workspace(batch_id, workspace)
    ledger = files.ledger()
    sites = as_sites(servers)
    items = {row["item_id"]: row for row in files.items().to_pylist()}
    users: dict[str, dict] = {}
    released = []
    for key, entry in sorted(ledger["projects"].items()):
        server = sites.server_for(entry["server"])
        if server.url not in users:
            users[server.url] = server.users(refresh=True)
        project_id, assigned = entry["project_id"], entry["annotator"]
        export = server.export_annotations(project_id, all_tasks=True)
        _, _, refused, _ = parse_export(export, ledger, entry, project_id, items,
                                        users[server.url], server.url)
        theirs = [r for r in refused if r["kind"] == "annotation" and
                  (r["completed_by"] or "").lower() != assigned.lower()]
        if not theirs and not any(r["kind"] == "draft" for r in refused):
            continue      # (an edit of the annotator's own label is theirs to redo)
        logged = files.append_refusals(refused)   # before deleting
        deleted, recreate = 0, []
        for task in sorted(export, key=lambda t: t["id"]):
            data = task.get("data") or {}
            if data.get("batch_id") != batch_id or data.get("item_id") not in items or \
                    items[data["item_id"]]["group"] != entry["group"]:
                continue                      # not an item of this project: left alone
            if _worked_on(task, assigned, users[server.url]):
                for refusal in theirs:
                    if refusal["task_id"] == task["id"]:
                        server.delete_annotation(refusal["annotation_id"])
                        deleted += 1
            else:
                recreate.append(task)
        for task in recreate:
            server.delete_task(task["id"])
        if recreate:   # cut short here: `review push` (`review adjudicate`) sends the rest
            server.import_tasks(project_id, [task["data"] for task in recreate])
        released.append(ProjectRelease(key, entry["title"], assigned,
                                       intruders(refused, assigned), logged, deleted,
                                       len(recreate)))
    return released


def _worked_on(task: dict, assigned: str, users: Mapping[int, object]) -> bool:
    """Whether the assigned annotator made an annotation or a draft on this task."""
    made = [a.get("completed_by") for a in task.get("annotations") or []] + \
        [d.get("user") for d in task.get("drafts") or []]
    return any((email_of(who, users) or "").lower() == assigned.lower() for who in made)
