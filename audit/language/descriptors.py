"""Language descriptors per instance: the language vector of SPEC §4 (paper §3.3, Eqs 13–20,
Table 3), computed by one set-based DuckDB query over the canonical `release` view.

One output row per release row (`rid` order). Columns:

identity      rid, id, source_id, source_split, question_type, shipped_status (the
              release's own status column; NULL for JSONL), question_language (ℓq, a code),
              question_script, question_family
sets          gold_paragraph_ids (G: distinct non-null fact paragraph ids that name a candidate,
              in order of first mention), gold_languages, gold_scripts, gold_families,
              distractor_paragraph_ids (D: every other candidate, in candidate order),
              distractor_languages, candidate_count (m), gold_count (|G|),
              distractor_count (|D|), candidate_languages (λ(c) in candidate order),
              support_languages (the language of each resolved supporting-fact occurrence,
              the paper's Table 11 "Support")
crossing      interface_crossing (I, Eq 16), composition_crossing (C, Eq 17) — not the bare
              symbols, which DuckDB would let shadow lambda parameters `i`/`c` in later
              queries; question_language_absent (ℓq among no candidate), rho_g, rho_d
              (NULL = NA when D is empty, never 0), h_g, h_c (Eq 20, natural log, 0 when
              |R| ≤ 1), k_c, gold_language_count. With G empty (every fact unresolved) the
              gold-side values and the stratum are NULL: undefined, not 0.
strata        stratum: S0–S4, 'NA' (ρ_G = 0 with no distractor); NULL when G is empty
relations     script_relation / family_relation: 'same-script' | 'mixed-script' |
              'different-script' (…-family): the gold scripts equal {ℓq's script}, include it,
              or exclude it; gold_pair (sorted 'xx+yy', |G| = 2 only); pair_relation
              (|G| = 2 only): 'same-language' | 'same-script' | 'different-script'
roles         role_status: 'determined' | 'undetermined' | 'comparison (unordered)';
              answer_hop_paragraph_id, bridge_paragraph_id, answer_hop_language (ℓt),
              bridge_language (ℓb), answer_hop_aligned (ℓt = ℓq);
              role_condition: the Table 3 cell, one of 'monolingual', 'query mismatch',
              'bridge mismatch', 'answer-hop mismatch', 'three-language' (these five partition
              the determined rows), else the role_status; role_conditions: every Table 3 label
              that holds, i.e. the cell plus 'cross-hop' (ℓb ≠ ℓt, which overlaps bridge
              mismatch, answer-hop mismatch and three-language, as in the paper); cross_hop.

Answer-hop rule (SPEC §4): a bridge question with exactly two gold paragraphs; for each, join
its English support sentences (source_sentences at the facts' sentence indices) and normalise
them and the English answer (source_answer) with the release protocol (SPEC §6). The answer-hop
paragraph is the one whose text contains the normalised answer as whole tokens, when exactly
one does; the other is the bridge. Otherwise the roles are undetermined. Normalisation runs as
a Python UDF over the distinct strings only.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from .. import languages as languages_module
from ..io import hotpot, layouts
from ..io import release as readers
from ..io.atomic import staged_file
from ..io.model import Release
from ..io.tables import cached_parquet, read_parquet
from ..languages import LANGUAGES
from ..settings import cache_dir
from ..sql import arrays
from ..sql import macros as sqltext
from ..sql.safe import literal

STRATA = ("S0", "S1", "S2", "S3", "S4", "NA")
SCRIPT_RELATIONS = ("same-script", "mixed-script", "different-script")
FAMILY_RELATIONS = ("same-family", "mixed-family", "different-family")
PAIR_RELATIONS = ("same-language", "same-script", "different-script")
# The 10 script groups of the 24 languages (SPEC §4), in language order.
SCRIPT_GROUPS = tuple(dict.fromkeys(language.script for language in LANGUAGES))
ROLE_STATUSES = ("determined", "undetermined", "comparison (unordered)")
ROLE_CONDITIONS = ("monolingual", "query mismatch", "bridge mismatch", "answer-hop mismatch",
                   "three-language")
CROSS_HOP = "cross-hop"

# ------------------------------------------------------------ answer normalisation (SPEC §6)

@functools.cache
def _punct_symbol_table() -> dict[int, str]:
    """Every code point whose general category is punctuation (P*) or symbol (S*) → space.
    All of them lie in planes 0–1 (planes 2–3 are ideographs, 14 tags and variation
    selectors, 15–16 private use); tests check this against the whole code space."""
    return {cp: " " for cp in range(_PS_LIMIT) if unicodedata.category(chr(cp))[0] in "PS"}


_PS_LIMIT = 0x20000


_ARTICLE = re.compile(r"\b(?:a|an|the)\b")


def normalize_answer(text: str, language: str = "en") -> str:
    """Release-protocol normalisation: NFKC, casefold, P*/S* → space, English articles
    removed (English only), whitespace collapsed."""
    value = unicodedata.normalize("NFKC", text).casefold().translate(_punct_symbol_table())
    if language == "en":
        value = _ARTICLE.sub(" ", value)
    return " ".join(value.split())


def _normalize_english(values: pa.Array) -> pa.Array:
    return arrays.strings([None if v is None else normalize_answer(v, "en")
                           for v in values.to_pylist()])


# ------------------------------------------------------------------------- SQL pieces

def _case(attribute: str) -> str:
    whens = " ".join(f"WHEN '{lang.code}' THEN '{getattr(lang, attribute)}'"
                     for lang in LANGUAGES)
    return f"CASE x {whens} END"


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Install the lookup macros and the normalisation UDF on a connection (idempotent)."""
    known = con.sql("SELECT count(*) FROM duckdb_functions() "
                    "WHERE function_name = 'answer_norm_en'").fetchall()[0][0]
    if not known:
        con.create_function("answer_norm_en", _normalize_english, ["VARCHAR"], "VARCHAR",
                            type="arrow", side_effects=False)
    con.execute(f"""
        CREATE OR REPLACE TEMP MACRO lang_script(x) AS {_case('script')};
        CREATE OR REPLACE TEMP MACRO lang_family(x) AS {_case('family')};
        -- Eq 20: Shannon entropy of the multiset over ln|R|, 0 when |R| <= 1 (abs() turns
        -- the -0.0 of a one-language multiset into 0.0; the value is never negative).
        CREATE OR REPLACE TEMP MACRO norm_entropy(l) AS CASE WHEN len(l) <= 1 THEN 0.0 ELSE
            abs(list_sum(list_transform(map_values(list_aggregate(l, 'histogram')),
                         lambda k: (k / len(l)) * ln(k / len(l)))) / ln(len(l))) END;
        -- same / mixed / different: is the set of values exactly q, does it hold q, or not?
        CREATE OR REPLACE TEMP MACRO set_relation(q, xs, suffix) AS CASE
            WHEN len(xs) = 0 OR q IS NULL OR list_count(xs) < len(xs) THEN NULL
            WHEN len(list_filter(xs, lambda x: x <> q)) = 0 THEN 'same-' || suffix
            WHEN list_contains(xs, q) THEN 'mixed-' || suffix
            ELSE 'different-' || suffix END;
    """)


