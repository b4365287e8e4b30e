"""Push a review batch to Label Studio, and its adjudication (SPEC §5). The rest of the loop:
sites.py (servers, blinding), accounts.py, pull.py (attribution), status.py, intrusions.py
(`review release`), workspace.py (the files of a batch).

Label Studio's free edition (CE 1.23.2) has one organisation per server, no roles, no task
assignment and no per-user visibility: every account can open every project, read every
annotation and edit it (projects/mixins.py: "LSO always runs a single organization";
every permission is `is_authenticated`; ProjectMember is never checked). So overlap,
routing, attribution and adjudication come from our side, and blinding from the servers:

- Routing (routing.py). Each unit's group (the non-English languages it shows) goes to one
  pair of annotators who read them. One project per group and slot: "<batch> · ar ·
  annotator 1", "<batch> · ar · annotator 2" (MAPLE pairs: "<batch> · annotator 1"), each
  holding the group's items once, so the overlap is exactly two by construction and each
  annotator has one queue per language. Target-language text is laid out right to left
  for ar / fa / ur (LabelConfig.laid_out). A slot's annotator never changes once recorded.
- Adjudication. The items whose initial annotators disagree (agreement.queue_frame over
  the final labels) go to "<batch> · <group> · adjudication", assigned per group to an
  adjudicator who reads the group and is neither of its annotators. Each task shows the
  unit and, per criterion, the two answers unnamed or the agreed value that is kept
  (configs.adjudication_payload). The pull reads back the disputed criteria only, and
  agreement.final_frame applies an adjudication to a criterion only while it is
  disputed. A re-push sends the items that are open and not yet in the project.
- Skips. Label Studio takes a skipped task out of its annotator's queue for good (only
  "Cancel skip" in its data manager brings it back). The pull records every skip by a
  project's own annotator in skips.json (rewritten from the server each pull); the
  adjudication queue lists an open item whose adjudication was skipped as "skipped", with
  what to do, and push_adjudication(reoffer=True) (`review adjudicate --reoffer`) deletes
  those skip annotations so the task is offered again.
- MAPLE realism blinding: a task holds only the two query texts as A and B; which source
  is shown as A stays in the workspace (assignments.jsonl, items.parquet source_a/b).
- Idempotent, resumable push: every task carries our item_id and batch_id. A push lists
  each project's tasks first and imports only the missing items, in chunks, never letting
  the SDK retry an import. Re-pushing a complete batch sends nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pyarrow as pa

from ..errors import InputError
from . import agreement, configs, kinds, routing
from .accounts import AccountNote, ensure_accounts
from .batches import ReviewBatch
from .intrusions import ProjectRelease, release
from .labelstudio.client import CHUNK_SIZE, Server, Task
from .routing import ADJUDICATION, ROLES, SLOTS, Annotator
from .schemas import Progress
from .sites import Sites, as_sites
from .status import blinding as said_blinding
from .workspace import (
    LEDGER,
    ROUTING,
    SKIPS,
    Workspace,
    append_private,
    now,
    project_description,
    project_key,
    project_title,
)

TITLE_LIMIT = 50   # Label Studio's PROJECT_TITLE_MAX_LEN


@dataclass(frozen=True)
class ProjectPush:
    key: str
    role: str
    group: str
    title: str
    project_id: int
    annotator: str
    server: str
    n_items: int          # items this project should hold
    existing: int         # of them already on the server before this push
    sent: int             # imported by this push
    duplicates: tuple[str, ...] = ()   # item ids held by more than one task (reported)


@dataclass(frozen=True)
class PushReport:
    batch_id: str
    projects: list[ProjectPush]
    accounts: list[AccountNote]
    routing: dict                      # pairs, left_out, shortfall (routing.json)
    blinding: str | None               # "enforced" | "detected" | status.ONE_EDITOR
    queue: pa.Table | None = None      # adjudication pushes: the open items pushed
    skipped: tuple[dict, ...] = ()     # adjudication pushes: open items still skipped
    reoffered: tuple[dict, ...] = ()   # adjudication pushes: skips deleted by this push
    # A re-push: each project someone else worked in, and what `review release` would do
    # there (intrusions.release, dry run). A push never releases: the manager decides.
    intrusions: tuple[ProjectRelease, ...] = ()

    def intrusion_notes(self) -> list[str]:
        """What to tell the manager about intrusions: a line naming the command, then one
        per project (who, how many, what a release would delete and re-import)."""
        if not self.intrusions:
            return []
        return [f"Someone other than the assigned annotator worked in "
                f"{len(self.intrusions)} project(s); nothing was released. `python -m audit "
                f"review release {self.batch_id}` would:"] + \
            [project.describe() for project in self.intrusions]

    @property
    def sent(self) -> int:
        return sum(p.sent for p in self.projects)

    @property
    def credentials(self) -> list[AccountNote]:
        return [a for a in self.accounts if a.created]


def _annotators(annotators: Sequence[Annotator | str] | Mapping[str, Sequence[str]]
                ) -> list[Annotator]:
    if isinstance(annotators, Mapping):
        return routing.parse_annotators(annotators)
    parsed = [a if isinstance(a, Annotator) else routing.parse_annotator(a)
              for a in annotators]
    if len({a.email for a in parsed}) != len(parsed):
        raise InputError("annotators", "an annotator is listed twice",
                         expected="each annotator once")
    return parsed


def push(servers: Server | Sites, batch: ReviewBatch,
         annotators: Sequence[Annotator | str] | Mapping[str, Sequence[str]], *,
         workspace: Path | None = None, chunk_size: int = CHUNK_SIZE,
         progress: Progress | None = None) -> PushReport:
    """Route the batch, make sure every routed annotator has a working account, and push
    each group's items to its two projects (module docstring). Idempotent and resumable.
    `annotators`: specs such as "ana@example.org:ar,fa" (one shared server), or
    {side: [specs]} for one server per side."""
    sites = as_sites(servers)
    people = _annotators(annotators)
    sided = any(a.side for a in people)
    if sided != sites.enforced:
        raise InputError("annotators", "annotators are declared per side but the two sides "
                         "and adjudication do not have three different servers" if sided else
                         "each role has its own server but the annotators are not declared "
                         "per side",
                         expected="annotators per side exactly when annotator 1, annotator 2 "
                                  "and adjudication each have a server of their own")
    files = Workspace(batch.batch_id, workspace)
    ledger = files.record(batch)
    declared = {a.email for a in people}
    for group, pair in sorted(ledger["pairs"].items()):
        absent = [email for email in pair if email not in declared]
        if absent:
            raise InputError(files.path(LEDGER), f"group {group or '(MAPLE)'} of batch "
                             f"{batch.batch_id} is assigned to {' and '.join(pair)}; "
                             f"{', '.join(absent)} is not among the annotators given",
                             expected="the recorded annotators (a slot's annotator never "
                                      "changes)")
    kind = kinds.of_config(batch.config)
    size = kind.per_item
    routed = routing.route(batch.item_ids, batch.groups, people,
                           fixed={g: tuple(p) for g, p in ledger["pairs"].items()}, size=size)
    if not routed.pairs:
        who = "two annotators" if size > 1 else "an editor"
        raise InputError("annotators", f"no group of this batch has {who} who read it: "
                         + "; ".join(sorted({r for _, r in routed.left_out.values()})),
                         expected="annotators whose declared languages cover the batch")
    longest = max((project_title(batch.batch_id, ADJUDICATION, g) for g in routed.pairs),
                  key=len)
    if len(longest) > TITLE_LIMIT:
        raise InputError("batch id", f"{batch.batch_id!r} makes project titles such as "
                         f"{longest!r} ({len(longest)} characters)",
                         expected=f"a batch id short enough for Label Studio's "
                                  f"{TITLE_LIMIT}-character project titles")
    blinding = "enforced" if sites.enforced else "detected"
    ledger.update(blinding=blinding, pairs={g: list(p) for g, p in routed.pairs.items()},
                  servers={role: sites.role(role).url for role in ROLES})
    files.write_json(LEDGER, ledger)
    files.write_json(ROUTING, routed.as_json())
    people_at: dict[str, tuple[Server, set[str]]] = {}
    for pair in routed.pairs.values():
        for slot, email in zip(SLOTS, pair):
            server = sites.role(slot)
            people_at.setdefault(server.url, (server, set()))[1].add(email)
    notes = []
    for server, emails in people_at.values():
        notes += ensure_accounts(server, sorted(emails), files.folder, ledger)
    files.write_json(LEDGER, ledger)
    by_group: dict[str, list[dict]] = {}
    for task in batch.tasks:
        if task["item_id"] in routed.items:
            by_group.setdefault(routed.items[task["item_id"]], []).append(task)
    known = _listings(sites, SLOTS, batch.batch_id)
    reports = []
    for group in sorted(by_group):
        form = kind.forms(ledger.get("settings"))[0]
        label_config = form.laid_out(configs.direction_of(routing.group_languages(group)))
        for slot, email in zip(SLOTS, routed.pairs[group]):
            server = sites.role(slot)
            reports.append(_push_project(server, files, ledger, slot, group, email,
                                         label_config, by_group[group], chunk_size,
                                         progress, known[server.url], batch.predictions))
    # A project that held none of its items before this push holds no one's work yet.
    held = [p.key for p in reports if p.existing]
    found = release(sites, batch.batch_id, workspace=workspace, dry_run=True,
                    only=held) if held else []
    return PushReport(batch.batch_id, reports, notes, routed.as_json(),
                      said_blinding(kind, blinding), intrusions=tuple(found))


def push_adjudication(servers: Server | Sites, batch_id: str,
                      adjudicators: Sequence[Annotator | str], *,
                      workspace: Path | None = None, chunk_size: int = CHUNK_SIZE,
                      progress: Progress | None = None, reoffer: bool = False) -> PushReport:
    """Push the open items of the adjudication queue (from the pulled table) to each
    group's adjudication project, assigned to an adjudicator who reads the group and is
    neither of its annotators (routing.route_adjudicators). An open item its adjudicator
    skipped is reported (`skipped`), or with reoffer=True offered again (`reoffered`)."""
    sites = as_sites(servers)
    files = Workspace(batch_id, workspace)
    ledger = files.ledger()
    people = _annotators(adjudicators)
    if not people:
        raise InputError("adjudicators", "none given", expected=f"at least one "
                         f"{routing.EXAMPLE}")
    annotating = {email for pair in ledger["pairs"].values() for email in pair}
    if sites.enforced and annotating & {a.email for a in people}:
        raise InputError("adjudicators", f"{', '.join(sorted(annotating & {a.email for a in people}))}"
                         " also annotate(s) on a side server",
                         expected="adjudicators with no account on either side's server")
    table = files.annotations()
    if table is None:
        raise InputError(files.path("annotations.parquet"), "nothing pulled yet",
                         expected="a pull before pushing adjudication")
    kind = kinds.of_config(ledger["config"])
    review, twin = kind.forms(ledger.get("settings"))
    items = {row["item_id"]: row for row in files.items().to_pylist()}
    if twin is None:
        raise InputError(files.path(LEDGER), f"a {kind.name} batch", expected="a batch "
                         "whose kind is adjudicated (two annotators an item)")
    if kind.adjudicate is not None:    # a kind of its own queue and tasks (error spans)
        adjudication = kind.adjudicate(files, table)
        queue, payloads, predictions = (adjudication.queue, adjudication.payloads,
                                        adjudication.predictions)
    else:
        final = agreement.final_frame(agreement.prepare(table))
        queue, predictions = agreement.queue_frame(final), None
        tasks = files.tasks()
        payloads = {item: configs.adjudication_payload(review, twin, tasks[item], *dispute)
                    for item, dispute in _disputes(final, items).items()}
    open_items = queue.filter(queue["state"] == "open")
    groups = {item_id: items[item_id]["group"] for item_id in open_items["item_id"]}
    pairs = {g: tuple(p) for g, p in ledger["pairs"].items()}
    fixed = {e["group"]: e["annotator"] for e in ledger["projects"].values()
             if e["role"] == ADJUDICATION}
    chosen, missing = routing.route_adjudicators(set(groups.values()) - set(fixed), people,
                                                 pairs)
    chosen |= fixed
    notes = ensure_accounts(sites.role(ADJUDICATION), sorted(set(chosen.values())),
                            files.folder, ledger)
    files.write_json(LEDGER, ledger)
    known = _listings(sites, (ADJUDICATION,), batch_id)
    reports = []
    for group in sorted(set(groups.values()) & set(chosen)):
        ids = [i for i in open_items["item_id"].to_list() if groups[i] == group]
        label_config = twin.laid_out(configs.direction_of(routing.group_languages(group)))
        server = sites.role(ADJUDICATION)
        reports.append(_push_project(server, files, ledger, ADJUDICATION, group,
                                     chosen[group], label_config, [payloads[i] for i in ids],
                                     chunk_size, progress, known[server.url], predictions))
    unrouted = {i: (g, missing[g]) for i, g in groups.items() if g in missing}
    skipped = [s for s in files.skips()
               if s["role"] == ADJUDICATION and s["item_id"] in groups]
    reoffered = _reoffer(sites, files, skipped) if reoffer else []
    return PushReport(batch_id, reports, notes,
                      {"pairs": {g: [a] for g, a in sorted(chosen.items())},
                       "left_out": [{"item_id": i, "group": g, "reason": r}
                                    for i, (g, r) in sorted(unrouted.items())],
                       "shortfall": []},
                      ledger.get("blinding") or "detected", queue=open_items.to_arrow(),
                      skipped=tuple(s for s in skipped if s not in reoffered),
                      reoffered=tuple(reoffered))


def _reoffer(sites: Sites, files: Workspace, skipped: list[dict]) -> list[dict]:
    """Delete the skip annotations of these skips (the task returns to its annotator's
    queue) and drop them from skips.json; the skips stay in skips.log.jsonl."""
    for skip in skipped:
        sites.server_for(skip["server"]).delete_annotation(skip["annotation_id"])
    if skipped:
        append_private(files.path("skips.log.jsonl"), "".join(
            json.dumps(skip | {"reoffered_at": now()}, sort_keys=True) + "\n"
            for skip in skipped))
        gone = {s["annotation_id"] for s in skipped}
        files.write_json(SKIPS, [s for s in files.skips() if s["annotation_id"] not in gone])
    return skipped


def reoffer_hint(batch_id: str) -> str:
    return (f"skipped in Label Studio, so its adjudicator's queue no longer offers it: "
            f"`python -m audit review adjudicate {batch_id} --reoffer` (or the Annotations "
            f"page's \"Also offer the skipped items again\" box) offers it again")


def queue_with_skips(queue: pa.Table, skips: Sequence[dict], batch_id: str) -> pa.Table:
    """The adjudication queue with an open item its adjudicator skipped as state
    "skipped", who skipped it, and what to do."""
    skipped_by: dict[str, str] = {s["item_id"]: s["annotator"] for s in skips
                                  if s["role"] == ADJUDICATION}
    ids, states = queue.column("item_id").to_pylist(), queue.column("state").to_pylist()
    marked = [i in skipped_by and state == "open" for i, state in zip(ids, states)]
    return (queue.set_column(queue.schema.get_field_index("state"), "state",
                             pa.array(["skipped" if m else s for m, s in zip(marked, states)]))
            .append_column("skipped_by", pa.array([skipped_by[i] if m else None
                                                   for i, m in zip(ids, marked)], pa.string()))
            .append_column("todo", pa.array([reoffer_hint(batch_id) if m else None
                                             for m in marked], pa.string())))


def _disputes(final, items: Mapping[str, dict]) -> dict[str, tuple[dict, dict]]:
    """item -> ({disputed criterion: the two initial answers}, {agreed criterion: value})
    as the annotators saw them (realism letters back in the shown A/B order)."""
    out: dict[str, tuple[dict, dict]] = {}
    lettered = {kind.annotation for kind in kinds.KINDS.values() if kind.shown_order}
    for row in final.iter_rows(named=True):
        answers, agreed = out.setdefault(row["item_id"], ({}, {}))
        values = list(row["initial_values"])
        if row["kind"] in lettered:
            values = [_shown(items[row["item_id"]], v) for v in values]
        if row["status"] in ("disagreement", "adjudicated"):
            answers[row["criterion"]] = (values + [None, None])[:2]
        elif row["origin"] == "agreed":
            agreed[row["criterion"]] = (_shown(items[row["item_id"]], row["value"])
                                        if row["kind"] in lettered else row["value"])
    return out


def _shown(item: Mapping, value: str | None) -> str | None:
    """A setting-relative preference as the letter shown to the annotators."""
    first = agreement.split_setting(item["setting"])[0]
    if item["source_a"] == first or value not in ("A", "B"):
        return value
    return {"A": "B", "B": "A"}[value]


def _listings(sites: Sites, roles: Sequence[str], batch_id: str) -> dict[str, list]:
    """The batch's projects already on each server, listed once per push."""
    return {sites.role(role).url: sites.role(role).projects(containing=batch_id)
            for role in roles}


