"""Open a release (V1.1 Parquet, V2 RC1 Parquet or canonical JSONL) and an optional HotpotQA
source, validate them, and expose one canonical layout in DuckDB.

Canonical view `release`: one row per release row, V1.1 field names; candidates carry
`language` (name) and `language_code` (code) as in V1.1, facts carry `sentence_index`. V2 and
JSONL are mapped into it; `rid` is the row's ordinal in file order (ids may repeat).
Derived views: `candidates`, `sentences`, `facts` (flat, for browsing and ad-hoc queries).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from .. import arrays, sqltext
from . import layouts
from ..errors import InputError
from ..languages import BY_CODE
from .files import cache_dir, cached_parquet, file_sha256, staged_directory, staged_file
from ..paths import JSONL_SUFFIXES, REPAIR_MANIFEST, release_name, resolve_paths, split_of
from ..sqlsafe import literal



@dataclass
class Release:
    """An opened release: its files, layout, and a DuckDB connection (`root`) with the
    views; callers query it through `con`."""

    paths: list[Path]
    layout: str
    root: duckdb.DuckDBPyConnection
    rows: int
    single_file: bool = True
    source_paths: list[Path] = field(default_factory=list)
    capabilities: frozenset[str] = frozenset()

    known_digests: dict[str, str] = field(default_factory=dict)
    _threads: threading.local = field(default_factory=threading.local, repr=False,
                                      compare=False)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor of the release's connection. The workbench shares one scan
        among all its sessions, each on its own thread; one DuckDB connection refuses a
        second caller while busy ("connection is busy with another call") and its
        registered tables are per connection, so each thread queries through its own
        cursor, which sees the release's views, tables and macros (dropped with the
        thread)."""
        cursor = getattr(self._threads, "cursor", None)
        if cursor is None:
            cursor = self._threads.cursor = self.root.cursor()
            cursor.execute("SET enable_progress_bar=false")
        return cursor

    def close(self) -> None:
        """Close the connection (every cursor with it)."""
        self.root.close()

    @property
    def digests(self) -> dict[str, str]:
        """SHA-256 of every input file (release, then sources), each hashed once."""
        for path in [*self.paths, *self.source_paths]:
            if str(path) not in self.known_digests:
                self.known_digests[str(path)] = file_sha256(path)
        return {str(p): self.known_digests[str(p)] for p in [*self.paths, *self.source_paths]}

    @property
    def content(self) -> list[str]:
        """The SHA-256s of the release's own files, sorted: what it holds, whatever the file
        names, sources or policy (a review batch names the releases it was drawn from)."""
        digests = self.digests
        return sorted(digests[str(p)] for p in self.paths)

    @property
    def name(self) -> str:
        """A short label: the directory of a sharded release, else the file's stem."""
        return release_name(self.paths, self.single_file)


