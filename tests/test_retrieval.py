"""MAPLE retrieval metrics: a hand-computed fixture, the published GritLM-7B shape, input
validation and the two-run comparison."""

from __future__ import annotations

import json

import numba_cache
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


# ------------------------------------------------------------- issue 26: re-derived hits

def _write(tmp_path, **texts):
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _cli(*args) -> tuple[int, str, str]:
    import contextlib
    import io

    from audit.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(map(str, args)))
    return code, out.getvalue(), err.getvalue()


def _trec_eval_hits(run_text: str, mapping: dict[str, str], k: int) -> dict[str, int]:
    """The definition, independently: per mapped query, order its run lines as trec_eval does
    (score descending, then document id descending) and look for the mapped paper in the
    first k."""
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in run_text.split("\n"):
        if line.strip():
            qid, _, doc, _, score, _ = line.split()
            ranked.setdefault(qid, []).append((float(score), doc))
    return {q: int(paper in [d for _, d in sorted(ranked.get(q, []), reverse=True)[:k]])
            for q, paper in mapping.items()}


# Nine queries over three papers with three-character document ids; every query's paper sits
# at its own position, so pairing a query with another query's ranking changes its hits.
CACHE_PAPERS = {f"q{i}": f"P{i // 3}0" for i in range(9)}
CACHE_QUERIES = "qid paper aspect\n" + "".join(
    f"{q} {p} {retrieval.ASPECTS[i % 3]}\n" for i, (q, p) in enumerate(CACHE_PAPERS.items()))
CACHE_QRELS = "".join(f"{q} 0 {p} 1\n" for q, p in CACHE_PAPERS.items())
CACHE_RUN = "".join(
    f"{q} Q0 {p if r == 1 + 2 * i else f'N{r:02d}'} {r} {30 - r}.0 t\n"
    for i, (q, p) in enumerate(CACHE_PAPERS.items()) for r in range(1, 21))

_CHILD = """
import json, sys
from audit.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "imported": sorted(m for m in ("ranx", "numba")
                                                   if m in sys.modules)}))
"""




def _child(script: str, cache, *args) -> str:
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_hits_do_not_depend_on_the_numba_cache(tmp_path):
    """Fresh, warm and mixed numba caches (the mixed one built as the issue reproduced it: a
    warm ranx cache with its three-character-id specialisations deleted) give byte-identical
    per-query hits, equal to trec_eval's definition, and the evaluation imports no numba."""
    import importlib.util

    import pyarrow.parquet as pq
    files = _write(tmp_path, **{"q.tsv": CACHE_QUERIES, "qrels": CACHE_QRELS,
                                "run": CACHE_RUN})
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    outputs = {}

    def evaluate(state):
        out = tmp_path / f"out-{state}"
        result = json.loads(_child(_CHILD, cache, "retrieval", files / "qrels", files / "run",
                                   "--queries", files / "q.tsv", "--k", "1,5", "--n-boot",
                                   "50", "--out", out).strip().splitlines()[-1])
        assert result == {"code": 0, "imported": []}, state
        outputs[state] = pq.read_table(out / "per_query.parquet")

    evaluate("fresh")
    if importlib.util.find_spec("ranx") is not None:
        _child(numba_cache.RANX_WARM, cache, files / "qrels", files / "run")
    evaluate("warm")
    if importlib.util.find_spec("ranx") is not None:
        assert int(_child(numba_cache.STRIP, cache, cache, "UnicodeCharSeq(3)")) > 0
    evaluate("mixed")
    assert outputs["fresh"].equals(outputs["warm"]) and outputs["fresh"].equals(outputs["mixed"])
    table = outputs["fresh"].to_pydict()
    for k in (1, 5):
        expected = _trec_eval_hits(CACHE_RUN, CACHE_PAPERS, k)
        assert dict(zip(table["qid"], table[f"hit@{k}_A"])) == expected
    # Paper i // 3's query i sits at position 1 + 2i: only q0 hits at 1, q0–q2 at 5.
    assert [q for q, h in _trec_eval_hits(CACHE_RUN, CACHE_PAPERS, 5).items() if h] == \
        ["q0", "q1", "q2"]
    assert table["position_A"] == [1 + 2 * i for i in range(9)]


def test_no_mapped_query_ranked_scores_zero_and_counts(tmp_path):
    files = _write(tmp_path, qrels="q1 0 P1 1\n", **{"q.tsv": "q1 P1 motivation\n",
                                                     "run": "q2 Q0 P1 1 1.0 t\n"})
    code, out, err = _cli("retrieval", files / "qrels", files / "run", "--queries",
                          files / "q.tsv", "--k", "5", "--n-boot", "20", "--out", tmp_path / "o")
    assert (code, err) == (0, "")
    values = {line.split()[2]: (line.split()[3], line.split()[-1]) for line in out.splitlines()}
    assert values == {"all_aspect": ("0.0", "n=1"), "any_aspect": ("0.0", "n=1"),
                      "aspect_coverage": ("0.0", "n=1"), "recall_motivation": ("0.0", "n=1"),
                      "recall_method": ("nan", "n=0"),
                      "recall_experiment-result": ("nan", "n=0")}
    summary = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    assert summary["runs"]["A"] | {"file": None} == {
        "file": None, "queries_ranked": 0, "queries_unranked": 1,
        "queries_paper_not_retrieved": 0, "queries_outside_mapping": 1}