_QUERY = """
WITH lists AS (
    SELECT ctx, candidates, supporting_facts,
           list_transform(candidates, lambda c: c.paragraph_id) AS cids,
           list_transform(candidates, lambda c: c.language_code) AS clangs,
           list_transform(supporting_facts, lambda f: f.paragraph_id) AS fids
    FROM contexts),
gold AS (
    SELECT *, list_filter(fids, lambda x, i: x IS NOT NULL AND list_contains(cids, x)
                                           AND list_position(fids, x) = i) AS gold_ids
    FROM lists),
sets AS (
    SELECT ctx, clangs, gold_ids,
           list_transform(list_filter(fids, lambda x: list_contains(cids, x)),
                          lambda x: clangs[list_position(cids, x)]) AS support_langs,
           list_transform(gold_ids, lambda g: clangs[list_position(cids, g)]) AS gold_langs,
           list_filter(cids, lambda x: NOT list_contains(gold_ids, x)) AS dist_ids,
           list_filter(clangs, lambda x, i: NOT list_contains(gold_ids, cids[i])) AS dist_langs,
           CASE WHEN len(gold_ids) = 2 THEN
               list_transform(gold_ids, lambda g: array_to_string(list_transform(
                   list_filter(supporting_facts,
                               lambda f: f.paragraph_id = g AND f.sentence_index >= 0),
                   lambda f: candidates[list_position(cids, g)]
                             .source_sentences[f.sentence_index + 1]), ' '))
           END AS two_gold_texts
    FROM gold),
-- What depends on the context alone, once per distinct context (a context's views share
-- it: 24 per source in XHotpotQA+), not once per row.
context_sets AS MATERIALIZED (
    SELECT *, len(clangs) AS m, len(gold_ids) AS g, len(dist_ids) AS d,
           len(list_distinct(gold_langs)) AS gold_language_count,
           list_transform(gold_langs, lambda x: lang_script(x)) AS gold_scripts,
           list_transform(gold_langs, lambda x: lang_family(x)) AS gold_families,
           CASE WHEN len(gold_ids) > 0 THEN norm_entropy(gold_langs) END AS h_g,
           norm_entropy(clangs) AS h_c,
           len(list_distinct(clangs))::INTEGER AS k_c,
           CASE WHEN len(gold_ids) = 2 THEN array_to_string(list_sort(gold_langs), '+') END
             AS gold_pair
    FROM sets),
base AS MATERIALIZED (
    SELECT v.rid, v.id, v.source_id, v.source_split, v.question_type, v.status,
           v.question_language AS lq, v.source_answer, c.* EXCLUDE (ctx, two_gold_texts),
           CASE WHEN v.question_type = 'bridge' THEN c.two_gold_texts END AS hop_texts
    FROM views v JOIN context_sets c USING (ctx)),
hop_keys AS MATERIALIZED (
    SELECT DISTINCT source_answer AS a, hop_texts AS t FROM base
    WHERE hop_texts IS NOT NULL AND source_answer IS NOT NULL),
norms AS MATERIALIZED (
    SELECT s, answer_norm_en(s) AS n
    FROM (SELECT a AS s FROM hop_keys UNION SELECT unnest(t) FROM hop_keys)),
hop_hits AS (
    SELECT k.a, k.t, k.j, na.n AS answer_norm,
           contains(' ' || nt.n || ' ', ' ' || na.n || ' ') AS hit
    FROM (SELECT a, t, unnest(t) AS text, unnest(range(1, len(t) + 1)) AS j
          FROM hop_keys) k
    JOIN norms na ON na.s = k.a
    JOIN norms nt ON nt.s = k.text),
roles AS (
    SELECT a, t, CASE WHEN any_value(answer_norm) <> '' AND count_if(hit) = 1
                      THEN max(j) FILTER (WHERE hit) END AS t_pos
    FROM hop_hits GROUP BY a, t),
measured AS (
    SELECT b.*, r.t_pos,
           len(list_filter(b.gold_langs, lambda x: x IS DISTINCT FROM b.lq)) AS g_mis,
           len(list_filter(b.dist_langs, lambda x: x IS DISTINCT FROM b.lq)) AS d_mis,
           lang_script(b.lq) AS q_script, lang_family(b.lq) AS q_family
    FROM base b LEFT JOIN roles r ON r.a = b.source_answer AND r.t = b.hop_texts),
roled AS (
    SELECT *,
           CASE WHEN question_type = 'comparison' THEN 'comparison (unordered)'
                WHEN t_pos IS NOT NULL THEN 'determined' ELSE 'undetermined' END
             AS role_status,
           gold_langs[t_pos] AS lt, gold_langs[3 - t_pos] AS lb
    FROM measured),
conditioned AS (
    SELECT *,
           CASE WHEN role_status <> 'determined' THEN role_status
                WHEN lq IS NOT DISTINCT FROM lb AND lb IS NOT DISTINCT FROM lt
                  THEN 'monolingual'
                WHEN lb IS NOT DISTINCT FROM lt THEN 'query mismatch'
                WHEN lq IS NOT DISTINCT FROM lt THEN 'bridge mismatch'
                WHEN lq IS NOT DISTINCT FROM lb THEN 'answer-hop mismatch'
                ELSE 'three-language' END AS role_condition,
           CASE WHEN t_pos IS NOT NULL THEN lb IS DISTINCT FROM lt END AS cross_hop
    FROM roled)
SELECT rid, id, source_id, source_split, question_type, status AS shipped_status,
       lq AS question_language, q_script AS question_script, q_family AS question_family,
       gold_ids AS gold_paragraph_ids, gold_langs AS gold_languages, gold_scripts,
       gold_families, dist_ids AS distractor_paragraph_ids, dist_langs AS distractor_languages,
       clangs AS candidate_languages, support_langs AS support_languages,
       m::INTEGER AS candidate_count, g::INTEGER AS gold_count,
       d::INTEGER AS distractor_count,
       CASE WHEN g > 0 THEN g_mis > 0 END AS interface_crossing,
       CASE WHEN g > 0 THEN gold_language_count > 1 END AS composition_crossing,
       NOT list_contains(clangs, lq) AS question_language_absent,
       CASE WHEN g > 0 THEN g_mis / g END AS rho_g,
       CASE WHEN d > 0 THEN d_mis / d END AS rho_d,
       h_g, h_c, k_c,
       gold_language_count::INTEGER AS gold_language_count,
       CASE WHEN g = 0 THEN NULL
            WHEN g_mis = 0 AND d = 0 THEN 'NA'
            WHEN g_mis = 0 AND d_mis = 0 THEN 'S0'
            WHEN g_mis = 0 THEN 'S1'
            WHEN g_mis < g THEN 'S2'
            WHEN gold_language_count = 1 THEN 'S3'
            ELSE 'S4' END AS stratum,
       set_relation(q_script, gold_scripts, 'script') AS script_relation,
       set_relation(q_family, gold_families, 'family') AS family_relation,
       gold_pair,
       CASE WHEN g <> 2 OR list_count(gold_scripts) < 2 THEN NULL
            WHEN gold_langs[1] = gold_langs[2] THEN 'same-language'
            WHEN gold_scripts[1] = gold_scripts[2] THEN 'same-script'
            ELSE 'different-script' END AS pair_relation,
       role_status,
       gold_ids[t_pos] AS answer_hop_paragraph_id, gold_ids[3 - t_pos] AS bridge_paragraph_id,
       lt AS answer_hop_language, lb AS bridge_language,
       CASE WHEN t_pos IS NOT NULL THEN lt IS NOT DISTINCT FROM lq END AS answer_hop_aligned,
       role_condition,
       CASE WHEN role_status <> 'determined' THEN []::VARCHAR[]
            WHEN cross_hop THEN [role_condition, 'cross-hop']
            ELSE [role_condition] END AS role_conditions,
       cross_hop
FROM conditioned
"""