def open_release(spec: str | Path, sources: list[str] | None = None,
                 files: list[Path] | None = None, cache: bool = True,
                 known_digests: dict[str, str] | None = None) -> Release:
    """Open a release: a file, a directory of shards or a glob (`files`: its data files,
    when the caller resolved them already; `known_digests`: SHA-256s by path it computed
    already). `cache=False` never remembers its grouped contexts (a transient release,
    such as a repair's probe)."""
    paths = files if files is not None else resolve_paths(spec)
    con = duckdb.connect()
    # A whole XHotpotQA+ release is ~8 GB of text: DuckDB spills past its share of memory.
    con.execute("SET enable_progress_bar=false")
    con.execute("SET memory_limit = ?", [os.environ.get("AUDIT_MEMORY_LIMIT", "2.5GB")])
    spill = cache_dir("duckdb-spill")
    spill.mkdir(parents=True, exist_ok=True)
    con.execute("SET temp_directory = ?", [str(spill)])
    sqltext.register(con)
    if all(p.suffix in JSONL_SUFFIXES for p in paths):
        layout = "jsonl"
        table = _read_jsonl(paths)
        con.register("jsonl_arrow", table)
        # Tables, not registered Arrow views, so every cursor of the connection sees them.
        con.execute("CREATE TABLE jsonl_rows AS SELECT * FROM jsonl_arrow")
        con.unregister("jsonl_arrow")
        con.execute("CREATE VIEW raw_release AS SELECT * FROM jsonl_rows")
    else:
        layout = _detect_parquet(paths)
        # The file list reaches DuckDB through its relation API, which quotes it itself; a
        # row's ordinal is its file's offset plus its row number in the file.
        offsets = literal(_row_offsets(paths))
        con.read_parquet([str(p) for p in paths], file_row_number=True).project(
            f"* EXCLUDE (file_row_number), "
            f"{offsets}[file_index::BIGINT + 1] + file_row_number AS rid"
        ).create_view("raw_release")
    known = known_digests or {}
    digests = {str(p): known.get(str(p)) or file_sha256(p) for p in paths}
    _grouped_contexts(con, None if layout == "jsonl" or not cache else hashlib.sha256("\n".join(
        [CONTEXT_NUMBERING, layout, *digests.values()]).encode("utf-8")).hexdigest())
    views, contexts = _CANONICAL[layout]
    con.execute(f"CREATE VIEW views AS {views}")
    con.execute(f"CREATE {'TABLE' if layout == 'v2' else 'VIEW'} contexts AS {contexts}")
    con.execute(f"CREATE VIEW release AS {_RELEASE}")
    _create_flat_views(con)
    rows = con.sql("SELECT count(*) FROM raw_views").fetchall()[0][0]
    if rows == 0:
        raise InputError(paths[0], "the release has no rows", expected="at least one row")
    capabilities = {layout}
    if layout in ("v1.1", "v2"):
        capabilities.add("record_hash")
    release = Release(paths=paths, layout=layout, root=con, rows=rows,
                      single_file=Path(str(spec)).is_file(),
                      capabilities=frozenset(capabilities),
                      known_digests={**known, **digests} if layout != "jsonl" else {})
    attach_sources(release, sources or [])
    return release


def _detect_parquet(paths: list[Path]) -> str:
    found: set[str] = set()
    for path in paths:
        if path.suffix in JSONL_SUFFIXES:
            raise InputError(path, "mixes JSONL with Parquet files in one release")
        if path.stat().st_size == 0:
            raise InputError(path, "the file is empty", expected="a Parquet file")
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})",
                             expected="a complete Parquet file") from None
        layout = layouts.detect(schema)
        if layout is None:
            raise InputError(path, "not an XHotpotQA release: the columns match neither the "
                             "V1.1 (22 fields) nor the V2 RC1 (35 fields) layout",
                             expected=f"columns such as {', '.join(layouts.V11.names[:6])}, …")
        problems = layouts.mismatches(schema, layout)
        if problems:
            raise InputError(path, "; ".join(problems), where=f"{layout} layout")
        found.add(layout)
    if len(found) > 1:
        raise InputError(paths[0], f"files of different layouts in one release: {sorted(found)}")
    return found.pop()


def _row_offsets(paths: list[Path]) -> list[int]:
    """The ordinal of each file's first row in the release."""
    offsets, total = [], 0
    for path in paths:
        offsets.append(total)
        try:
            total += pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})") from None
    return offsets


# Names the way contexts are numbered: caches that store context numbers key on it.
CONTEXT_NUMBERING = "exact (source, candidates, facts); numbered by first rid"


def _grouped_contexts(con: duckdb.DuckDBPyConnection, key: str | None) -> None:
    """`_group_contexts`, remembered per content (`key`: the files' SHA-256s): reopening a
    release reads its contexts and views instead of grouping its rows again."""
    folder = cache_dir("contexts") / key if key else None
    if folder is not None and (folder / "views.parquet").is_file():
        try:
            con.read_parquet(str(folder / "contexts.parquet")).create("raw_contexts")
            con.read_parquet(str(folder / "views.parquet")).create("raw_views")
            return
        except duckdb.Error:   # unreadable: group again and replace it
            con.execute("DROP TABLE IF EXISTS raw_contexts; DROP TABLE IF EXISTS raw_views")
            shutil.rmtree(folder, ignore_errors=True)
    _group_contexts(con)
    if folder is None:
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with staged_directory(folder, replace=True) as staging:
        con.table("raw_contexts").write_parquet(str(staging / "contexts.parquet"),
                                                compression="zstd")
        con.table("raw_views").write_parquet(str(staging / "views.parquet"),
                                             compression="zstd")


