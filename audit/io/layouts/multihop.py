"""What the multi-hop layouts (V1.1, V2 RC1, canonical JSONL: XHotpotQA's shape) share:
a question and an answer per row, and per row a context — candidate paragraphs and
supporting facts — that the views of one source share.

Opening one groups its rows' contexts once per content (`contexts`, the views' `ctx`),
maps both into the canonical relations (V1.1 field names: candidates with `language` the
name and `language_code` the code, facts with `sentence_index`), and yields the units
(audit/io/units.py): each view's question and answer, each distinct context's titles,
sentences and paragraphs. A layout module gives its views and contexts SQL over
`raw_views` and `raw_contexts`; corrections patch a context's candidates here whatever the
layout (a paragraph edit is followed by the layout's `facts_after_edit`).
"""

from __future__ import annotations

import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pyarrow as pa

from ...settings import cache_dir
from ...sql.safe import literal
from ..atomic import staged_directory
from ..units import SEPARATOR, Patch
from .base import Layout, Opened, Remember

S, I16, I32, B = pa.string(), pa.int16(), pa.int32(), pa.bool_()
# The canonical candidate and supporting fact (V1.1's), and the fields of a row that V1.1
# and V2 RC1 share, in their order.
CANDIDATE = pa.struct([
    ("paragraph_id", S), ("candidate_index", I16), ("source_title", S),
    ("source_sentences", pa.list_(S)), ("title", S), ("sentences", pa.list_(S)),
    ("language", S), ("language_code", S),
])
FACT = pa.struct([
    ("source_title", S), ("paragraph_id", S), ("candidate_index", I16),
    ("sentence_index", I32), ("in_bounds", B),
])
COMMON = [("id", S), ("source_id", S), ("source_split", S), ("source_position", I32)]
TEXT = [
    ("question", S), ("answer", S), ("question_language", S), ("question_language_name", S),
    ("answer_language", S), ("answer_language_name", S), ("source_question", S),
    ("source_answer", S), ("question_type", S), ("difficulty", S),
]

# Names the way contexts are numbered: caches that store context numbers key on it.
CONTEXT_NUMBERING = "exact (source, candidates, facts); numbered by first rid"
NESTED = ("candidates", "supporting_facts")

# The canonical contexts of a layout whose raw contexts are V1.1's shape already.
SAME_CONTEXTS = ("SELECT ctx, source_id, source_split, candidates, supporting_facts "
                 "FROM raw_contexts")

_RELEASE = """
SELECT v.* EXCLUDE (ctx, status, structural_flags, quality_flags, shipped_hash),
       c.candidates, c.supporting_facts, v.status, v.structural_flags, v.quality_flags,
       v.shipped_hash, v.ctx
FROM views v JOIN contexts c USING (ctx)
"""

_FLAT = """
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
"""

# The units: questions and answers per view, titles, sentences and paragraphs once per
# distinct context (`position`: the candidate's place in it, which names it in the key).
UNITS_SQL = f"""
CREATE VIEW units AS
SELECT rid, NULL::INTEGER AS ctx, 'question' AS unit, NULL::VARCHAR AS paragraph_id,
       NULL::INTEGER AS sentence_index, NULL::INTEGER AS position, question_language AS lang,
       source_question AS src, question AS tgt, 'question:' || rid AS key
FROM views
UNION ALL
SELECT rid, NULL, 'answer', NULL, NULL, NULL, answer_language, source_answer, answer,
       'answer:' || rid
FROM views
UNION ALL
SELECT NULL, ctx, 'title', c.paragraph_id, NULL, i, c.language_code, c.source_title, c.title,
       'title:' || ctx || ':' || i
FROM (SELECT ctx, unnest(candidates) AS c, unnest(range(len(candidates)))::INTEGER AS i
      FROM contexts)
UNION ALL
SELECT NULL, ctx, 'paragraph', c.paragraph_id, NULL, i, c.language_code,
       array_to_string(c.source_sentences, {literal(SEPARATOR)}),
       array_to_string(c.sentences, {literal(SEPARATOR)}), 'paragraph:' || ctx || ':' || i
FROM (SELECT ctx, unnest(candidates) AS c, unnest(range(len(candidates)))::INTEGER AS i
      FROM contexts)
WHERE len(c.sentences) > 0
UNION ALL
SELECT NULL, ctx, 'sentence', c.paragraph_id, (k - 1)::INTEGER, i, c.language_code,
       c.source_sentences[k], c.sentences[k], 'sentence:' || ctx || ':' || i || ':' || (k - 1)
FROM (SELECT ctx, c, i, unnest(range(1, len(c.sentences) + 1)) AS k
      FROM (SELECT ctx, unnest(candidates) AS c,
                   unnest(range(len(candidates)))::INTEGER AS i FROM contexts))
"""


