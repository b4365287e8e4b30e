"""The review loop with a real Label Studio: push batches, follow progress, pull annotations
back, adjudicate (SPEC §5).

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
  for ar / fa / ur (configs.label_config). A slot's annotator never changes once recorded.
- Accounts. Every routed annotator (and adjudicator) gets an account that works: found by
  email when the person signed up first, else signed up by the workbench with a random
  password (labelstudio.ensure_account). New passwords are returned once in the push
  report and appended to <batch>/credentials.txt (mode 600, gitignored); they are never
  logged and never stored anywhere else.
- Blinding. With one server per side (Sites with "annotator 1", "annotator 2" and
  "adjudication" on three different servers; annotators declared per side), an annotator
  has an account only on their side's server: they cannot log in where the other side's
  labels are, and the adjudicator's server holds neither side's projects. That is
  enforced by separate databases. With one shared server, nothing stops a member from
  opening another project: reading leaves no trace in CE, so reading is neither enforced
  nor detectable; every write is detected (below). The ledger says which ("blinding").
- Attribution (pull). An annotation counts for a project only when it was created
  (completed_by) AND last updated (updated_by) by the project's annotator, for an item of
  this batch routed to that project. Anything else — another member's annotation, an edit
  of the annotator's label by someone else, an annotation imported with a forged author
  (updated_by empty), a draft someone else left — is refused and appended to
  refusals.jsonl with who (completed_by, updated_by), what (project, task, item, result)
  and when (created, updated, seen). The log is appended, never rewritten; a refusal
  already logged is not logged twice. CE keeps no annotation history, so an edit by
  someone else that the annotator overwrote before the next pull or status poll leaves no
  trace; the annotator's own final answer is then what counts.
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
- Pull: each project's full JSON export is parsed (Rating -> "1".."5", Choices -> the
  choice, TextArea -> the text), one row per (annotation, control), appended to
  annotations.parquet keyed by (annotation_id, updated_at): pulling twice leaves the file
  byte-identical, an edit adds a version (agreement.py counts the latest), and rows stay
  after their project is deleted. final_labels.parquet (agreement.final_labels) is
  rewritten from the table after each pull that changed it.
- Progress (status): per project, annotator and language, done / skipped / remaining of
  the project's own annotator only, judged as the pull judges it (_parse_export over the
  export of the annotated tasks, plus the project sizes and the users, one request each
  per server). A project whose counters and latest-changed task (one small request per
  annotated project) are those of the last reading is not exported again, so polling a
  batch in progress exports only the projects someone worked in. Label Studio's own
  counters are not used: they count any member's annotation as done. Annotations by
  anyone else are named per project as intrusions (who, how many). Polling, not
  webhooks: a webhook is sent once with a 1 s timeout and never retried, so a receiver
  that is down or busy loses events and polling would be needed anyway; the pages poll
  every few seconds.
- Release (`review release`). A member who opens another's queue ("Label All Tasks")
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
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..io.files import REPO, staged_file, write_json
from ..io.model import Release
from . import agreement, configs, maple, routing, sampling
from .labelstudio import CHUNK_SIZE, Server, Size, Task
from .routing import SLOTS, Annotator

# AUDIT_REVIEWS moves the workspace (tests and a second workbench on one machine).
REVIEWS = Path(os.environ.get("AUDIT_REVIEWS") or REPO / "data" / "reviews")
ADJUDICATION = "adjudication"
TITLE_LIMIT = 50   # Label Studio's PROJECT_TITLE_MAX_LEN
ROLES = (*SLOTS, ADJUDICATION)

ITEM_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("kind", pa.string()),
    ("language", pa.string()), ("unit", pa.string()), ("setting", pa.string()),
    ("source_a", pa.string()), ("source_b", pa.string()), ("group", pa.string()),
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

Progress = Callable[[str, int, int], None]   # (project title, done, to do)


# ------------------------------------------------------------------------- servers

class Sites:
    """The Label Studio server(s) of a batch: one shared by every role, or one per role
    (SLOTS and ADJUDICATION), which is what enforces blinding (module docstring)."""

    def __init__(self, servers: Server | Mapping[str, Server]) -> None:
        if isinstance(servers, Server):
            self.roles = {role: servers for role in ROLES}
        else:
            if set(servers) != set(ROLES):
                raise InputError("servers", f"roles {sorted(servers)}",
                                 expected=f"one server for each of {', '.join(ROLES)}")
            self.roles = dict(servers)
        self._extra: dict[str, Server] = {}

    @property
    def enforced(self) -> bool:
        return len({server.url for server in self.roles.values()}) == len(ROLES)

    def role(self, role: str) -> Server:
        return self.roles[role]

    def at(self, url: str) -> Server:
        """The server at this URL: one of ours, else a new connection to the server
        configured at that URL (labelstudio.find_server: refused when none is)."""
        for server in (*self.roles.values(), *self._extra.values()):
            if server.url == url:
                return server
        from .labelstudio import connect
        self._extra[url] = connect(url)
        return self._extra[url]

    def close(self) -> None:
        for server in {id(s): s for s in (*self.roles.values(),
                                          *self._extra.values())}.values():
            server.close()
        self._extra.clear()


def _sites(servers: Server | Sites | Mapping[str, Server]) -> Sites:
    return servers if isinstance(servers, Sites) else Sites(servers)


def connect_sites(servers: Mapping[str, str] | str | None = None) -> Sites:
    """Sites from configured servers, each named or by its URL ({role: server}, one
    server, or None for the default); a server no configuration names is refused
    (labelstudio.find_server), so no token goes to a URL typed, linked or recorded."""
    from .labelstudio import connect, find_server
    if servers is None or isinstance(servers, str):
        return Sites(connect(servers))
    chosen = {role: find_server(server) for role, server in servers.items()}
    opened: dict[str, Server] = {}
    try:
        for role, server in chosen.items():
            if server.name not in opened:
                opened[server.name] = connect(server.name)
    except BaseException:
        for server in opened.values():
            server.close()
        raise
    return Sites({role: opened[server.name] for role, server in chosen.items()})


# ------------------------------------------------------------------------- batches

@dataclass(frozen=True)
class ReviewBatch:
    """What a push needs: the config, one task payload per item, and the item table
    (with each item's routing group). `items` and `tasks` are in the same order."""

    batch_id: str
    config: str                      # a configs.REVIEW_KINDS member
    items: pa.Table                  # ITEM_SCHEMA
    tasks: list[dict]                # task data (configs.task_payload), item_id first
    manifest: dict | None = None     # translation: the sampling manifest
    assignments: list[maple.RealismItem] | None = None   # realism: the blinding key
    pairs: list[dict] | None = None  # paired versions (paired.py): the version key
    plan: pa.Table | None = None     # post-edit (postedit.py): the repair units, one an item
    release: dict | None = None      # post-edit: the release's files and content digests

    @property
    def kind(self) -> str:
        return configs.ANNOTATION_KINDS[self.config]

    @property
    def item_ids(self) -> list[str]:
        return [task["item_id"] for task in self.tasks]

    @property
    def groups(self) -> list[str]:
        return self.items.column("group").to_pylist()


def translation_batch(batch: sampling.Batch, release: Release,
                      batch_id: str | None = None) -> ReviewBatch:
    """A sampled batch of translation units; the cluster is the source row, the group the
    languages the unit shows. The batch id is the sample's unless `batch_id` is given."""
    batch_id = batch_id or batch.batch_id
    texts = sampling.unit_texts(release, batch.units)
    tasks = [configs.translation_payload(t, batch_id) for t in texts]
    units = batch.units
    n = units.num_rows
    groups = [routing.group_of(languages) for languages in units["languages"].to_pylist()]
    items = pa.table({
        "item_id": units["item_id"], "cluster_id": units["row_id"],
        "kind": pa.array(["translation"] * n, pa.string()),
        "language": units["language"], "unit": units["unit"],
        "setting": pa.nulls(n, pa.string()), "source_a": pa.nulls(n, pa.string()),
        "source_b": pa.nulls(n, pa.string()),
        "group": pa.array(groups, pa.string())}).cast(ITEM_SCHEMA)
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
         "source_b": i.shown_b_source, "group": routing.NO_LANGUAGE} for i in items],
        schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, "maple_realism", table, tasks, assignments=items)


