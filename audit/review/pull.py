"""Pull a batch's annotations back, and decide which count (attribution).

Attribution (pull). An annotation counts for a project only when it was created
(completed_by) AND last updated (updated_by) by the project's annotator, for an item of
this batch routed to that project. Anything else — another member's annotation, an edit
of the annotator's label by someone else, an annotation imported with a forged author
(updated_by empty), a draft someone else left — is refused and appended to
refusals.jsonl with who (completed_by, updated_by), what (project, task, item, result)
and when (created, updated, seen). The log is appended, never rewritten; a refusal
already logged is not logged twice. CE keeps no annotation history, so an edit by
someone else that the annotator overwrote before the next pull or status poll leaves no
trace; the annotator's own final answer is then what counts.

Pull: each project's full JSON export is parsed (Rating -> "1".."5", Choices -> the
choice, TextArea -> the text), one row per (annotation, control), appended to
annotations.parquet keyed by (annotation_id, updated_at): pulling twice leaves the file
byte-identical, an edit adds a version (agreement.py counts the latest), and rows stay
after their project is deleted. final_labels.parquet (agreement.final_labels) is
rewritten from the table after each pull that changed it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..io.atomic import staged_file
from . import agreement, kinds
from .configs import LabelConfig
from .labelstudio.client import Server
from .routing import ADJUDICATION, ROLES
from .schemas import ANNOTATION_SCHEMA, Progress
from .sites import Sites, as_sites
from .workspace import ANNOTATIONS, FINAL_LABELS, SKIPS, Workspace


@dataclass(frozen=True)
class ProjectPull:
    key: str
    title: str
    project_id: int | None
    annotator: str
    annotations: int = 0       # in the export
    accepted: int = 0          # by the assigned annotator, parsed
    skipped: int = 0           # skipped by the assigned annotator
    new: int = 0               # annotation versions not yet in the table
    missing: bool = False      # the project is gone from the server (table rows kept)


@dataclass(frozen=True)
class PullReport:
    batch_id: str
    path: Path
    projects: list[ProjectPull]
    rejected: list[dict]       # every refusal this pull found
    new_refusals: int          # of them not logged before
    rows_added: int
    rows_total: int
    changed: bool
    corrections: object = None   # post-edit batches: kinds.post_edit.Recorded

    @property
    def missing(self) -> list[str]:
        return [p.title for p in self.projects if p.missing]


def pull(servers: Server | Sites, batch_id: str, *, workspace: Path | None = None,
         progress: Progress | None = None) -> PullReport:
    """Export every project of the batch, keep the annotations its annotator made and last
    changed, append new versions to annotations.parquet, log refusals (module docstring)."""
    files = Workspace(batch_id, workspace)
    ledger = files.ledger()
    if not ledger["projects"]:
        raise InputError(files.path("ledger.json"), "no project pushed yet",
                         expected="a push first")
    sites = as_sites(servers)
    items = {row["item_id"]: row for row in files.items().to_pylist()}
    users: dict[str, dict] = {}
    listed: dict[str, list] = {}
    rows: list[dict] = []
    rejected: list[dict] = []
    skips: list[dict] = []
    projects = []
    entries = sorted(ledger["projects"].items(),
                     key=lambda kv: (kv[1]["group"], ROLES.index(kv[1]["role"])))
    for done, (key, entry) in enumerate(entries):
        if progress is not None:
            progress(entry["title"], done, len(entries))
        server = sites.server_for(entry["server"])
        if server.url not in users:
            users[server.url] = server.users(refresh=True)
            listed[server.url] = server.projects(containing=batch_id)
        project_id = _locate(server, entry, listed[server.url])
        if project_id is None:
            projects.append(ProjectPull(key, entry["title"], entry["project_id"],
                                        entry["annotator"], missing=True))
            continue
        export = server.export_annotations(project_id)
        found, accepted, refused, skipped = parse_export(
            export, ledger, entry, project_id, items, users[server.url], server.url)
        rows += accepted
        rejected += refused
        skips += skipped
        projects.append(ProjectPull(key, entry["title"], project_id, entry["annotator"],
                                    annotations=found, skipped=len(skipped),
                                    accepted=len({r["annotation_id"] for r in accepted})))
    if progress is not None:
        progress("done", len(entries), len(entries))
    path = files.path(ANNOTATIONS)
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
    kind = kinds.of_config(ledger["config"])
    if kind.agreement and (fresh or table.num_rows and
                           not files.path(FINAL_LABELS).exists()):
        final = kind.final(table, files) if kind.final else agreement.final_labels(table)
        with staged_file(files.path(FINAL_LABELS)) as staging:
            pq.write_table(final, staging)
    new_versions: dict[int, set] = {}
    for r in fresh:
        new_versions.setdefault(r["project_id"], set()).add((r["annotation_id"],
                                                              r["updated_at"]))
    projects = [replace(p, new=len(new_versions.get(p.project_id, ()))) for p in projects]
    logged = files.append_refusals(rejected)
    if skips != files.skips():
        files.write_json(SKIPS, skips)
    corrections = None
    if kind.corrections is not None:   # post-edit: each submission becomes corrections
        corrections = kind.corrections(batch_id, workspace, table)
    return PullReport(batch_id, path, projects, rejected, logged, len(fresh), table.num_rows,
                      bool(fresh), corrections)


def _locate(server: Server, entry: dict, listed: list) -> int | None:
    """The ledger's project id when the server still holds that project, else the project
    of that title (the server was rebuilt), else None (deleted)."""
    if any(p.id == entry["project_id"] and p.title == entry["title"] for p in listed):
        return entry["project_id"]
    found = server.find_project(entry["title"], listed)
    return found.id if found is not None else None


def parse_export(export: list[dict], ledger: dict, entry: dict, project_id: int,
                  items: Mapping[str, dict], users: Mapping[int, object], url: str
                  ) -> tuple[int, list[dict], list[dict], list[dict]]:
    """(annotations found, accepted rows, refusals, skips by the annotator) of one
    project's export, judged as the pull judges it (module docstring)."""
    role = "adjudication" if entry["role"] == ADJUDICATION else "initial"
    kind = kinds.of_config(ledger["config"])
    review, twin = kind.forms(ledger.get("settings"))
    form = review if role == "initial" else twin
    assert form is not None     # only adjudicated kinds have adjudication projects
    assigned = entry["annotator"].lower()
    found, accepted, refused, skipped = 0, [], [], []
    for task in export:
        data = task.get("data") or {}
        item_id = data.get("item_id")
        where = {"batch_id": ledger["batch_id"], "project": entry["title"],
                 "project_id": project_id, "server": url, "task_id": task.get("id"),
                 "item_id": item_id}
        for draft in task.get("drafts") or []:
            who = email_of(draft.get("user"), users)
            if (who or "").lower() != assigned:
                refused.append(where | _draft_record(draft, who))
        for annotation in task.get("annotations") or []:
            found += 1
            author = email_of(annotation.get("completed_by"), users)
            editor = email_of(annotation.get("updated_by"), users)
            problem = _attribution_problem(data, items, ledger, entry, author, editor)
            if problem is None and annotation.get("was_cancelled"):
                skipped.append({"item_id": item_id, "role": entry["role"],
                                "annotator": author, "project": entry["title"],
                                "server": url, "task_id": int(task["id"]),
                                "annotation_id": int(annotation["id"]),
                                "updated_at": annotation.get("updated_at")})
                continue
            values = None
            if problem is None:
                values, problem = (kind.parse(form, annotation.get("result") or [], data)
                                   if kind.parse else
                                   parse_result(form, annotation.get("result") or []))
            if problem is not None:
                refused.append(where | _annotation_record(annotation, author, editor,
                                                          problem))
                continue
            criteria = list(values) if kind.parse else form.criteria_of(data)
            if role == "adjudication" and not kind.parse:   # only what was disputed
                criteria = [c for c in criteria
                            if str(data.get(f"dispute_{c}", "")).startswith("DISPUTED")]
            item = items[item_id]
            stamp = _timestamp(annotation.get("updated_at") or annotation.get("created_at"))
            for criterion in criteria:
                accepted.append({
                    **{k: item[k] for k in ("item_id", "cluster_id", "kind", "language", "unit",
                                            "setting", "source_a", "source_b")},
                    "annotator": author, "role": role, "criterion": criterion,
                    "value": values.get(criterion), "annotation_id": int(annotation["id"]),
                    "updated_at": stamp, "project_id": project_id,
                    "task_id": int(task["id"])})
    return found, accepted, refused, skipped