class MultiHopLayout(Layout):
    """A layout of XHotpotQA's shape (see the module doc): its module gives `views_sql` and
    `contexts_sql`, the canonical relations over `raw_views` and `raw_contexts`."""

    views_sql: ClassVar[str]
    contexts_sql: ClassVar[str] = SAME_CONTEXTS
    # Whether `contexts` is materialised (a mapping that rebuilds every candidate is read by
    # several checks: once, not per query).
    contexts_table: ClassVar[bool] = False

    def open(self, con: duckdb.DuckDBPyConnection, cache_key: str | None
             ) -> Remember | None:
        remember = _grouped_contexts(con, cache_key if self.remembers else None)
        con.execute(f"CREATE VIEW views AS {self.views_sql}")
        con.execute(f"CREATE {'TABLE' if self.contexts_table else 'VIEW'} contexts AS "
                    f"{self.contexts_sql}")
        con.execute(f"CREATE VIEW release AS {_RELEASE}")
        con.execute(_FLAT)
        con.execute(UNITS_SQL)
        return remember

    def facts_after_edit(self, candidates: list[dict[str, Any]],
                         facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A context's supporting facts once a paragraph edit changed its sentence count
        (as they were, unless the layout's facts record something that depends on it)."""
        return facts

    def patched_contexts(self, release: Opened, patches: list[Patch]) -> pa.Table:
        """(ctx, candidates, supporting_facts) of every context a patch changes, in the
        release's raw layout (the columns of its files)."""
        con = release.con.cursor()
        shape = con.sql("SELECT ctx, candidates, supporting_facts FROM raw_contexts LIMIT 0"
                        ).to_arrow_table().schema
        by_ctx = context_patches(patches)
        con.register("patched_ctx", pa.table({"ctx": pa.array(sorted(by_ctx), pa.int32())}))
        rows = con.sql("SELECT ctx, candidates, supporting_facts FROM raw_contexts "
                       "SEMI JOIN patched_ctx USING (ctx) ORDER BY ctx"
                       ).to_arrow_table().to_pylist()
        con.close()
        for row in rows:
            mine = by_ctx[row["ctx"]]
            row["candidates"] = patch_candidates(row["candidates"], mine)
            if any(p.unit == "paragraph" for p in mine):
                row["supporting_facts"] = self.facts_after_edit(row["candidates"],
                                                                row["supporting_facts"])
        return pa.Table.from_pylist(rows, schema=shape)


ROW_SHAPE = pa.schema([("rid", pa.int64()), ("question", pa.string()),
                       ("answer", pa.string())])


def patched_rows(patches: list[Patch]) -> pa.Table:
    """(rid, question, answer) of every row a question or answer patch changes; a column the
    row keeps is NULL."""
    rows: dict[int, dict[str, Any]] = {}
    for patch in patches:
        if patch.rid is not None and patch.unit in ("question", "answer"):
            row = rows.setdefault(patch.rid, {"rid": patch.rid, "question": None,
                                              "answer": None})
            row[patch.unit] = patch.text
    return pa.Table.from_pylist(sorted(rows.values(), key=lambda r: r["rid"]),
                                schema=ROW_SHAPE)


def context_patches(patches: list[Patch]) -> dict[int, list[Patch]]:
    out: dict[int, list[Patch]] = {}
    for patch in patches:
        if patch.ctx is not None:
            out.setdefault(patch.ctx, []).append(patch)
    return out


def patch_candidates(candidates: list[dict[str, Any]], patches: list[Patch],
                     id_key: str = "paragraph_id") -> list[dict[str, Any]]:
    """The candidates with the patches of their titles, sentences and paragraphs applied (a
    whole paragraph first, so a sentence patch of it lands on its new sentences)."""
    out = []
    for candidate in candidates:
        candidate = dict(candidate)
        mine = [p for p in patches if p.paragraph_id == candidate[id_key]]
        for patch in sorted(mine, key=lambda p: p.unit != "paragraph"):
            if patch.unit == "title":
                candidate["title"] = patch.text
            elif patch.unit == "paragraph":
                candidate["sentences"] = list(patch.sentences or ())
            else:
                sentences = list(candidate["sentences"])
                sentences[patch.sentence_index or 0] = patch.text
                candidate["sentences"] = sentences
        out.append(candidate)
    return out


# --------------------------------------------------------------- grouping the contexts

def _grouped_contexts(con: duckdb.DuckDBPyConnection, key: str | None) -> Remember | None:
    """`_group_contexts`, remembered per content (`key`: the files' SHA-256s): reopening a
    release reads its contexts and each row's context number instead of grouping its rows
    again (the rows' other columns are read from the release itself, as fast as from a
    copy). A first grouping is returned as a cache write to start: on a thread of its own
    (DuckDB's Parquet writer releases the GIL, and the source parse that follows is Python
    on one core), while the release is used; the release holds its future
    (`Release.remembering`) and `Release.settle` waits for it."""
    folder = cache_dir("contexts") / key if key else None
    if folder is not None and (folder / "context_of.parquet").is_file():
        try:
            con.read_parquet(str(folder / "contexts.parquet")).create("raw_contexts")
            create_views(con, f"read_parquet({literal(str(folder / 'context_of.parquet'))})")
            return None
        except duckdb.Error:   # unreadable: group again and replace it
            con.execute("DROP TABLE IF EXISTS raw_contexts; DROP TABLE IF EXISTS raw_views")
    if folder is not None:     # unreadable, or an earlier layout of the entry
        shutil.rmtree(folder, ignore_errors=True)
    _group_contexts(con)
    if folder is None:
        return None
    cursor = con.cursor()      # made here: a connection is not shared between threads

    def remember() -> Future[None]:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contexts-cache")
        try:
            return pool.submit(_remember_contexts, cursor, folder)
        finally:
            pool.shutdown(wait=False)
    return remember


def _remember_contexts(cur: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Write the grouping to the cache through its own cursor, reading only: the release
    is in use meanwhile (XHotpotQA+: 1.8 s of a 13 s opening no longer waited for), so
    `context_of` (a few MB) stays rather than be dropped under the scan's feet."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with staged_directory(folder, replace=True) as staging:
            cur.table("raw_contexts").write_parquet(str(staging / "contexts.parquet"),
                                                    compression="zstd")
            cur.table("context_of").write_parquet(str(staging / "context_of.parquet"),
                                                  compression="zstd")
    finally:
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
    create_views(con, "context_of")


def create_views(con: duckdb.DuckDBPyConnection, context_of: str) -> None:
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
