"""Who may write in the workbench: two roles.

A viewer browses, reads and exports what is shown. An operator also writes: pushes review
batches (which creates Label Studio accounts whose passwords then show in that browser),
pulls, adjudicates, uploads files, saves scans — every action that changes a file, a
server or an account. Pages ask `gate(action)` where such an action would be: an operator
gets the control, a viewer a note saying why it is not there; `require` guards the
helpers that write.

Who is an operator, from Streamlit's secrets (`.streamlit/secrets.toml` or
`--secrets.files`):

    [workbench]
    operators = ["ana@example.org"]      # with [auth]: who, signed in by st.login, operates
    operator_password = "…"              # or: a password typed in the sidebar (>= 12 chars)

- With `[auth]` configured (Streamlit's own OIDC login, `st.login`), a signed-in user whose
  e-mail is in `operators`.
- With `operator_password`, whoever types it in this browser session (a reload asks again;
  five wrong tries in a minute lock the form for a minute, for every session).
- With neither, an app bound to a loopback address (`server.address` 127.0.0.1, ::1 or
  localhost) treats its user as the operator unless the request came through a proxy that
  says so (Forwarded, X-Forwarded-For, X-Real-IP); bound to any other address (or to none,
  which is every interface) it is read-only and says so.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import streamlit as st
from streamlit.errors import StreamlitAuthError

from audit.errors import InputError
from audit.reports.render import message

OPERATOR, VIEWER = "operator", "viewer"
MIN_PASSWORD = 12
TRIES, WINDOW = 5, 60.0                 # wrong passwords per window before a lock
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")
_SESSION_KEY = "workbench_operator"     # the digest of the password this session typed


@dataclass(frozen=True)
class Settings:
    """What Streamlit's secrets say about operators."""

    oidc: bool = False
    provider: str | None = None
    operators: frozenset[str] = frozenset()
    password: str | None = field(default=None, repr=False)
    problems: tuple[str, ...] = ()

    @property
    def sign_in(self) -> bool:
        """Whether any sign-in is configured (then a loopback bind is no longer enough)."""
        return self.oidc or self.password is not None or bool(self.problems)


@dataclass(frozen=True)
class Role:
    """A session's role. `why` (what made it so) and `how` (for a viewer: how one becomes
    an operator) are our words, with {email} / {address} standing for `values`."""

    kind: str                                   # OPERATOR | VIEWER
    why: str
    how: str = ""
    values: Mapping[str, str] = field(default_factory=dict)

    @property
    def operator(self) -> bool:
        return self.kind == OPERATOR

    def plain(self, template: str) -> str:
        return template.format(**self.values)

    def markdown(self, template: str) -> str:
        """The template with every value verbatim (audit.reports.render.message)."""
        return message(template, **self.values)


def settings(secrets: Mapping) -> Settings:
    """Settings from a mapping of secrets; a malformed entry is a problem, never a grant."""
    section = secrets.get("workbench") or {}
    problems = []
    if not isinstance(section, Mapping):
        section, problems = {}, ["[workbench] is not a table"]
    listed = section.get("operators", [])
    if not isinstance(listed, (list, tuple)) or not all(isinstance(e, str) for e in listed):
        listed, problems = [], problems + ["[workbench] operators is not a list of e-mails"]
    password = section.get("operator_password")
    if password is not None and (not isinstance(password, str)
                                 or len(password) < MIN_PASSWORD):
        password, problems = None, problems + [
            f"[workbench] operator_password is shorter than {MIN_PASSWORD} characters: "
            "not used"]
    provider = section.get("oidc_provider")
    return Settings(oidc="auth" in secrets, provider=provider if isinstance(provider, str)
                    else None, operators=frozenset(e.strip().lower() for e in listed),
                    password=password, problems=tuple(problems))


def loopback(address: str | None) -> bool:
    """Whether a bind address lets only this machine in (no address: every interface; a
    Unix socket is left to whatever proxies it, so it is not loopback either)."""
    text = (address or "").strip().strip("[]")
    if text == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def proxied(headers: Mapping[str, str]) -> bool:
    return any(str(key).lower() in PROXY_HEADERS for key in headers)


def decide(config: Settings, *, address: str | None, headers: Mapping[str, str],
           email: str | None = None, typed_password: bool = False) -> Role:
    """The role of one session: `email` is who st.login signed in (None: nobody),
    `typed_password` whether this session typed the operator password."""
    values = {"email": email or "", "address": address or "every interface"}
    how = []
    if config.oidc:
        if email and email.strip().lower() in config.operators:
            return Role(OPERATOR, "signed in as {email}", values=values)
        how.append("{email} is not among the operators" if email else "log in (sidebar)")
    if config.password is not None:
        if typed_password:
            return Role(OPERATOR, "signed in with the operator password", values=values)
        how.append("sign in with the operator password (sidebar)")
    if config.sign_in:
        steps = "; ".join(how + [p.replace("{", "{{").replace("}", "}}")
                                 for p in config.problems])
        return Role(VIEWER, "operators sign in", steps[:1].upper() + steps[1:], values)
    if not loopback(address):
        return Role(VIEWER, "served on {address} with no operator sign-in configured",
                    "An operator configures [workbench] operator_password (or [auth] with "
                    "[workbench] operators) in Streamlit's secrets, or serves the "
                    "workbench on 127.0.0.1", values)
    if proxied(headers):
        return Role(VIEWER, "bound to {address} but reached through a proxy",
                    "An operator configures a sign-in in Streamlit's secrets", values)
    return Role(OPERATOR, "bound to {address}: only this machine reaches it", values=values)


