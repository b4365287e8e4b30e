"""Compare two versions of a release unit by unit (paper Supplement C.4, Eq. 36).

Units. A release row (view) is matched across versions on `source_id` and its view: the
row's place among the rows that share its source, in id order (one row per source in
V1.1 and V2; XHotpotQA+ gives a source 24 views). Its units are the question and the
answer (per view) and, from the source's context (its first view's; the views of a source
share one), each paragraph by `paragraph_id` and each sentence by (paragraph_id, index).
A translation unit j = (i, u, ℓ) is matched when both versions hold it with the same target
language; a unit whose language changed is listed and excluded, as the paper requires.

Key equality compares the sources and, per source, the set of question, answer and
paragraph units. Sentences do not count there: a sentence added or removed shows as the
paragraph's sentence-count change.

Findings sit on units, as the scan placed each (its `unit` column): a sentence's, or a
supporting fact's at a sentence, on that sentence; a paragraph's or a title's on the
paragraph; a question's or an answer's on it; any other on the instance (the view as a
whole). Per unit, the checks that fired are fixed (old only), introduced (new only) or kept
(both); in a view none of whose units changed they are counted apart (`fixed_unchanged`,
`introduced_unchanged`): a check calibrated over the whole release moved, no edit of it.

Structural change (Eq. 36). e_i^(v) = 1 when any row of source i is quarantined in version v
(that is, holds a release-blocking finding); R_struct^(v) is its mean over the N sources
present in both versions and ΔR = R^(2) − R^(1), with a paired, source-clustered
bootstrap interval (every slice below shares the same resampled sources). The same per
check (sources where the check fires), per unit kind and per target language (sources
with a blocking finding on a matched unit of that kind or language, among the sources that
have one), and the status transitions of matched rows.

Both versions are scanned (a saved scan of the same inputs, policy and registry is reused),
reduced to a few tables, and their connections closed before the next is opened: the peak
is one scan's, not two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import paths
from ..analysis import stats
from ..engine import scan, store
from ..engine.policy import DEFAULT, Policy
from ..errors import InputError
from ..io import release
from ..io.atomic import staged_directory, write_json
from ..sql.connection import connect

Progress = Callable[[str], None]
N_BOOT = 2000
STATUSES = ("accepted", "review_required", "quarantined")
UNIT_KINDS = ("question", "answer", "paragraph", "sentence", "instance")
CHANGES = ("unchanged", "text_changed", "language_changed", "only_old", "only_new")
# Sentinels stand for "none" inside join keys (NULL never equals NULL); outputs show NULL.
_NO_VIEW, _NO_PARAGRAPH, _NO_SENTENCE = -1, "", -1

# A row's view: its place among the rows of its source, in id order (the paired review
# matches units with the same key).
VIEW_OF_ROW = "(row_number() OVER (PARTITION BY source_id ORDER BY id, rid) - 1)::INTEGER"
_VIEWS = f"""
CREATE OR REPLACE TEMP TABLE cmp_views AS
SELECT rid, ctx, source_id, id, question, answer, question_language, answer_language,
       {VIEW_OF_ROW} AS view
FROM views
"""
# The units of a version: per view its question and answer, per source its first view's
# paragraphs and sentences. A paragraph id that is missing or repeated in a context gets
# its position, so every unit key is unique.
_UNITS = f"""
WITH source_ctx AS (
    SELECT source_id, arg_min(ctx, view) AS ctx FROM cmp_views GROUP BY source_id),
paragraphs AS (
    SELECT s.source_id, c.p, c.position,
           CASE WHEN c.p.paragraph_id IS NULL THEN '#' || c.position
                WHEN count(*) OVER (PARTITION BY s.source_id, c.p.paragraph_id) > 1
                  THEN c.p.paragraph_id || '#' || c.position
                ELSE c.p.paragraph_id END AS paragraph_id
    FROM source_ctx s JOIN contexts x USING (ctx),
         LATERAL (SELECT unnest(x.candidates) AS p,
                         unnest(range(len(x.candidates)))::INTEGER AS position) c)