def relevance_batch(pairs: Sequence[maple.RelevancePair], batch_id: str | None = None
                    ) -> ReviewBatch:
    """Query–paper pairs; the cluster is the query."""
    pairs = list(pairs)
    batch_id = batch_id or _content_id("relevance", [p.pair_id for p in pairs])
    tasks = [configs.relevance_payload(pair, batch_id) for pair in pairs]
    table = pa.Table.from_pylist([
        {"item_id": task["item_id"], "cluster_id": pair.query_id, "kind": "relevance",
         "language": None, "unit": None, "setting": None, "source_a": None, "source_b": None,
         "group": routing.NO_LANGUAGE}
        for pair, task in zip(pairs, tasks)], schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, "maple_relevance", table, tasks)


def _content_id(prefix: str, ids: list[str]) -> str:
    return f"{prefix}-" + hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]


# ------------------------------------------------------------------------- workspace

def batch_dir(batch_id: str, workspace: Path = REVIEWS) -> Path:
    if not batch_id or "/" in batch_id or "\\" in batch_id or batch_id.startswith("."):
        raise InputError("batch id", repr(batch_id),
                         expected="a name without slashes that does not start with '.'")
    return Path(workspace) / batch_id


def batches(workspace: Path = REVIEWS) -> list[str]:
    return sorted(path.parent.name for path in Path(workspace).glob("*/ledger.json"))


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


