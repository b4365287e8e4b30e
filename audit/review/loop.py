"""The review loop with a real Label Studio: push batches, pull annotations back (SPEC §5).

Label Studio's free edition has no task assignment, no overlap control, no roles and no
reviewer step: every member of the organisation can open every project and edit every task.
Overlap, blinding and adjudication therefore come from our side:

- One project per annotator slot. A batch becomes the projects "<batch> · annotator 1" and
  "<batch> · annotator 2", each holding every item of the batch once. Each initial
  annotator works only in their own project, so neither sees the other's labels, and the
  overlap is exactly two by construction. The assigned annotator's email is written in the
  project description (what the annotator reads) and in the workspace ledger (what the pull
  trusts). A slot's annotator never changes once recorded.
- The assignment is enforced when pulling, since the server cannot enforce it: an annotation
  counts only when its completed_by is the annotator assigned to that project. Any other
  annotation (another member, the admin, a skipped task, a result that does not parse, a
  task that is not ours) is reported as rejected with its reason, never silently dropped.
- Adjudication: items whose two initial annotators disagree on any criterion
  (agreement.adjudication_queue over the pulled table) go to a third project
  "<batch> · adjudication", assigned to an adjudicator who is neither initial annotator;
  its annotations are pulled with role "adjudication". The task meta names the criteria in
  disagreement. Re-pushing adds items that entered the queue since; items that left it stay.
- MAPLE realism blinding: a task holds only the two query texts as A and B
  (configs.realism_payload). Which source is shown as A (maple.assign_order's swap) is kept
  in the workspace only: assignments.jsonl (the blinding key) and items.parquet. A pulled
  preference keeps the annotator's choice as shown ("A" | "Tie" | "B") with source_a /
  source_b, the unblinded sources shown as A and B, so agreement.py maps it back to the
  setting's order ("A" = the setting's first-named source).
- Idempotent, resumable push: every task carries our item_id (and batch_id) in its data. A
  push lists the project's tasks first and imports only the items whose id is missing, in
  chunks of CHUNK_SIZE tasks per request, never letting the SDK retry an import (a retried
  POST whose first answer was lost would duplicate tasks). A server that dies mid-push keeps
  every chunk it stored; the next push sends only what is missing. Re-pushing a complete
  batch sends nothing.
- Pull: each project is exported as full JSON and parsed: Rating -> "1".."5", Choices -> the
  choice, TextArea -> the text; one row per (annotation, control of the config), value null
  for a control left unanswered. Rows are appended to annotations.parquet keyed by
  (annotation_id, updated_at): a version already in the table is not added again, so pulling
  twice leaves the file byte-identical (it is not even rewritten), an edited annotation adds
  its new version (agreement.py counts the latest), and annotations stay in the table after
  their Label Studio project is deleted (the pull then reports the project missing).

Workspace (data/reviews/<batch>/, gitignored; every file written atomically):

    ledger.json          batch id, config, kind; projects: slot -> title, project_id,
                         annotator, role, server
    items.parquet        one row per item: item_id, cluster_id, kind, language, unit,
                         setting, source_a, source_b
    tasks.jsonl          the task data as pushed, one item per line, in batch order
    manifest.json        translation batches: the sampling manifest
    assignments.jsonl    realism batches: the blinding key (maple.write_assignments)
    annotations.parquet  ANNOTATION_SCHEMA: agreement.py's long table + project_id, task_id
    rejected.json        the annotations the latest pull refused, with reasons
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..outputs import REPO, staged_file, write_json
from ..readers import Release
from . import agreement, configs, maple, sampling
from .labelstudio import CHUNK_SIZE, Server, Task

REVIEWS = REPO / "data" / "reviews"
SLOTS = ("annotator 1", "annotator 2")
ADJUDICATION = "adjudication"
ROLES = {SLOTS[0]: "initial", SLOTS[1]: "initial", ADJUDICATION: "adjudication"}

ITEM_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("kind", pa.string()),
    ("language", pa.string()), ("unit", pa.string()), ("setting", pa.string()),
    ("source_a", pa.string()), ("source_b", pa.string()),
])
ANNOTATION_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("kind", pa.string()),
    ("language", pa.string()), ("unit", pa.string()), ("setting", pa.string()),
    ("annotator", pa.string()), ("role", pa.string()), ("criterion", pa.string()),
    ("value", pa.string()), ("annotation_id", pa.int64()),
    ("updated_at", pa.timestamp("us", tz="UTC")),
    ("source_a", pa.string()), ("source_b", pa.string()),
    ("project_id", pa.int64()), ("task_id", pa.int64()),
])

Progress = Callable[[str, int, int], None]   # (project title, sent, to send)


# ------------------------------------------------------------------------- batches

@dataclass(frozen=True)
class ReviewBatch:
    """What a push needs: the config, one task payload per item, and the item table.
    `items` and `tasks` are in the same order."""

    batch_id: str
    config: str                      # a configs.KINDS member
    items: pa.Table                  # ITEM_SCHEMA
    tasks: list[dict]                # task data (configs.task_payload), item_id first
    manifest: dict | None = None     # translation: the sampling manifest
    assignments: list[maple.RealismItem] | None = None   # realism: the blinding key

    @property
    def kind(self) -> str:
        return configs.ANNOTATION_KINDS[self.config]

    @property
    def item_ids(self) -> list[str]:
        return [task["item_id"] for task in self.tasks]


def translation_batch(batch: sampling.Batch, release: Release,
                      batch_id: str | None = None) -> ReviewBatch:
    """A sampled batch of translation units; the cluster is the source row. The batch id
    is the sample's (its manifest hash) unless `batch_id` is given."""
    batch_id = batch_id or batch.batch_id
    texts = sampling.unit_texts(release, batch.units)
    tasks = [configs.translation_payload(t, batch_id) for t in texts]
    units = batch.units
    n = units.num_rows
    items = pa.table({
        "item_id": units["item_id"], "cluster_id": units["row_id"],
        "kind": pa.array(["translation"] * n, pa.string()),
        "language": units["language"], "unit": units["unit"],
        "setting": pa.nulls(n, pa.string()), "source_a": pa.nulls(n, pa.string()),
        "source_b": pa.nulls(n, pa.string())}).cast(ITEM_SCHEMA)
    return ReviewBatch(batch_id, "translation_review", items, tasks, manifest=batch.manifest)


