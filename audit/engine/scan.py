"""Run the registry over a release in one pass and derive each row's status."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from concurrent.futures import wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb
import pyarrow as pa

from .. import settings
from ..checks import registry
from ..checks.model import Check
from ..io import release as readers
from ..io.model import Release
from ..language import descriptors
from ..sql.safe import case, identifier, literal, strings
from . import identity as identities
from .policy import DEFAULT, Policy

Progress = Callable[[str], None]
STATUS_ORDER = ("quarantined", "review_required", "accepted")

# The release's own rule (SPEC §2 / §1.2) maps a reference flag's default severity to status.
_RULE_STATUS = {"blocking": "quarantined", "review": "review_required"}
_QUERY_COLUMNS = ('rid, id, source_split, "check", unit, paragraph_id, sentence_index, detail, '
                  'category')
_NO_FINDINGS = """SELECT NULL::BIGINT AS rid, NULL::VARCHAR AS id, NULL::VARCHAR AS source_split,
    NULL::VARCHAR AS "check", NULL::VARCHAR AS unit, NULL::VARCHAR AS paragraph_id,
    NULL::INTEGER AS sentence_index, NULL::VARCHAR AS detail, NULL::VARCHAR AS category,
    NULL::VARCHAR AS evidence, NULL::VARCHAR AS source_evidence, NULL::VARCHAR AS language
    WHERE false"""


_SCAN_NUMBERS = itertools.count(1)


def table_names() -> dict[str, str]:
    """Names of a new scan's own tables on the release's connection: a second scan of the
    same release (another policy) must not replace them under an earlier result."""
    number = next(_SCAN_NUMBERS)
    return {"findings": f"findings_{number}", "status": f"status_{number}"}


@dataclass
class ScanResult:
    """A scan: its tables (`tables`: what queries call them → their names on the release's
    connection) live there and are fetched as Arrow only when asked for; a query reads them
    through `cursor()` under the names `findings` and `status`."""

    release: Release
    policy: Policy
    summary: dict[str, Any]
    tables: dict[str, str]

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own (the connection is shared by app sessions) on which this
        scan's tables answer to their plain names: temporary views live per cursor."""
        cursor = self.release.con.cursor()
        for name, table in self.tables.items():
            cursor.execute(f"CREATE TEMP VIEW {identifier(name)} AS "
                           f"SELECT * FROM main.{identifier(table)}")
        return cursor

    @functools.cached_property
    def findings(self) -> pa.Table:
        with self.cursor() as cursor:
            return cursor.sql("SELECT * FROM findings").to_arrow_table()

    @functools.cached_property
    def status(self) -> pa.Table:
        with self.cursor() as cursor:
            return cursor.sql("SELECT * FROM status").to_arrow_table()

    @property
    def identity(self) -> str:
        """What decides this scan's results (audit/engine/identity.py): it names them in
        the store and is the manifest's fingerprint."""
        return str(self.summary["identity"])


def identity(release: Release, policy: Policy, skip: frozenset[str] = frozenset()) -> str:
    """The scan's identity (audit/engine/identity.py): what its results depend on."""
    digests = release.digests
    inputs = ([("release", digests[str(p)]) for p in release.paths]
              + [("source", digests[str(p)]) for p in release.source_paths])
    return identities.identity(inputs, release.source_splits, policy.identity(), skip)


def _context_source(plans: dict[str, str]) -> str:
    """The relation the context checks read: each distinct context plus derived columns."""
    extra = ""
    if any("r.title_keys" in sql for sql in plans.values()):
        extra = ", list_transform(r.candidates, lambda c: title_key(c.title)) AS title_keys"
    return f"SELECT r.*{extra} FROM contexts r"


@dataclass
class Plan:
    """The SQL-declared checks to run, by the relation they read ({check: SQL}), and the
    checks that cannot see every case."""

    rows: dict[str, str] = dataclasses.field(default_factory=dict)
    contexts: dict[str, str] = dataclasses.field(default_factory=dict)
    units: dict[str, str] = dataclasses.field(default_factory=dict)
    partial: set[str] = dataclasses.field(default_factory=set)


