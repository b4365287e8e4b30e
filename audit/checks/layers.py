"""Slow signal layers: what whole-release checks read that is computed once per distinct
text (or pair) and cached (`audit.io.signal_cache`), never in a check's SQL.

A check names the layers its query reads (`Check.layers`); the layers a layer serves are the
checks that name it. The scan starts the layers of the checks it runs before any of them
(one may compute in child processes meanwhile), a check's query prepares its layers, and
once every check has run the scan discards every registered layer's tables and records what
each did under its NAME. A layer's VERSION (its rule's constants) is part of each naming
check's declaration, so of the registry fingerprint and the scan identity. A layer is
usually a module: its constants and functions satisfy the protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..io.model import Release


class SignalLayer(Protocol):
    NAME: str       # its record in summary.json's "signals"
    VERSION: str    # what decides its signals besides the code and the libraries
    THREADED: bool  # whether `start` only begins a thread (the scan starts those first)

    def start(self, release: Release) -> None:
        """Begin what can run while the scan does other work (a no-op for most layers)."""

    def prepare(self, release: Release) -> Any:
        """Put the layer's tables on the release's connection, once per connection, from
        the cache and computing only what it lacks; returns what it did (a dataclass)."""

    def discard(self, con: Any) -> Any | None:
        """Drop those tables; what `prepare` did, or None when it had not run."""