def read_ledger(batch_id: str, workspace: Path = REVIEWS) -> dict:
    path = batch_dir(batch_id, workspace) / "ledger.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such review batch in the workspace",
                         expected="a batch pushed with `python -m audit review push`") from None


def read_items(batch_id: str, workspace: Path = REVIEWS) -> pa.Table:
    path = batch_dir(batch_id, workspace) / "items.parquet"
    if not path.is_file():
        raise InputError(path, "the batch's items are missing (its push never recorded them)",
                         expected="a batch pushed with `python -m audit review push`")
    return pq.read_table(path)


def read_routing(batch_id: str, workspace: Path = REVIEWS) -> dict:
    path = batch_dir(batch_id, workspace) / "routing.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


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
        if batch.pairs is not None:
            with staged_file(folder / "pairs.jsonl") as staging:
                staging.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n"
                                           for p in batch.pairs), encoding="utf-8")
        if batch.plan is not None:
            with staged_file(folder / "plan.parquet") as staging:
                pq.write_table(batch.plan, staging)
            _write_json_atomic(folder / "release.json", batch.release)
        with staged_file(items_path) as staging:   # last: its presence means "recorded"
            pq.write_table(batch.items.cast(ITEM_SCHEMA), staging)
    ledger_path = folder / "ledger.json"
    if ledger_path.exists():
        ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    else:
        ledger = {"batch_id": batch.batch_id, "config": batch.config, "kind": batch.kind,
                  "n_items": len(batch.tasks), "blinding": None, "pairs": {},
                  "projects": {}, "accounts": {}}
        _write_json_atomic(ledger_path, ledger)
    return folder, ledger


def _read_tasks(folder: Path) -> dict[str, dict]:
    lines = (folder / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return {task["item_id"]: task for task in map(json.loads, filter(None, lines))}


# ------------------------------------------------------------------------- accounts

@dataclass(frozen=True)
class AccountNote:
    """An annotator's account on one server. `password` only when this push created it:
    shown once, written to credentials.txt (mode 600), never logged."""

    email: str
    server: str
    user_id: int
    created: bool
    password: str | None = field(default=None, repr=False)


def _ensure_accounts(server: Server, emails: Sequence[str], folder: Path,
                     ledger: dict) -> list[AccountNote]:
    notes = []
    for email in emails:
        account = server.ensure_account(email)
        notes.append(AccountNote(email, server.url, account.user.id, account.created,
                                 account.password))
        recorded = ledger["accounts"].setdefault(email, {})
        recorded.setdefault(server.url, {
            "user_id": account.user.id, "at": _now(),
            "origin": "signed up by the workbench" if account.created
            else "found (signed up before)"})
    new = [note for note in notes if note.created]
    if new:
        _append_credentials(folder / "credentials.txt", new)
    return notes


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


def _append_credentials(path: Path, notes: list[AccountNote]) -> None:
    """Append new accounts' logins to a file only its owner can read."""
    append_private(path, "".join(f"{_now()}\t{note.server}/user/login/\t{note.email}\t"
                                 f"{note.password}\n" for note in notes))


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------- push

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
    blinding: str                      # "enforced" | "detected"
    queue: pa.Table | None = None      # adjudication pushes: the open items pushed
    skipped: tuple[dict, ...] = ()     # adjudication pushes: open items still skipped
    reoffered: tuple[dict, ...] = ()   # adjudication pushes: skips deleted by this push

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
         workspace: Path = REVIEWS, chunk_size: int = CHUNK_SIZE,
         progress: Progress | None = None) -> PushReport:
    """Route the batch, make sure every routed annotator has a working account, and push
    each group's items to its two projects (module docstring). Idempotent and resumable.
    `annotators`: specs such as "ana@example.org:ar,fa" (one shared server), or
    {side: [specs]} for one server per side."""
    sites = _sites(servers)
    people = _annotators(annotators)
    sided = any(a.side for a in people)
    if sided != sites.enforced:
        raise InputError("annotators", "annotators are declared per side but the two sides "
                         "and adjudication do not have three different servers" if sided else
                         "each role has its own server but the annotators are not declared "
                         "per side",
                         expected="annotators per side exactly when annotator 1, annotator 2 "
                                  "and adjudication each have a server of their own")
    folder, ledger = _record_batch(batch, workspace)
    declared = {a.email for a in people}
    for group, pair in sorted(ledger["pairs"].items()):
        absent = [email for email in pair if email not in declared]
        if absent:
            raise InputError(folder / "ledger.json", f"group {group or '(MAPLE)'} of batch "
                             f"{batch.batch_id} is assigned to {' and '.join(pair)}; "
                             f"{', '.join(absent)} is not among the annotators given",
                             expected="the recorded annotators (a slot's annotator never "
                                      "changes)")
    size = configs.PER_ITEM.get(batch.config, len(SLOTS))
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
    _write_json_atomic(folder / "ledger.json", ledger)
    _write_json_atomic(folder / "routing.json", routed.as_json())
    people_at: dict[str, tuple[Server, set[str]]] = {}
    for pair in routed.pairs.values():
        for slot, email in zip(SLOTS, pair):
            server = sites.role(slot)
            people_at.setdefault(server.url, (server, set()))[1].add(email)
    notes = []
    for server, emails in people_at.values():
        notes += _ensure_accounts(server, sorted(emails), folder, ledger)
    _write_json_atomic(folder / "ledger.json", ledger)
    config = batch.config
    by_group: dict[str, list[dict]] = {}
    for task in batch.tasks:
        if task["item_id"] in routed.items:
            by_group.setdefault(routed.items[task["item_id"]], []).append(task)
    known = _listings(sites, SLOTS, batch.batch_id)
    reports = []
    for group in sorted(by_group):
        label_config = configs.label_config(
            config, configs.direction_of(routing.group_languages(group)))
        for slot, email in zip(SLOTS, routed.pairs[group]):
            server = sites.role(slot)
            reports.append(_push_project(server, folder, ledger, slot, group, email,
                                         label_config, by_group[group], chunk_size,
                                         progress, known[server.url]))
    return PushReport(batch.batch_id, reports, notes, routed.as_json(), blinding)