SELECT source_id, view, 'question' AS unit, '{_NO_PARAGRAPH}' AS paragraph_id,
       {_NO_SENTENCE} AS sentence_index, question_language AS language,
       md5(coalesce(question, chr(0))) AS text_hash, NULL::INTEGER AS n_sentences
FROM cmp_views
UNION ALL
SELECT source_id, view, 'answer', '{_NO_PARAGRAPH}', {_NO_SENTENCE}, answer_language,
       md5(coalesce(answer, chr(0))), NULL
FROM cmp_views
UNION ALL
SELECT source_id, {_NO_VIEW}, 'paragraph', paragraph_id, {_NO_SENTENCE}, p.language_code,
       md5(to_json(struct_pack(t := p.title, s := p.sentences))::VARCHAR),
       len(p.sentences)::INTEGER
FROM paragraphs
UNION ALL
SELECT source_id, {_NO_VIEW}, 'sentence', paragraph_id, k::INTEGER, language_code,
       md5(coalesce(sentence, chr(0))), NULL
FROM (SELECT source_id, paragraph_id, p.language_code,
             unnest(p.sentences) AS sentence, unnest(range(len(p.sentences))) AS k
      FROM paragraphs)
"""
# Every finding on its unit (see the module doc); `row` is the finding's release row.
_FINDING_UNITS = f"""
SELECT DISTINCT v.source_id, f."check", f.severity = 'blocking' AS blocking,
       CASE WHEN f.paragraph_id IS NOT NULL THEN {_NO_VIEW} ELSE v.view END AS view,
       CASE WHEN f.paragraph_id IS NULL
              THEN CASE WHEN f.unit IN ('question', 'answer') THEN f.unit ELSE 'instance' END
            WHEN f.sentence_index IS NOT NULL THEN 'sentence'
            ELSE 'paragraph' END AS unit,
       coalesce(f.paragraph_id, '{_NO_PARAGRAPH}') AS paragraph_id,
       CASE WHEN f.paragraph_id IS NOT NULL THEN coalesce(f.sentence_index, {_NO_SENTENCE})
            ELSE {_NO_SENTENCE} END AS sentence_index
FROM findings f JOIN cmp_views v ON v.rid = f."row"
"""
_ROW_STATUS = """
SELECT v.source_id, v.view, s.status FROM cmp_views v JOIN status s ON s."row" = v.rid
"""
# A mapped release (audit/io/layouts/mapped.py): a row is an item in one language, its
# units its columns. The item's id stands for the source, its language (as a number that
# is the same in both versions) for the view, and a unit is named by its column.
_MAPPED_VIEWS = """
CREATE OR REPLACE TEMP TABLE cmp_views AS
SELECT rid, id AS source_id, language, (hash(language) % 2147483647)::INTEGER AS view
FROM views
"""
_MAPPED_UNITS = f"""
SELECT v.source_id, v.view, u.paragraph_id AS unit, '{_NO_PARAGRAPH}' AS paragraph_id,
       {_NO_SENTENCE} AS sentence_index, v.language, md5(coalesce(u.tgt, chr(0))) AS text_hash,
       NULL::INTEGER AS n_sentences
FROM units u JOIN cmp_views v USING (rid)
"""
_MAPPED_FINDINGS = f"""
SELECT DISTINCT v.source_id, f."check", f.severity = 'blocking' AS blocking, v.view,
       CASE WHEN f.unit IN (SELECT DISTINCT paragraph_id FROM units) THEN f.unit
            ELSE 'instance' END AS unit,
       '{_NO_PARAGRAPH}' AS paragraph_id, {_NO_SENTENCE} AS sentence_index