def _group_contexts(con: duckdb.DuckDBPyConnection) -> None:
    """XHotpotQA+ gives the 24 views of a source one context (its candidates and supporting
    facts). Each distinct (source, candidates, facts) becomes one row of `raw_contexts`,
    grouped by the values themselves, so no hash collision can merge two contexts, and
    numbered in order of its first row, so the numbers are reproducible. `raw_views` holds
    every row's other columns with its context's number, read in a second pass that never
    decodes the nested columns. Context checks then run once per context and fan out to the
    views by join."""
    con.execute("""
        CREATE TABLE raw_contexts AS
        SELECT (row_number() OVER (ORDER BY first_rid) - 1)::INTEGER AS ctx,
               * EXCLUDE (first_rid)
        FROM (SELECT source_id, source_split, candidates, supporting_facts,
                     list(rid) AS rids, min(rid) AS first_rid
              FROM raw_release GROUP BY ALL);
        CREATE TEMP TABLE context_of AS SELECT unnest(rids) AS rid, ctx FROM raw_contexts;
        ALTER TABLE raw_contexts DROP COLUMN rids;
        CREATE TABLE raw_views AS
        SELECT c.ctx, r.* EXCLUDE (candidates, supporting_facts)
        FROM raw_release r JOIN context_of c USING (rid) ORDER BY rid;
        DROP TABLE context_of;
    """)


# The canonical layout (V1.1 field names) per release layout: `views` (every row but its
# context), `contexts` (candidates with `language` the name and `language_code` the code,
# facts with `sentence_index`), and `release`, the two joined back into one row per rid.
_V11_VIEWS = """
SELECT rid, ctx, 'v1.1' AS layout, id, source_id, source_split, source_position,
       release_position, question, answer, question_language, question_language_name,
       answer_language, answer_language_name, source_question, source_answer, question_type,
       difficulty, status, structural_flags, []::VARCHAR[] AS quality_flags,
       record_sha256 AS shipped_hash
FROM raw_views
"""
_V2_VIEWS = """
SELECT rid, ctx, 'v2' AS layout, id, source_id, source_split, source_position,
       NULL::INTEGER AS release_position, question, answer, question_language,
       question_language_name, answer_language, answer_language_name, source_question,
       source_answer, question_type, difficulty, status, structural_flags, quality_flags,
       release_record_sha256 AS shipped_hash, input_checksum_valid, assignment_manifest_sha256
FROM raw_views
"""
_JSONL_VIEWS = """
SELECT rid, ctx, 'jsonl' AS layout, id, source_id, source_split,
       NULL::INTEGER AS source_position, NULL::INTEGER AS release_position, question, answer,
       question_language, question_language_name, answer_language, answer_language_name,
       source_question, source_answer, question_type, difficulty, NULL::VARCHAR AS status,
       []::VARCHAR[] AS structural_flags, []::VARCHAR[] AS quality_flags,
       NULL::VARCHAR AS shipped_hash
FROM raw_views
"""
_SAME_CONTEXTS = ("SELECT ctx, source_id, source_split, candidates, supporting_facts "
                  "FROM raw_contexts")
_V2_CONTEXTS = """
SELECT ctx, source_id, source_split,
       list_transform(candidates, lambda c: struct_pack(
           paragraph_id := c.paragraph_id, candidate_index := c.candidate_index,
           source_title := c.source_title, source_sentences := c.source_sentences,
           title := c.title, sentences := c.sentences, language := c.language_name,
           language_code := c.language)) AS candidates,
       list_transform(supporting_facts, lambda f: struct_pack(
           source_title := f.source_title, paragraph_id := f.paragraph_id,
           candidate_index := list_position(list_transform(candidates, lambda c: c.paragraph_id),
                                            f.paragraph_id)::SMALLINT - 1,
           sentence_index := f.sentence_id, in_bounds := f.in_bounds)) AS supporting_facts
FROM raw_contexts
"""
_CANONICAL = {"v1.1": (_V11_VIEWS, _SAME_CONTEXTS), "v2": (_V2_VIEWS, _V2_CONTEXTS),
              "jsonl": (_JSONL_VIEWS, _SAME_CONTEXTS)}
