"""Every class of bad input is a clear error (file, place, expectation), exit code 2, and
nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import record, source

from audit.errors import InputError
from audit.io import release as readers
from devkit import synth

REPO = Path(__file__).resolve().parent.parent
JSONL_RECORD = {
    "id": "q1", "source_id": "q1", "source_split": "validation",
    "question": "Welcher Fluss ist länger?", "answer": "Donau", "question_language": "de",
    "answer_language": "de", "question_type": "comparison", "difficulty": "hard",
    "candidates": [{"id": "p00", "title": "Donau", "sentences": ["Die Donau ist lang."],
                    "language": "de", "source_title": "Danube",
                    "source_sentences": ["The Danube is long."]}],
    "supporting_facts": [{"paragraph_id": "p00", "sentence_id": 0, "role": "answer"}],
    "provenance": {}, "checksum": "",
}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=REPO,
                          capture_output=True, text=True)


@pytest.fixture
def good(tmp_path) -> Path:
    synth.write_release([record()], tmp_path / "good")
    return tmp_path / "good" / "validation-00000.parquet"


def write_table(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    return path


def bad_inputs(tmp_path: Path, good: Path) -> dict[str, tuple[Path, str]]:
    table = pq.read_table(good)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "text.parquet").write_text("id,question\n1,what\n")
    line = json.dumps(JSONL_RECORD).encode()
    (tmp_path / "bad_utf8.jsonl").write_bytes(line + b'\n{"id": "\xff"}\n')
    (tmp_path / "bad_json.jsonl").write_bytes(line + b'\n\n{"id": \n')
    (tmp_path / "empty_dir").mkdir()
    return {
        "missing": (tmp_path / "nope.parquet", "no such file or directory"),
        "empty dir": (tmp_path / "empty_dir", "holds no .parquet or .jsonl file"),
        "not parquet": (tmp_path / "text.parquet", "not a readable Parquet file"),
        "empty": (tmp_path / "empty.parquet", "the file is empty"),
        "truncated": (truncated, "not a readable Parquet file"),
        "missing column": (write_table(tmp_path / "nocol.parquet", table.drop_columns(["answer"])),
                           "missing column 'answer' (expected string)"),
        "mistyped column": (write_table(tmp_path / "type.parquet", table.set_column(
            table.schema.get_field_index("source_position"), "source_position",
            pa.array(["0"]))), "column 'source_position' has type string (expected int32)"),
        "foreign parquet": (write_table(tmp_path / "foreign.parquet", pa.table({"x": [1]})),
                            "not a release of a known layout"),
        "invalid utf-8": (tmp_path / "bad_utf8.jsonl", "line 2: invalid UTF-8"),
        "invalid json": (tmp_path / "bad_json.jsonl", "line 3: invalid JSON"),
    }


def test_every_bad_input_names_file_and_problem(tmp_path, good):
    for label, (path, message) in bad_inputs(tmp_path, good).items():
        with pytest.raises(InputError) as caught:
            readers.open_release(path)
        assert message in str(caught.value), label
        assert str(path) in str(caught.value), label


def test_cli_exits_2_and_writes_nothing(tmp_path, good):
    for label, (path, message) in bad_inputs(tmp_path, good).items():
        out = tmp_path / f"out-{label.replace(' ', '_')}"
        done = cli("scan", str(path), "--out", str(out))
        assert done.returncode == 2, label
        assert message in done.stderr and "Traceback" not in done.stderr, label
        assert not out.exists(), label
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out-")]


def test_jsonl_record_missing_a_field_names_the_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"id": "x"}) + "\n")
    with pytest.raises(InputError, match=r"line 1: record has no 'source_id'"):
        readers.open_release(path)


def test_empty_parquet_release(tmp_path, good):
    empty = write_table(tmp_path / "none.parquet", pq.read_table(good).slice(0, 0))
    with pytest.raises(InputError, match="the release has no rows"):
        readers.open_release(empty)


def test_bad_source_json(tmp_path, good):
    source = tmp_path / "hotpot.json"
    source.write_text('{"_id": "x"}')
    with pytest.raises(InputError, match="top level is a JSON dict"):
        readers.open_release(good, [f"validation={source}"])
    source.write_text("[{\"_id\": \"x\",")
    with pytest.raises(InputError, match=r"hotpot.json: line 1: invalid JSON"):
        readers.open_release(good, [f"validation={source}"])


def test_file_directory_of_shards_and_glob_read_the_same_rows(tmp_path):
    first = record()
    second = record(source(_id="5a0000000000000000000002"), question=" ", position=1)
    synth.write_release([first], tmp_path / "a")
    synth.write_release([second], tmp_path / "b")
    shards = tmp_path / "shards"
    shards.mkdir()
    (tmp_path / "a" / "validation-00000.parquet").rename(shards / "validation-00000.parquet")
    (tmp_path / "b" / "validation-00000.parquet").rename(shards / "validation-00001.parquet")
    by_dir = readers.open_release(shards)
    by_glob = readers.open_release(str(shards / "validation-*.parquet"))
    one = readers.open_release(shards / "validation-00001.parquet")
    assert (by_dir.rows, by_glob.rows, one.rows) == (2, 2, 1)
    assert by_dir.name == "shards" and one.name == "validation-00001"
    rows = by_glob.con.sql("SELECT rid, id FROM release ORDER BY rid").fetchall()
    assert rows == [(0, first["id"]), (1, second["id"])]
    with pytest.raises(InputError, match="the pattern matches no file"):
        readers.open_release(str(shards / "train-*.parquet"))


def test_reopening_reads_the_remembered_contexts_and_source(tmp_path, settings_env):
    """The grouped contexts (with each row's context number) and the parsed source are
    cached per content; what comes back equals a fresh computation, and an unreadable
    cache entry, or one of the earlier layout (the views copied whole), is rebuilt."""
    from audit import settings
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    rows = [record(), record(source(_id="5a0000000000000000000002"), position=1)]
    synth.write_release(rows, tmp_path / "release")
    source_file = tmp_path / "source.json"
    source_file.write_text(json.dumps([source(), source(_id="5a0000000000000000000002")]))
    spec = [f"validation={source_file}"]

    def tables(release):
        con = release.con
        found = [con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                 for t in ("raw_contexts", "raw_views", "sources")]
        release.settle()        # the cache entry written meanwhile is complete now
        return found

    fresh = tables(readers.open_release(tmp_path / "release", spec))
    (cached_dir,) = (settings.cache_dir("contexts")).iterdir()
    assert sorted(p.name for p in cached_dir.iterdir()) == ["context_of.parquet",
                                                              "contexts.parquet"]
    assert pq.read_table(cached_dir / "context_of.parquet").to_pylist() == [
        {"rid": 0, "ctx": 0}, {"rid": 1, "ctx": 1}]
    assert tables(readers.open_release(tmp_path / "release", spec)) == fresh
    (cached_dir / "context_of.parquet").write_bytes(b"not parquet")
    (source_cache,) = settings.cache_dir("sources").iterdir()
    source_cache.write_bytes(b"not parquet")
    assert tables(readers.open_release(tmp_path / "release", spec)) == fresh
    assert pq.read_table(cached_dir / "context_of.parquet").num_rows == 2      # rebuilt
    assert pq.read_table(source_cache).num_rows == 2
    (cached_dir / "context_of.parquet").rename(cached_dir / "views.parquet")   # earlier layout
    assert tables(readers.open_release(tmp_path / "release", spec)) == fresh
    assert sorted(p.name for p in cached_dir.iterdir()) == ["context_of.parquet",
                                                              "contexts.parquet"]


def test_context_numbers_out_of_step_with_the_rows_are_never_paired(tmp_path, settings_env):
    """Each row's context number is paired with it by position: a remembered entry whose
    rids do not follow the release's rows is not used (the rows are grouped again and the
    entry rewritten), and out of step rows stop the pairing with an error."""
    import duckdb

    from audit import settings
    from audit.io.layouts import multihop
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    synth.write_release([record(), record(source(_id="5a0000000000000000000002"),
                                          position=1)], tmp_path / "release")
    first = readers.open_release(tmp_path / "release")
    fresh = first.con.sql("SELECT rid, ctx, id FROM raw_views ORDER BY rid").fetchall()
    first.settle()
    (cached_dir,) = settings.cache_dir("contexts").iterdir()
    pq.write_table(pa.table({"rid": pa.array([1, 0], pa.int64()),
                             "ctx": pa.array([1, 0], pa.int32())}),
                   cached_dir / "context_of.parquet")
    release = readers.open_release(tmp_path / "release")
    assert release.con.sql("SELECT rid, ctx, id FROM raw_views ORDER BY rid").fetchall() == fresh
    release.settle()
    assert pq.read_table(cached_dir / "context_of.parquet").column("rid").to_pylist() == [0, 1]
    release.con.execute("DROP TABLE raw_views")
    with pytest.raises(duckdb.Error, match="context numbers out of step"):
        multihop.create_views(release.con, "(SELECT * FROM (VALUES (1, 0), (0, 1)) t(rid, ctx))")


def test_a_bad_source_still_leaves_a_complete_contexts_cache(tmp_path, settings_env):
    """The grouped contexts are written on a thread while the source is parsed: a source
    that fails to parse is the error reported, and the cache entry is whole, not partial."""
    from audit import settings
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    synth.write_release([record(), record(source(_id="5a0000000000000000000002"),
                                          position=1)], tmp_path / "release")
    bad = tmp_path / "hotpot.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match=r"hotpot.json: line 1: invalid JSON"):
        readers.open_release(tmp_path / "release", [f"validation={bad}"])
    (cached_dir,) = settings.cache_dir("contexts").iterdir()
    assert pq.read_table(cached_dir / "context_of.parquet").num_rows == 2
    assert pq.read_table(cached_dir / "contexts.parquet").num_rows == 2
    assert not [p for p in cached_dir.parent.iterdir() if p.name.startswith(".")]


def test_the_source_is_parsed_while_the_contexts_are_grouped(tmp_path, settings_env):
    """The source is hashed and parsed into the cache on a thread of its own during the
    grouping; the release knows its SHA-256 and no thread outlives the open."""
    from audit import settings
    from audit.io.digests import file_sha256
    settings_env(AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    synth.write_release([record()], tmp_path / "release")
    source_file = tmp_path / "source.json"
    source_file.write_text(json.dumps([source()]))
    release = readers.open_release(tmp_path / "release", [f"validation={source_file}"])
    assert release.known_digests[str(source_file)] == file_sha256(source_file)
    assert release.con.sql("SELECT source_id, source_split FROM sources").fetchall() == [
        (source()["_id"], "validation")]
    assert len(list(settings.cache_dir("sources").iterdir())) == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("source-parse")]
