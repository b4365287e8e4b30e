"""MAPLE retrieval metrics: a hand-computed fixture, the published GritLM-7B shape, input
validation and the two-run comparison."""

from __future__ import annotations

import pytest

from audit.errors import InputError
from audit.evaluation import retrieval

QUERIES = """qid paper aspect
q1 P1 motivation
q2 P1 method
q3 P1 experiment/result
q4 P2 motivation
q5 P2 method
q6 P3 motivation
q7 P3 experiment-result
"""
QRELS = "".join(f"q{i} 0 {paper} 1\n" for i, paper in
                enumerate(["P1", "P1", "P1", "P2", "P2", "P3", "P3"], start=1))
# q5: D3 and P2 tie on score; the rank column puts P2 first. q7 has no ranking at all.
RUN_A = """q1 Q0 P1 1 9.0 a
q1 Q0 D1 2 8.0 a
q2 Q0 D1 1 9.0 a
q2 Q0 P1 2 8.0 a
q3 Q0 D1 1 9.0 a
q3 Q0 D2 2 8.0 a
q3 Q0 P1 3 7.0 a
q4 Q0 P2 1 9.0 a
q5 Q0 D3 2 5.0 a
q5 Q0 P2 1 5.0 a
q6 Q0 D1 1 9.0 a
q6 Q0 D2 2 8.0 a
"""
RUN_B = RUN_A.replace("q3 Q0 P1 3 7.0 a", "q3 Q0 P1 3 9.5 a")


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("queries.tsv", QUERIES), ("qrels.txt", QRELS), ("a.run", RUN_A),
                       ("b.run", RUN_B)):
        paths[name] = tmp_path / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


def _value(report, run, k, metric):
    rows = [r for r in report.metrics.to_pylist()
            if (r["run"], r["k"], r["metric"]) == (run, k, metric)]
    assert len(rows) == 1
    return rows[0]


def test_hand_computed_fixture(files):
    report = retrieval.evaluate_runs(files["qrels.txt"], [files["a.run"]],
                                     files["queries.tsv"], ks=(1, 2), n_boot=300)
    hits1 = dict(zip(report.per_query["qid"].to_pylist(),
                     report.per_query["hit@1_A"].to_pylist()))
    assert hits1 == {"q1": 1, "q2": 0, "q3": 0, "q4": 1, "q5": 1, "q6": 0, "q7": 0}
    expected = {(1, "all_aspect"): 1 / 3, (1, "any_aspect"): 2 / 3,
                (1, "aspect_coverage"): (1 / 3 + 1 + 0) / 3,
                (2, "all_aspect"): 1 / 3, (2, "any_aspect"): 2 / 3,
                (2, "aspect_coverage"): (2 / 3 + 1 + 0) / 3,
                (1, "recall_motivation"): 2 / 3, (1, "recall_method"): 1 / 2,
                (1, "recall_experiment-result"): 0.0,
                (2, "recall_motivation"): 2 / 3, (2, "recall_method"): 1.0,
                (2, "recall_experiment-result"): 0.0}
    for (k, metric), value in expected.items():
        row = _value(report, "A", k, metric)
        assert row["value"] == pytest.approx(value), (k, metric)
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
    assert _value(report, "A", 1, "all_aspect")["n"] == 3
    assert _value(report, "A", 1, "recall_method")["n"] == 2
    assert report.summary["runs"]["A"]["queries_unranked"] == 1


def test_two_runs_paired_difference_and_randomisation(files):
    report = retrieval.evaluate_runs(files["qrels.txt"], [files["a.run"], files["b.run"]],
                                     files["queries.tsv"], ks=(1,), n_boot=300)
    rows = {r["metric"]: r for r in report.comparison.to_pylist()}
    assert rows["aspect_coverage"]["difference"] == pytest.approx(1 / 9)
    assert rows["recall_experiment-result"]["difference"] == pytest.approx(1 / 2)
    # One paper of three moved: every one of the 2³ sign flips gives the same |mean|, so
    # the exact randomisation p is 1; an unchanged metric has p = 1 too.
    assert rows["aspect_coverage"]["p_value"] == pytest.approx(1.0)
    assert rows["all_aspect"]["difference"] == 0 and rows["all_aspect"]["p_value"] == 1.0
    assert all(r["p_holm"] >= r["p_value"] for r in rows.values())


def test_published_gritlm_shape_is_reproduced_by_the_definitions(tmp_path):
    """210 papers × 10 queries: 33 papers hit by all queries, 4 by none, the rest by some,
    1,298 hits in all → AllAspect@20 15.7, AnyAspect@20 98.1, AspectCoverage@20 61.8."""
    partial = [6] * 103 + [5] * 70          # 173 papers, 968 hits
    per_paper = [10] * 33 + [0] * 4 + partial
    assert sum(per_paper) == 1298
    queries, qrels, run = ["qid paper aspect"], [], []
    for p, hit_count in enumerate(per_paper):
        for q in range(10):
            qid = f"p{p}q{q}"
            queries.append(f"{qid} P{p} {retrieval.ASPECTS[q % 3]}")
            qrels.append(f"{qid} 0 P{p} 1")
            target_rank = 1 if q < hit_count else 25
            run += [f"{qid} Q0 {'P' + str(p) if r == target_rank else f'N{r}'} {r} {100 - r} g"
                    for r in range(1, 26)]
    for name, lines in (("q.tsv", queries), ("qrels", qrels), ("run", run)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = retrieval.evaluate_runs(tmp_path / "qrels", [tmp_path / "run"], tmp_path / "q.tsv",
                                     ks=(20,), n_boot=200)
    values = {m: round(100 * _value(report, "A", 20, m)["value"], 1)
              for m in retrieval.PAPER_METRICS}
    assert values == {"all_aspect": 15.7, "any_aspect": 98.1, "aspect_coverage": 61.8}


@pytest.mark.parametrize(("name", "text", "message"), [
    ("qrels.txt", "q1 0 P1\n", "line 1: 3 fields"),
    ("qrels.txt", "q1 0 P1 1\nq2 0 P1 yes\n", "line 2: relevance 'yes'"),
    ("a.run", "q1 Q0 P1 1 high a\n", "line 1: rank '1' / score 'high'"),
    ("a.run", "q1 Q0 P1 1 2 a\nq1 Q0 P1 2 1 a\n", "ranked twice"),
    ("queries.tsv", "q1 P1 results\n", "unknown aspect 'results'"),
])
def test_bad_lines_name_the_line(files, name, text, message):
    files[name].write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        retrieval.evaluate_runs(files["qrels.txt"], [files["a.run"]], files["queries.tsv"],
                                ks=(1,), n_boot=10)
    assert message in str(error.value)


def test_a_mapped_query_without_qrels_is_an_error(files):
    files["qrels.txt"].write_text(QRELS.replace("q7 0 P3 1\n", ""), encoding="utf-8")
    with pytest.raises(InputError, match="without a relevant document, e.g. 'q7'"):
        retrieval.evaluate_runs(files["qrels.txt"], [files["a.run"]], files["queries.tsv"],
                                ks=(1,), n_boot=10)