def push_adjudication(servers: Server | Sites, batch_id: str,
                      adjudicators: Sequence[Annotator | str], *,
                      workspace: Path = REVIEWS, chunk_size: int = CHUNK_SIZE,
                      progress: Progress | None = None, reoffer: bool = False) -> PushReport:
    """Push the open items of the adjudication queue (from the pulled table) to each
    group's adjudication project, assigned to an adjudicator who reads the group and is
    neither of its annotators (routing.route_adjudicators). An open item its adjudicator
    skipped is reported (`skipped`), or with reoffer=True offered again (`reoffered`)."""
    sites = _sites(servers)
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    people = _annotators(adjudicators)
    if not people:
        raise InputError("adjudicators", "none given", expected=f"at least one "
                         f"{routing.EXAMPLE}")
    annotating = {email for pair in ledger["pairs"].values() for email in pair}
    if sites.enforced and annotating & {a.email for a in people}:
        raise InputError("adjudicators", f"{', '.join(sorted(annotating & {a.email for a in people}))}"
                         " also annotate(s) on a side server",
                         expected="adjudicators with no account on either side's server")
    table = read_annotations(batch_id, workspace)
    if table is None:
        raise InputError(folder / "annotations.parquet", "nothing pulled yet",
                         expected="a pull before pushing adjudication")
    final = agreement.final_frame(agreement.prepare(table))
    queue = agreement.queue_frame(final)
    open_items = queue.filter(queue["state"] == "open")
    items = {row["item_id"]: row for row in read_items(batch_id, workspace).to_pylist()}
    groups = {item_id: items[item_id]["group"] for item_id in open_items["item_id"]}
    pairs = {g: tuple(p) for g, p in ledger["pairs"].items()}
    fixed = {e["group"]: e["annotator"] for e in ledger["projects"].values()
             if e["role"] == ADJUDICATION}
    chosen, missing = routing.route_adjudicators(set(groups.values()) - set(fixed), people,
                                                 pairs)
    chosen |= fixed
    notes = _ensure_accounts(sites.role(ADJUDICATION), sorted(set(chosen.values())), folder,
                             ledger)
    _write_json_atomic(folder / "ledger.json", ledger)
    tasks = _read_tasks(folder)
    disputes = _disputes(final, items, ledger["config"])
    known = _listings(sites, (ADJUDICATION,), batch_id)
    reports = []
    for group in sorted(set(groups.values()) & set(chosen)):
        ids = [i for i in open_items["item_id"].to_list() if groups[i] == group]
        payloads = [configs.adjudication_payload(ledger["config"], tasks[i], *disputes[i])
                    for i in ids]
        label_config = configs.label_config(
            configs.ADJUDICATION_CONFIGS[ledger["config"]],
            configs.direction_of(routing.group_languages(group)))
        server = sites.role(ADJUDICATION)
        reports.append(_push_project(server, folder, ledger, ADJUDICATION, group,
                                     chosen[group], label_config, payloads, chunk_size,
                                     progress, known[server.url]))
    unrouted = {i: (g, missing[g]) for i, g in groups.items() if g in missing}
    skipped = [s for s in read_skips(batch_id, workspace)
               if s["role"] == ADJUDICATION and s["item_id"] in groups]
    reoffered = _reoffer(sites, batch_id, workspace, skipped) if reoffer else []
    return PushReport(batch_id, reports, notes,
                      {"pairs": {g: [a] for g, a in sorted(chosen.items())},
                       "left_out": [{"item_id": i, "group": g, "reason": r}
                                    for i, (g, r) in sorted(unrouted.items())],
                       "shortfall": []},
                      ledger.get("blinding") or "detected", queue=open_items.to_arrow(),
                      skipped=tuple(s for s in skipped if s not in reoffered),
                      reoffered=tuple(reoffered))


