"""Annotations: pull a batch back from Label Studio (idempotent), then agreement per
criterion, the reports (adequacy/fluency, preservation, consequences, MAPLE Table 4,
relevance) and the adjudication queue."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from audit import export
from audit.errors import InputError
from audit.review import agreement, labelstudio, loop, reports
from pages import setup

setup("Annotations")

batches = sorted(path.parent.name for path in loop.REVIEWS.glob("*/ledger.json"))
if not batches:
    st.info("No batch pushed yet: build and push one on the Review page.")
    st.stop()
batch_id = st.selectbox("Batch", batches, key="annotations_batch")

if st.button("Pull annotations from Label Studio"):
    try:
        with st.spinner("Pulling…"):
            report = loop.pull(labelstudio.connect(), batch_id, workspace=loop.REVIEWS)
    except InputError as error:
        st.error(f"Pull failed — {error}")
    else:
        st.success(f"{report.rows_added:,} new rows ({report.rows_total:,} in all); "
                   f"{len(report.rejected):,} annotations refused"
                   + (f"; projects missing on the server: {', '.join(report.missing)}"
                      if report.missing else ""))
        if report.rejected:
            st.dataframe(report.rejected, hide_index=True)

table = loop.read_annotations(batch_id, loop.REVIEWS)
if table is None or table.num_rows == 0:
    st.caption("Nothing pulled yet.")
    st.stop()


@st.cache_data(show_spinner="Computing agreement and reports…")
def computed(batch: str, rows: int, latest: str):
    return agreement.agreement(table), reports.all_reports(table), \
        agreement.adjudication_queue(table)


latest = str(max(table.column("updated_at").to_pylist()))
scores, tables, queue = computed(batch_id, table.num_rows, latest)

st.subheader("Agreement per criterion")
st.caption("Cohen's κ (unweighted for nominal criteria, linear and quadratic for 1–5 "
           "ratings), Krippendorff's α and raw agreement between the two initial annotators, "
           "with 95% bootstrap intervals that resample source instances.")
st.dataframe(scores.to_pandas(), hide_index=True)
st.download_button("Agreement CSV", export.to_bytes(scores, "csv"),
                   file_name=f"{batch_id}-agreement.csv", mime="text/csv")

def chart(name: str, frame):
    """The Plotly view of one report, where a chart says more than the table."""
    if name == "rating_means":
        rows = frame[frame["by"] == "language"]
        return px.bar(rows, x="group", y="mean", color="criterion", barmode="group",
                      error_y=rows["ci_high"] - rows["mean"],
                      error_y_minus=rows["mean"] - rows["ci_low"],
                      labels={"group": "language", "mean": "mean rating (1–5)"})
    if name == "preservation_rates":
        return px.bar(frame, x="criterion", y="share_yes", error_y=frame["ci_high"] -
                      frame["share_yes"], error_y_minus=frame["share_yes"] - frame["ci_low"],
                      labels={"share_yes": "share preserved"})
    if name == "consequences":
        return px.bar(frame, x="consequence", y="n")
    if name == "realism":
        return px.bar(frame, y="setting", x=["prefer_a", "tie", "prefer_b"], orientation="h",
                      labels={"value": "% of pairs", "variable": "outcome"})
    return None


for name, report in tables.items():
    st.subheader(name.replace("_", " ").capitalize())
    frame = report.to_pandas()
    figure = chart(name, frame)
    if figure is not None and len(frame):
        st.plotly_chart(figure.update_layout(height=340), key=f"chart-{name}")
    st.dataframe(frame, hide_index=True)
    st.download_button(f"{name} CSV", export.to_bytes(report, "csv"),
                       file_name=f"{batch_id}-{name}.csv", mime="text/csv", key=f"csv-{name}")

st.subheader("Adjudication queue")
st.write(f"{queue.num_rows:,} items on which the two initial annotators disagree.")
st.dataframe(queue.to_pandas(), hide_index=True)
adjudicator = st.text_input("Adjudicator (email; neither initial annotator)",
                            key="adjudicator")
if queue.num_rows and st.button("Push the queue to the adjudicator", disabled=not adjudicator):
    try:
        pushed = loop.push_adjudication(labelstudio.connect(), batch_id, adjudicator,
                                         workspace=loop.REVIEWS)
    except InputError as error:
        st.error(f"Push failed — {error}")
    else:
        st.success(f"Sent {pushed.sent:,} new adjudication tasks.")
