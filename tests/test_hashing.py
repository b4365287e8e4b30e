"""Record checksums: what the scan recomputes from the pieces equals Python's sha256 of the
canonical JSON, for any text, and a changed byte anywhere is caught."""

from __future__ import annotations

import threading

from conftest import record, source, view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.checks import record_hash as hashing
from audit.engine import scan
from audit.io import release as readers
from audit.io.layouts import checksum
from devkit import synth

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
               max_size=30)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=TEXT, answer=TEXT, sentence=TEXT, title=TEXT)
def test_checksums_reproduce_for_any_text(tmp_path_factory, question, answer, sentence, title):
    src = source()
    ctx = view(src)
    ctx[0][1][0] = sentence
    ctx[1][0] = title
    rows = [record(src, ctx, question=question, answer=answer),
            record(source(_id="5a0000000000000000000002"), position=1)]
    tampered = dict(rows[1], question=rows[1]["question"] + "\x1b")   # hash left as shipped
    folder = tmp_path_factory.mktemp("hash")
    synth.write_release([rows[0], tampered], folder)
    release = readers.open_release(folder)
    checksum.mismatches(release.con, release.layout.checksum)
    found = release.con.sql("SELECT rid, computed FROM hash_mismatches").fetchall()
    assert found == [(1, synth.record_sha256(tampered))]


def _tampered_release(folder, mark: str):
    """Two rows; the second's question changed (`mark` added) after its checksum was
    computed. Each test its own mark: the verdict cache is keyed by the files' content."""
    rows = [record(source()), record(source(_id="5a0000000000000000000002"), position=1)]
    tampered = dict(rows[1], question=rows[1]["question"] + mark)
    synth.write_release([rows[0], tampered], folder)
    return synth.record_sha256(tampered)


def test_the_scan_verifies_checksums_on_its_own_thread_then_reads_the_verdict(tmp_path):
    computed = _tampered_release(tmp_path / "release", "!")
    first = scan.run(readers.open_release(tmp_path / "release"))
    assert first.summary["signals"]["record_hash"]["rows"] == 2          # verified now
    assert set(first.summary["signals"]["record_hash"]["seconds"]) == {"wait", "since_start"}
    assert first.summary["signals"]["record_hash"]["mismatches"] == 1
    details = [r["detail"] for r in first.findings.to_pylist()
               if r["check"] == "record_hash_mismatch"]
    assert len(details) == 1 and details[0].endswith(f"computed {computed}")
    again = scan.run(readers.open_release(tmp_path / "release"))         # the cached verdict
    assert again.summary["signals"]["record_hash"]["rows"] == 0
    assert set(again.summary["signals"]["record_hash"]["seconds"]) == {"cached"}
    assert [r["detail"] for r in again.findings.to_pylist()
            if r["check"] == "record_hash_mismatch"] == details
    assert not [t for t in threading.enumerate() if t.name.startswith("record-hash")]


def test_a_scan_that_stops_first_leaves_no_verifying_thread(tmp_path):
    _tampered_release(tmp_path / "release", "?")
    release = readers.open_release(tmp_path / "release")
    hashing.start(release)
    assert release.con in hashing._STARTED              # verifying on its thread
    assert hashing.discard(release.con) is None        # never prepared: nothing to report
    assert not [t for t in threading.enumerate() if t.name.startswith("record-hash")]
    assert release.con.sql("SELECT count(*) FROM duckdb_tables() "
                           "WHERE table_name = 'hash_mismatches'").fetchall() == [(0,)]
    hashing.prepare(release)                            # after a discard: verified in turn
    assert release.con.sql("SELECT rid FROM hash_mismatches").fetchall() == [(1,)]