def _reoffer(sites: Sites, batch_id: str, workspace: Path, skipped: list[dict]
             ) -> list[dict]:
    """Delete the skip annotations of these skips (the task returns to its annotator's
    queue) and drop them from skips.json; the skips stay in skips.log.jsonl."""
    for skip in skipped:
        _server_for(sites, skip["server"]).delete_annotation(skip["annotation_id"])
    folder = batch_dir(batch_id, workspace)
    if skipped:
        append_private(folder / "skips.log.jsonl", "".join(
            json.dumps(skip | {"reoffered_at": _now()}, sort_keys=True) + "\n"
            for skip in skipped))
        gone = {s["annotation_id"] for s in skipped}
        _write_json_atomic(folder / "skips.json",
                           [s for s in read_skips(batch_id, workspace)
                            if s["annotation_id"] not in gone])
    return skipped


def read_skips(batch_id: str, workspace: Path = REVIEWS) -> list[dict]:
    path = batch_dir(batch_id, workspace) / "skips.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def reoffer_hint(batch_id: str) -> str:
    return (f"skipped in Label Studio, so its adjudicator's queue no longer offers it: "
            f"`python -m audit review adjudicate {batch_id} --reoffer` (or the Annotations "
            f"page's re-offer button) offers it again")


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


def _disputes(final, items: Mapping[str, dict], config: str
              ) -> dict[str, tuple[dict, dict]]:
    """item -> ({disputed criterion: the two initial answers}, {agreed criterion: value})
    as the annotators saw them (realism letters back in the shown A/B order)."""
    out: dict[str, tuple[dict, dict]] = {}
    for row in final.iter_rows(named=True):
        answers, agreed = out.setdefault(row["item_id"], ({}, {}))
        values = list(row["initial_values"])
        if row["kind"] == "realism":
            values = [_shown(items[row["item_id"]], v) for v in values]
        if row["status"] in ("disagreement", "adjudicated"):
            answers[row["criterion"]] = (values + [None, None])[:2]
        elif row["origin"] == "agreed":
            agreed[row["criterion"]] = (_shown(items[row["item_id"]], row["value"])
                                        if row["kind"] == "realism" else row["value"])
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


