"""The staged scan (audit/engine/staged.py) on the demo release with an empty cache: the
checks on no deferred signal layer at once, and a partial result that says what it lacks;
the full scan on a thread, equal to a plain scan and remembered; a failure kept for the
reader, with no thread left behind."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from audit import settings
from audit.analysis import browse
from audit.engine import policy, scan, staged, store
from audit.errors import InputError
from audit.io import release as readers
from audit.io import signal_cache
from audit.io.model import Release
from audit.language import layer as langid

SLOW = ["answer_not_in_evidence", "bridge_entity_lost", "exact_source_copy", "invalid_unicode",
        "invisible_control", "language_mismatch", "length_ratio_outlier", "mojibake",
        "near_source_copy", "number_mismatch", "placeholder_sentence", "record_hash_mismatch",
        "repetition_loop", "script_mismatch", "terminal_punctuation_mismatch",
        "unbalanced_brackets"]
# The demo's status counts, without the deferred checks and with them.
PARTIAL = {"accepted": 188, "review_required": 13, "quarantined": 39}
FULL = {"accepted": 161, "review_required": 40, "quarantined": 39}
HELPERS = ("staged-scan", "record-hash", "descriptors")


def demo() -> Release:
    return readers.open_release(settings.DEMO_RELEASE, settings.demo_sources())


@pytest.fixture
def empty_cache(tmp_path, settings_env):
    """Nothing remembered, no signal cached: the demo is a release opened for the first
    time."""
    settings_env(AUDIT_CACHE_DIR=tmp_path / "cache")
    return tmp_path / "cache"


def helpers_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(HELPERS)]


def rows_of(table) -> list[tuple]:
    return sorted(tuple(map(str, row.values())) for row in table.to_pylist())


def test_the_deferred_checks_are_those_on_the_slow_layers_the_checksum_and_the_texts_alone():
    assert sorted(staged.deferred_checks(demo().layout)) == SLOW
    assert sorted(staged.deferred_checks(demo().layout, frozenset({"mojibake"}))) == \
        [name for name in SLOW if name != "mojibake"]


def test_the_first_result_lacks_the_deferred_checks_and_says_so_then_the_full_one_lands(
        empty_cache):
    shown = []                      # each result as it is handed over, with its index
    # The language cache's lock, as another scan computing signals holds it: the full scan
    # waits at its first language check until it is let go.
    with signal_cache.cache_lock(empty_cache / "langid"):
        staging = staged.start(demo, policy.DEFAULT, ready=lambda result, language: (
            browse.build_index(result, language), shown.append(result)))
        partial = staging.result
        assert not staging.done and staging.error is None
        assert shown == [partial] and staged.pending(partial) == SLOW
        assert partial.summary["checks_pending"] == SLOW
        assert set(SLOW) <= set(partial.summary["checks_skipped"])
        assert not set(SLOW) & set(partial.summary["checks_run"])
        assert not set(SLOW) & set(partial.findings.column("check").to_pylist())
        assert partial.summary["status_counts"] == PARTIAL
        assert browse.count(partial, browse.Filters(status=["review_required"])) == 13
        # Never kept as a scan: not written, not remembered, its identity not the full one's.
        with pytest.raises(ValueError, match="lacks the checks answer_not_in_evidence"):
            store.write_scan(partial, empty_cache / "scan")
        assert not (empty_cache / "scan").exists()
        assert partial.identity != scan.identity(demo(), policy.DEFAULT)
    full = staging.complete()
    assert staging.done and staging.error is None and staging.result is full
    assert staged.pending(full) == [] and "checks_pending" not in full.summary
    assert full.summary["status_counts"] == FULL
    assert staging.latest.startswith("scan done in")
    assert shown == [partial, full]            # the browse index rebuilt for the full scan
    assert full.release is partial.release     # opened once: one copy of its contexts
    assert browse.count(full, browse.Filters(status=["review_required"])) == 40
    assert helpers_alive() == []
    # Equal to a plain scan of the same release: findings, status and identity.
    plain = scan.run(demo())
    assert rows_of(full.findings) == rows_of(plain.findings)
    assert rows_of(full.status) == rows_of(plain.status)
    assert full.identity == plain.identity
    assert full.summary["check_counts"] == plain.summary["check_counts"]


def test_a_first_view_leaves_the_contexts_cache_write_until_it_is_ready(empty_cache):
    """An opener that leaves the grouped contexts' cache write for later (`remember_later`:
    the first view has both cores): nothing is written while the first view is made; the
    write starts once it is ready, and the full scan ends with it written."""
    written = lambda: sorted((empty_cache / "contexts").glob("*/*.parquet"))  # noqa: E731
    seen = []

    def opened() -> Release:
        return readers.open_release(settings.DEMO_RELEASE, settings.demo_sources(),
                                    remember_later=True)

    def ready(result, language) -> None:
        release = result.release
        seen.append((release.remembering, release.unremembered is not None, written()))

    staging = staged.start(opened, policy.DEFAULT, ready=ready)
    assert seen == [(None, True, [])]
    assert staging.result.release.unremembered is None      # started once the view was ready
    full = staging.complete()
    assert full.release.remembering is None                  # waited for by the full scan
    assert [p.name for p in written()] == ["context_of.parquet", "contexts.parquet"]
    assert demo().remembering is None    # read from the cache: nothing to write again
    assert helpers_alive() == []


def test_a_remembered_scan_is_read_at_once_not_staged(empty_cache):
    first = staged.start(demo, policy.DEFAULT).complete()
    again = staged.start(demo, policy.DEFAULT)
    assert again.done and again.error is None           # no thread: nothing pending
    assert staged.pending(again.result) == []
    assert again.result.identity == first.identity
    assert again.result.summary["status_counts"] == FULL
    assert helpers_alive() == []


def test_a_failed_full_scan_is_kept_for_the_reader_and_leaves_no_thread(
        empty_cache, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the language detector crashed")
    monkeypatch.setattr(langid, "prepare", broken)
    staging = staged.start(demo, policy.DEFAULT)
    assert staging.wait()
    assert isinstance(staging.error, RuntimeError)
    assert str(staging.error) == "the language detector crashed"
    assert staged.pending(staging.result) == SLOW             # the partial result stays
    assert staging.result.summary["status_counts"] == PARTIAL
    with pytest.raises(RuntimeError, match="the language detector crashed"):
        staging.complete()
    assert helpers_alive() == []
    assert multiprocessing.active_children() == []
    assert store.remembered(demo(), policy.DEFAULT) is None   # nothing half-remembered


def test_a_first_stage_that_fails_raises_and_starts_no_thread(empty_cache, tmp_path):
    missing = tmp_path / "nowhere.parquet"
    with pytest.raises(InputError, match="nowhere.parquet"):
        staged.start(lambda: readers.open_release(missing), policy.DEFAULT)
    assert helpers_alive() == []
