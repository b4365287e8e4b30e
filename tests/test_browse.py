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


def held_and_noted(result) -> tuple[dict[str, int], dict[str, int]]:
    """Rows per check with a review or blocking finding of it, and rows where all its
    findings are info."""
    held: dict[str, set] = {}
    noted: dict[str, set] = {}
    for f in result.findings.to_pylist():
        if f["row"] is not None:
            (noted if f["severity"] == "info" else held).setdefault(f["check"], set()).add(
                f["row"])
    notes = {c: len(rows - held.get(c, set())) for c, rows in noted.items()}
    return ({c: len(rows) for c, rows in held.items()}, {c: n for c, n in notes.items() if n})


def test_every_check_that_fired_is_filterable_and_counts_its_rows(result):
    """The registry has more checks than one 63-bit word holds: status_mismatch and the
    release checks sit in the second word and must filter like the first. A check filters
    the rows it holds (review or blocking); where it has only info findings it is a note."""
    assert len(registry.REGISTRY) > 63
    held, noted = held_and_noted(result)
    assert {"status_mismatch", "structural_flags_mismatch"} <= set(held)
    assert browse.CHECK_VOCABULARY.index("status_mismatch") >= 63
    # exact_source_copy is held on some rows (review) and a note on others (a name, info).
    assert held["exact_source_copy"] == 8 and noted["exact_source_copy"] == 197
    for check, rows in held.items():
        page = browse.search(result, browse.Filters(check=[check]))
        assert page.total == rows, check
        assert all(check in checks for checks in page.rows.column("checks").to_pylist())
    for check, rows in noted.items():
        page = browse.search(result, browse.Filters(note=[check]))
        assert page.total == rows, check
        assert all(check in notes and check not in checks for checks, notes in zip(
            page.rows.column("checks").to_pylist(), page.rows.column("notes").to_pylist()))


def test_a_rows_checks_read_blocking_first(result):
    rows = browse.search(result, browse.Filters(status=["quarantined"]), page_size=500).rows
    for checks, blocking in zip(rows.column("checks").to_pylist(),
                                rows.column("blocking").to_pylist()):
        assert blocking and checks[:len(blocking)] == blocking


def test_check_facet_counts_every_check_including_the_second_word(result):
    facets = browse.search(result, browse.Filters()).facets
    held, noted = held_and_noted(result)
    assert dict(facets["check"]) == held
    assert dict(facets["note"]) == noted


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


def test_info_folds_the_same_in_the_findings_table_and_its_heatmap(result):
    """Per check, the heatmap without info counts exactly the table's review and blocking
    findings (it once summed the info ones too)."""
    from audit.analysis import queries
    table: dict[str, int] = {}
    for row in queries.findings_by_check(result).to_pylist():
        if row["severity"] != "info":
            table[row["check"]] = table.get(row["check"], 0) + row["findings"]
    heatmap: dict[str, int] = {}
    for row in queries.language_check_counts(result, info=False).to_pylist():
        heatmap[row["check"]] = heatmap.get(row["check"], 0) + row["findings"]
    rowless = {f["check"] for f in result.findings.to_pylist() if f["row"] is None}
    assert heatmap == {c: n for c, n in table.items() if c not in rowless}
    assert table["exact_source_copy"] == 13 and "invisible_control" not in heatmap