def _attribution_problem(data: dict, items: Mapping[str, dict], ledger: dict, entry: dict,
                         author: str | None, editor: str | None) -> str | None:
    item_id = data.get("item_id")
    assigned = entry["annotator"]
    if item_id not in items or data.get("batch_id") != ledger["batch_id"]:
        return f"the task is not an item of batch {ledger['batch_id']}"
    if items[item_id]["group"] != entry["group"]:
        return f"item {item_id} belongs to group {items[item_id]['group']!r}, not this project"
    if (author or "").lower() != assigned.lower():
        return f"created by {author or 'an unknown user'}, not the assigned {assigned}"
    if editor is None:
        return (f"no recorded author of its last change (updated_by is empty: imported "
                f"or made outside the labeling interface), not {assigned}")
    if editor.lower() != assigned.lower():
        return f"last changed by {editor}, not the assigned {assigned}"
    return None


def _annotation_record(annotation: dict, author: str | None, editor: str | None,
                       reason: str) -> dict:
    return {"kind": "annotation", "annotation_id": annotation.get("id"),
            "completed_by": author or _unknown(annotation.get("completed_by")),
            "updated_by": editor or _unknown(annotation.get("updated_by")),
            "created_at": annotation.get("created_at"),
            "updated_at": annotation.get("updated_at"),
            "was_cancelled": bool(annotation.get("was_cancelled")),
            "result": _result_summary(annotation.get("result")), "reason": reason}