def _plan(active: tuple[Check, ...], caps: frozenset[str]) -> Plan:
    plan = Plan()
    for check in active:
        if check.query is not None or check.name in registry.CONSISTENCY_CHECKS:
            continue
        row, context, unit, exhaustive = check.plan(caps)
        for sql, into in ((row, plan.rows), (context, plan.contexts), (unit, plan.units)):
            if sql is not None:
                into[check.name] = sql
        if not exhaustive:
            plan.partial.add(check.name)
    return plan


def _columns(plans: dict[str, str]) -> str:
    return "".join(f", {sql} AS {identifier(name)}" for name, sql in plans.items())


def _finding_rows(name: str, table: str, key: str) -> str:
    """The findings one check's list column holds, one row each, keyed by `key` (rid, ctx,
    or both for units)."""
    return f"""SELECT {key}, {literal(name)} AS "check", f.u AS unit, f.p AS paragraph_id,
                      f.s AS sentence_index, f.d AS detail, f.c AS category, f.e AS evidence
               FROM (SELECT {key}, unnest({identifier(name)}) AS f FROM {table}
                     WHERE len({identifier(name)}) > 0)"""


def run(release: Release, policy: Policy = DEFAULT, progress: Progress | None = None,
        skip: frozenset[str] = frozenset(), describe: bool = False,
        describe_file: bool = True) -> ScanResult:
    """Run every check of the release's layout except those named in `skip`; `describe`
    (a scan about to be written): the language descriptors are computed meanwhile, on a
    thread that ends before this returns, into their cached file, or into the release's
    table alone where not `describe_file` (a first view, whose full scan writes the file)."""
    say = progress or (lambda message: None)
    con = release.con
    started = time.perf_counter()
    active = tuple(c for c in registry.for_layout(release.layout) if c.name not in skip)
    plan = _plan(active, release.capabilities)
    # The signal layers the checks to run read start first: the heuristics' signals compute
    # in two child processes meanwhile (the language layer, which reads when its first check
    # asks, shares a large release's texts between two children of its own).
    layers = tuple(dict.fromkeys(layer for c in active if c.needs <= release.capabilities
                                 for layer in c.layers))
    try:
        # The layers that only begin a thread, then the descriptors' thread, go first: they
        # fill the second core while the heuristics' start looks up its pairs on this one.
        for layer in (layer for layer in layers if layer.THREADED):
            layer.start(release)
        if describe:
            descriptors.start(release, file=describe_file)
        for layer in (layer for layer in layers if not layer.THREADED):
            layer.start(release)
        if layers:
            say(f"signal layers {', '.join(layer.NAME for layer in layers)} started in "
                f"{time.perf_counter() - started:.1f} s")
        result = _run(release, policy, say, active, plan, started, skip)
    except BaseException:
        for layer in registry.LAYERS:
            layer.discard(con)
        descriptors.discard(release)
        if release.remembering is not None:     # the scan's error is the one reported
            wait([release.remembering])
        raise
    release.settle()          # the contexts cache written meanwhile: its error is the scan's
    descriptors.wait(release)
    return result


