"""The Label Studio adapter: the only module that imports label_studio_sdk (2.x, imported
when a connection is made, so the rest of the workbench runs without it).

    server = connect()                      # "default"; connect("side1"), connect(url)
    project = server.ensure_project(title, label_config, description)
    server.import_tasks(project.id, payloads, chunk_size=100)   -> task ids
    server.list_tasks(project.id)           -> [Task(id, item_id)]
    server.ensure_account(email)            -> Account (user; password when just created)
    server.project_sizes([ids])             -> {id: Size(tasks, annotated, counters)}
    server.latest_changes([ids])            -> {id: (task id, updated_at)}, in parallel
    server.export_annotations(project.id)   -> full JSON export (tasks with annotations)
    server.delete_task(task.id)             (its annotations, drafts and locks go with it)
    server.delete_project(project.id)
    sign_in(url, email, password)           -> a Server acting as that user
    probe_all([urls])                       -> {url: Probe}: does each answer right now

Accounts (ensure_account). Label Studio's free edition has no API that sets a password:
a user made through POST /api/users/ can never log in, and signing up later with the same
email is refused ("User with this email already exists"). So an account either exists
already (the person signed up first: it is found by email and used as it is) or the
workbench signs the person up itself through the server's own sign-up form (with the
organisation's invite token, so it also works when sign-up without a link is disabled)
with a random password, then checks that the new session is that user. The password is
returned once in the Account and never stored or shown by this module.

Servers are configured, each with its own token, and a token goes only to the server it
was configured for (configured()): "default" is LABEL_STUDIO_URL with
LABEL_STUDIO_API_KEY, else the URL `scripts/labelstudio.sh start` recorded for the default
data dir (data/labelstudio/default/server.url), else http://127.0.0.1:8080, with the local
admin token (LABEL_STUDIO_API_KEY, else .labelstudio.env); then the named servers of the
settings file .labelstudio-servers.toml (AUDIT_LABEL_STUDIO_SERVERS), each with the
environment variable holding its token; then every server scripts/labelstudio.sh is
running under data/labelstudio/. connect() takes a name or a configured URL; any other URL
is refused before anything is sent to it (a URL typed or linked in the workbench, a
ledger naming a server no longer configured). The token is always passed to the SDK
explicitly (the SDK would otherwise read LABEL_STUDIO_API_KEY once, at import) and never
appears in a message.

Every failure of a call becomes ServerError (an InputError): the URL, what we were doing,
and the cause in one line — "cannot reach", "the token was rejected", or the HTTP status
with the server's short reason (never a whole HTML error page).

Writes are not retried by the SDK (max_retries=0): a POST whose response was lost may have
been applied, and a blind retry of an import would duplicate tasks. The review loop
resumes by listing what the server holds instead (audit/review/push.py).

Starting, stopping and killing a local server is the devkit's
(devkit/labelstudio_local.py); this module only recognises one that runs (runs_local).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import re
import secrets
import socket
import ssl
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ...errors import InputError
from ...settings import current, default_token, default_url
from .errors import ServerError, reason_of
from .forms import form_errors, form_session, post_form, sign_up

CHUNK_SIZE = 100
PAGE_SIZE = 1000
PARALLEL_READS = 4      # requests in flight at once for per-project reads
_NO_RETRY = {"max_retries": 0}


@dataclass(frozen=True)
class Project:
    id: int
    title: str
    description: str
    task_number: int | None = None


@dataclass(frozen=True)
class Task:
    id: int
    item_id: str | None


@dataclass(frozen=True)
class Size:
    tasks: int
    annotated: bool      # some member submitted or skipped a task
    annotations: int = 0
    skips: int = 0


@dataclass(frozen=True)
class User:
    id: int
    email: str
    username: str = ""


@dataclass(frozen=True)
class Account:
    """A user that can log in. `password` is set only when ensure_account just created
    the account (shown once to the manager, never stored by the adapter); None when the
    person had signed up already."""

    user: User
    password: str | None = None

    @property
    def created(self) -> bool:
        return self.password is not None


# ------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class Configured:
    """A Label Studio server the workbench is configured for, and the token configured for
    it (never shown: repr leaves it out)."""

    name: str
    url: str
    origin: str
    token: str | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return f"{self.name} · {self.url}"


def servers_file() -> Path:
    return current().labelstudio_servers


def configured() -> dict[str, Configured]:
    """Every server a token may go to, by name: "default" (LABEL_STUDIO_URL with
    LABEL_STUDIO_API_KEY, else the local one), the servers of the settings file
    (servers_file()), then each server scripts/labelstudio.sh runs under data/labelstudio/
    (its own process on 127.0.0.1, holding the local admin token). A URL is configured
    once, under its first name."""
    found: dict[str, Configured] = {}
    origin = "LABEL_STUDIO_URL" if current().labelstudio_url else \
        "the local server (scripts/labelstudio.sh)"
    for server in (Configured("default", default_url(), origin, default_token()),
                   *_settings(servers_file()), *_running_local()):
        if server.name not in found and not any(_same(server.url, other.url)
                                                for other in found.values()):
            found[server.name] = server
    return found


def _same(a: str, b: str) -> bool:
    return a.strip().rstrip("/").lower() == b.strip().rstrip("/").lower()


def _loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _settings(path: Path) -> list[Configured]:
    """The servers of a settings file: one table per server, with its URL and the
    environment variable that holds its token (the file holds no secret); a loopback
    server without one gets the local admin token.

        [side1]
        url = "https://review-1.example.org"
        token_env = "SIDE1_LABEL_STUDIO_TOKEN"
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as error:
        raise InputError(path, f"cannot read ({error.strerror})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(path, f"not valid TOML ({error})",
                         expected="[name] tables with url and token_env") from None
    out = []
    for name, entry in raw.items():
        url = entry.get("url") if isinstance(entry, dict) else None
        env = entry.get("token_env") if isinstance(entry, dict) else None
        if name == "default" or not isinstance(url, str) or \
                not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url.strip()) or \
                set(entry) - {"url", "token_env"} or \
                (env is not None and not isinstance(env, str)):
            raise InputError(path, f"server {name!r}", expected="a table named other than "
                             "'default' with url = \"http(s)://host[:port]\" and optionally "
                             "token_env = \"VARIABLE\"")
        if env is None and not _loopback(url):
            raise InputError(path, f"server {name!r} at {url} names no token_env",
                             expected="token_env for a server off this machine (the local "
                                      "admin token goes to loopback servers only)")
        token = current().variables.get(env) if env else default_token()
        out.append(Configured(name, url.strip().rstrip("/"), f"{path.name} [{name}]"
                              + (f", token from ${env}" if env else ""), token or None))
    return out