def _push_project(server: Server, files: Workspace, ledger: dict, role: str, group: str,
                  email: str, label_config: str, tasks: list[dict], chunk_size: int,
                  progress: Progress | None, known: list,
                  predictions: Mapping[str, list[dict]] | None = None) -> ProjectPush:
    batch_id = ledger["batch_id"]
    key = project_key(group, role)
    recorded = ledger["projects"].get(key)
    if recorded and recorded["annotator"].lower() != email.lower():
        raise InputError(files.path(LEDGER), f"{key} of batch {batch_id} is assigned to "
                         f"{recorded['annotator']}, not {email}",
                         expected="the recorded annotator (a slot's annotator never changes)")
    title = project_title(batch_id, role, group)
    description = project_description(batch_id, ledger["kind"], role, email, group)
    project = server.ensure_project(title, label_config, description, known)
    created = all(p.id != project.id for p in known)
    if email.lower() not in project.description.lower():
        raise InputError(f"Label Studio project {project.id} ({title})",
                         f"its description does not name {email}: {project.description!r}",
                         expected=f"a project assigned to {email}")
    # Record the project before sending anything, so a crash mid-push is resumable.
    entry = {"title": title, "project_id": project.id, "annotator": email, "role": role,
             "group": group, "server": server.url}
    if ledger["projects"].get(key) != entry:
        ledger["projects"][key] = entry
        files.write_json(LEDGER, ledger)
    held = [] if created else server.list_tasks(project.id)
    present = {t.item_id for t in held}
    missing = [i for i, task in enumerate(tasks) if task["item_id"] not in present]
    wanted = {task["item_id"] for task in tasks}
    send = [tasks[i] for i in missing]

    def report(sent: int, total: int) -> None:
        if progress is not None:
            progress(title, sent, total)

    report(0, len(send))
    if send:
        server.import_tasks(project.id, send, chunk_size=chunk_size, progress=report,
                            predictions=None if predictions is None else [
                                predictions.get(task["item_id"], []) for task in send])
    return ProjectPush(key, role, group, title, project.id, email, server.url, len(tasks),
                       len(wanted & present), len(send), _duplicates(held))


def _duplicates(tasks: list[Task]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    for task in tasks:
        if task.item_id is not None:
            seen[task.item_id] = seen.get(task.item_id, 0) + 1
    return tuple(sorted(item for item, count in seen.items() if count > 1))