def _run(release: Release, policy: Policy, say: Progress, active: tuple[Check, ...],
         plan: Plan, started: float, skip: frozenset[str]) -> ScanResult:
    con = release.con
    clock = time.perf_counter()
    rows, contexts = plan.rows, plan.contexts
    distinct = (con.sql("SELECT count(*) FROM contexts").fetchall()[0][0]
                if release.layout.has("contexts") else 0)
    say(f"running {len(rows)} row checks over {release.rows:,} rows, {len(contexts)} "
        f"context checks over {distinct:,} distinct contexts and {len(plan.units)} unit "
        "checks over their units")
    con.execute(f"""CREATE OR REPLACE TABLE row_checks AS
        SELECT r.rid, r.ctx, r.id, r.source_id, r.source_split, r.status AS shipped_status,
               list_concat(r.structural_flags, r.quality_flags) AS shipped_flags,
               {_language(release)} AS language
               {_columns(rows)}
        FROM views r""")
    if contexts:
        con.execute(f"""CREATE OR REPLACE TABLE context_checks AS
            SELECT r.ctx {_columns(contexts)}
            FROM ({_context_source(contexts)}) r
            LEFT JOIN sources s ON s.source_id = r.source_id AND s.source_split = r.source_split
            """)
    if plan.units:
        # Only the units some check finds something on are kept (most units: none).
        found = " OR ".join(f"len({identifier(name)}) > 0" for name in plan.units)
        con.execute(f"""CREATE OR REPLACE TABLE unit_checks AS
            SELECT * FROM (SELECT u.rid, u.ctx {_columns(plan.units)} FROM units u)
            WHERE {found}""")
    check_seconds = time.perf_counter() - clock
    say(f"row, context and unit checks done in {check_seconds:.1f} s")

    # Each kind's findings are collected first and joined to the views once: a context's
    # findings reach every view of that context.
    parts, collected = [], []     # the SELECTs of findings_raw; the tables they read
    for kind, plans, key in (("row", rows, "rid"), ("context", contexts, "ctx")):
        if plans:
            collected.append(f"{kind}_findings")
            con.execute(f"CREATE OR REPLACE TEMP TABLE {kind}_findings AS "
                        + " UNION ALL ".join(_finding_rows(name, f"{kind}_checks", key)
                                             for name in plans))
            parts.append(f"""SELECT k.rid, k.id, k.source_split, f.* EXCLUDE ({key})
                             FROM {kind}_findings f JOIN row_checks k USING ({key})""")
    if plan.units:
        # A row's unit reaches its row, a context's unit every view of the context.
        collected.append("unit_findings")
        con.execute("CREATE OR REPLACE TEMP TABLE unit_findings AS " + " UNION ALL ".join(
            _finding_rows(name, "unit_checks", "rid, ctx") for name in plan.units))
        parts.append("""SELECT * FROM (
                        SELECT k.rid, k.id, k.source_split, f.* EXCLUDE (rid, ctx)
                        FROM unit_findings f JOIN row_checks k USING (rid)
                        UNION ALL
                        SELECT k.rid, k.id, k.source_split, f.* EXCLUDE (rid, ctx)
                        FROM unit_findings f JOIN row_checks k USING (ctx))""")
    for name in sorted(plan.partial):
        shown = []
        if name in rows:
            shown.append(f"len({identifier(name)}) = 0")
        if name in contexts:
            shown.append(f"ctx NOT IN (SELECT ctx FROM context_checks "
                         f"WHERE len({identifier(name)}) > 0)")
        parts.append(f"""SELECT rid, id, source_split, {literal(name)} AS "check",
            'instance' AS unit, NULL::VARCHAR AS paragraph_id, NULL::INTEGER AS sentence_index,
            'flag shipped by the release; this layout cannot show it' AS detail,
            NULL::VARCHAR AS category, NULL::VARCHAR AS evidence
            FROM row_checks WHERE {" AND ".join(shown + [""])}
                                  list_contains(shipped_flags, {literal(name)})""")
    # A whole-release query yields the first eight columns in order, and may add a ninth,
    # `evidence` (the substring a view highlights), and a tenth, `source_evidence` (what it
    # highlights in the English source); one with thresholds gets those in force. Each runs
    # here, into a table of its own, so its time is its check's.
    for check in active:
        if check.query is not None and check.needs <= release.capabilities:
            clock = time.perf_counter()
            table = identifier(f"query_findings_{check.name}")
            collected.append(table)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM "
                        f"({_release_query(check, release, policy)}) q({_QUERY_COLUMNS})")
            parts.append(f"SELECT * FROM {table}")
            say(f"{check.name} done in {time.perf_counter() - clock:.1f} s")
    query_seconds = time.perf_counter() - started - check_seconds
    say("whole-release checks done; collecting findings and status")
    # Every check has run: the signal tables go, so sorting millions of findings does not
    # spill to disk for want of memory they hold; each part goes once collected.
    signals = {layer.NAME: _record(done) for layer in registry.LAYERS
               if (done := layer.discard(con))}
    # The parts are read where they lie (twice: consistency, then the sorted findings); the
    # empty first part gives every column its type, whichever checks ran.
    con.execute("CREATE OR REPLACE TEMP VIEW findings_raw AS "
                + " UNION ALL BY NAME ".join([_NO_FINDINGS] + parts))
    _consistency(release, active)
    _status(release, policy, active)
    con.execute("DROP VIEW findings_raw; DROP TABLE IF EXISTS derived; "
                "DROP TABLE IF EXISTS consistency_findings")
    for table in collected:
        con.execute(f"DROP TABLE {table}")
    seconds = {"checks": check_seconds, "whole_release_checks": query_seconds,
               "findings_and_status": time.perf_counter() - started - check_seconds
               - query_seconds}
    summary = _summary(release, active, policy, plan.partial, seconds,
                       time.perf_counter() - started, skip)
    summary["signals"] = signals
    tables = table_names()
    for name, table in tables.items():
        con.execute(f"ALTER TABLE {name} RENAME TO {identifier(table)}")
    say(f"scan done in {summary['seconds']['total']:.1f} s")
    return ScanResult(release, policy, summary, tables)


