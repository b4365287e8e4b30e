"""Browse queries on the demo release: every check of the registry is a filterable facet, and
set-valued facets behave for any vocabulary size."""

from __future__ import annotations

import duckdb
import pytest

from audit.analysis import browse
from audit.checks import registry
from audit.engine.scan import scan_release


@pytest.fixture(scope="module")
def result():
    scanned = scan_release()
    browse.build_index(scanned)
    return scanned


def test_every_check_that_fired_is_filterable_and_counts_its_rows(result):
    """The registry has more checks than one 63-bit word holds: status_mismatch and the
    release checks sit in the second word and must filter like the first."""
    assert len(registry.REGISTRY) > 63
    fired = result.summary["rows_per_check"]
    # Findings without a release row (missing_source_id) name no row to browse.
    rowless = {f["check"] for f in result.findings.to_pylist() if f["row"] is None}
    assert {"status_mismatch", "structural_flags_mismatch"} <= set(fired)
    assert browse.CHECK_VOCABULARY.index("status_mismatch") >= 63
    for check, rows in fired.items():
        if check in rowless:
            continue
        page = browse.search(result, browse.Filters(check=[check]))
        assert page.total == rows, check
        assert all(check in checks for checks in page.rows.column("checks").to_pylist())


def test_check_facet_counts_every_check_including_the_second_word(result):
    counts = dict(browse.search(result, browse.Filters()).facets["check"])
    fired = result.summary["rows_per_check"]
    rowless = {f["check"] for f in result.findings.to_pylist() if f["row"] is None}
    assert counts == {check: rows for check, rows in fired.items() if check not in rowless}


def test_two_checks_in_different_words_mean_any_of_them(result):
    first = browse.search(result, browse.Filters(check=["blank_sentence"])).total
    second = browse.search(result, browse.Filters(check=["status_mismatch"])).total
    both = browse.search(result, browse.Filters(check=["blank_sentence", "status_mismatch"]))
    cur = result.cursor()
    overlap = cur.execute("""SELECT count(*) FROM browse_index
        WHERE list_contains(checks, 'blank_sentence')
          AND list_contains(checks, 'status_mismatch')""").fetchall()[0][0]
    assert both.total == first + second - overlap


def test_a_value_outside_the_vocabulary_matches_nothing(result):
    assert browse.search(result, browse.Filters(check=["no_such_check"])).total == 0
    assert browse.search(result, browse.Filters(gold_language=["xx"])).total == 0
    assert browse.search(result, browse.Filters(gold_language=["de", "xx"],
                                                gold_mode="all")).total == 0


def test_set_facet_words_split_any_vocabulary():
    facet = browse.SetFacet("m", "xs", tuple(f"v{i}" for i in range(130)))
    assert [(column, len(values)) for column, values in facet.words] == [
        ("m_0", 63), ("m_1", 63), ("m_2", 4)]
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT xs, {facet.build_sql()} FROM (VALUES "
                "(['v0', 'v64']), (['v129']), (['v5', 'v5'])) v(xs)")
    rows = lambda cond: con.sql(f"SELECT count(*) FROM t WHERE {cond}").fetchall()[0][0]
    assert rows(facet.condition(["v64"], require_all=False)) == 1
    assert rows(facet.condition(["v129", "v5"], require_all=False)) == 2
    assert rows(facet.condition(["v0", "v64"], require_all=True)) == 1
    assert rows(facet.condition(["v0", "v129"], require_all=True)) == 0


def test_sessions_on_threads_share_one_scan_without_refusals(result):
    """The workbench serves one cached scan to every session, each on its own thread: the
    same queries at once on three threads give each the serial answers (one shared DuckDB
    connection refused the second caller: "connection is busy with another call")."""
    from concurrent.futures import ThreadPoolExecutor

    from audit.engine.scan import status_disagreements
    from audit.reports import quarantine

    fa = browse.Filters(question_language=["fa"])

    def work(_: int) -> tuple:
        return (browse.count(result, fa),
                quarantine.quarantine(result.findings, result.status, ("quarantined",),
                                  None).num_rows,
                status_disagreements(result).num_rows)

    serial = work(0)
    assert serial[0] == 9
    with ThreadPoolExecutor(3) as pool:
        assert set(pool.map(work, range(30))) == {serial}