def _push_project(server: Server, folder: Path, ledger: dict, role: str, group: str,
                  email: str, label_config: str, tasks: list[dict], chunk_size: int,
                  progress: Progress | None, known: list) -> ProjectPush:
    batch_id = ledger["batch_id"]
    key = project_key(group, role)
    recorded = ledger["projects"].get(key)
    if recorded and recorded["annotator"].lower() != email.lower():
        raise InputError(folder / "ledger.json", f"{key} of batch {batch_id} is assigned to "
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
        _write_json_atomic(folder / "ledger.json", ledger)
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
        server.import_tasks(project.id, send, chunk_size=chunk_size, progress=report)
    return ProjectPush(key, role, group, title, project.id, email, server.url, len(tasks),
                       len(wanted & present), len(send), _duplicates(held))


def _duplicates(tasks: list[Task]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    for task in tasks:
        if task.item_id is not None:
            seen[task.item_id] = seen.get(task.item_id, 0) + 1
    return tuple(sorted(item for item, count in seen.items() if count > 1))


# ------------------------------------------------------------------------- status

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
    intrusions: tuple[tuple[str, int], ...] = ()   # (someone else, annotations) by email


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
        """Totals per annotator or per group (language)."""
        totals: dict[str, dict] = {}
        for p in self.projects:
            row = totals.setdefault(getattr(p, column), {column: getattr(p, column),
                                                         "tasks": 0, "done": 0,
                                                         "skipped": 0, "remaining": 0})
            for name in ("tasks", "done", "skipped", "remaining"):
                row[name] += getattr(p, name)
        return [totals[key] for key in sorted(totals)]

    def intrusions(self) -> list[dict]:
        """One row per project and member who annotated (or changed an annotation) in a
        project assigned to someone else."""
        return [{"project": p.key, "annotator": p.annotator, "intruder": who,
                 "annotations": n} for p in self.projects for who, n in p.intrusions]


def status(servers: Server | Sites, batch_id: str, *, workspace: Path = REVIEWS) -> Status:
    """Progress per project: the project sizes (one request per server), then, where a
    project holds an annotation, its latest change; a project whose counters and latest
    change are those of the last reading keeps that reading (status.json), any other is
    exported and judged as the pull judges it (_parse_export), so another member's
    annotation is not counted as done but named as an intrusion."""
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    sites = _sites(servers)
    entries = ledger["projects"]
    items = {row["item_id"]: row for row in read_items(batch_id, workspace).to_pylist()} \
        if entries else {}
    readings = _read_readings(folder)
    by_server: dict[str, list[str]] = {}
    for key, entry in entries.items():
        by_server.setdefault(entry["server"], []).append(key)
    projects, kept = [], {}
    for url, keys in by_server.items():
        server = _server_for(sites, url)
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
                _, accepted, refused, skipped = _parse_export(
                    exports[entry["project_id"]], ledger, entry, entry["project_id"], items,
                    users, server.url)
                reading = {"stamp": stamps[key],
                           "done": len({r["task_id"] for r in accepted}),
                           "skipped": len({r["task_id"] for r in skipped}),
                           "intrusions": [list(pair) for pair in
                                          _intrusions(refused, entry["annotator"])]}
            elif entry["project_id"] in annotated:
                reading = readings[key]
            else:
                reading = {"stamp": stamps[key], "done": 0, "skipped": 0, "intrusions": []}
            kept[key] = reading
            done, skips = reading["done"], reading["skipped"]
            projects.append(ProjectProgress(
                key, entry["role"], entry["group"], entry["annotator"], size.tasks, done,
                skips, max(size.tasks - done - skips, 0),
                intrusions=tuple((who, n) for who, n in reading["intrusions"])))
    if kept != readings:
        _write_json_atomic(folder / "status.json", kept)
    projects.sort(key=lambda p: (p.group, ROLES.index(p.role)))
    left_out = len(read_routing(batch_id, workspace).get("left_out", []))
    return Status(batch_id, ledger.get("blinding"), projects, left_out)


def _stamp(project_id: int, size: Size | None, change: tuple[int, str] | None) -> list:
    """What must be unchanged for a project's last reading to hold: its id, task and
    annotation counters, and its latest-changed task and when."""
    return [project_id, size.tasks if size else None, size.annotations if size else None,
            size.skips if size else None, *(change or (None, None))]


def _read_readings(folder: Path) -> dict[str, dict]:
    """The last status reading per project (status.json); none when the file is missing
    or unreadable (it is only a shortcut: everything is read again)."""
    try:
        readings = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(readings, dict):
        return {}
    return {key: reading for key, reading in readings.items() if _well_formed(reading)}


def _well_formed(reading: object) -> bool:
    return isinstance(reading, dict) and isinstance(reading.get("stamp"), list) and \
        all(isinstance(reading.get(name), int) for name in ("done", "skipped")) and \
        isinstance(reading.get("intrusions"), list) and \
        all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and
            isinstance(pair[1], int) for pair in reading["intrusions"])


def _intruder(refusal: dict, assigned: str) -> str | None:
    """Who other than the assigned annotator made or last changed a refused annotation."""
    if refusal["kind"] != "annotation":
        return None
    for who in (refusal["completed_by"], refusal["updated_by"]):
        if who and who.lower() != assigned.lower():
            return who
    return None


def _intrusions(refused: list[dict], assigned: str) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for refusal in refused:
        who = _intruder(refusal, assigned)
        if who is not None:
            counts[who] = counts.get(who, 0) + 1
    return tuple(sorted(counts.items()))


# ------------------------------------------------------------------------- release

@dataclass(frozen=True)
class ProjectRelease:
    key: str
    title: str
    annotator: str
    intrusions: tuple[tuple[str, int], ...]   # as status names them
    logged: int          # refusals newly appended to refusals.jsonl
    deleted: int         # intruders' annotations deleted from tasks the annotator worked on
    recreated: int       # tasks deleted and imported again with the data they held


def release(servers: Server | Sites, batch_id: str, *, workspace: Path = REVIEWS
            ) -> list[ProjectRelease]:
    """Give each annotator's (and adjudicator's) queue back what another member took
    (module docstring): in every project with another member's annotation or draft, log
    the refusals, then delete the intruders' annotations on tasks the project's annotator
    worked on, and delete and re-import, with the data it holds, every other task of the
    batch (which also drops locks no API releases)."""
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    sites = _sites(servers)
    items = {row["item_id"]: row for row in read_items(batch_id, workspace).to_pylist()}
    users: dict[str, dict] = {}
    released = []
    for key, entry in sorted(ledger["projects"].items()):
        server = _server_for(sites, entry["server"])
        if server.url not in users:
            users[server.url] = server.users(refresh=True)
        project_id, assigned = entry["project_id"], entry["annotator"]
        export = server.export_annotations(project_id, all_tasks=True)
        _, _, refused, _ = _parse_export(export, ledger, entry, project_id, items,
                                         users[server.url], server.url)
        theirs = [r for r in refused if r["kind"] == "annotation" and
                  (r["completed_by"] or "").lower() != assigned.lower()]
        if not theirs and not any(r["kind"] == "draft" for r in refused):
            continue      # (an edit of the annotator's own label is theirs to redo)
        logged = _append_refusals(folder / "refusals.jsonl", refused)   # before deleting
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
                                       _intrusions(refused, assigned), logged, deleted,
                                       len(recreate)))
    return released