def applies(release: Release) -> bool:
    """Whether the release has a language vector: questions, contexts, supporting facts."""
    return all(release.layout.has(c) for c in ("questions", "contexts", "supporting_facts"))


def cached(release: Release) -> Path:
    """The Parquet file of a release's descriptor table (one row per release row, in `rid`
    order), remembered per content (the release files' SHA-256s, and the code and Unicode
    version it depends on): a rescan of the same files reads it instead of computing it.
    One that `start` began is waited for; a table it made alone is written out."""
    pending = _PENDING.pop(release.root, None)
    if pending is not None and (made := pending.result()) is not None:
        return made
    return _file(release.con.cursor(), _path(release))


def into_table(release: Release, table: pa.Table | None = None) -> None:
    """Make the release's table `main.descriptors` (a browse index reads it) unless it is
    made: a computation `start` began is waited for, else it is copied from `table` (the
    remembered descriptors) or the cached file. The descriptors depend on the release
    alone, so the table made once serves every scan of it."""
    pending = _PENDING.get(release.root)
    if pending is not None:
        futures_wait([pending])
    con = release.con
    if _has_table(con):
        return
    if table is None:
        con.execute("CREATE TABLE IF NOT EXISTS main.descriptors AS SELECT * FROM "
                    f"read_parquet({literal(str(cached(release)))})")
        return
    con.register("descriptor_arrow", table)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS main.descriptors AS "
                    "SELECT * FROM descriptor_arrow")
    finally:
        con.unregister("descriptor_arrow")


