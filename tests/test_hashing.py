"""Record checksums: what the scan recomputes from the pieces equals Python's sha256 of the
canonical JSON, for any text, and a changed byte anywhere is caught."""

from __future__ import annotations

from conftest import record, source, view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.checks import record_hash as hashing
from audit.io import release as readers
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
    hashing.mismatches(release.con, release.layout)
    found = release.con.sql("SELECT rid, computed FROM hash_mismatches").fetchall()
    assert found == [(1, synth.record_sha256(tampered))]
