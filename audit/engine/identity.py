"""A scan's identity: one SHA-256 of everything its results depend on — each input file's
SHA-256 and role, the split each HotpotQA source is read as, the policy (its file's name
and SHA-256), the checks left out, and the code (`code_fingerprint`). It names a scan's
remembered results (audit/engine/store.py) and is its manifest's fingerprint.

Computed from files alone: nothing here imports DuckDB, Arrow or a check module (ICU's
version is read, 11 ms), so a rescan of remembered results costs little more than the
interpreter's start.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

# Libraries whose release changes what a check finds (signals, SQL, Unicode data).
LIBRARIES = ("duckdb", "pyarrow", "numpy", "lingua-language-detector", "langdetect", "ftfy",
             "rapidfuzz", "PyICU")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of everything a finding depends on besides the inputs and the policy: this
    package's source files (rules, signal layers, SQL), the releases of the libraries that
    compute signals, the ICU and Unicode data PyICU runs on (a system library that can change
    under an unchanged PyICU), and Python's own (its `str` methods and `unicodedata`)."""
    import icu

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    for release in [*_releases(), f"icu-{icu.ICU_VERSION}", f"unicode-{icu.UNICODE_VERSION}",
                    f"python-{sys.version}"]:
        digest.update(release.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _releases() -> list[str]:
    """The installed releases of LIBRARIES, as their dist-info directories name them
    (importlib.metadata alone costs 0.1–0.2 s of a start)."""
    wanted = {name.lower().replace("-", "_") for name in LIBRARIES}
    return sorted(folder.name for entry in sys.path if Path(entry).is_dir()
                  for folder in Path(entry).glob("*.dist-info")
                  if folder.name.split("-", 1)[0].lower() in wanted)


def identity(inputs: Iterable[tuple[str, str]], splits: Iterable[str | None],
             policy: tuple[str, str] | None, skip: Iterable[str]) -> str:
    """The identity of a scan of `inputs` ((role, SHA-256) of each file: the release's in
    order, then the sources'), each source read as its split (None: told by the release),
    under `policy` ((name, digest of its content); None: the default) without `skip`."""
    content = {"inputs": [list(item) for item in inputs], "splits": list(splits),
               "policy": list(policy) if policy is not None else None,
               "skip": sorted(skip), "code": code_fingerprint()}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()
