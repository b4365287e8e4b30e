"""Run the registry over a release in one pass and derive each row's status."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from . import registry
from .checks import Check
from .policy import DEFAULT, Policy
from .readers import Release
from .sqlsafe import case, identifier, literal, strings

Progress = Callable[[str], None]
STATUS_ORDER = ("quarantined", "review_required", "accepted")

# The release's own rule (SPEC §2 / §1.2) maps a reference flag's default severity to status.
_RULE_STATUS = {"blocking": "quarantined", "review": "review_required"}
_QUERY_COLUMNS = 'rid, id, source_split, "check", paragraph_id, sentence_index, detail, category'


@dataclass
class ScanResult:
    release: Release
    policy: Policy
    findings: pa.Table
    status: pa.Table
    summary: dict


def _row_source(plans: dict[str, str]) -> str:
    """The relation the row checks read: the canonical row plus derived helper columns."""
    extra = ""
    if any("r.title_keys" in sql for sql in plans.values()):
        extra = ", list_transform(r.candidates, lambda c: title_key(c.title)) AS title_keys"
    return f"SELECT r.*{extra} FROM release r"


def _plan(active: tuple[Check, ...], caps: frozenset[str]) -> tuple[dict, set]:
    plans, partial = {}, set()
    for check in active:
        if check.query is not None or check.name in registry.CONSISTENCY_CHECKS:
            continue
        sql, exhaustive = check.plan(caps)
        if sql is not None:
            plans[check.name] = sql
        if not exhaustive:
            partial.add(check.name)
    return plans, partial


def run(release: Release, policy: Policy = DEFAULT, progress: Progress | None = None,
        skip: frozenset[str] = frozenset()) -> ScanResult:
    """Run every check of the release's layout except those named in `skip`."""
    say = progress or (lambda message: None)
    con = release.con
    started = time.perf_counter()
    active = tuple(c for c in registry.for_layout(release.layout) if c.name not in skip)
    plans, partial = _plan(active, release.capabilities)
    names = list(plans)
    say(f"running {len(plans)} row checks over {release.rows:,} rows")
    columns = ", ".join(f"{sql} AS {identifier(name)}" for name, sql in plans.items())
    con.execute(f"""CREATE OR REPLACE TABLE row_checks AS
        SELECT r.rid, r.id, r.source_id, r.source_split, r.status AS shipped_status,
               list_concat(r.structural_flags, r.quality_flags) AS shipped_flags, {columns}
        FROM ({_row_source(plans)}) r
        LEFT JOIN sources s ON s.source_id = r.source_id AND s.source_split = r.source_split
        """)
    check_seconds = time.perf_counter() - started
    say(f"row checks done in {check_seconds:.1f} s; collecting findings")

    parts = [f"""SELECT rid, id, source_split, {literal(name)} AS "check", f.p AS paragraph_id,
                 f.s AS sentence_index, f.d AS detail, f.c AS category, f.e AS evidence
                 FROM (SELECT rid, id, source_split, unnest({identifier(name)}) AS f
                       FROM row_checks WHERE len({identifier(name)}) > 0)"""
             for name in names]
    for name in sorted(partial):
        found = f"len({identifier(name)}) = 0 AND " if name in plans else ""
        parts.append(f"""SELECT rid, id, source_split, {literal(name)} AS "check",
            NULL::VARCHAR AS paragraph_id, NULL::INTEGER AS sentence_index,
            'flag shipped by the release; this layout cannot show it' AS detail,
            NULL::VARCHAR AS category, NULL::VARCHAR AS evidence
            FROM row_checks WHERE {found}list_contains(shipped_flags, {literal(name)})""")
    # A whole-release query yields the first eight columns in order, and may add a ninth,
    # `evidence` (the substring a view highlights); one with thresholds gets those in force.
    parts += [f"SELECT * FROM ({_release_query(check, release, policy)}) q({_QUERY_COLUMNS})"
              for check in active
              if check.query is not None and check.needs <= release.capabilities]
    con.execute("CREATE OR REPLACE TABLE findings_raw AS " + " UNION ALL BY NAME ".join(parts))
    _consistency(release, active)
    findings, status = _status(release, policy, active)
    summary = _summary(release, active, policy, partial, check_seconds,
                       time.perf_counter() - started)
    say(f"scan done in {summary['seconds']['total']:.1f} s")
    return ScanResult(release, policy, findings, status, summary)


