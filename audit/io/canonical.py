"""One canonical layout in DuckDB for every release layout: contexts grouped once per
content, the `views`, `contexts` and `release` views per layout, and the flat views."""

from __future__ import annotations

import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import duckdb

from ..settings import cache_dir
from ..sql.safe import literal
from .atomic import staged_directory

# Names the way contexts are numbered: caches that store context numbers key on it.
CONTEXT_NUMBERING = "exact (source, candidates, facts); numbered by first rid"


def _grouped_contexts(con: duckdb.DuckDBPyConnection, key: str | None) -> Future[None] | None:
    """`_group_contexts`, remembered per content (`key`: the files' SHA-256s): reopening a
    release reads its contexts and each row's context number instead of grouping its rows
    again (the rows' other columns are read from the release itself, as fast as from a
    copy). A first grouping is written to the cache on a thread of its own (DuckDB's
    Parquet writer releases the GIL, and the source parse that follows is Python on one
    core); the caller waits for the returned future before the release is used."""
    folder = cache_dir("contexts") / key if key else None
    if folder is not None and (folder / "context_of.parquet").is_file():
        try:
            con.read_parquet(str(folder / "contexts.parquet")).create("raw_contexts")
            _create_views(con, f"read_parquet({literal(str(folder / 'context_of.parquet'))})")
            return None
        except duckdb.Error:   # unreadable: group again and replace it
            con.execute("DROP TABLE IF EXISTS raw_contexts; DROP TABLE IF EXISTS raw_views")
    if folder is not None:     # unreadable, or an earlier layout of the entry
        shutil.rmtree(folder, ignore_errors=True)
    _group_contexts(con)
    if folder is None:
        con.execute("DROP TABLE context_of")
        return None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contexts-cache")
    try:
        return pool.submit(_remember_contexts, con.cursor(), folder)
    finally:
        pool.shutdown(wait=False)


def _remember_contexts(cur: duckdb.DuckDBPyConnection, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with staged_directory(folder, replace=True) as staging:
            cur.table("raw_contexts").write_parquet(str(staging / "contexts.parquet"),
                                                    compression="zstd")
            cur.table("context_of").write_parquet(str(staging / "context_of.parquet"),
                                                  compression="zstd")
    finally:
        cur.execute("DROP TABLE context_of")
        cur.close()


def _group_contexts(con: duckdb.DuckDBPyConnection) -> None:
    """XHotpotQA+ gives the 24 views of a source one context (its candidates and supporting
    facts). Each distinct (source, candidates, facts) becomes one row of `raw_contexts`,
    grouped by the values themselves, so no hash collision can merge two contexts, and
    numbered in order of its first row, so the numbers are reproducible; `context_of` holds
    each row's number in rid order. `raw_views` holds every row's other columns with its
    context's number, read in a second pass that never decodes the nested columns. Context
    checks then run once per context and fan out to the views by join."""
    con.execute("""
        CREATE TABLE raw_contexts AS
        SELECT (row_number() OVER (ORDER BY first_rid) - 1)::INTEGER AS ctx,
               * EXCLUDE (first_rid)
        FROM (SELECT source_id, source_split, candidates, supporting_facts,
                     list(rid) AS rids, min(rid) AS first_rid
              FROM raw_release GROUP BY ALL);
        CREATE TABLE context_of AS
            SELECT unnest(rids) AS rid, ctx FROM raw_contexts ORDER BY rid;
        ALTER TABLE raw_contexts DROP COLUMN rids;
    """)
    _create_views(con, "context_of")


def _create_views(con: duckdb.DuckDBPyConnection, context_of: str) -> None:
    """Table `raw_views`: every row's columns but the nested ones, with its context number
    from `context_of` (rid, ctx in rid order), paired by position with the release read in
    file order (no join, no sort); a row whose rids differ stops it rather than pair
    wrongly."""
    con.execute(f"""
        CREATE TABLE raw_views AS
        SELECT CASE WHEN c.rid = r.rid THEN c.ctx
                    ELSE error('context numbers out of step with the release rows') END AS ctx,
               r.* EXCLUDE (candidates, supporting_facts)
        FROM raw_release r POSITIONAL JOIN {context_of} c""")


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