def _worked_on(task: dict, assigned: str, users: Mapping[int, object]) -> bool:
    """Whether the assigned annotator made an annotation or a draft on this task."""
    made = [a.get("completed_by") for a in task.get("annotations") or []] + \
        [d.get("user") for d in task.get("drafts") or []]
    return any((_email(who, users) or "").lower() == assigned.lower() for who in made)


def ledger_sites(batch_id: str, workspace: Path = REVIEWS) -> Sites:
    """Connections to the servers a batch's ledger names, each with the token configured
    for it (a URL no longer configured is refused); close() them."""
    ledger = read_ledger(batch_id, workspace)
    urls: dict[str, str] = dict(ledger.get("servers") or {})
    for entry in ledger["projects"].values():
        urls.setdefault(entry["role"], entry["server"])
    if not urls:
        return connect_sites(None)
    first = next(iter(urls.values()))
    return connect_sites({role: urls.get(role, first) for role in ROLES})


def _server_for(sites: Sites, url: str) -> Server:
    shared = {s.url for s in sites.roles.values()}
    if len(shared) == 1:            # one server: wherever the ledger says it was
        return sites.role(SLOTS[0])
    return sites.at(url)


# ------------------------------------------------------------------------- pull

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
    corrections: object = None   # post-edit batches: postedit.Recorded

    @property
    def missing(self) -> list[str]:
        return [p.title for p in self.projects if p.missing]


def read_annotations(batch_id: str, workspace: Path = REVIEWS) -> pa.Table | None:
    path = batch_dir(batch_id, workspace) / "annotations.parquet"
    return pq.read_table(path) if path.exists() else None


def read_final_labels(batch_id: str, workspace: Path = REVIEWS) -> pa.Table | None:
    path = batch_dir(batch_id, workspace) / "final_labels.parquet"
    return pq.read_table(path) if path.exists() else None


def read_refusals(batch_id: str, workspace: Path = REVIEWS) -> list[dict]:
    return _read_jsonl(batch_dir(batch_id, workspace) / "refusals.jsonl")


def pull(servers: Server | Sites, batch_id: str, *, workspace: Path = REVIEWS,
         progress: Progress | None = None) -> PullReport:
    """Export every project of the batch, keep the annotations its annotator made and last
    changed, append new versions to annotations.parquet, log refusals (module docstring)."""
    folder = batch_dir(batch_id, workspace)
    ledger = read_ledger(batch_id, workspace)
    if not ledger["projects"]:
        raise InputError(folder / "ledger.json", "no project pushed yet",
                         expected="a push first")
    sites = _sites(servers)
    items = {row["item_id"]: row for row in read_items(batch_id, workspace).to_pylist()}
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
        server = _server_for(sites, entry["server"])
        if server.url not in users:
            users[server.url] = server.users(refresh=True)
            listed[server.url] = server.projects(containing=batch_id)
        project_id = _locate(server, entry, listed[server.url])
        if project_id is None:
            projects.append(ProjectPull(key, entry["title"], entry["project_id"],
                                        entry["annotator"], missing=True))
            continue
        export = server.export_annotations(project_id)
        found, accepted, refused, skipped = _parse_export(
            export, ledger, entry, project_id, items, users[server.url], server.url)
        rows += accepted
        rejected += refused
        skips += skipped
        projects.append(ProjectPull(key, entry["title"], project_id, entry["annotator"],
                                    annotations=found, skipped=len(skipped),
                                    accepted=len({r["annotation_id"] for r in accepted})))
    if progress is not None:
        progress("done", len(entries), len(entries))
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
    post_edit = ledger["config"] == configs.POST_EDIT
    if not post_edit and (fresh or table.num_rows and
                          not (folder / "final_labels.parquet").exists()):
        with staged_file(folder / "final_labels.parquet") as staging:
            pq.write_table(agreement.final_labels(table), staging)
    new_versions: dict[int, set] = {}
    for r in fresh:
        new_versions.setdefault(r["project_id"], set()).add((r["annotation_id"],
                                                              r["updated_at"]))
    projects = [replace(p, new=len(new_versions.get(p.project_id, ()))) for p in projects]
    logged = _append_refusals(folder / "refusals.jsonl", rejected)
    if skips != read_skips(batch_id, workspace):
        _write_json_atomic(folder / "skips.json", skips)
    corrections = None
    if post_edit:    # every submission becomes correction records (postedit.py)
        from . import postedit
        corrections = postedit.record_corrections(batch_id, workspace, table)
    return PullReport(batch_id, path, projects, rejected, logged, len(fresh), table.num_rows,
                      bool(fresh), corrections)


