"""The Label Studio server(s) of a batch.

Blinding. With one server per side (Sites with "annotator 1", "annotator 2" and
"adjudication" on three different servers; annotators declared per side), an annotator
has an account only on their side's server: they cannot log in where the other side's
labels are, and the adjudicator's server holds neither side's projects. That is
enforced by separate databases. With one shared server, nothing stops a member from
opening another project: reading leaves no trace in CE, so reading is neither enforced
nor detectable; every write is detected (below). The ledger says which ("blinding").
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..errors import InputError
from .labelstudio.client import Server
from .routing import ROLES, SLOTS
from .workspace import Workspace


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
        from .labelstudio.client import connect
        self._extra[url] = connect(url)
        return self._extra[url]

    def server_for(self, url: str) -> Server:
        """The server a ledger entry names: with one shared server, wherever the ledger
        says it was."""
        if len({s.url for s in self.roles.values()}) == 1:
            return self.role(SLOTS[0])
        return self.at(url)

    def close(self) -> None:
        for server in {id(s): s for s in (*self.roles.values(),
                                          *self._extra.values())}.values():
            server.close()
        self._extra.clear()


def as_sites(servers: Server | Sites | Mapping[str, Server]) -> Sites:
    return servers if isinstance(servers, Sites) else Sites(servers)


def connect_sites(servers: Mapping[str, str] | str | None = None) -> Sites:
    """Sites from configured servers, each named or by its URL ({role: server}, one
    server, or None for the default); a server no configuration names is refused
    (labelstudio.find_server), so no token goes to a URL typed, linked or recorded."""
    from .labelstudio.client import connect, find_server
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


def ledger_sites(batch_id: str, workspace: Path | None = None) -> Sites:
    """Connections to the servers a batch's ledger names, each with the token configured
    for it (a URL no longer configured is refused); close() them."""
    ledger = Workspace(batch_id, workspace).ledger()
    urls: dict[str, str] = dict(ledger.get("servers") or {})
    for entry in ledger["projects"].values():
        urls.setdefault(entry["role"], entry["server"])
    if not urls:
        return connect_sites(None)
    first = next(iter(urls.values()))
    return connect_sites({role: urls.get(role, first) for role in ROLES})