def _running_local() -> list[Configured]:
    """The servers scripts/labelstudio.sh runs now under data/labelstudio/: a recorded
    URL http://127.0.0.1:P whose pid is that label-studio start --port P on that dir."""
    out = []
    for url_file in sorted(current().labelstudio_data.glob("*/server.url")):
        folder = url_file.parent
        try:
            url = url_file.read_text(encoding="utf-8").strip()
            pid = int((folder / "server.pid").read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue
        port = re.fullmatch(r"http://127\.0\.0\.1:([0-9]{1,5})", url)
        if port and runs_local(folder, int(port.group(1)), pid):
            out.append(Configured(folder.name, url, f"started by scripts/labelstudio.sh "
                                  f"in data/labelstudio/{folder.name}", default_token()))
    return out


def find_server(server: str | None = None) -> Configured:
    """A configured server by name or URL (None: "default"). Anything else is refused
    before a byte is sent: no token goes to a server it was not configured for."""
    known = configured()
    wanted = "default" if server is None else str(server).strip()
    if wanted in known:
        return known[wanted]
    for candidate in known.values():
        if _same(candidate.url, wanted):
            return candidate
    raise ServerError(wanted, "not a configured server: nothing is sent to it",
                      expected="one of " + ", ".join(c.label for c in known.values())
                      + " (LABEL_STUDIO_URL with LABEL_STUDIO_API_KEY, the settings file "
                      + f"{servers_file().name}, or a server scripts/labelstudio.sh runs)")


def connect(server: str | None = None, token: str | None = None, *,
            timeout: float = 120.0) -> "Server":
    """A checked connection (the server answers /health and accepts the token) to a
    configured server, named or by URL, with the token configured for it (find_server);
    with `token`, the caller's own configuration: that URL with that token."""
    if token is None:
        chosen = find_server(server)
        url, token = chosen.url, chosen.token
    else:
        url = (server or default_url()).rstrip("/")
    if not token:
        raise ServerError(url, "no API token configured", expected=(
            "LABEL_STUDIO_API_KEY, .labelstudio.env (which scripts/labelstudio.sh start "
            "creates), or the token_env of the settings file"))
    try:
        import httpx
        from label_studio_sdk import LabelStudio
    except ImportError:
        raise ServerError(url, "the label_studio_sdk package is not installed",
                          expected="pip install -r requirements.txt") from None
    http = httpx.Client(timeout=timeout, follow_redirects=True)   # httpx drops the token
    server = Server(url, LabelStudio(base_url=url, api_key=token, timeout=timeout,  # on a
                                     httpx_client=http), http, token=token)  # new origin
    try:
        server.check()
    except BaseException:
        server.close()
        raise
    return server



class Server:
    """One Label Studio server, through the SDK; every call's failure is a ServerError.
    close() (or a with block) closes its HTTP connections."""

    def __init__(self, url: str, client: Any, http: Any = None, *,
                 token: str | None = None) -> None:
        self.url = url
        self.client = client
        self._http = http
        self._token = token
        self._users: dict[int, User] | None = None

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- plumbing

    @contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        import httpx
        from label_studio_sdk.core.api_error import ApiError
        try:
            yield
        except ApiError as error:
            status = error.status_code
            if status in (401, 403):
                raise ServerError(self.url, f"{what}: the API token was rejected (HTTP {status})",
                                  expected="the token of this server's admin, from "
                                           "LABEL_STUDIO_API_KEY or .labelstudio.env") from None
            reason = reason_of(error.body)
            raise ServerError(self.url, f"{what}: HTTP {status}"
                              + (f": {reason}" if reason else "")) from None
        except httpx.TimeoutException as error:
            raise ServerError(self.url, f"{what}: no answer in time ({type(error).__name__})",
                              expected="a responsive server") from None
        except httpx.TransportError as error:
            raise ServerError(self.url, f"{what}: cannot reach the server "
                              f"({type(error).__name__}: {error})",
                              expected="a running Label Studio: scripts/labelstudio.sh start, "
                                       "or set LABEL_STUDIO_URL") from None

    def check(self) -> User:
        """/health says UP and the token is accepted; the current user."""
        import httpx
        try:
            response = (self._http or httpx).get(f"{self.url}/health", timeout=10)
            body = response.json() if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError) as error:
            raise ServerError(self.url, f"cannot reach the server ({type(error).__name__}: "
                              f"{error})", expected="a running Label Studio: "
                              "scripts/labelstudio.sh start, or set LABEL_STUDIO_URL") from None
        if body.get("status") != "UP":
            raise ServerError(self.url, f"/health answered HTTP {response.status_code} "
                              f"{reason_of(body) or ''}".rstrip(), expected='{"status": "UP"}')
        return self.whoami()

    def whoami(self) -> User:
        with self._calling("who am I"):
            me = self.client.users.whoami()
        return User(me.id, me.email or "", me.username or "")

    # -------------------------------------------------------------- projects

    def projects(self, containing: str | None = None) -> list[Project]:
        """Every project, or those whose title contains `containing` (one request per
        thousand; no progress counters computed)."""
        with self._calling("list projects"):
            return [_project(p) for p in self.client.projects.list(
                title=containing, page_size=PAGE_SIZE,
                include="id,title,description,task_number")]

    def find_project(self, title: str, known: Sequence[Project] | None = None
                     ) -> Project | None:
        """The project with exactly this title (titles are our keys: two is an error),
        looked up among `known` projects when given (a listing made for many lookups)."""
        found = known if known is not None else self.projects(containing=title)
        exact = [p for p in found if p.title == title]
        if len(exact) > 1:
            raise ServerError(self.url, f"{len(exact)} projects are titled {title!r} "
                              f"(ids {', '.join(str(p.id) for p in exact)})",
                              expected="one project per title: delete the extra ones")
        return exact[0] if exact else None

    def get_project(self, project_id: int) -> Project | None:
        """The project, or None when the server has no project with this id."""
        from label_studio_sdk.core.api_error import ApiError
        with self._calling(f"get project {project_id}"):
            try:
                return _project(self.client.projects.get(id=project_id))
            except ApiError as error:
                if error.status_code == 404:
                    return None
                raise

    def ensure_project(self, title: str, label_config: str, description: str = "",
                       known: Sequence[Project] | None = None) -> Project:
        """The project titled `title`, created with this config and description when none
        exists (idempotent by title; an existing project is returned as it is). `known`:
        a listing to look the title up in (find_project)."""
        existing = self.find_project(title, known)
        if existing is not None:
            return existing
        with self._calling(f"create project {title!r}"):
            created = self.client.projects.create(
                title=title, description=description, label_config=label_config,
                maximum_annotations=1, request_options=_NO_RETRY)
        return _project(created)

    def delete_project(self, project_id: int) -> None:
        with self._calling(f"delete project {project_id}"):
            self.client.projects.delete(id=project_id)

    # -------------------------------------------------------------- tasks

    def list_tasks(self, project_id: int) -> list[Task]:
        """Every task of a project with the item_id of its data, in id order."""
        with self._calling(f"list the tasks of project {project_id}"):
            pager = self.client.tasks.list(project=project_id, include="id,data",
                                           page_size=PAGE_SIZE)
            tasks = [Task(t.id, (t.data or {}).get("item_id")) for t in pager]
        return sorted(tasks, key=lambda t: t.id)

    def import_tasks(self, project_id: int, payloads: Sequence[dict], *,
                     meta: Sequence[dict] | None = None,
                     annotations: Sequence[list[dict]] | None = None,
                     predictions: Sequence[list[dict]] | None = None,
                     chunk_size: int = CHUNK_SIZE,
                     progress: Callable[[int, int], None] | None = None) -> list[int]:
        """Create one task per payload (its `data`), chunk_size per request, in order; the
        new task ids. Each chunk is its own request: if one fails, the chunks before it
        stay imported and ServerError says how many were sent. progress(sent, total) after
        each chunk. `meta` gives each task's meta; `annotations` each task's existing
        annotations ({"result": [...], "completed_by": user id}), e.g. labels made
        elsewhere; `predictions` each task's pre-filled regions ({"model_version", "result"}),
        which the annotator's form opens with."""
        total = len(payloads)
        for name, extra in (("meta", meta), ("annotations", annotations),
                            ("predictions", predictions)):
            if extra is not None and len(extra) != total:
                raise ValueError(f"{name} must have one entry per payload")
        ids: list[int] = []
        for start in range(0, total, chunk_size):
            chunk = []
            for i in range(start, min(start + chunk_size, total)):
                task: dict = {"data": dict(payloads[i])}
                if meta is not None:
                    task["meta"] = meta[i]
                if annotations is not None:
                    task["annotations"] = annotations[i]
                if predictions is not None and predictions[i]:
                    task["predictions"] = predictions[i]
                chunk.append(task)
            what = (f"import tasks {start + 1}-{start + len(chunk)} of {total} into project "
                    f"{project_id} ({len(ids)} sent before)")
            with self._calling(what):
                response = self.client.projects.import_tasks(
                    id=project_id, request=chunk, return_task_ids=True,
                    request_options=_NO_RETRY)
            new = list(response.task_ids or [])
            if len(new) != len(chunk):
                raise ServerError(self.url, f"{what}: the server created {len(new)} tasks "
                                  f"for {len(chunk)}")
            ids += new
            if progress is not None:
                progress(len(ids), total)
        return ids

    # -------------------------------------------------------------- users

    def users(self, refresh: bool = False) -> dict[int, User]:
        if self._users is None or refresh:
            with self._calling("list users"):
                self._users = {u.id: User(u.id, u.email or "", u.username or "")
                               for u in self.client.users.list()}
        return self._users

    def find_user(self, email: str) -> User | None:
        wanted = email.strip().lower()
        for refresh in (False, True):
            for user in self.users(refresh=refresh).values():
                if user.email.lower() == wanted:
                    return user
        return None

    def ensure_account(self, email: str) -> Account:
        """An account this person can log in with (module docstring): found by email, else
        signed up through the sign-up form with a random password returned once."""
        found = self.find_user(email)
        if found is not None:
            return Account(found)
        password = secrets.token_urlsafe(15)
        sign_up(self.url, email, password, self._invite_token())
        user = self.find_user(email)
        if user is None:
            raise ServerError(self.url, f"sign up {email}: the new account is not listed "
                              "among the organisation's users")
        return Account(user, password)

    def _invite_token(self) -> str:
        with self._calling("read the organisation's invite link"):
            invite = self.client.organizations.invites.get_invite_link()
        if not getattr(invite, "token", None):
            raise ServerError(self.url, "read the organisation's invite link: no token")
        return invite.token

    def ensure_user(self, email: str) -> User:
        """The user with this email, created through the API when missing. Such a user
        can NEVER log in (the API sets no password, and sign-up then refuses the email):
        only for simulated users in tests. People get ensure_account()."""
        found = self.find_user(email)
        if found is not None:
            return found
        with self._calling(f"create user {email}"):
            created = self.client.users.create(username=email, email=email,
                                               request_options=_NO_RETRY)
        user = User(created.id, created.email or email, created.username or "")
        self.users()[user.id] = user
        return user

    # -------------------------------------------------------------- annotations

    def create_annotation(self, task_id: int, result: list[dict],
                          completed_by: int | User, *, ground_truth: bool = False) -> int:
        """Create an annotation credited to `completed_by` with this connection's token.
        Label Studio records the token's user as updated_by, so with the admin token the
        pull refuses it (attribution): people annotate through their own login."""
        user_id = completed_by.id if isinstance(completed_by, User) else int(completed_by)
        with self._calling(f"annotate task {task_id}"):
            created = self.client.annotations.create(
                id=task_id, result=result, completed_by=user_id, ground_truth=ground_truth,
                request_options=_NO_RETRY)
        return created.id

    def update_annotation(self, annotation_id: int, result: list[dict]) -> None:
        with self._calling(f"update annotation {annotation_id}"):
            self.client.annotations.update(id=annotation_id, result=result,
                                           request_options=_NO_RETRY)

    def delete_task(self, task_id: int) -> None:
        with self._calling(f"delete task {task_id}"):
            self.client.tasks.delete(id=task_id, request_options=_NO_RETRY)

    def delete_annotation(self, annotation_id: int) -> None:
        with self._calling(f"delete annotation {annotation_id}"):
            self.client.annotations.delete(id=annotation_id, request_options=_NO_RETRY)

    def project_sizes(self, project_ids: Sequence[int]) -> dict[int, "Size"]:
        """How many tasks each of these projects holds and whether any member annotated
        or skipped one, in one request (projects gone are absent). Label Studio's own
        done/skipped counters count every member's annotations, so progress is read
        from the export of the annotated projects instead (status.status)."""
        if not project_ids:
            return {}
        with self._calling("read project sizes"):
            pager = self.client.projects.list(
                ids=",".join(str(i) for i in project_ids), page_size=PAGE_SIZE,
                include="id,task_number,total_annotations_number,"
                        "skipped_annotations_number")
            return {p.id: Size(p.task_number or 0,
                               bool(p.total_annotations_number or p.skipped_annotations_number),
                               p.total_annotations_number or 0, p.skipped_annotations_number or 0)
                    for p in pager}

    def latest_changes(self, project_ids: Sequence[int]) -> dict[int, tuple[int, str]]:
        """Each project's most recently changed task as (task id, updated_at): saving or
        deleting an annotation stamps its task's updated_at (tasks/models.py update_task),
        so an unchanged answer means no annotation was made, edited or removed since. One
        small request per project (the data manager sorted by updated_at, one task, two
        fields), a few at a time; empty projects are absent."""
        newest = json.dumps({"ordering": ["-tasks:updated_at"]})

        def latest(project_id: int) -> tuple[int, tuple[int, str] | None]:
            with self._calling(f"read project {project_id}'s latest change"):
                page = self.client.tasks.list(project=project_id, page_size=1,
                                              fields="task_only", include="id,updated_at",
                                              query=newest)
            task = page.items[0] if page.items else None
            return project_id, (task.id, task.updated_at.isoformat()) if task else None
        return {pid: change for pid, change in _in_parallel(latest, project_ids)
                if change is not None}

    def exports(self, project_ids: Sequence[int]) -> dict[int, list[dict]]:
        """export_annotations of each project, a few at a time."""
        return dict(_in_parallel(lambda pid: (pid, self.export_annotations(pid)), project_ids))

    def export_annotations(self, project_id: int, *, all_tasks: bool = False
                           ) -> list[dict]:
        """The full JSON export (not JSON_MIN, which drops meta and ground_truth) of the
        project's annotated tasks (all_tasks: every task): each task with data, meta,
        annotations[] and drafts[]."""
        with self._calling(f"export project {project_id}"):
            raw = b"".join(self.client.projects.exports.download_sync(
                id=project_id, export_type="JSON", download_all_tasks=all_tasks))
        try:
            tasks = json.loads(raw)
        except ValueError as error:
            raise ServerError(self.url, f"export project {project_id}: not JSON "
                              f"({error})") from None
        if not isinstance(tasks, list):
            raise ServerError(self.url, f"export project {project_id}: a JSON "
                              f"{type(tasks).__name__}", expected="a list of tasks")
        return tasks