def _in_context(release: Release) -> str:
    """A copy the layout expects (an answer standing in its translated text) gets the copy
    category in_context (info by default, a policy may say otherwise)."""
    expected = release.layout.copies_in_context
    if expected is None:
        return ""
    return f"""REPLACE (CASE WHEN "check" IN ('exact_source_copy', 'near_source_copy')
                   AND (rid, paragraph_id) IN (SELECT (rid, part) FROM {expected})
                   THEN 'in_context' ELSE category END AS category)"""


def _language(release: Release) -> str:
    """A row's language where a row is in one language (a mapped release's), else NULL."""
    return "r.language" if release.layout.has("aligned") else "NULL::VARCHAR"


def _record(done: Any) -> dict[str, Any]:
    """What a signal layer's `prepare` did (texts or pairs, how many computed now, seconds
    per phase), for summary.json."""
    record = dataclasses.asdict(done)
    record["seconds"] = {k: round(v, 3) for k, v in record["seconds"].items()}
    return record


def _release_query(check: Check, release: Release, policy: Policy) -> str:
    assert check.query is not None      # only whole-release checks are asked
    if check.thresholds:
        return check.query(release, policy.thresholds(check.name))
    return check.query(release)


def _consistency(release: Release, active: tuple[Check, ...]) -> None:
    """Compare what the release shipped with what its own rule derives from our findings
    (into temp table consistency_findings).
    A skipped reference check is taken at the release's word: its shipped flag counts
    towards the rule status and is left out of the flag comparison."""
    release.con.execute("CREATE OR REPLACE TEMP TABLE consistency_findings AS "
                        "SELECT * FROM findings_raw LIMIT 0")
    names = {check.name for check in active}
    if not names & set(registry.CONSISTENCY_CHECKS):
        return
    reference = {c.name: _RULE_STATUS.get(c.severity, "accepted")
                 for c in registry.for_layout(release.layout) if c.reference}
    values = ", ".join(f"({literal(n)}, {literal(s)})" for n, s in reference.items())
    skipped = strings(n for n in reference if n not in names)
    taken = (f"list_transform(list_filter(k.shipped_flags, lambda x: list_contains({skipped}, x)),"
             f" lambda x: {case('x', reference)})")
    release.con.execute(f"""
        CREATE OR REPLACE TABLE derived AS
        SELECT rid, id, source_split, shipped_status, flags,
               list_filter(shipped_flags, lambda x: NOT list_contains({skipped}, x))
                 AS shipped_flags,
               CASE WHEN list_contains(statuses, 'quarantined') THEN 'quarantined'
                    WHEN list_contains(statuses, 'review_required') THEN 'review_required'
                    ELSE 'accepted' END AS rule_status
        FROM (SELECT k.rid, k.id, k.source_split, k.shipped_status, k.shipped_flags,
                     coalesce(d.flags, []) AS flags,
                     list_concat(coalesce(d.statuses, []), {taken}) AS statuses
        FROM row_checks k LEFT JOIN (
            SELECT rid, list_sort(list_distinct(list(f."check"))) AS flags,
                   list(DISTINCT rule.status) AS statuses
            FROM findings_raw f JOIN (VALUES {values}) rule(name, status)
              ON f."check" = rule.name WHERE rid IS NOT NULL GROUP BY rid) d USING (rid))""")
    if "status_mismatch" in names:
        release.con.execute(f"""
            INSERT INTO consistency_findings ({_QUERY_COLUMNS})
            SELECT rid, id, source_split, 'status_mismatch', 'instance', NULL, NULL,
                   'shipped ' || shipped_status || ', the release rule gives ' || rule_status,
                   NULL
            FROM derived WHERE shipped_status IS DISTINCT FROM rule_status""")
    if "structural_flags_mismatch" not in names:
        return
    release.con.execute(f"""
        INSERT INTO consistency_findings ({_QUERY_COLUMNS})
        SELECT rid, id, source_split, 'structural_flags_mismatch', 'instance', NULL, NULL,
               concat_ws('; ',
                 CASE WHEN len(list_filter(shipped_flags, lambda x: NOT list_contains(flags, x)))
                      > 0 THEN 'shipped only: ' || array_to_string(list_sort(list_filter(
                      shipped_flags, lambda x: NOT list_contains(flags, x))), ', ') END,
                 CASE WHEN len(list_filter(flags, lambda x: NOT list_contains(shipped_flags, x)))
                      > 0 THEN 'derived only: ' || array_to_string(list_filter(
                      flags, lambda x: NOT list_contains(shipped_flags, x)), ', ') END), NULL
        FROM derived WHERE list_sort(list_distinct(shipped_flags)) <> flags;
    """)