_RELEASE = """
SELECT v.* EXCLUDE (ctx, status, structural_flags, quality_flags, shipped_hash),
       c.candidates, c.supporting_facts, v.status, v.structural_flags, v.quality_flags,
       v.shipped_hash, v.ctx
FROM views v JOIN contexts c USING (ctx)
"""


def _create_flat_views(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
    CREATE VIEW candidates AS
      SELECT rid, id, source_split, c.paragraph_id, c.candidate_index, c.language_code,
             c.language, c.title, c.source_title, len(c.sentences) AS n_sentences,
             len(c.source_sentences) AS n_source_sentences
      FROM (SELECT rid, id, source_split, unnest(candidates) AS c FROM release);
    CREATE VIEW sentences AS
      SELECT rid, id, source_split, paragraph_id, language_code, k - 1 AS sentence_index,
             sentences[k] AS sentence, source_sentences[k] AS source_sentence
      FROM (SELECT rid, id, source_split, c.paragraph_id, c.language_code, c.sentences,
                   c.source_sentences,
                   unnest(range(1, greatest(len(c.sentences), len(c.source_sentences)) + 1)) AS k
            FROM (SELECT rid, id, source_split, unnest(candidates) AS c FROM release));
    CREATE VIEW facts AS
      SELECT rid, id, source_split, f.paragraph_id, f.candidate_index, f.sentence_index,
             f.source_title, f.in_bounds
      FROM (SELECT rid, id, source_split, unnest(supporting_facts) AS f FROM release);
    """)


# ---------------------------------------------------------------- canonical JSONL (SPEC §1.3)

_JSONL_REQUIRED = {"id": str, "source_id": str, "source_split": str, "question": str,
                   "answer": str, "question_language": str, "answer_language": str,
                   "candidates": list, "supporting_facts": list, "question_type": str}
_CANDIDATE_REQUIRED = {"id": str, "title": str, "sentences": list, "language": str}
_FACT_REQUIRED = {"paragraph_id": str, "sentence_id": int}

_JSONL_SCHEMA = pa.schema([
    ("rid", pa.int64()), ("id", pa.string()), ("source_id", pa.string()),
    ("source_split", pa.string()), ("question", pa.string()), ("answer", pa.string()),
    ("question_language", pa.string()), ("question_language_name", pa.string()),
    ("answer_language", pa.string()), ("answer_language_name", pa.string()),
    ("source_question", pa.string()), ("source_answer", pa.string()),
    ("question_type", pa.string()), ("difficulty", pa.string()),
    ("candidates", pa.list_(layouts.V11_CANDIDATE)),
    ("supporting_facts", pa.list_(layouts.V11_FACT)),
])


def _type_problem(obj: dict, required: dict[str, type], what: str) -> str | None:
    for key, kind in required.items():
        if key not in obj:
            return f"{what} has no '{key}'"
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{what} field '{key}' is {type(value).__name__} (expected {kind.__name__})"
    return None


def _jsonl_row(obj: dict, rid: int) -> dict:
    """One validated JSONL object → the canonical V1.1-shaped row."""
    candidates = []
    for index, cand in enumerate(obj["candidates"]):
        code = cand["language"]
        candidates.append({
            "paragraph_id": cand["id"], "candidate_index": index,
            "source_title": cand.get("source_title") or "",
            "source_sentences": list(cand.get("source_sentences") or []),
            "title": cand["title"], "sentences": cand["sentences"],
            "language": BY_CODE[code].name if code in BY_CODE else "Unknown",
            "language_code": code if code in BY_CODE else "und",
        })
    ids = [c["paragraph_id"] for c in candidates]
    facts = [{"source_title": next((c["source_title"] for c in candidates
                                    if c["paragraph_id"] == f["paragraph_id"]), ""),
              "paragraph_id": f["paragraph_id"],
              "candidate_index": ids.index(f["paragraph_id"]) if f["paragraph_id"] in ids
              else None,
              "sentence_index": f["sentence_id"], "in_bounds": None}
             for f in obj["supporting_facts"]]
    q, a = obj["question_language"], obj["answer_language"]
    return {"rid": rid, "id": obj["id"], "source_id": obj["source_id"],
            "source_split": obj["source_split"], "question": obj["question"],
            "answer": obj["answer"], "question_language": q,
            "question_language_name": BY_CODE[q].name if q in BY_CODE else "Unknown",
            "answer_language": a,
            "answer_language_name": BY_CODE[a].name if a in BY_CODE else "Unknown",
            "source_question": obj.get("source_question"),
            "source_answer": obj.get("source_answer"),
            "question_type": obj["question_type"], "difficulty": obj.get("difficulty"),
            "candidates": candidates, "supporting_facts": facts}


def iter_jsonl_objects(path: Path) -> Iterator[tuple[str, dict]]:
    """(`line N`, object) for each non-blank line; bad UTF-8, bad JSON or a non-object line
    is an InputError naming the line."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            where = f"line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(path, f"invalid UTF-8 at byte {error.start}", where=where,
                                 expected="UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(path, f"invalid JSON ({error.msg}, column {error.colno})",
                                 where=where, expected="one JSON object per line") from None
            if not isinstance(obj, dict):
                raise InputError(path, f"a JSON {type(obj).__name__}", where=where,
                                 expected="a JSON object")
            yield where, obj


def _record_problem(obj: dict) -> str | None:
    """The first missing or mistyped field of a canonical JSONL record, if any."""
    problem = _type_problem(obj, _JSONL_REQUIRED, "record")
    for i, cand in enumerate(obj.get("candidates") or []):
        problem = problem or (f"candidate {i} is not an object" if not isinstance(cand, dict)
                              else _type_problem(cand, _CANDIDATE_REQUIRED, f"candidate {i}"))
    for i, fact in enumerate(obj.get("supporting_facts") or []):
        problem = problem or (f"supporting fact {i} is not an object"
                              if not isinstance(fact, dict) else
                              _type_problem(fact, _FACT_REQUIRED, f"supporting fact {i}"))
    return problem


def _read_jsonl(paths: list[Path]) -> pa.Table:
    rows: list[dict] = []
    for path in paths:
        if path.stat().st_size == 0:
            raise InputError(path, "the file is empty", expected="JSON lines")
        for where, obj in iter_jsonl_objects(path):
            problem = _record_problem(obj)
            if problem:
                raise InputError(path, problem, where=where)
            rows.append(_jsonl_row(obj, len(rows)))
    return pa.Table.from_pylist(rows, schema=_JSONL_SCHEMA)


# ---------------------------------------------------------------- HotpotQA source (SPEC §1.4)

_SOURCE_SCHEMA = pa.schema([
    ("source_id", pa.string()), ("source_split", pa.string()), ("source_position", pa.int32()),
    ("question", pa.string()), ("answer", pa.string()), ("type", pa.string()),
    ("level", pa.string()), ("context_is_list", pa.bool_()), ("context_len", pa.int32()),
    ("ctx_valid", pa.list_(pa.bool_())), ("ctx_titles", pa.list_(pa.string())),
    ("ctx_sentences", pa.list_(pa.list_(pa.string()))),
    ("facts", pa.list_(pa.struct([("title", pa.string()), ("sentence_index", pa.int64()),
                                  ("valid", pa.bool_())]))),
    ("file", pa.string()),
])


def _source_entry(entry: object) -> tuple[bool, str | None, list[str] | None]:
    ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
          and isinstance(entry[1], list) and all(isinstance(s, str) for s in entry[1]))
    # The reference joins support titles against [str, anything] pairs, valid or not.
    title = (entry[0] if isinstance(entry, list) and len(entry) == 2
             and isinstance(entry[0], str) else None)
    return ok, title, list(entry[1]) if ok else None