def _in_parallel(call: Callable, items: Sequence) -> list:
    """call(item) for every item, PARALLEL_READS at a time (the server answers requests in
    threads, and each waits mostly on the database), in the items' order."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=PARALLEL_READS) as pool:
        return list(pool.map(call, items))


# ------------------------------------------------------------------------- sign-in

def sign_in(url: str, email: str, password: str, *, timeout: float = 120.0) -> Server:
    """A Server acting as this user: logs in through the login form, as a person would,
    and uses that user's own API token. ServerError when the login is refused."""
    import httpx
    from label_studio_sdk import LabelStudio
    url = url.rstrip("/")
    try:
        with form_session(url) as client:
            response = post_form(client, "/user/login/", {"email": email,
                                                            "password": password})
            if response.status_code != 302:
                raise ServerError(url, f"log in as {email}: refused "
                                  f"({form_errors(response.text)})",
                                  expected="the email and password the invitation gave")
            token = _user_token(url, email, client.get("/api/current-user/token"))
    except httpx.HTTPError as error:
        raise ServerError(url, f"log in as {email}: cannot reach the server "
                          f"({type(error).__name__})") from None
    http = httpx.Client(timeout=timeout, follow_redirects=True)
    return Server(url, LabelStudio(base_url=url, api_key=token, timeout=timeout,
                                   httpx_client=http), http, token=token)


