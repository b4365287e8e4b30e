"""Retrieval: MAPLE multi-aspect retrieval runs — AllAspect@k, AnyAspect@k,
AspectCoverage@k and per-aspect R@k with bootstrap intervals over papers, and a paired
comparison of two runs (bootstrap interval and randomisation test, Holm-corrected)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from audit.errors import InputError
from audit.evaluation import retrieval
from audit.evaluation.retrieval import parse_ks
from audit.reports.render import chart_label
from audit.settings import DEMO_EVALUATION
from workbench.serving import served_file, shown_path, stamp
from workbench.shell import page_setup, say, show_table

page_setup("Retrieval", "MAPLE retrieval runs")   # MAPLE runs: no release
st.caption("hit@k per query: the mapped paper among the run's first k documents, ordered as "
           "trec_eval does (score descending, ties by document id descending); unranked "
           "queries score 0. The demo files are synthetic (`python -m devkit eval-demo`).")

with st.sidebar:
    st.markdown("**Retrieval inputs**")
    qrels = st.text_input("Qrels (qid iter docid rel)", key="ret_qrels",
                          value=shown_path(DEMO_EVALUATION / "maple-qrels.txt"))
    queries = st.text_input("Query mapping (qid paper aspect)", key="ret_queries",
                            value=shown_path(DEMO_EVALUATION / "maple-queries.tsv"))
    run_a = st.text_input("Run A (TREC)", key="ret_run_a",
                          value=shown_path(DEMO_EVALUATION / "maple-run-a.txt"))
    run_b = st.text_input("Run B (optional)", key="ret_run_b",
                          value=shown_path(DEMO_EVALUATION / "maple-run-b.txt"))
    ks_text = st.text_input("Cut-offs k", value="5,10,20", key="ret_k")


@st.cache_data(show_spinner="Scoring runs…", max_entries=4)
def computed(qrels_file: tuple, runs: tuple, queries_file: tuple, ks: tuple):
    """Each file as its stamp (path, time, size): a changed file is scored again."""
    return retrieval.evaluate_runs(qrels_file[0][0], [path for path, _, _ in runs],
                                   queries_file[0][0], ks)


runs = tuple(p.strip() for p in (run_a, run_b) if p.strip())
try:
    report = computed(stamp([served_file(qrels)]), stamp([served_file(r) for r in runs]),
                      stamp([served_file(queries)]), parse_ks(ks_text))
except InputError as error:
    say(st.error, "Cannot score the runs: {problem}", problem=error)
    st.stop()

summary = report.summary
say(st.caption, "{queries} queries over {papers} papers ({aspects}); intervals from "
    "{n_boot} paper resamples.", queries=summary["queries"], papers=summary["papers"],
    aspects=", ".join(f"{a}: {n}" for a, n in summary["aspects"].items()),
    n_boot=summary["n_boot"])
metrics = report.metrics.to_pandas()
k = st.selectbox("k", sorted(set(metrics["k"])), index=len(set(metrics["k"])) - 1,
                 key="ret_chosen_k")
chosen = metrics[metrics["k"] == k]
figure = go.Figure()
for run in sorted(set(chosen["run"])):
    part = chosen[chosen["run"] == run]
    figure.add_trace(go.Bar(
        x=[chart_label(m) for m in part["metric"]], y=100 * part["value"], name=f"run {run}",
        error_y=dict(type="data", symmetric=False, array=100 * (part["ci_high"] - part["value"]),
                     arrayminus=100 * (part["value"] - part["ci_low"]))))
figure.update_layout(barmode="group", height=360, yaxis_title=f"% at k = {k}")
st.plotly_chart(figure, key="retrieval_chart")
show_table(metrics)

if report.comparison is not None:
    st.subheader("Run B − run A (paired over papers)")
    st.caption("Bootstrap interval over the same paper resamples; two-sided paired "
               "randomisation test (sign flips, 10,000 draws, seeded), Holm across rows.")
    show_table(report.comparison.to_pandas())

st.subheader("Per query")
show_table(report.per_query.to_pandas())