# A scan to be written starts the descriptors on a thread of its own: DuckDB runs them
# without the GIL while the scan's checks run, instead of after them when it is written.
# Keyed by the release's connection, which all its threads' cursors share.
_PENDING: weakref.WeakKeyDictionary[Any, Future[Path | None]] = weakref.WeakKeyDictionary()


def start(release: Release, file: bool = True) -> None:
    """Compute the descriptors on a thread, unless they are cached or not applicable: into
    the table `main.descriptors`, where `file` is false (the workbench's first view: 3.5 s
    of XHotpotQA+'s become 1.3 s without the sort, the compression and the copy back),
    else into the Parquet file. `cached` and `into_table` wait for it, `discard` stops
    waiting for it."""
    if not applies(release) or _path(release).is_file():
        return
    pending = _PENDING.get(release.root)
    if pending is not None and not (file and _table_alone(pending)):
        return
    # The UDF is made here, before the thread: DuckDB's catalog is shared by the cursors,
    # so the thread and the preservation layer would race to make it ("already exists").
    register(release.root)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="descriptors")
    try:
        _PENDING[release.root] = pool.submit(_compute, release.con.cursor(), _path(release),
                                             file)
    finally:
        pool.shutdown(wait=False)


def _table_alone(pending: Future[Path | None]) -> bool:
    """Whether a computation ended having made the table alone (its file still unwritten)."""
    return pending.done() and pending.exception() is None and pending.result() is None


