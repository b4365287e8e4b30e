"""A scan in two stages, for a first view that does not wait for the checks that read every
text.

`start` runs at once the structural checks, those `deferred_checks` leaves (it defers the
checks on DEFERRED_LAYERS: language identification, the translation heuristics, answer and
entity preservation, the record checksums; and those judging the translated texts alone),
and returns that partial result. The full scan runs on a thread of its own, on the same
opened release through that thread's own cursor (one copy of the grouped contexts: a second
opening of XHotpotQA+ held another 1.6 GiB and took seconds), through `store.scanned`, so it
is remembered as any scan is, and then replaces the partial result. A scan whose results
are remembered is read at once: nothing is staged.

A partial result says what it lacks: its summary's `checks_pending` names the checks still
running (the full result has none), and it is never remembered nor written as a scan
(`store.write_scan` refuses it). Its identity is that of a scan leaving those checks out,
so nothing keyed by identity takes it for the full one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..checks import registry
from ..checks.model import UNITS_ONLY
from . import store
from .scan import Progress, ScanResult, run

if TYPE_CHECKING:
    import pyarrow as pa

    from ..io.layouts.base import Layout
    from ..io.model import Release
    from .policy import Policy

# The signal layers the first view does not wait for: those computed per distinct text
# (seconds to minutes on a new release), and the record checksums, which a thread verifies
# row by row beside the first checks: cheap alone, but competing with them for two cores it
# slowed the 23,760-row first view by ~0.3 s; the full scan verifies them beside the
# language layer instead.
DEFERRED_LAYERS = ("language", "heuristics", "preservation", "record_hash")
assert set(DEFERRED_LAYERS) <= {layer.NAME for layer in registry.LAYERS}, "a layer was renamed"

Opener = Callable[[], "Release"]
# Run on each result, on the thread that made it, before the result is shown (the
# workbench builds its browse index): the result and its remembered descriptors, if any.
Ready = Callable[[ScanResult, "pa.Table | None"], None]


def deferred_checks(layout: Layout, skip: frozenset[str] = frozenset()) -> frozenset[str]:
    """The checks of a layout (less `skip`) that read a deferred signal layer, or that judge
    the translated texts alone (a translation check requiring no capability: exact copies,
    placeholders, invalid or hiding characters). Those read every text, so they cost in
    proportion to the text, not the rows (XHotpotQA+: ~4 s of a 19 s first view): the
    first view is the structural one."""
    return frozenset(check.name for check in registry.for_layout(layout)
                     if check.name not in skip
                     and (any(layer.NAME in DEFERRED_LAYERS for layer in check.layers)
                          or (check.requires == UNITS_ONLY and check.origin == "translation")))


def pending(result: ScanResult) -> list[str]:
    """The checks a partial result lacks; none for a full one."""
    return list(result.summary.get("checks_pending", []))


class StagedScan:
    """A release's scan as it stands: `result` is the partial one until the full one
    replaces it (`pending(result)` empty); `done` once the full scan has ended, with its
    result or its `error`; `latest` the full scan's last progress line."""

    def __init__(self, result: ScanResult) -> None:
        self.result = result
        self.error: BaseException | None = None
        self.latest = ""
        self._thread: threading.Thread | None = None
        self._started = time.perf_counter()

    @property
    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    @property
    def seconds(self) -> float:
        """Seconds since the full scan began."""
        return time.perf_counter() - self._started

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the full scan's thread to end (at most `timeout` seconds): whether it
        has, with the full result in place or `error` set."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done

    def complete(self) -> ScanResult:
        """The full result, waited for; the full scan's error, raised."""
        self.wait()
        if self.error is not None:
            raise self.error
        return self.result

    def _follow(self, release: Release, policy: Policy, skip: frozenset[str],
                ready: Ready) -> None:
        """Run the full scan on a thread of its own."""
        self._started = time.perf_counter()
        # A daemon: a server that stops does not wait for a scan nobody will see.
        self._thread = threading.Thread(target=self._finish, name="staged-scan", daemon=True,
                                        args=(release, policy, skip, ready))
        self._thread.start()

    def _finish(self, release: Release, policy: Policy, skip: frozenset[str],
                ready: Ready) -> None:
        try:
            result, language = store.scanned(release, policy, skip, progress=self._say)
            ready(result, language)
        except BaseException as error:  # noqa: BLE001 - kept for the reader; the thread ends
            self.error = error
            return
        self.result = result        # one assignment: a reader sees the partial or the full

    def _say(self, message: str) -> None:
        self.latest = message


def start(open_release: Opener, policy: Policy, skip: frozenset[str] = frozenset(),
          progress: Progress | None = None, ready: Ready | None = None) -> StagedScan:
    """The scan of the release `open_release` opens: the remembered results if there are
    any, else the structural checks now, on this thread (`progress` hears them), and the
    full scan on a thread of its own. An error of the first stage is raised here; one of
    the full scan is the StagedScan's `error`. A release opened with its cache write left
    for later (`open_release(remember_later=True)`) has it started once the first result
    is ready."""
    say = progress or (lambda message: None)
    prepared: Ready = ready or (lambda result, language: None)
    release = open_release()
    known = store.remembered(release, policy, skip, progress)
    deferred = deferred_checks(release.layout, skip)
    if known is None and not deferred:
        known = store.scanned(release, policy, skip, progress)
    if known is not None:
        prepared(*known)
        release.remember()
        return StagedScan(known[0])
    say(f"first the structural checks; {len(deferred)} checks read every text and follow")
    # The descriptors (which a browse index reads) compute beside the checks, as for a scan
    # to be written (1.26-1.55 s to the first view of 23,760 rows, 1.52-1.74 s after them),
    # into the release's table alone: the full scan writes their file (XHotpotQA+'s first
    # view: 16.7 -> 13.7 s).
    partial = run(release, policy, progress, skip | deferred, describe=True,
                  describe_file=False)
    partial.summary = {**partial.summary, "checks_pending": sorted(deferred)}
    prepared(partial, None)
    release.remember()      # the grouped contexts' cache write, left until now
    staged = StagedScan(partial)
    staged._follow(release, policy, skip, prepared)
    return staged
