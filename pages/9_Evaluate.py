"""Evaluate: score one or two prediction files against the release by language vector —
slices with intervals, the Table 9/15 contrasts with Holm's correction, the Table 17
sensitivity, paired differences of two files — and open the rows behind any slice."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from audit.analysis import browse
from audit.errors import InputError
from audit.evaluation import predictions, report
from audit.io import tables
from audit.reports.render import chart_label
from audit.settings import DEMO_EVALUATION
from workbench import auth
from workbench.serving import served_file, shown_path, stamp
from workbench.shell import needs_vector, save_upload, say, scope_line, setup, show_table

result = setup("Evaluate", "Evaluate predictions", complete_scan=True)
needs_vector(result, 'Evaluation by language vector')
scope_line(result, filtered=False)
st.caption("Reference-toolkit prediction files (one JSON object a line: id, answer, "
           "supporting_facts). Answer EM/F1 under the release protocol (unicode_script_aware) "
           "and legacy_hotpot; support over (paragraph, sentence) sets; joint as products. "
           "Intervals: 2,000-replicate stratified item bootstrap; paired comparisons resample "
           "sources.")

on_demo = not st.query_params.get("release")
demo_files = [shown_path(DEMO_EVALUATION / name) for name in ("predictions-a.jsonl",
                                                       "predictions-b.jsonl")]
with st.sidebar:
    st.markdown("**Predictions**")
    first = st.text_input("File A (path)", value=demo_files[0] if on_demo else "",
                          key="pred_a")
    second = st.text_input("File B (optional, paired comparison)",
                           value=demo_files[1] if on_demo else "", key="pred_b")
    uploads = None
    if auth.gate("Uploading a file", box=st.caption):
        uploads = st.file_uploader("…or upload one or two .jsonl files", type=["jsonl"],
                                   accept_multiple_files=True, key="pred_upload")
paths = [save_upload(u, (".jsonl",)) for u in uploads[:2]] if uploads else \
    [p.strip() for p in (first, second) if p.strip()]
if not paths:
    st.info("Name a prediction file in the sidebar (or upload one) to evaluate it.")
    st.stop()


@st.cache_data(show_spinner="Scoring and bootstrapping…", max_entries=4)
def evaluated(identity: str, files: tuple, _result) -> report.Evaluation:
    read = [predictions.read_predictions(path) for path, _, _ in files]
    return report.evaluate(predictions.gold(_result.release), browse.descriptor_table(_result),
                           _result.status, read)


try:
    evaluation = evaluated(result.identity, stamp([served_file(p) for p in paths]), result)
except InputError as error:
    say(st.error, "Cannot evaluate: {problem}", problem=error)
    st.stop()

metrics = evaluation.metrics_json()
runs = evaluation.summary["runs"]
for run, info in runs.items():
    say(st.caption, "File {run}: {file} — {n} predictions, {missing} release rows without a "
        "prediction (scored empty), {unexpected} ids not in the release", run=run,
        file=Path(info["file"]).name, n=f"{info['predictions']:,}",
        missing=f"{info['missing']:,}", unexpected=f"{info['unexpected']:,}")
cols = st.columns(4)
overall = metrics["overall"]
cols[0].metric("Answer F1 (A)", f"{overall['answer_f1']:.2%}")
cols[1].metric("Support F1 (A)", f"{overall['support_f1']:.2%}")
cols[2].metric("Joint F1 (A)", f"{overall['joint_f1']:.2%}")
cols[3].metric("MacroLang answer F1 (A)", f"{metrics['macro_language']['answer_f1']:.2%}")
# Scores, shares and their intervals are fractions: every table shows them in percent.
SCORES = ("mean", "estimate", "ci_low", "ci_high", "all_estimate", "clean_estimate")

slices = evaluation.slices.to_pandas()
contrasts = evaluation.contrasts.to_pandas()
left, mid, right = st.columns(3)
family = left.selectbox("Slice by", report.FAMILIES[1:] + (report.MACRO,), key="eval_family")
metric = mid.selectbox("Metric", predictions.METRICS, index=1, key="eval_metric")
protocol = right.selectbox("Answer protocol", ("unicode_script_aware", "legacy_hotpot"),
                           key="eval_protocol")

st.subheader("Slices")
shown = slices[(slices["family"] == family) & (slices["metric"] == metric)
               & (slices["protocol"] == protocol)]
figure = go.Figure()
for run in evaluation.runs:
    part = shown[shown["run"] == run]
    figure.add_trace(go.Bar(
        x=[chart_label(g) for g in part["group"]], y=100 * part["mean"], name=f"file {run}",
        error_y=dict(type="data", symmetric=False, array=100 * (part["ci_high"] - part["mean"]),
                     arrayminus=100 * (part["mean"] - part["ci_low"]))))
figure.update_layout(barmode="group", height=360, yaxis_title=f"{metric} (%)",
                     xaxis_title=family)
st.plotly_chart(figure, key="slices_chart")
show_table(shown, percent=SCORES)

st.subheader("Contrasts (Tables 9 and 15)")
st.caption("Positive group minus negative group, percentage points; 95% stratified item-"
           "bootstrap intervals; p-values Holm-corrected across the contrasts of one file "
           "and metric.")
chosen = contrasts[(contrasts["kind"] == "contrast") & (contrasts["metric"] == metric)]
forest = go.Figure()
for run in evaluation.runs:
    part = chosen[chosen["run"] == run]
    forest.add_trace(go.Scatter(
        x=100 * part["estimate"], y=[chart_label(c) for c in part["contrast"]], mode="markers",
        name=f"file {run}", error_x=dict(type="data", symmetric=False,
                                         array=100 * (part["ci_high"] - part["estimate"]),
                                         arrayminus=100 * (part["estimate"] - part["ci_low"]))))
forest.add_vline(x=0, line_dash="dot")
forest.update_layout(height=320, xaxis_title=f"Δ {metric} (points)")
st.plotly_chart(forest, key="contrast_chart")
show_table(chosen.drop(columns=["all_estimate", "clean_estimate", "n_excluded"]),
           percent=SCORES)

st.subheader("Sensitivity to flagged rows (Table 17)")
st.caption("Each contrast on all rows and on the rows our scan does not quarantine; shift = "
           "clean − all with a paired source-clustered bootstrap interval.")
show_table(contrasts[(contrasts["kind"] == "sensitivity") & (contrasts["metric"] == metric)],
           percent=SCORES)

if len(evaluation.runs) == 2:
    st.subheader("File B − file A, paired per item")
    paired = contrasts[(contrasts["kind"] == "paired") & (contrasts["metric"] == metric)
                       & (contrasts["family"] == family)]
    show_table(paired, percent=SCORES)

st.subheader("Rows behind a slice")
codes, groups = report.family_codes(evaluation.labels).get(
    family if family != report.MACRO else "question_language")
group = st.selectbox("Group", groups, key="eval_group")
items = report.item_scores(evaluation).to_pandas()
items = items[codes == groups.index(group)]
release_param = st.query_params.get("release")
suffix = f"&release={urllib.parse.quote(release_param)}" if release_param else ""
items.insert(0, "open", [f"/Instance?row={int(r)}{suffix}" for r in items["rid"]])
say(st.caption, "{n} rows in {group}; sorted by answer F1, lowest first.", n=len(items),
    group=group)
show_table(items.sort_values(["answer_f1", "rid"]).head(500),
             column_config={"open": st.column_config.LinkColumn("Instance",
                                                                display_text="open")})

st.subheader("Downloads")
d1, d2, d3 = st.columns(3)
d1.download_button("metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False),
                   file_name="metrics.json", mime="application/json")
d2.download_button("slices CSV", tables.to_bytes(evaluation.slices, "csv"),
                   file_name="slices.csv", mime="text/csv")
d3.download_button("contrasts CSV", tables.to_bytes(evaluation.contrasts, "csv"),
                   file_name="contrasts.csv", mime="text/csv")