def wait(release: Release) -> None:
    """Wait for a computation `start` began; `cached` then takes its result (or error)."""
    pending = _PENDING.get(release.root)
    if pending is not None:
        futures_wait([pending])


def discard(release: Release) -> None:
    """Wait for a computation `start` began (a scan that failed): no thread outlives it."""
    pending = _PENDING.pop(release.root, None)
    if pending is not None:
        futures_wait([pending])


def _path(release: Release) -> Path:
    return cache_dir("descriptors") / f"{_content_key(release)}.parquet"


def _compute(con: duckdb.DuckDBPyConnection, path: Path, file: bool) -> Path | None:
    """The cached file: made where `file`; else the table alone is made (None) unless the
    file is cached already."""
    if file:
        return _file(con, path)
    with con:
        if cached_parquet(con, path):
            return path
        register(con)
        con.execute(f"CREATE TABLE IF NOT EXISTS main.descriptors AS {_QUERY}")
    return None


def _file(con: duckdb.DuckDBPyConnection, path: Path) -> Path:
    """The cached file, made in `rid` order if it is not, from the query even when the
    table is made: DuckDB writes the columns a table happens to hold no NULL in as
    required, so the file's schema would vary with the data."""
    with con:
        if cached_parquet(con, path):
            return path
        register(con)
        with staged_file(path) as staging:   # straight from DuckDB
            con.execute(f"COPY ({_QUERY} ORDER BY rid) TO {literal(str(staging))} "
                        "(FORMAT parquet, COMPRESSION zstd)")
    return path


def _has_table(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.sql("""SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main'
        AND table_name = 'descriptors' AND database_name = current_database()""").fetchall()[0][0])


def descriptors(release: Release) -> pa.Table:
    """The descriptor table of a release (see `cached`)."""
    return read_parquet(cached(release))


def _content_key(release: Release) -> str:
    digest = hashlib.sha256(unicodedata.unidata_version.encode("ascii"))
    # The reader's modules: what a release's canonical rows are made of.
    readers_ = sorted(Path(layouts.__file__).parent.glob("*.py"))
    for module in (__file__, languages_module.__file__, readers.__file__, hotpot.__file__,
                   sqltext.__file__, *readers_):
        digest.update(Path(module).read_bytes())
    for part in (release.layout.name, *release.content):
        digest.update(b"\0" + part.encode("utf-8"))
    return digest.hexdigest()


def counts(con: duckdb.DuckDBPyConnection, relation: str) -> dict:
    """Small summaries for summary.json of a descriptor relation (SQL): stratum,
    script-relation, pair-relation and role-condition counts (NULL keys appear as 'none')."""
    out = {}
    for column in ("stratum", "script_relation", "pair_relation", "role_condition"):
        rows = con.sql(f"SELECT coalesce({column}, 'none'), count(*) FROM {relation} "
                       "GROUP BY 1 ORDER BY 1").fetchall()
        out[column] = {key: value for key, value in rows}
    return out