def _severity_sql(policy: Policy, active: tuple[Check, ...]) -> str:
    """Per-finding severity: the check's, unless its category has its own."""
    cases = [f'WHEN f."check" = {literal(c.name)} AND f.category = {literal(category)} '
             f"THEN {literal(sev)}"
             for c in active for category, sev in policy.category_rules(c.name).items()]
    checks = case('f."check"', {c.name: policy.severity(c.name) for c in active})
    return f"CASE {' '.join(cases)} ELSE {checks} END" if cases else checks


def _status(release: Release, policy: Policy, active: tuple[Check, ...]) -> None:
    """Tables `findings` (with the severity in force) and `status` (per row, aggregated
    from its distinct checks: a check's findings repeat per sentence and per view of a
    context). Severity and origin are looked up by CASE, not a join."""
    con = release.con
    # A mapped release's unit is a column: its name rides in paragraph_id through the scan
    # (the text checks carry it as they carry a paragraph's) and is the finding's unit.
    parts = getattr(release.layout, "part_units", False)
    unit, paragraph = (("coalesce(f.paragraph_id, f.unit)", "NULL::VARCHAR") if parts
                       else ("f.unit", "f.paragraph_id"))
    # A text check's detail opens with the unit's kind ("text: …"): the column's name there.
    detail = ("CASE WHEN f.paragraph_id IS NOT NULL AND starts_with(f.detail, f.unit || ': ') "
              "THEN f.paragraph_id || substr(f.detail, length(f.unit) + 1) ELSE f.detail END"
              if parts else "f.detail")
    language, rows = (("coalesce(f.language, k.language)",
                       "LEFT JOIN (SELECT rid, language FROM row_checks) k USING (rid)")
                      if release.layout.has("aligned") else ("f.language", ""))
    con.execute(f"""
        CREATE OR REPLACE TABLE findings AS
        SELECT f.id, f.source_split, f."check", {_severity_sql(policy, active)} AS severity,
               {case('f."check"', {c.name: c.origin for c in active})} AS origin,
               {unit} AS unit, {paragraph} AS paragraph_id, f.sentence_index,
               {detail} AS detail,
               f.category, f.evidence, f.rid AS "row", f.source_evidence,
               {language} AS language
        FROM (SELECT * {_in_context(release)} FROM findings_raw
              UNION ALL BY NAME SELECT * FROM consistency_findings) f {rows}
        ORDER BY f.rid NULLS LAST, f."check", f.paragraph_id NULLS FIRST,
                 f.sentence_index NULLS FIRST, f.id, f.detail;
        CREATE OR REPLACE TABLE status AS
        SELECT k.id, k.source_split,
               rank_status(g.worst) AS status,
               coalesce(g.flags, []::VARCHAR[]) AS flags, k.shipped_status, k.rid AS "row",
               k.source_id, k.language
        FROM row_checks k LEFT JOIN (
            SELECT "row", max(rank) AS worst,
                   list("check" ORDER BY "check") FILTER (WHERE rank > 0) AS flags
            FROM (SELECT "row", "check", max(severity_rank(severity)) AS rank FROM findings
                  WHERE "row" IS NOT NULL GROUP BY "row", "check")
            GROUP BY "row") g ON g."row" = k.rid
        ORDER BY k.rid;
    """)


