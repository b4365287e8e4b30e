"""SHA-256 digests of files and texts: what identities, cache keys and correction guards are
made of."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def text_sha256(text: str) -> str:
    """The SHA-256 of a text's UTF-8 bytes (a signal's cache key, a correction's guard)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