def _draft_record(draft: dict, who: str | None) -> dict:
    name = who or _unknown(draft.get("user"))
    return {"kind": "draft", "annotation_id": draft.get("annotation"),
            "draft_id": draft.get("id"), "completed_by": name, "updated_by": name,
            "created_at": draft.get("created_at"), "updated_at": draft.get("updated_at"),
            "was_cancelled": False, "result": _result_summary(draft.get("result")),
            "reason": f"an unsubmitted edit (draft) by {name}, who is not the assigned "
                      f"annotator"}


def _unknown(user: object) -> str | None:
    return None if user is None else f"user {user}"


def _result_summary(result: object) -> dict:
    """{control: value} of a result list, for the refusals log (never dataset text)."""
    summary: dict[str, object] = {}
    for region in result if isinstance(result, list) else []:
        value = region.get("value") or {}
        if "labels" in value:   # a span: its label and place, not the text it covers
            shown = summary.setdefault(str(region.get("from_name")), [])
            assert isinstance(shown, list)
            shown.append(f"{value.get('labels')} at {value.get('start')}-{value.get('end')}")
            continue
        summary[str(region.get("from_name"))] = value.get(
            "rating", value.get("choices", value.get("number", value.get("text"))))
    return summary


def parse_result(form: LabelConfig, result: list[dict]) -> tuple[dict[str, str], str | None]:
    """{criterion: value} from one annotation's result list, or a problem: Rating ->
    "1".."max", Choices -> the (single) choice, TextArea -> its lines joined."""
    values: dict[str, str] = {}
    for region in result:
        name = region.get("from_name")
        control = form.control_of(name)
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


def email_of(user: object, users: Mapping[int, object]) -> str | None:
    """The email of an export's user reference: an id, {id, email}, or (drafts) the email."""
    if isinstance(user, str):
        return user if "@" in user else None
    if isinstance(user, dict):
        return user.get("email") or email_of(user.get("id"), users)
    found = users.get(user) if isinstance(user, int) else None
    return getattr(found, "email", None) or None


def _timestamp(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)