FROM findings f JOIN cmp_views v ON v.rid = f."row"
"""


@dataclass
class Version:
    """What a comparison needs of one scanned version, detached from its connection."""

    name: str
    layout: str
    rows: int
    identity: str
    content: list[str]   # the release files' SHA-256s (Release.content)
    units: pa.Table      # source_id, view, unit, paragraph_id, sentence_index, language, …
    findings: pa.Table   # source_id, check, blocking, view, unit, paragraph_id, sentence_index
    status: pa.Table     # source_id, view, status


def version_of(result: scan.ScanResult) -> Version:
    """Reduce a scanned release to the tables a comparison reads (set-based queries)."""
    layout = result.release.layout
    mapped = layout.has("aligned")
    if not mapped and not (layout.has("questions") and layout.has("contexts")):
        raise InputError(result.release.paths[0], "a comparison matches questions, answers, "
                         f"paragraphs and sentences; the {layout.description} layout has "
                         "no questions and contexts",
                         expected="a multi-hop or a mapped release")
    con = result.cursor()   # its own temp table: a shared scan stays usable
    try:
        con.execute(_MAPPED_VIEWS if mapped else _VIEWS)
        units = con.sql(_MAPPED_UNITS if mapped else _UNITS).to_arrow_table()
        findings = con.sql(_MAPPED_FINDINGS if mapped else _FINDING_UNITS).to_arrow_table()
        status = con.sql(_ROW_STATUS).to_arrow_table()
    finally:
        con.close()
    return Version(result.release.name, result.release.layout.name, result.release.rows,
                   result.identity, result.release.content, units, findings, status)


def load_version(spec: str | Path, sources: list[str] | None = None,
                 policy: Policy = DEFAULT, progress: Progress | None = None) -> Version:
    """Scan a release (or read its saved scan) and reduce it; its connection is closed."""
    result, _ = store.scanned(release.open_release(spec, sources), policy, progress=progress)
    try:
        return version_of(result)
    finally:
        result.release.close()


# ------------------------------------------------------------------------ comparison

@dataclass
class Comparison:
    """The outcome of `compare`; `as_json()` is compare.json."""

    old: dict
    new: dict
    key_equality: dict
    keys: pa.Table          # source_id, difference (only_old / only_new / unit_set_differs)
    sources: int            # N: sources present in both versions
    r_struct: dict
    delta_r: float
    delta_r_ci: tuple[float, float]
    n_boot: int
    seed: int
    quarantined: dict       # per version, over all its rows: {"rows": n, "sources": n}
    changes: dict           # units per change kind, and per unit kind
    findings: dict          # fixed / introduced / kept over matched units
    structural: pa.Table    # by, group, n, old, new, delta, ci_low, ci_high
    transitions: pa.Table   # old_status, new_status, rows
    units: pa.Table         # one row per unit of either version (units.parquet)

    def as_json(self) -> dict:
        return {
            "old": self.old, "new": self.new,
            "key_equality": self.key_equality, "sources": self.sources,
            "r_struct": self.r_struct, "delta_r": self.delta_r,
            "delta_r_ci": list(self.delta_r_ci), "n_boot": self.n_boot, "seed": self.seed,
            "quarantined": self.quarantined,
            "changes": self.changes, "findings": self.findings,
            "transitions": self.transitions.to_pylist(),
            "structural": self.structural.to_pylist(),
        }


_MATCH = """
CREATE TEMP TABLE matched AS
WITH o AS (SELECT * FROM old_units), n AS (SELECT * FROM new_units),
ofind AS (SELECT source_id, view, unit, paragraph_id, sentence_index,
                 list_sort(list_distinct(list("check"))) AS checks, bool_or(blocking) AS blocking
          FROM old_findings GROUP BY ALL),
nfind AS (SELECT source_id, view, unit, paragraph_id, sentence_index,
                 list_sort(list_distinct(list("check"))) AS checks, bool_or(blocking) AS blocking
          FROM new_findings GROUP BY ALL),