def _source_fact(fact: object) -> dict:
    ok = (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
          and isinstance(fact[1], int) and not isinstance(fact[1], bool) and fact[1] >= 0)
    return {"title": fact[0] if ok else None, "sentence_index": fact[1] if ok else None,
            "valid": ok}


def _parse_source(path: Path) -> pa.Table:
    """One HotpotQA JSON list as source rows (split and file left empty)."""
    try:
        records = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(path, f"invalid UTF-8 at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"invalid JSON ({error.msg})", where=f"line {error.lineno}",
                         expected="a JSON list of HotpotQA records") from None
    if not isinstance(records, list):
        raise InputError(path, f"top level is a JSON {type(records).__name__}",
                         expected="a JSON list of HotpotQA records")
    rows = []
    for position, rec in enumerate(records):
        if not isinstance(rec, dict) or not isinstance(rec.get("_id", rec.get("id")), str):
            raise InputError(path, "record has no string '_id'", where=f"record {position}",
                             expected="{_id, question, answer, type, level, supporting_facts, "
                                      "context}")
        context = rec.get("context")
        entries = [_source_entry(e) for e in context] if isinstance(context, list) else []
        facts = rec.get("supporting_facts")
        rows.append({
            "source_id": rec.get("_id", rec.get("id")), "source_split": None,
            "source_position": position, "question": rec.get("question"),
            "answer": rec.get("answer"), "type": rec.get("type"), "level": rec.get("level"),
            "context_is_list": isinstance(context, list), "context_len": len(entries),
            "ctx_valid": [e[0] for e in entries], "ctx_titles": [e[1] for e in entries],
            "ctx_sentences": [e[2] for e in entries],
            "facts": [_source_fact(f) for f in facts] if isinstance(facts, list) else [],
            "file": None,
        })
    try:   # from buffers: Table.from_pylist imports pandas (0.15 s of a cold scan)
        return pa.Table.from_arrays([arrays.nested([r[f.name] for r in rows], f.type)
                                     for f in _SOURCE_SCHEMA], schema=_SOURCE_SCHEMA)
    except (AttributeError, TypeError, ValueError):   # a value of another type: Arrow's say
        return pa.Table.from_pylist(rows, schema=_SOURCE_SCHEMA)


