"""Batch files that hold secrets or personal data: credentials.txt (new accounts' passwords)
and refusals.jsonl (annotators' e-mails and refused labels) are created mode 600 and never
written through a planted symlink, a second hard link or a file someone else owns."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from audit.errors import InputError
from audit.review import accounts, workspace

NOTE = accounts.AccountNote("ana@example.org", "http://127.0.0.1:8081", 7, True, "s3cret-pass")
REFUSAL = {"server": "http://127.0.0.1:8081", "project_id": 3, "kind": "annotation",
           "annotation_id": 11, "updated_at": "2026-11-30T10:00:00Z",
           "completed_by": "bo@example.org", "reason": "created by bo@example.org"}


def batch_at(folder: Path) -> workspace.Workspace:
    """The batch whose folder this is (its refusals log: folder/refusals.jsonl)."""
    return workspace.Workspace(folder.name, folder.parent)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_credentials_and_refusals_are_mode_600(tmp_path):
    accounts.append_credentials(tmp_path / "credentials.txt", [NOTE])
    assert mode(tmp_path / "credentials.txt") == 0o600
    assert (tmp_path / "credentials.txt").read_text().split("\t")[1:] == [
        "http://127.0.0.1:8081/user/login/", "ana@example.org", "s3cret-pass\n"]
    assert batch_at(tmp_path).append_refusals([REFUSAL]) == 1
    assert mode(tmp_path / "refusals.jsonl") == 0o600
    assert batch_at(tmp_path).refusals()[0]["annotation_id"] == 11


def test_an_existing_log_of_ours_is_made_private(tmp_path):
    log = tmp_path / "refusals.jsonl"
    log.write_text("")
    log.chmod(0o644)
    batch_at(tmp_path).append_refusals([REFUSAL])
    assert mode(log) == 0o600 and len(log.read_text().splitlines()) == 1


@pytest.mark.parametrize("name", ["credentials.txt", "refusals.jsonl"])
def test_a_planted_symlink_receives_nothing(tmp_path, name):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("kept\n")
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / name).symlink_to(elsewhere)
    with pytest.raises(InputError, match="a symbolic link: refused"):
        append(folder / name)
    assert elsewhere.read_text() == "kept\n"
    # A dangling link is not followed to create its target either.
    (folder / name).unlink()
    (tmp_path / "dangling").mkdir()
    (folder / name).symlink_to(tmp_path / "dangling" / "created.txt")
    with pytest.raises(InputError, match="a symbolic link: refused"):
        append(folder / name)
    assert not (tmp_path / "dangling" / "created.txt").exists()


@pytest.mark.parametrize("name", ["credentials.txt", "refusals.jsonl"])
def test_a_second_hard_link_or_anothers_file_is_refused(tmp_path, name):
    other = tmp_path / "other.txt"
    other.write_text("kept\n")
    os.link(other, tmp_path / name)
    with pytest.raises(InputError, match="not a regular file of this user with one link"):
        append(tmp_path / name)
    assert other.read_text() == "kept\n"
    (tmp_path / name).unlink()
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    (tmp_path / name).write_text("")
    os.chown(tmp_path / name, 65534, 65534)
    with pytest.raises(InputError, match="not a regular file of this user"):
        append(tmp_path / name)
    assert (tmp_path / name).read_text() == ""


def append(path: Path) -> None:
    if path.name == "credentials.txt":
        accounts.append_credentials(path, [NOTE])
    else:
        batch_at(path.parent).append_refusals([REFUSAL])