def realism_batch(items: Sequence[maple.RealismItem], batch_id: str | None = None
                  ) -> ReviewBatch:
    """Blind query pairs (maple.assign_order); the cluster is the pair."""
    items = list(items)
    batch_id = batch_id or _content_id("realism", [i.item_id for i in items])
    tasks = [configs.realism_payload(item, batch_id) for item in items]
    table = pa.Table.from_pylist([
        {"item_id": i.item_id, "cluster_id": i.pair_id, "kind": "realism", "language": None,
         "unit": None, "setting": i.setting, "source_a": i.shown_a_source,
         "source_b": i.shown_b_source} for i in items], schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, "maple_realism", table, tasks, assignments=items)


def relevance_batch(pairs: Sequence[maple.RelevancePair], batch_id: str | None = None
                    ) -> ReviewBatch:
    """Query–paper pairs; the cluster is the query."""
    pairs = list(pairs)
    batch_id = batch_id or _content_id("relevance", [p.pair_id for p in pairs])
    tasks = [configs.relevance_payload(pair, batch_id) for pair in pairs]
    table = pa.Table.from_pylist([
        {"item_id": task["item_id"], "cluster_id": pair.query_id, "kind": "relevance",
         "language": None, "unit": None, "setting": None, "source_a": None, "source_b": None}
        for pair, task in zip(pairs, tasks)], schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, "maple_relevance", table, tasks)


def _content_id(prefix: str, ids: list[str]) -> str:
    return f"{prefix}-" + hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]


# ------------------------------------------------------------------------- workspace

def batch_dir(batch_id: str, workspace: Path = REVIEWS) -> Path:
    if not batch_id or "/" in batch_id or batch_id.startswith("."):
        raise ValueError(f"bad batch id {batch_id!r}")
    return Path(workspace) / batch_id


def project_title(batch_id: str, slot: str) -> str:
    return f"{batch_id} · {slot}"


def project_description(batch_id: str, kind: str, slot: str, email: str) -> str:
    return (f"Review batch {batch_id} ({kind}), {slot}. Assigned to {email}: only "
            f"{email} annotates this project; annotations by anyone else are rejected "
            f"when pulled.")


def read_ledger(batch_id: str, workspace: Path = REVIEWS) -> dict:
    path = batch_dir(batch_id, workspace) / "ledger.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such review batch in the workspace",
                         expected="a batch pushed with audit.review.loop.push") from None


def _write_json_atomic(path: Path, value: object) -> None:
    with staged_file(path) as staging:
        write_json(staging, value)


