"""A scan's identity covers everything its findings depend on (issue 19, defect 1), and a
scan's tables are its own on a shared connection (defect 3)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from audit.analysis import browse
from audit.engine import identity as identities
from audit.engine import policy, scan, store
from audit.io import release as readers

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "data" / "demo" / "release"
IDENTITY = ("from audit.engine import policy, scan; from audit.io import release as readers; "
            "import sys; "
            "print(scan.identity(readers.open_release(sys.argv[1]), policy.DEFAULT))")


def _identity_with(package_root: Path) -> str:
    """The demo's scan identity computed by the `audit` package found under package_root."""
    done = subprocess.run([sys.executable, "-c", IDENTITY, str(DEMO)], cwd=package_root,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_root)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_change_in_signal_code_changes_the_identity(tmp_path):
    """The translation layer's text signals are no check's declaration: before the fix the
    identity ignored them."""
    same, changed = tmp_path / "same", tmp_path / "changed"
    for root in (same, changed):
        shutil.copytree(REPO / "audit", root / "audit",
                        ignore=shutil.ignore_patterns("__pycache__"))
    signals = changed / "audit" / "translation" / "signals.py"
    signals.write_text(signals.read_text(encoding="utf-8").replace(
        "from __future__ import annotations", "from __future__ import annotations  # v2", 1),
        encoding="utf-8")
    here = scan.identity(readers.open_release(DEMO), policy.DEFAULT)
    assert _identity_with(same) == here       # the code's content, not its place
    assert _identity_with(changed) != here


def test_a_new_detector_release_changes_the_identity_and_hides_the_saved_scan(
        tmp_path, monkeypatch, settings_env):
    settings_env(AUDIT_SCANS=tmp_path / "scans")
    release = readers.open_release(DEMO)
    first = scan.run(release, skip=frozenset({"language_mismatch"}))
    saved = store.write_scan(first)
    assert store.saved_scan(release, first.identity) == saved
    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["fingerprint"] == first.identity

    releases = identities._releases()
    lingua = [r for r in releases if r.startswith("lingua")]
    assert lingua, releases
    monkeypatch.setattr(identities, "_releases", lambda: [
        "lingua_language_detector-9.9.9.dist-info" if r in lingua else r for r in releases])
    identities.code_fingerprint.cache_clear()
    try:
        later = scan.identity(release, first.policy)
        assert later != first.identity
        assert store.saved_scan(release, later) is None   # scanned again, not reused
    finally:
        identities.code_fingerprint.cache_clear()


def test_a_second_scan_of_the_same_release_leaves_the_first_result_its_own_tables(tmp_path):
    release = readers.open_release(DEMO)
    skip = frozenset({"language_mismatch"})
    first = scan.run(release, skip=skip)
    browse.build_index(first)
    # Another policy on the same release object, which also leaves out exact copies.
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"severity": {"blank_sentence": "info"}}))
    second = scan.run(release, policy.load(strict), skip=skip | {"exact_source_copy"})
    browse.build_index(second)
    assert first.tables != second.tables

    def counted(result: scan.ScanResult) -> dict[str, int]:
        with result.cursor() as cursor:
            return dict(cursor.sql('SELECT "check", count(*) FROM findings GROUP BY 1'
                                   ).fetchall())

    assert counted(first) == first.summary["check_counts"]
    assert counted(second) == second.summary["check_counts"]
    assert first.summary["check_counts"]["exact_source_copy"] > 0
    assert "exact_source_copy" not in counted(second)
    with first.cursor() as cursor:
        statuses = dict(cursor.sql("SELECT status, count(*) FROM status GROUP BY 1").fetchall())
    assert statuses == first.summary["status_counts"] != second.summary["status_counts"]
    assert first.findings.num_rows == sum(first.summary["check_counts"].values())
    # The rows exact copies hold (review) and those where they are only a note (info).
    held = {f["row"] for f in first.findings.to_pylist()
            if f["check"] == "exact_source_copy" and f["severity"] != "info"}
    noted = {f["row"] for f in first.findings.to_pylist()
             if f["check"] == "exact_source_copy"} - held
    assert (len(held), len(noted)) == (8, 197)
    for copies, rows in ((browse.Filters(check=["exact_source_copy"]), held),
                         (browse.Filters(note=["exact_source_copy"]), noted)):
        assert browse.count(first, copies) == len(rows)
        assert browse.count(second, copies) == 0
