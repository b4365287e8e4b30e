"""The review workspace: one folder per batch, its files and their readers.

Workspace (data/reviews/<batch>/, gitignored; every file written atomically):

    ledger.json          batch id, config, kind, blinding, pairs (group -> annotators),
                         projects: key -> title, project_id, annotator, role, group, server;
                         accounts: email -> server, user id, origin (never a password)
    items.parquet        ITEM_SCHEMA: one row per item, with its routing group
    tasks.jsonl          the task data as pushed, one item per line, in batch order
    routing.json         pairs, the units left out with reasons, the shortfall per language
    manifest.json        translation batches: the sampling manifest
    assignments.jsonl    realism batches: the blinding key (maple.write_assignments)
    pairs.jsonl          paired OLD/NEW batches: the version key (paired.py), never in tasks
    annotations.parquet  ANNOTATION_SCHEMA: agreement.py's long table + project_id, task_id
    final_labels.parquet agreement.final_labels of the pulled table
    refusals.jsonl       every refused annotation or draft, appended (mode 600)
    skips.json           the tasks each project's annotator skipped, as of the last pull
    status.json          the last progress reading per project with what it rests on
                         (counters, latest-changed task): status re-reads only the rest
    credentials.txt      new accounts' passwords (mode 600): hand them over, then delete
                         (both are appended through append_private: a symlink, or a file
                         that is not the user's own, is refused)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..io.atomic import staged_file, write_json
from ..settings import current
from . import maple, routing, sampling
from .batches import ReviewBatch
from .schemas import ITEM_SCHEMA

LEDGER, ITEMS, TASKS, ROUTING = "ledger.json", "items.parquet", "tasks.jsonl", "routing.json"
ANNOTATIONS, FINAL_LABELS = "annotations.parquet", "final_labels.parquet"
SKIPS, REFUSALS = "skips.json", "refusals.jsonl"


def batch_dir(batch_id: str, workspace: Path | None = None) -> Path:
    if not batch_id or "/" in batch_id or "\\" in batch_id or batch_id.startswith("."):
        raise InputError("batch id", repr(batch_id),
                         expected="a name without slashes that does not start with '.'")
    return Path(workspace or current().reviews) / batch_id


def batches(workspace: Path | None = None) -> list[str]:
    return sorted(path.parent.name
                  for path in Path(workspace or current().reviews).glob("*/ledger.json"))


def project_key(group: str, role: str) -> str:
    return f"{group} · {role}" if group else role


def project_title(batch_id: str, role: str, group: str = "") -> str:
    return f"{batch_id} · {project_key(group, role)}"


def project_description(batch_id: str, kind: str, role: str, email: str,
                        group: str = "") -> str:
    languages = "+".join(routing.group_languages(group)) or "English"
    what = f"{kind}, {languages}" if group else kind
    return (f"Review batch {batch_id} ({what}), {role}. Assigned to {email}: only "
            f"{email} annotates this project; annotations by anyone else, and edits by "
            f"anyone else of {email}'s annotations, are refused when pulled.")


class Workspace:
    """One batch's folder: its files' paths, readers and writers (module docstring)."""

    def __init__(self, batch_id: str, root: Path | None = None) -> None:
        self.batch_id = batch_id
        self.folder = batch_dir(batch_id, root)

    def path(self, name: str) -> Path:
        return self.folder / name

    def write_json(self, name: str, value: object) -> None:
        """Write a JSON file of the batch atomically."""
        with staged_file(self.path(name)) as staging:
            write_json(staging, value)

    def ledger(self) -> dict:
        path = self.path(LEDGER)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(path, "no such review batch in the workspace",
                             expected="a batch pushed with `python -m audit review push`"
                             ) from None

    def items(self) -> pa.Table:
        path = self.path(ITEMS)
        if not path.is_file():
            raise InputError(path, "the batch's items are missing (its push never recorded "
                             "them)", expected="a batch pushed with `python -m audit review "
                                               "push`")
        return pq.read_table(path)

    def tasks(self) -> dict[str, dict]:
        """item id -> the task data as pushed."""
        lines = self.path(TASKS).read_text(encoding="utf-8").splitlines()
        return {task["item_id"]: task for task in map(json.loads, filter(None, lines))}

    def routing(self) -> dict:
        return self._json(ROUTING, {})

    def skips(self) -> list[dict]:
        return self._json(SKIPS, [])

    def annotations(self) -> pa.Table | None:
        path = self.path(ANNOTATIONS)
        return pq.read_table(path) if path.exists() else None

    def final_labels(self) -> pa.Table | None:
        path = self.path(FINAL_LABELS)
        return pq.read_table(path) if path.exists() else None

    def refusals(self) -> list[dict]:
        """The records of the refusals log; a line that is not JSON is named, not skipped."""
        path = self.path(REFUSALS)
        records = []
        for number, line in enumerate(read_private(path).splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    raise InputError(path, f"line {number} is not JSON",
                                     expected="one JSON object a line (the log is appended, "
                                              "never rewritten: restore the line)") from None
        return records

    def append_refusals(self, refusals: list[dict]) -> int:
        """Append the refusals not logged before (by server, project, annotation or draft,
        version and reason); the log is never rewritten. How many were appended."""
        def key(record: dict) -> tuple:
            return (record.get("server"), record.get("project_id"), record.get("kind"),
                    record.get("annotation_id"), record.get("draft_id"),
                    record.get("updated_at"), record.get("reason"))
        seen = {key(r) for r in self.refusals()}
        new = []
        for record in refusals:
            if key(record) not in seen:
                seen.add(key(record))
                new.append({"seen_at": now(), **record})
        if new:     # e-mails and labels: as private as every other batch file
            append_private(self.path(REFUSALS), "".join(
                json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in new))
        return len(new)

    def record(self, batch: ReviewBatch) -> dict:
        """Write the batch's items, tasks and keys once (later pushes must match them);
        its ledger, made now if new."""
        folder = self.folder
        items_path = self.path(ITEMS)
        if items_path.exists():
            recorded = pq.read_table(items_path).column("item_id").to_pylist()
            if recorded != batch.item_ids:
                raise InputError(items_path, f"batch {batch.batch_id} was recorded with "
                                 f"other items ({len(recorded)} recorded, "
                                 f"{len(batch.item_ids)} given)",
                                 expected="the same batch, or a new batch id")
        else:
            folder.mkdir(parents=True, exist_ok=True)
            with staged_file(self.path(TASKS)) as staging:
                staging.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n"
                                           for t in batch.tasks), encoding="utf-8")
            if batch.manifest is not None:
                sampling.write_manifest(folder / "manifest.json", batch.manifest)
            if batch.assignments is not None:
                maple.write_assignments(folder / "assignments.jsonl", batch.assignments)
            if batch.pairs is not None:
                with staged_file(folder / "pairs.jsonl") as staging:
                    staging.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n"
                                               for p in batch.pairs), encoding="utf-8")
            for name, table in (batch.tables or {}).items():
                with staged_file(self.path(name)) as staging:
                    pq.write_table(table, staging)
            if batch.plan is not None:
                with staged_file(folder / "plan.parquet") as staging:
                    pq.write_table(batch.plan, staging)
                self.write_json("release.json", batch.release)
            with staged_file(items_path) as staging:   # last: its presence means "recorded"
                pq.write_table(batch.items.cast(ITEM_SCHEMA), staging)
        if self.path(LEDGER).exists():
            return self.ledger()
        ledger = {"batch_id": batch.batch_id, "config": batch.config, "kind": batch.kind,
                  "n_items": len(batch.tasks), "blinding": None, "pairs": {},
                  "projects": {}, "accounts": {}}
        if batch.settings is not None:
            ledger["settings"] = batch.settings
        self.write_json(LEDGER, ledger)
        return ledger

    def _json(self, name: str, default: object):
        path = self.path(name)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else default


def _private(path: Path, flags: int) -> int:
    """A descriptor of a file only its owner reads: opened without following a symlink
    (which would send the text wherever it points), refused unless it is a regular file of
    this user with one link, and made mode 600."""
    try:
        handle = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        problem = "a symbolic link" if path.is_symlink() else error.strerror
        raise InputError(path, f"{problem}: refused", expected="a regular file of yours "
                         "(remove what is there)") from None
    info = os.fstat(handle)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink != 1:
        os.close(handle)
        raise InputError(path, "not a regular file of this user with one link: refused",
                         expected="a regular file of yours (remove what is there)")
    os.fchmod(handle, 0o600)
    return handle


def append_private(path: Path, text: str) -> None:
    """Append to a private file (`_private`), created mode 600."""
    handle = _private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with os.fdopen(handle, "a", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())


def read_private(path: Path) -> str:
    """A private file's text ('' when there is none), read under the same refusals."""
    if not os.path.lexists(path):
        return ""
    with os.fdopen(_private(path, os.O_RDONLY), encoding="utf-8") as stream:
        return stream.read()


def now() -> str:
    """A UTC timestamp to the second, as the batch files record times."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