def status_disagreements(result: ScanResult) -> pa.Table:
    """Rows whose shipped status differs from the derived one, with the derived flags."""
    with result.cursor() as con:
        return con.sql("""SELECT id, source_split, shipped_status, status, flags FROM status
                          WHERE shipped_status IS NOT NULL AND shipped_status <> status
                          ORDER BY "row" """).to_arrow_table()


def _counts(con: duckdb.DuckDBPyConnection, sql: str) -> dict[Any, Any]:
    return {key: value for key, value in con.sql(sql).fetchall()}


def _summary(release: Release, active: tuple[Check, ...], policy: Policy,
             partial: set[str], seconds: dict[str, float], total_seconds: float,
             skip: frozenset[str]) -> dict[str, Any]:
    con = release.con
    return {
        "rows": release.rows,
        "layout": release.layout.name,
        "release": release.name,
        "rows_per_split": _counts(con, "SELECT source_split, count(*) FROM status GROUP BY 1 "
                                       "ORDER BY 1"),
        "status_counts": {s: n for s, n in _counts(
            con, "SELECT status, count(*) FROM status GROUP BY 1").items()},
        "shipped_status_counts": _counts(con, "SELECT shipped_status, count(*) FROM status "
                                              "WHERE shipped_status IS NOT NULL GROUP BY 1"),
        "check_counts": _counts(con, 'SELECT "check", count(*) FROM findings GROUP BY 1 '
                                     "ORDER BY 1"),
        "rows_per_check": _counts(con, 'SELECT "check", count(DISTINCT "row") FROM findings '
                                       "GROUP BY 1 ORDER BY 1"),
        "severity_counts": _counts(con, "SELECT severity, count(*) FROM findings GROUP BY 1"),
        "origin_counts": _counts(con, "SELECT origin, count(*) FROM findings GROUP BY 1"),
        "checks_run": [c.name for c in active if c.name not in partial],
        "checks_from_shipped_flags": sorted(partial),
        "checks_skipped": sorted({c.name for c in registry.for_layout(release.layout)}
                                 - {c.name for c in active}),
        "policy": policy.as_record(),
        "registry_fingerprint": registry.FINGERPRINT,
        "sources": [str(p) for p in release.source_paths],
        "identity": identity(release, policy, skip),
        "seconds": {**{k: round(v, 3) for k, v in seconds.items()},
                    "total": round(total_seconds, 3)},
    }


def scan_release(path: str | Path | None = None, sources: list[str] | None = None,
                 files: list[Path] | None = None) -> ScanResult:
    """Scan `path` (`files`: its data files, already resolved), or the demo release with
    its HotpotQA sources when no path is given."""
    if path is None:
        path, sources = settings.DEMO_RELEASE, settings.demo_sources()
    return run(readers.open_release(path, sources, files))