def _record_batch(batch: ReviewBatch, workspace: Path) -> tuple[Path, dict]:
    """Write the batch's items, tasks and keys once; later pushes must match them."""
    folder = batch_dir(batch.batch_id, workspace)
    items_path = folder / "items.parquet"
    if items_path.exists():
        recorded = pq.read_table(items_path).column("item_id").to_pylist()
        if recorded != batch.item_ids:
            raise InputError(items_path, f"batch {batch.batch_id} was recorded with other "
                             f"items ({len(recorded)} recorded, {len(batch.item_ids)} given)",
                             expected="the same batch, or a new batch id")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        with staged_file(folder / "tasks.jsonl") as staging:
            staging.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n"
                                       for t in batch.tasks), encoding="utf-8")
        if batch.manifest is not None:
            sampling.write_manifest(folder / "manifest.json", batch.manifest)
        if batch.assignments is not None:
            maple.write_assignments(folder / "assignments.jsonl", batch.assignments)
        with staged_file(items_path) as staging:   # last: its presence means "recorded"
            pq.write_table(batch.items.cast(ITEM_SCHEMA), staging)
    ledger_path = folder / "ledger.json"
    if ledger_path.exists():
        ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    else:
        ledger = {"batch_id": batch.batch_id, "config": batch.config, "kind": batch.kind,
                  "n_items": len(batch.tasks), "projects": {}}
        _write_json_atomic(ledger_path, ledger)
    return folder, ledger