def _locate(server: Server, entry: dict, listed: list) -> int | None:
    """The ledger's project id when the server still holds that project, else the project
    of that title (the server was rebuilt), else None (deleted)."""
    if any(p.id == entry["project_id"] and p.title == entry["title"] for p in listed):
        return entry["project_id"]
    found = server.find_project(entry["title"], listed)
    return found.id if found is not None else None


def _parse_export(export: list[dict], ledger: dict, entry: dict, project_id: int,
                  items: Mapping[str, dict], users: Mapping[int, object], url: str
                  ) -> tuple[int, list[dict], list[dict], list[dict]]:
    """(annotations found, accepted rows, refusals, skips by the annotator)."""
    role = "adjudication" if entry["role"] == ADJUDICATION else "initial"
    config = ledger["config"] if role == "initial" else \
        configs.ADJUDICATION_CONFIGS[ledger["config"]]
    assigned = entry["annotator"].lower()
    found, accepted, refused, skipped = 0, [], [], []
    for task in export:
        data = task.get("data") or {}
        item_id = data.get("item_id")
        where = {"batch_id": ledger["batch_id"], "project": entry["title"],
                 "project_id": project_id, "server": url, "task_id": task.get("id"),
                 "item_id": item_id}
        for draft in task.get("drafts") or []:
            who = _email(draft.get("user"), users)
            if (who or "").lower() != assigned:
                refused.append(where | _draft_record(draft, who))
        for annotation in task.get("annotations") or []:
            found += 1
            author = _email(annotation.get("completed_by"), users)
            editor = _email(annotation.get("updated_by"), users)
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
                values, problem = parse_result(config, annotation.get("result") or [])
            if problem is not None:
                refused.append(where | _annotation_record(annotation, author, editor,
                                                          problem))
                continue
            criteria = configs.criteria_of(config, data)
            if role == "adjudication":   # only what the adjudicator was asked to settle
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
    summary = {}
    for region in result if isinstance(result, list) else []:
        value = region.get("value") or {}
        shown = value.get("rating", value.get("choices", value.get("text")))
        summary[str(region.get("from_name"))] = shown
    return summary


def _append_refusals(path: Path, refusals: list[dict]) -> int:
    """Append the refusals not logged before (by server, project, annotation or draft,
    version and reason); the log is never rewritten. How many were appended."""
    def key(record: dict) -> tuple:
        return (record.get("server"), record.get("project_id"), record.get("kind"),
                record.get("annotation_id"), record.get("draft_id"),
                record.get("updated_at"), record.get("reason"))
    seen = {key(r) for r in _read_jsonl(path)}
    new = []
    for record in refusals:
        if key(record) not in seen:
            seen.add(key(record))
            new.append({"seen_at": _now(), **record})
    if new:     # e-mails and labels: as private as every other batch file
        append_private(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                     for r in new))
    return len(new)


def _read_jsonl(path: Path) -> list[dict]:
    """The records of the refusals log; a line that is not JSON is named, not skipped."""
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


def parse_result(config: str, result: list[dict]) -> tuple[dict[str, str], str | None]:
    """{criterion: value} from one annotation's result list, or a problem: Rating ->
    "1".."max", Choices -> the (single) choice, TextArea -> its lines joined."""
    values: dict[str, str] = {}
    for region in result:
        name = region.get("from_name")
        control = configs.control_of(config, name)
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


def _email(user: object, users: Mapping[int, object]) -> str | None:
    """The email of an export's user reference: an id, {id, email}, or (drafts) the email."""
    if isinstance(user, str):
        return user if "@" in user else None
    if isinstance(user, dict):
        return user.get("email") or _email(user.get("id"), users)
    found = users.get(user) if isinstance(user, int) else None
    return getattr(found, "email", None) or None


def _timestamp(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)