joined AS (
    SELECT coalesce(o.source_id, n.source_id) AS source_id, coalesce(o.view, n.view) AS view,
           coalesce(o.unit, n.unit) AS unit, coalesce(o.paragraph_id, n.paragraph_id) AS paragraph_id,
           coalesce(o.sentence_index, n.sentence_index) AS sentence_index,
           o.language AS language_old, n.language AS language_new,
           o.text_hash AS hash_old, n.text_hash AS hash_new,
           o.n_sentences AS sentences_old, n.n_sentences AS sentences_new,
           o.source_id IS NOT NULL AS in_old, n.source_id IS NOT NULL AS in_new
    FROM o FULL OUTER JOIN n USING (source_id, view, unit, paragraph_id, sentence_index))
SELECT j.*,
       CASE WHEN NOT in_new THEN 'only_old' WHEN NOT in_old THEN 'only_new'
            WHEN language_old IS DISTINCT FROM language_new THEN 'language_changed'
            WHEN hash_old <> hash_new THEN 'text_changed' ELSE 'unchanged' END AS change,
       coalesce(ofind.checks, []::VARCHAR[]) AS checks_old,
       coalesce(nfind.checks, []::VARCHAR[]) AS checks_new,
       coalesce(ofind.blocking, false) AS blocking_old,
       coalesce(nfind.blocking, false) AS blocking_new
FROM joined j
LEFT JOIN ofind USING (source_id, view, unit, paragraph_id, sentence_index)
LEFT JOIN nfind USING (source_id, view, unit, paragraph_id, sentence_index)
"""
# Row-level (instance) findings have no unit of their own: add them as units that exist
# in a version when its view does, so their fixes and introductions are counted too.
_INSTANCE_UNITS = f"""
SELECT DISTINCT source_id, view, 'instance' AS unit, '{_NO_PARAGRAPH}' AS paragraph_id,
       {_NO_SENTENCE} AS sentence_index, NULL::VARCHAR AS language, '' AS text_hash,
       NULL::INTEGER AS n_sentences
FROM {{units}} WHERE unit = 'question'
"""
_UNITS_OUT = f"""
SELECT source_id, CASE WHEN view = {_NO_VIEW} THEN NULL ELSE view END AS view, unit,
       CASE WHEN paragraph_id = '{_NO_PARAGRAPH}' THEN NULL ELSE paragraph_id END AS paragraph_id,
       CASE WHEN sentence_index = {_NO_SENTENCE} THEN NULL ELSE sentence_index END
         AS sentence_index,
       language_old, language_new, change, change IN ('unchanged', 'text_changed') AS matched,
       sentences_old, sentences_new,
       sentences_old IS DISTINCT FROM sentences_new AND in_old AND in_new AS sentence_count_changed,
       list_filter(checks_old, lambda c: NOT list_contains(checks_new, c)) AS fixed,
       list_filter(checks_new, lambda c: NOT list_contains(checks_old, c)) AS introduced,
       list_filter(checks_old, lambda c: list_contains(checks_new, c)) AS kept,
       blocking_old, blocking_new
FROM matched
ORDER BY source_id, view NULLS FIRST, unit, paragraph_id NULLS FIRST, sentence_index NULLS FIRST
"""
# Sources only in one version, and sources whose question/answer/paragraph keys differ.
_KEYS = """
WITH per_source AS (
    SELECT source_id, bool_and(in_old) AS all_old, bool_and(in_new) AS all_new,
           bool_or(in_old) AS any_old, bool_or(in_new) AS any_new
    FROM matched WHERE unit IN ('question', 'answer', 'paragraph') GROUP BY source_id)
SELECT source_id,
       CASE WHEN NOT any_new THEN 'only_old' WHEN NOT any_old THEN 'only_new'
            ELSE 'unit_set_differs' END AS difference