def _user_token(url: str, email: str, response: Any) -> str:
    """The token in the answer to GET /api/current-user/token, or a ServerError saying what
    came instead (a login page, an HTML error, JSON without a token)."""
    what = f"log in as {email}: read the user's API token"
    if response.status_code != 200:
        raise ServerError(url, f"{what}: HTTP {response.status_code}",
                          expected='200 with {"token": …}')
    try:
        body = response.json()
    except ValueError:
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise ServerError(url, f"{what}: the answer is not JSON ({kind})",
                          expected='{"token": …}') from None
    token = body.get("token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise ServerError(url, f"{what}: no token in the answer", expected='{"token": …}')
    return token


def _project(p: Any) -> Project:
    return Project(p.id, p.title or "", p.description or "", getattr(p, "task_number", None))


# ------------------------------------------------------------------------- probe

PROBE_TIMEOUT = 2.0     # seconds a probe waits for a server, all its requests together
_PROBE_BODY = 65536     # bytes of an answer read at most


@dataclass(frozen=True)
class Probe:
    """Whether a server answers right now: what it said (its Label Studio version) or why
    it does not answer, in a few words."""

    url: str
    answers: bool
    detail: str

    @property
    def text(self) -> str:
        return f"answers ({self.detail})" if self.answers else \
            f"does not answer: {self.detail}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None     # a redirect is an answer of its own (a login page), not followed


def probe(url: str, timeout: float = PROBE_TIMEOUT) -> Probe:
    """Whether the server at `url` answers now, within `timeout` seconds: GET /api/version
    (public in Label Studio: {"release": "1.23.2", …}), else /health ({"status": "UP"}).
    No token and no cookie is sent and no redirect followed, so any URL may be probed."""
    base = url.strip().rstrip("/")
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(_NoRedirect())
    answered: list[str] = []
    for path in ("/api/version", "/health"):
        left = deadline - time.monotonic()
        if left <= 0:
            return Probe(url, False, f"no answer within {timeout:g} s")
        try:
            with opener.open(urllib.request.Request(
                    base + path, headers={"Accept": "application/json"}), timeout=left) as r:
                status, body = r.status, r.read(_PROBE_BODY)
        except urllib.error.HTTPError as error:
            status, body = error.code, b""
            error.close()
        except (OSError, ValueError, http.client.HTTPException) as error:
            if not answered:
                return Probe(url, False, _unreachable(error, timeout))
            answered.append(_unreachable(error, timeout))   # /api/version answered: say both
            break
        try:
            said = json.loads(body) if status == 200 else None
        except ValueError:
            said = None
        if path == "/api/version" and isinstance(said, dict) and \
                isinstance(said.get("release"), str):
            return Probe(url, True, f"Label Studio {said['release'][:40]}")
        if path == "/health" and isinstance(said, dict) and said.get("status") == "UP":
            return Probe(url, True, "Label Studio, version not public: /api/version "
                         + answered[0])
        answered.append(f"HTTP {status}" if status != 200 else "not Label Studio's JSON")
    if len(set(answered)) == 1:
        return Probe(url, False, f"{answered[0]} on /api/version and /health: not Label "
                     "Studio")
    return Probe(url, False, ", ".join(f"{what} on {path}" for path, what in zip(
        ("/api/version", "/health"), answered)) + ": not Label Studio")


def _unreachable(error: BaseException, timeout: float) -> str:
    """Why nothing answered, in a few words: refused, timed out, unknown host…"""
    reason: object = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    if isinstance(reason, ssl.SSLError):
        return f"TLS failed ({reason.reason or type(reason).__name__})"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror[:80]
    return (str(reason) or type(reason).__name__)[:80]


def probe_all(urls: Sequence[str], timeout: float = PROBE_TIMEOUT) -> dict[str, Probe]:
    """probe() of every URL at once; a URL still waiting after `timeout` (a slow name
    lookup, which no socket timeout bounds) does not answer. Returns within about
    `timeout` seconds whatever the servers do."""
    from concurrent.futures import ThreadPoolExecutor, wait
    if not urls:
        return {}
    pool = ThreadPoolExecutor(max_workers=len(urls), thread_name_prefix="probe")
    asked = {url: pool.submit(probe, url, timeout) for url in dict.fromkeys(urls)}
    wait(asked.values(), timeout=timeout + 0.2)
    pool.shutdown(wait=False, cancel_futures=True)
    return {url: future.result() if future.done() else
            Probe(url, False, f"no answer within {timeout:g} s")
            for url, future in asked.items()}


# ------------------------------------------------------------------------- local server

def runs_local(data_dir: Path, port: int, pid: int) -> bool:
    """Whether process `pid` is the server scripts/labelstudio.sh started on `data_dir`
    and `port`: `label-studio start … --port P`, and, where its environment is readable,
    on that data dir (a pid in a pid file may since belong to another process)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [a.decode(errors="replace") for a in args]
    launched = any(Path(w).name == "label-studio" and words[i + 1:i + 2] == ["start"]
                   for i, w in enumerate(words))
    ported = any(words[i:i + 2] == ["--port", str(port)] for i in range(len(words)))
    if not (launched and ported and process_running(pid)):
        return False
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return True
    found = [e.split(b"=", 1)[1] for e in environ
             if e.startswith(b"LABEL_STUDIO_BASE_DATA_DIR=")]
    return not found or Path(os.fsdecode(found[0])).resolve() == Path(data_dir).resolve()


def process_running(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
