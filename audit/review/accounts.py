"""Annotators' accounts on the servers of a batch.

Accounts. Every routed annotator (and adjudicator) gets an account that works: found by
email when the person signed up first, else signed up by the workbench with a random
password (labelstudio.ensure_account). New passwords are returned once in the push
report and appended to <batch>/credentials.txt (mode 600, gitignored); they are never
logged and never stored anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .labelstudio.client import Server
from .workspace import append_private, now


@dataclass(frozen=True)
class AccountNote:
    """An annotator's account on one server. `password` only when this push created it:
    shown once, written to credentials.txt (mode 600), never logged."""

    email: str
    server: str
    user_id: int
    created: bool
    password: str | None = field(default=None, repr=False)


def ensure_accounts(server: Server, emails: Sequence[str], folder: Path,
                     ledger: dict) -> list[AccountNote]:
    notes = []
    for email in emails:
        account = server.ensure_account(email)
        notes.append(AccountNote(email, server.url, account.user.id, account.created,
                                 account.password))
        recorded = ledger["accounts"].setdefault(email, {})
        recorded.setdefault(server.url, {
            "user_id": account.user.id, "at": now(),
            "origin": "signed up by the workbench" if account.created
            else "found (signed up before)"})
    new = [note for note in notes if note.created]
    if new:
        append_credentials(folder / "credentials.txt", new)
    return notes


def append_credentials(path: Path, notes: list[AccountNote]) -> None:
    """Append new accounts' logins to a file only its owner can read."""
    append_private(path, "".join(f"{now()}\t{note.server}/user/login/\t{note.email}\t"
                                 f"{note.password}\n" for note in notes))