FROM per_source WHERE NOT (all_old AND all_new)
ORDER BY difference, source_id
"""


def compare(old: Version, new: Version, n_boot: int = N_BOOT, seed: int = stats.SEED,
            progress: Progress | None = None) -> Comparison:
    """Match `old` and `new` unit by unit and measure the structural change."""
    say = progress or (lambda message: None)
    con = connect()
    try:
        for side, version in (("old", old), ("new", new)):
            con.register(f"{side}_units_raw", version.units)
            con.register(f"{side}_findings", version.findings)
            con.register(f"{side}_status", version.status)
            con.execute(f"CREATE TEMP TABLE {side}_units AS SELECT * FROM {side}_units_raw "
                        f"UNION ALL {_INSTANCE_UNITS.format(units=side + '_units_raw')}")
        say("matching units")
        con.execute(_MATCH)
        units = con.sql(_UNITS_OUT).to_arrow_table()
        keys = con.sql(_KEYS).to_arrow_table()
        say("structural change")
        structure = _structural(con, n_boot, seed)
        transitions = con.sql(_TRANSITIONS).to_arrow_table()
        changes, findings = _change_counts(con)
        quarantined = {side: dict(zip(("rows", "sources"), con.sql(
            f"SELECT count(*), count(DISTINCT source_id) FROM {side}_status "
            "WHERE status = 'quarantined'").fetchall()[0])) for side in ("old", "new")}
    finally:
        con.close()
    differences = keys.column("difference").to_pylist()
    overall = structure.overall
    return Comparison(
        old=_describe(old), new=_describe(new),
        key_equality={k: differences.count(k) for k in ("only_old", "only_new",
                                                          "unit_set_differs")},
        keys=keys, sources=structure.sources,
        r_struct={"old": overall["old"], "new": overall["new"]},
        delta_r=overall["delta"], delta_r_ci=(overall["ci_low"], overall["ci_high"]),
        n_boot=n_boot, seed=seed, quarantined=quarantined, changes=changes,
        findings=findings,
        structural=structure.table, transitions=transitions, units=units)


def _describe(version: Version) -> dict:
    return {"release": version.name, "layout": version.layout, "rows": version.rows,
            "identity": version.identity, "content": version.content}


_TRANSITIONS = """
SELECT coalesce(o.status, 'absent') AS old_status, coalesce(n.status, 'absent') AS new_status,
       count(*) AS rows