def _read_tasks(folder: Path) -> dict[str, dict]:
    lines = (folder / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return {task["item_id"]: task for task in map(json.loads, filter(None, lines))}


# ------------------------------------------------------------------------- push

@dataclass(frozen=True)
class ProjectPush:
    slot: str
    title: str
    project_id: int
    annotator: str
    n_items: int          # items this project should hold
    existing: int         # of them already on the server before this push
    sent: int             # imported by this push
    duplicates: tuple[str, ...] = ()   # item ids held by more than one task (reported)


@dataclass(frozen=True)
class PushReport:
    batch_id: str
    projects: list[ProjectPush]
    queue: pa.Table | None = None      # adjudication pushes: the queue pushed

    @property
    def sent(self) -> int:
        return sum(p.sent for p in self.projects)


def push(server: Server, batch: ReviewBatch, annotators: Sequence[str], *,
         workspace: Path = REVIEWS, chunk_size: int = CHUNK_SIZE,
         progress: Progress | None = None) -> PushReport:
    """Push a batch to one project per initial annotator (module docstring): idempotent
    and resumable. `annotators` are the two annotators' emails, in slot order."""
    annotators = [a.strip() for a in annotators]
    if len(annotators) != 2 or not all(annotators) or \
            annotators[0].lower() == annotators[1].lower():
        raise InputError("annotators", f"{annotators!r}",
                         expected="two different annotator emails")
    folder, ledger = _record_batch(batch, workspace)
    label_config = configs.load_config(batch.config)
    reports = []
    for slot, email in zip(SLOTS, annotators):
        reports.append(_push_project(server, folder, ledger, slot, email, label_config,
                                     batch.tasks, None, chunk_size, progress))
    return PushReport(batch.batch_id, reports)


def push_adjudication(server: Server, batch_id: str, adjudicator: str, *,
                      workspace: Path = REVIEWS, chunk_size: int = CHUNK_SIZE,
                      progress: Progress | None = None) -> PushReport:
    """Push the items whose initial annotators disagree (from the pulled table) to the
    batch's adjudication project, assigned to `adjudicator`."""
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    adjudicator = adjudicator.strip()
    initial = {ledger["projects"].get(s, {}).get("annotator", "").lower() for s in SLOTS}
    if not adjudicator or adjudicator.lower() in initial:
        raise InputError("adjudicator", repr(adjudicator),
                         expected="an adjudicator who is neither initial annotator")
    table = read_annotations(batch_id, workspace)
    if table is None:
        raise InputError(folder / "annotations.parquet", "nothing pulled yet",
                         expected="pull() before pushing adjudication")
    queue = agreement.adjudication_queue(table)
    tasks = _read_tasks(folder)
    chosen = [tasks[item_id] for item_id in queue.column("item_id").to_pylist()]
    meta = [{"criteria": criteria} for criteria in queue.column("criteria").to_pylist()]
    report = _push_project(server, folder, ledger, ADJUDICATION, adjudicator,
                           configs.load_config(ledger["config"]), chosen, meta, chunk_size,
                           progress)
    return PushReport(batch_id, [report], queue=queue)


def _push_project(server: Server, folder: Path, ledger: dict, slot: str, email: str,
                  label_config: str, tasks: list[dict], meta: list[dict] | None,
                  chunk_size: int, progress: Progress | None) -> ProjectPush:
    batch_id = ledger["batch_id"]
    recorded = ledger["projects"].get(slot)
    if recorded and recorded["annotator"].lower() != email.lower():
        raise InputError(folder / "ledger.json", f"{slot} of batch {batch_id} is assigned to "
                         f"{recorded['annotator']}, not {email}",
                         expected="the recorded annotator (a slot's annotator never changes)")
    title = project_title(batch_id, slot)
    server.ensure_user(email)
    project = server.ensure_project(title, label_config,
                                    project_description(batch_id, ledger["kind"], slot, email))
    if email.lower() not in project.description.lower():
        raise InputError(f"Label Studio project {project.id} ({title})",
                         f"its description does not name {email}: {project.description!r}",
                         expected=f"a project assigned to {email}")
    # Record the project before sending anything, so a crash mid-push is resumable.
    entry = {"title": title, "project_id": project.id, "annotator": email,
             "role": ROLES[slot], "server": server.url}
    if ledger["projects"].get(slot) != entry:
        ledger["projects"][slot] = entry
        _write_json_atomic(folder / "ledger.json", ledger)
    held = server.list_tasks(project.id)
    present = {t.item_id for t in held}
    missing = [i for i, task in enumerate(tasks) if task["item_id"] not in present]
    wanted = {task["item_id"] for task in tasks}
    send = [tasks[i] for i in missing]

    def report(sent: int, total: int) -> None:
        if progress is not None:
            progress(title, sent, total)

    if send:
        server.import_tasks(project.id, send,
                            meta=[meta[i] for i in missing] if meta is not None else None,
                            chunk_size=chunk_size, progress=report)
    return ProjectPush(slot, title, project.id, email, len(tasks),
                       len(wanted & present), len(send), _duplicates(held))


def _duplicates(tasks: list[Task]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    for task in tasks:
        if task.item_id is not None:
            seen[task.item_id] = seen.get(task.item_id, 0) + 1
    return tuple(sorted(item for item, count in seen.items() if count > 1))


# ------------------------------------------------------------------------- pull

@dataclass(frozen=True)
class ProjectPull:
    slot: str
    title: str
    project_id: int | None
    annotator: str
    annotations: int = 0       # in the export
    accepted: int = 0          # by the assigned annotator, parsed
    new: int = 0               # annotation versions not yet in the table
    missing: bool = False      # the project is gone from the server (table rows kept)


@dataclass(frozen=True)
class PullReport:
    batch_id: str
    path: Path
    projects: list[ProjectPull]
    rejected: list[dict]
    rows_added: int
    rows_total: int
    changed: bool

    @property
    def missing(self) -> list[str]:
        return [p.title for p in self.projects if p.missing]


def read_annotations(batch_id: str, workspace: Path = REVIEWS) -> pa.Table | None:
    path = batch_dir(batch_id, workspace) / "annotations.parquet"
    return pq.read_table(path) if path.exists() else None


def pull(server: Server, batch_id: str, *, workspace: Path = REVIEWS) -> PullReport:
    """Export every project of the batch, keep the assigned annotators' annotations and
    append new annotation versions to annotations.parquet (module docstring)."""
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    if not ledger["projects"]:
        raise InputError(folder / "ledger.json", "no project pushed yet",
                         expected="push() first")
    items = {row["item_id"]: row for row in pq.read_table(folder / "items.parquet").to_pylist()}
    users = server.users(refresh=True)
    rows: list[dict] = []
    rejected: list[dict] = []
    projects = []
    for slot in (*SLOTS, ADJUDICATION):
        entry = ledger["projects"].get(slot)
        if entry is None:
            continue
        project_id = _locate(server, entry)
        if project_id is None:
            projects.append(ProjectPull(slot, entry["title"], entry["project_id"],
                                        entry["annotator"], missing=True))
            continue
        export = server.export_annotations(project_id)
        found, accepted, refused = _parse_export(export, ledger, entry, slot, project_id,
                                                 items, users)
        rows += accepted
        rejected += refused
        projects.append(ProjectPull(slot, entry["title"], project_id, entry["annotator"],
                                    annotations=found,
                                    accepted=len({r["annotation_id"] for r in accepted})))
    path = folder / "annotations.parquet"
    existing = pq.read_table(path) if path.exists() else ANNOTATION_SCHEMA.empty_table()
    known = set(zip(existing.column("annotation_id").to_pylist(),
                    existing.column("updated_at").to_pylist()))
    fresh = [r for r in rows if (r["annotation_id"], r["updated_at"]) not in known]
    if fresh:
        table = pa.concat_tables([existing, pa.Table.from_pylist(fresh,
                                                                 schema=ANNOTATION_SCHEMA)])
        table = table.sort_by([("annotation_id", "ascending"), ("updated_at", "ascending"),
                               ("criterion", "ascending")])
        with staged_file(path) as staging:
            pq.write_table(table, staging)
    else:
        table = existing
    new_versions = {}
    for r in fresh:
        new_versions.setdefault(r["project_id"], set()).add((r["annotation_id"],
                                                              r["updated_at"]))
    projects = [replace(p, new=len(new_versions.get(p.project_id, ()))) for p in projects]
    _write_if_changed(folder / "rejected.json", rejected)
    return PullReport(batch_id, path, projects, rejected, len(fresh), table.num_rows,
                      bool(fresh))


def _locate(server: Server, entry: dict) -> int | None:
    """The ledger's project id when it still holds that project, else the project of that
    title (the server was rebuilt), else None (deleted)."""
    project = server.get_project(entry["project_id"])
    if project is not None and project.title == entry["title"]:
        return project.id
    found = server.find_project(entry["title"])
    return found.id if found is not None else None


def _parse_export(export: list[dict], ledger: dict, entry: dict, slot: str, project_id: int,
                  items: Mapping[str, dict], users: Mapping[int, object]
                  ) -> tuple[int, list[dict], list[dict]]:
    config, role = ledger["config"], entry["role"]
    assigned = entry["annotator"].lower()
    found, accepted, refused = 0, [], []
    for task in export:
        data = task.get("data") or {}
        item_id = data.get("item_id")
        for annotation in task.get("annotations") or []:
            found += 1
            who = _email(annotation.get("completed_by"), users)
            stamp = _timestamp(annotation.get("updated_at") or annotation.get("created_at"))
            problem = None
            if item_id not in items or data.get("batch_id") != ledger["batch_id"]:
                problem = f"task {task.get('id')} is not an item of batch {ledger['batch_id']}"
            elif (who or "").lower() != assigned:
                problem = f"not the assigned annotator ({entry['annotator']})"
            elif annotation.get("was_cancelled"):
                problem = "skipped (cancelled) without a result"
            values = None
            if problem is None:
                values, problem = parse_result(config, annotation.get("result") or [])
            if problem is not None:
                refused.append({"slot": slot, "project_id": project_id,
                                "task_id": task.get("id"), "item_id": item_id,
                                "annotation_id": annotation.get("id"),
                                "annotator": who or f"user {annotation.get('completed_by')}",
                                "updated_at": stamp.isoformat() if stamp else None,
                                "reason": problem})
                continue
            item = items[item_id]
            for criterion in configs.CONTROLS[config]:
                accepted.append({
                    **{k: item[k] for k in ("item_id", "cluster_id", "kind", "language", "unit",
                                            "setting", "source_a", "source_b")},
                    "annotator": who, "role": role, "criterion": criterion,
                    "value": values.get(criterion), "annotation_id": int(annotation["id"]),
                    "updated_at": stamp, "project_id": project_id,
                    "task_id": int(task["id"])})
    return found, accepted, refused


def parse_result(config: str, result: list[dict]) -> tuple[dict[str, str], str | None]:
    """{criterion: value} from one annotation's result list, or a problem: Rating ->
    "1".."max", Choices -> the (single) choice, TextArea -> its lines joined."""
    controls = configs.CONTROLS[config]
    values: dict[str, str] = {}
    for region in result:
        name = region.get("from_name")
        control = controls.get(name)
        if control is None:
            return {}, f"result for unknown control {name!r}"
        value = region.get("value") or {}
        if control.tag == "Rating":
            rating = value.get("rating")
            if not isinstance(rating, (int, float)) or rating != int(rating) or \
                    not 1 <= rating <= (control.max_rating or 5):
                return {}, f"{name}: rating {rating!r} is not 1..{control.max_rating}"
            text = str(int(rating))
        elif control.tag == "Choices":
            choices = value.get("choices") or []
            if len(choices) != 1 or choices[0] not in control.choices:
                return {}, f"{name}: choices {choices!r} (expected one of {control.choices})"
            text = choices[0]
        else:
            lines = value.get("text") or []
            text = "\n".join(lines) if isinstance(lines, list) else str(lines)
        if name in values and values[name] != text:
            return {}, f"{name}: two different results"
        values[name] = text
    return values, None


def _email(completed_by: object, users: Mapping[int, object]) -> str | None:
    if isinstance(completed_by, dict):
        return completed_by.get("email") or _email(completed_by.get("id"), users)
    user = users.get(completed_by) if isinstance(completed_by, int) else None
    return getattr(user, "email", None) or None


def _timestamp(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


def _write_if_changed(path: Path, value: object) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    with staged_file(path) as staging:
        staging.write_text(text, encoding="utf-8")