def test_qrels_naming_another_document_than_the_mapped_paper_are_refused(files):
    """q7's qrels name D2, which run A retrieves at rank 2: read from the qrels it would hit;
    its mapped paper P3 is not retrieved at all."""
    files["qrels.txt"].write_text(QRELS.replace("q7 0 P3 1", "q7 0 D2 1"), encoding="utf-8")
    code, out, err = _cli("retrieval", files["qrels.txt"], files["a.run"], "--queries",
                          files["queries.tsv"], "--k", "5", "--n-boot", "20")
    assert (code, out) == (2, "")
    assert "query 'q7': relevant document(s) 'D2', its mapped paper is 'P3'" in err
    assert len(err.strip().splitlines()) == 1


def test_ties_follow_trec_eval_not_the_rank_column(tmp_path):
    """q1: P1 ties with Z9 and the rank column puts P1 first, but trec_eval orders ties by
    document id descending, so Z9 comes first and hit@1 = 0. q2: P1 ties with A1, the rank
    column puts A1 first; by document id P1 > A1, so hit@1 = 1."""
    run = "q1 Q0 P1 1 5.0 t\nq1 Q0 Z9 2 5.0 t\nq2 Q0 A1 1 5.0 t\nq2 Q0 P1 2 5.0 t\n"
    files = _write(tmp_path, qrels="q1 0 P1 1\nq2 0 P1 1\n", run=run,
                   **{"q.tsv": "q1 P1 motivation\nq2 P1 method\n"})
    report = retrieval.evaluate_runs(files / "qrels", [files / "run"], files / "q.tsv",
                                     ks=(1, 2), n_boot=20)
    table = report.per_query.to_pydict()
    assert table["hit@1_A"] == [0.0, 1.0] and table["hit@2_A"] == [1.0, 1.0]
    assert table["position_A"] == [2, 1]
    assert _trec_eval_hits(run, {"q1": "P1", "q2": "P1"}, 1) == {"q1": 0, "q2": 1}
    assert "ties by document id descending" in report.summary["hit_at_k"]


def test_conflicting_qrels_duplicates_name_both_lines(files):
    files["qrels.txt"].write_text("q1 0 P1 1\nq2 0 P1 1\nq1 0 P1 0\n", encoding="utf-8")
    code, _, err = _cli("retrieval", files["qrels.txt"], files["a.run"], "--queries",
                        files["queries.tsv"], "--n-boot", "20")
    assert code == 2
    assert "query 'q1' document 'P1' judged 1 on line 1 and 0 on line 3" in err


def test_a_repeated_cut_off_is_refused(files):
    code, out, err = _cli("retrieval", files["qrels.txt"], files["a.run"], "--queries",
                          files["queries.tsv"], "--k", "5,5", "--n-boot", "20")
    assert (code, out) == (2, "")
    assert "'5,5' repeats 5" in err


def test_recall_difference_is_tested_per_paper_like_its_interval(tmp_path):
    """Motivation: P1 has q1, q2 and P2 has q3; run B hits all three at 1, run A none. Flipping
    per paper the summed differences (2, 1) gives means ±1.5, ±0.5: two of the four flips
    reach 1.5, p = 0.5. (Per query, (1, 1, 1) would give 2 of 8, p = 0.25, while the
    interval resamples papers.)"""
    queries = ("q1 P1 motivation\nq2 P1 motivation\nq3 P2 motivation\nq4 P1 method\n"
               "q5 P2 experiment-result\n")
    qrels = "".join(f"q{i} 0 P{p} 1\n" for i, p in ((1, 1), (2, 1), (3, 2), (4, 1), (5, 2)))
    run_a = "".join(f"q{i} Q0 N1 1 2.0 a\nq{i} Q0 P{p} 2 1.0 a\n"
                    for i, p in ((1, 1), (2, 1), (3, 2), (4, 1), (5, 2)))
    run_b = run_a.replace("q1 Q0 P1 2 1.0", "q1 Q0 P1 2 3.0").replace(
        "q2 Q0 P1 2 1.0", "q2 Q0 P1 2 3.0").replace("q3 Q0 P2 2 1.0", "q3 Q0 P2 2 3.0")
    files = _write(tmp_path, qrels=qrels, a=run_a, b=run_b, **{"q.tsv": queries})
    report = retrieval.evaluate_runs(files / "qrels", [files / "a", files / "b"],
                                     files / "q.tsv", ks=(1,), n_boot=200)
    row = {r["metric"]: r for r in report.comparison.to_pylist()}["recall_motivation"]
    assert row["difference"] == 1.0 and (row["ci_low"], row["ci_high"]) == (1.0, 1.0)
    assert row["p_value"] == pytest.approx(0.5)
    assert row["test"] == "paired randomisation (sign flips per paper), two-sided"