FROM old_status o FULL OUTER JOIN new_status n USING (source_id, view)
GROUP BY ALL ORDER BY ALL
"""


def _change_counts(con: duckdb.DuckDBPyConnection) -> tuple[dict, dict]:
    """Units per change, and the findings fixed, introduced and kept on matched units. A
    finding that comes or goes in a view (row) none of whose units changed is counted apart
    (`fixed_unchanged`, `introduced_unchanged`): no edit of that row made it; a check
    calibrated over the whole release (the length outlier) moved with the other rows."""
    rows = con.sql("""
        WITH edited AS (SELECT source_id, view, bool_or(change <> 'unchanged') AS edited
                        FROM matched WHERE unit <> 'instance' GROUP BY ALL)
        SELECT unit, change, coalesce(edited, false) AS edited, count(*) AS n,
               count(*) FILTER (WHERE sentences_old IS DISTINCT FROM sentences_new
                                AND in_old AND in_new) AS recounted,
               sum(len(list_filter(checks_old, lambda c: NOT list_contains(checks_new, c))))
                 FILTER (WHERE in_old AND in_new) AS fixed,
               sum(len(list_filter(checks_new, lambda c: NOT list_contains(checks_old, c))))
                 FILTER (WHERE in_old AND in_new) AS introduced,
               sum(len(list_filter(checks_old, lambda c: list_contains(checks_new, c))))
                 FILTER (WHERE in_old AND in_new) AS kept
        FROM matched LEFT JOIN edited USING (source_id, view)
        WHERE unit <> 'instance' OR in_old AND in_new GROUP BY ALL""").fetchall()
    changes = {change: 0 for change in CHANGES}
    by_unit = {unit: {change: 0 for change in CHANGES} for unit in UNIT_KINDS}
    findings = {"fixed": 0, "introduced": 0, "kept": 0, "fixed_unchanged": 0,
                "introduced_unchanged": 0}
    recounted = 0
    for unit, change, edited, n, sentence_changes, fixed, introduced, kept in rows:
        if unit != "instance":
            changes[change] += n
            # A mapped release's units are its columns.
            by_unit.setdefault(unit, {change: 0 for change in CHANGES})[change] += n
        recounted += sentence_changes
        apart = "" if edited else "_unchanged"
        findings["fixed" + apart] += fixed or 0
        findings["introduced" + apart] += introduced or 0
        findings["kept"] += kept or 0
    del by_unit["instance"]
    return {**changes, "sentence_count_changed": recounted, "by_unit": by_unit}, findings


# -------------------------------------------------------------------- structural change

@dataclass
class _Structure:
    sources: int
    overall: dict
    table: pa.Table


# One row per (source, group) that has the group: e_i in each version. Groups: the release
# ("all"), each check (fired anywhere on the source's rows), each unit kind and each target
# language (a blocking finding on a matched unit of that kind or language).
_SOURCE_GROUPS = """
WITH both_sources AS (
    SELECT source_id FROM old_status INTERSECT SELECT source_id FROM new_status),
overall AS (
    SELECT 'all' AS by, 'all' AS "group", source_id,
           bool_or(side = 'old' AND status = 'quarantined') AS e_old,
           bool_or(side = 'new' AND status = 'quarantined') AS e_new
    FROM (SELECT 'old' AS side, * FROM old_status UNION ALL SELECT 'new', * FROM new_status)
    JOIN both_sources USING (source_id) GROUP BY source_id),
checks AS (
    SELECT 'check' AS by, "check" AS "group", b.source_id,
           bool_or(side = 'old') AS e_old, bool_or(side = 'new') AS e_new
    FROM (SELECT 'old' AS side, source_id, "check" FROM old_findings
          UNION ALL SELECT 'new', source_id, "check" FROM new_findings) f
    JOIN both_sources b USING (source_id) GROUP BY ALL),
check_names AS (SELECT DISTINCT "group" FROM checks),
check_rows AS (   -- every source for every check that fired in either version
    SELECT 'check' AS by, c."group", b.source_id,
           coalesce(x.e_old, false) AS e_old, coalesce(x.e_new, false) AS e_new
    FROM check_names c CROSS JOIN both_sources b
    LEFT JOIN checks x ON x."group" = c."group" AND x.source_id = b.source_id),
units AS (
    SELECT 'unit' AS by, unit AS "group", source_id,
           bool_or(blocking_old) AS e_old, bool_or(blocking_new) AS e_new
    FROM matched WHERE change IN ('unchanged', 'text_changed') GROUP BY ALL),
languages AS (
    SELECT 'language' AS by, language_old AS "group", source_id,
           bool_or(blocking_old) AS e_old, bool_or(blocking_new) AS e_new
    FROM matched WHERE change IN ('unchanged', 'text_changed') AND language_old IS NOT NULL
    GROUP BY ALL)