def _release_query(check: Check, release: Release, policy: Policy) -> str:
    if check.thresholds:
        return check.query(release, policy.thresholds(check.name))
    return check.query(release)


def _consistency(release: Release, active: tuple[Check, ...]) -> None:
    """Compare what the release shipped with what its own rule derives from our findings.
    A skipped reference check is taken at the release's word: its shipped flag counts
    towards the rule status and is left out of the flag comparison."""
    names = {check.name for check in active}
    if "status_mismatch" not in names:
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
              ON f."check" = rule.name WHERE rid IS NOT NULL GROUP BY rid) d USING (rid));
        INSERT INTO findings_raw ({_QUERY_COLUMNS})
        SELECT rid, id, source_split, 'status_mismatch', NULL, NULL,
               'shipped ' || shipped_status || ', the release rule gives ' || rule_status, NULL
        FROM derived WHERE shipped_status IS DISTINCT FROM rule_status;
        INSERT INTO findings_raw ({_QUERY_COLUMNS})
        SELECT rid, id, source_split, 'structural_flags_mismatch', NULL, NULL,
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
    cases = [f"WHEN f.\"check\" = '{c.name}' AND f.category = '{category}' THEN '{sev}'"
             for c in active for category, sev in policy.category_rules(c.name).items()]
    return f"CASE {' '.join(cases)} ELSE m.severity END" if cases else "m.severity"


def _status(release: Release, policy: Policy, active: tuple[Check, ...]
            ) -> tuple[pa.Table, pa.Table]:
    meta = ", ".join(
        f"('{c.name}', '{policy.severity(c.name)}', '{c.origin}')" for c in active)
    con = release.con
    con.execute(f"""
        CREATE OR REPLACE TABLE findings AS
        SELECT f.id, f.source_split, f."check", {_severity_sql(policy, active)} AS severity,
               m.origin, f.paragraph_id,
               f.sentence_index, f.detail, f.category, f.evidence, f.rid AS "row"
        FROM findings_raw f JOIN (VALUES {meta}) m(name, severity, origin)
          ON f."check" = m.name
        ORDER BY f.rid NULLS LAST, f.id, f."check", f.paragraph_id NULLS FIRST,
                 f.sentence_index NULLS FIRST;
        CREATE OR REPLACE TABLE status AS
        SELECT k.id, k.source_split,
               CASE WHEN list_contains(g.severities, 'blocking') THEN 'quarantined'
                    WHEN list_contains(g.severities, 'review') THEN 'review_required'
                    ELSE 'accepted' END AS status,
               coalesce(g.flags, []::VARCHAR[]) AS flags, k.shipped_status, k.rid AS "row",
               k.source_id
        FROM row_checks k LEFT JOIN (
            SELECT "row", list(DISTINCT severity) AS severities,
                   list_sort(list_distinct(list("check") FILTER (WHERE severity <> 'info')))
                     AS flags
            FROM findings WHERE "row" IS NOT NULL GROUP BY "row") g ON g."row" = k.rid
        ORDER BY k.rid;
    """)
    return (con.sql("SELECT * FROM findings").to_arrow_table(),
            con.sql("SELECT * FROM status").to_arrow_table())


def status_disagreements(result: ScanResult) -> pa.Table:
    """Rows whose shipped status differs from the derived one, with the derived flags."""
    con = result.release.con
    return con.sql("""SELECT id, source_split, shipped_status, status, flags FROM status
                      WHERE shipped_status IS NOT NULL AND shipped_status <> status
                      ORDER BY "row" """).to_arrow_table()


def _counts(con, sql: str) -> dict:
    return {key: value for key, value in con.sql(sql).fetchall()}


def _summary(release: Release, active: tuple[Check, ...], policy: Policy,
             partial: set[str], check_seconds: float, total_seconds: float) -> dict:
    con = release.con
    return {
        "rows": release.rows,
        "layout": release.layout,
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
        "registry_version": registry.REGISTRY_VERSION,
        "sources": [str(p) for p in release.source_paths],
        "seconds": {"checks": round(check_seconds, 3), "total": round(total_seconds, 3)},
    }