# Part of the parsed-source cache's key: change it when _parse_source changes.
SOURCE_PARSING = "hotpot-source-1"


def _cached_source(con: duckdb.DuckDBPyConnection, path: Path, digest: str) -> Path:
    """`_parse_source`, remembered per content (a 150 MB source is parsed once): the parsed
    source's Parquet file. The warm path reads it in DuckDB only; no Python value becomes an
    Arrow array (the first such conversion imports pandas, 0.15 s)."""
    key = hashlib.sha256(f"{SOURCE_PARSING}\n{digest}".encode("ascii")).hexdigest()
    cached = cache_dir("sources") / f"{key}.parquet"
    if not cached_parquet(con, cached):
        with staged_file(cached) as staging:
            pq.write_table(_parse_source(path), staging)
    return cached


def _source_sql(con: duckdb.DuckDBPyConnection, spec: str,
                digest: Callable[[Path], str] = file_sha256) -> str:
    """The rows of one HotpotQA JSON list, as SQL; the split comes from `split=path` or the
    release rows whose source ids it shares."""
    split, path = split_of(spec)
    if not path.is_file():
        raise InputError(path, "no such file", expected="a HotpotQA JSON file")
    parsed = f"read_parquet({literal(str(_cached_source(con, path, digest(path))))})"
    if split is None:
        seen = [s for (s,) in con.sql(f"""
            SELECT DISTINCT v.split FROM {parsed} s JOIN (
                SELECT source_id, any_value(source_split) AS split FROM views
                GROUP BY source_id) v USING (source_id) ORDER BY 1""").fetchall()]
        if len(seen) != 1:
            raise InputError(path, "cannot tell which split this source belongs to "
                             f"(release splits matched: {seen or 'none'})",
                             expected="--source train=PATH or --source validation=PATH")
        split = seen[0]
    return (f"SELECT * REPLACE ({literal(split)} AS source_split, "
            f"{literal(str(path))} AS file) FROM {parsed}")


def attach_sources(release: Release, specs: list[str]) -> None:
    """Load the HotpotQA sources into table `sources` (empty without any, so the checks'
    SQL always binds; checks that need a source are gated by the capability)."""

    def digest(path: Path) -> str:    # hashed once: the scan's identity needs it too
        if str(path) not in release.known_digests:
            release.known_digests[str(path)] = file_sha256(path)
        return release.known_digests[str(path)]

    con = release.con
    if specs:
        con.execute("CREATE OR REPLACE TABLE sources AS "
                    + " UNION ALL ".join(_source_sql(con, spec, digest) for spec in specs))
        release.source_paths = [split_of(s)[1] for s in specs]
        release.capabilities = release.capabilities | {"source"}
    else:
        sqltext.create_table(con, "sources", _SOURCE_SCHEMA)