SELECT * FROM overall UNION ALL SELECT * FROM check_rows
UNION ALL SELECT * FROM units UNION ALL SELECT * FROM languages
"""


def _structural(con: duckdb.DuckDBPyConnection, n_boot: int, seed: int) -> _Structure:
    """R_struct of both versions, ΔR and its paired source-clustered bootstrap interval,
    for the release and every group, all from one draw of sources."""
    table = con.sql(_SOURCE_GROUPS).to_arrow_table()
    by = table["by"].to_numpy(zero_copy_only=False)
    source_ids = table["source_id"].to_numpy(zero_copy_only=False)
    sources = np.unique(source_ids[by == "all"])
    groups = sorted(set(zip(table["by"].to_pylist(), table["group"].to_pylist())),
                    key=_group_order)
    if len(sources) == 0:
        raise InputError("comparison", "the two releases share no source_id",
                         expected="two versions of one release, matched on source_id")
    group_index = {g: i for i, g in enumerate(groups)}
    rows = np.searchsorted(sources, source_ids)
    cols = np.array([group_index[g] for g in zip(table["by"].to_pylist(),
                                                  table["group"].to_pylist())])
    shape = (len(sources), len(groups))
    counts = np.zeros(shape)
    counts[rows, cols] = 1
    sums = np.zeros((*shape, 3))
    e_old = table["e_old"].to_numpy(zero_copy_only=False).astype(float)
    e_new = table["e_new"].to_numpy(zero_copy_only=False).astype(float)
    sums[rows, cols] = np.column_stack([e_old, e_new, e_new - e_old])
    boot = stats.ClusterBootstrap(sources, n_boot, seed, "compare", "sources")
    estimate, replicates = boot.ratio(sums, counts)
    low, high, _ = stats.percentile_intervals(replicates[..., 2])
    out = [{"by": by, "group": group, "n": int(counts[:, i].sum()),
            "old": float(estimate[i, 0]), "new": float(estimate[i, 1]),
            "delta": float(estimate[i, 2]), "ci_low": float(low[i]), "ci_high": float(high[i])}
           for i, (by, group) in enumerate(groups)]
    return _Structure(len(sources), out[0], pa.Table.from_pylist(out, schema=STRUCTURAL_SCHEMA))


STRUCTURAL_SCHEMA = pa.schema([
    ("by", pa.string()), ("group", pa.string()), ("n", pa.int64()), ("old", pa.float64()),
    ("new", pa.float64()), ("delta", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64())])
_BY_ORDER = {"all": 0, "unit": 1, "language": 2, "check": 3}


def _group_order(key: tuple[str, str]) -> tuple:
    by, group = key
    rank = UNIT_KINDS.index(group) if by == "unit" and group in UNIT_KINDS else 0
    return _BY_ORDER[by], rank, group


# ------------------------------------------------------------------------------ output

def write(comparison: Comparison, out: Path) -> Path:
    """compare.json, units.parquet, keys.parquet, structural.parquet and transitions.parquet
    in a new directory, staged and renamed into place (an existing one is refused)."""
    out = Path(out)
    with staged_directory(out, what="comparison") as staging:
        write_files(comparison, staging)
    return out


def write_files(comparison: Comparison, folder: Path) -> list[str]:
    """The comparison's files into `folder` (a staging directory)."""
    write_json(folder / "compare.json", comparison.as_json())
    names = ["compare.json"]
    for name, table in (("units", comparison.units), ("keys", comparison.keys),
                        ("structural", comparison.structural),
                        ("transitions", comparison.transitions)):
        pq.write_table(table, folder / f"{name}.parquet")
        names.append(f"{name}.parquet")
    return names


def read(out: Path) -> dict:
    """A written comparison's compare.json."""
    path = Path(out) / "compare.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(path, f"cannot be read ({error})",
                         expected="a directory written by `python -m audit compare`") from None


def release_versions(old: str, new: str, *, old_sources: list[str] | None = None,
                     new_sources: list[str] | None = None, policy: Policy = DEFAULT,
                     progress: Progress | None = None) -> tuple[Version, Version]:
    """Scan (or reuse the saved scans of) both releases, one after the other. Both are
    located first, so a missing NEW fails before OLD is scanned."""
    paths.resolve_paths(old)
    paths.resolve_paths(new)
    return (load_version(old, old_sources, policy, progress),
            load_version(new, new_sources, policy, progress))