class Attempts:
    """Wrong operator passwords, process-wide: TRIES within WINDOW seconds lock the form
    until the oldest of them is WINDOW seconds old."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self._wrong: deque[float] = deque()
        self._lock = threading.Lock()

    def locked_for(self) -> float:
        with self._lock:
            now = self.clock()
            while self._wrong and now - self._wrong[0] >= WINDOW:
                self._wrong.popleft()
            return WINDOW - (now - self._wrong[0]) if len(self._wrong) >= TRIES else 0.0

    def check(self, expected: str, typed: str) -> bool:
        """Whether `typed` is the password; a wrong one counts. False while locked."""
        if self.locked_for():
            return False
        if hmac.compare_digest(expected.encode(), typed.encode()):
            return True
        with self._lock:
            self._wrong.append(self.clock())
        return False


ATTEMPTS = Attempts()


# ------------------------------------------------------------------------- Streamlit

def _settings() -> Settings:
    try:
        secrets = st.secrets.to_dict() if st.secrets.load_if_toml_exists() else {}
    except Exception as error:      # an unreadable secrets file grants nothing
        return Settings(problems=(f"Streamlit's secrets cannot be read "
                                  f"({type(error).__name__}): nobody is an operator",))
    return settings(secrets)


def _digest(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def role() -> Role:
    """This session's role."""
    config = _settings()
    email = None
    if config.oidc and st.user.get("is_logged_in"):
        email = str(st.user.get("email") or "") or None
    typed = config.password is not None and hmac.compare_digest(
        str(st.session_state.get(_SESSION_KEY, "")), _digest(config.password))
    return decide(config, address=st.get_option("server.address"),
                  headers=dict(st.context.headers or {}), email=email, typed_password=typed)


def can_write() -> bool:
    return role().operator


def gate(action: str, *, box=None) -> bool:
    """True for an operator; for a viewer, a note in place of the action: which action,
    why it is not here and how one becomes an operator (st.info), or, in a small `box`
    such as st.caption beside the sidebar's boxes, the action alone."""
    current = role()
    if current.operator:
        return True
    if box is None:
        st.info(current.markdown(f"{action} needs an operator: this session is read-only "
                                 f"({current.why}). {current.how}."), icon="🔒")
    else:
        box(f"🔒 {action} needs an operator: this session is read-only.")
    return False


class ReadOnly(InputError):
    def __init__(self, action: str) -> None:
        super().__init__(action, "needs an operator: this session is read-only")


def require(action: str) -> None:
    """Refuse a write for a viewer (behind every gate, in the helper that writes)."""
    if not can_write():
        raise ReadOnly(action)


def _sign_in(key: str) -> None:
    typed = str(st.session_state.get(key) or "")
    st.session_state[key] = ""
    password = _settings().password
    if password is not None and ATTEMPTS.check(password, typed):
        st.session_state[_SESSION_KEY] = _digest(password)
    else:
        st.session_state["workbench_sign_in_failed"] = True


def panel() -> None:
    """The sidebar's line about this session's role, with sign-in and sign-out."""
    config = _settings()
    current = role()
    with st.sidebar:
        st.caption(current.markdown(("**Operator** · " if current.operator else
                                     "**Viewer** (read-only) · ") + current.why))
        if current.operator and st.session_state.get(_SESSION_KEY):
            if st.button("Sign out", key="workbench_sign_out"):
                st.session_state.pop(_SESSION_KEY, None)
                st.rerun()
        if config.oidc and st.user.get("is_logged_in"):
            if st.button("Log out", key="workbench_log_out"):
                st.logout()
        elif config.oidc and not current.operator:
            if st.button("Log in", key="workbench_log_in"):
                try:
                    st.login(config.provider) if config.provider else st.login()
                except StreamlitAuthError as error:
                    st.error(message("Log in is not available: {problem}", problem=error))
        if config.password is not None and not current.operator:
            locked = ATTEMPTS.locked_for()
            st.text_input("Operator password", type="password", key="workbench_password",
                          on_change=_sign_in, args=("workbench_password",),
                          disabled=bool(locked))
            if locked:
                st.caption(f"Too many wrong passwords: try again in {locked:.0f} s.")
            elif st.session_state.pop("workbench_sign_in_failed", False):
                st.caption("That is not the operator password.")
