"""Annotations: pull a batch back from Label Studio (idempotent; refusals logged), then
agreement per criterion (pooled, per language group and per annotator pair, each κ below
a κ floor named with its criterion, raw agreement and n), the final labels, the reports
(adequacy/fluency, preservation, consequences, MAPLE Table 4, relevance), the
preservation checks against the human flags (on the release in the sidebar) and the
adjudication queue, open vs resolved. An error-span batch (ESA / MQM) shows its own
section instead (workbench/span_view.py)."""

from __future__ import annotations

import streamlit as st

from audit.errors import InputError
from audit.io import tables as export
from audit.reports.render import plural
from audit.review import agreement, check_agreement, pull, reports, workspace
from audit.review.sites import ledger_sites
from audit.settings import current
from workbench import adjudication, auth, span_view
from workbench.shell import say, setup, show_table

result = setup("Annotations", complete_scan=True)

batches = workspace.batches(current().reviews)
if not batches:
    st.info("No batch pushed yet: build and push one on the Review page.")
    st.stop()
batch_id = st.selectbox("Batch", batches, key="annotations_batch")

if auth.gate("Pulling annotations from Label Studio") and \
        st.button("Pull annotations from Label Studio"):
    try:
        with st.spinner("Pulling…"):
            sites = ledger_sites(batch_id, current().reviews)
            try:
                report = pull.pull(sites, batch_id, workspace=current().reviews)
            finally:
                sites.close()
    except InputError as error:
        say(st.error, "Pull failed: {problem}", problem=error)
    else:
        st.success(f"{plural(report.rows_added, 'new row')} ({report.rows_total:,} in all); "
                   + plural(len(report.rejected), "annotation or draft", "annotations or drafts")
                   + f" refused, {report.new_refusals:,} of them new in the refusals log.")
        if report.missing:
            say(st.warning, "Projects missing on the server (their pulled rows are kept): "
                "{projects}", projects=", ".join(report.missing))
        if report.rejected:
            show_table(report.rejected)

refusals = workspace.Workspace(batch_id, current().reviews).refusals()
if refusals:
    with st.expander(f"Refusals log: {plural(len(refusals), 'entry')} "
                     "(appended, never rewritten)"):
        show_table(refusals)

table = workspace.Workspace(batch_id, current().reviews).annotations()
if table is None or table.num_rows == 0:
    st.caption("Nothing pulled yet.")
    st.stop()
if span_view.applies(batch_id):    # error spans: their own agreement, not categorical
    span_view.show(batch_id, table)
    st.stop()


@st.cache_data(show_spinner="Computing agreement and reports…")
def computed(batch: str, rows: int, latest: str):
    final = agreement.final_frame(agreement.prepare(table))
    return (agreement.agreement(table), reports.all_reports(table), final.to_arrow(),
            agreement.queue_frame(final).to_arrow())


@st.cache_data(show_spinner="Computing agreement per language and pair…")
def breakdown(batch: str, rows: int, latest: str, by: str, floor: float):
    return agreement.agreement_by(table, by, kappa_floor=floor)


latest = str(max(table.column("updated_at").to_pylist()))
scores, tables, final, queue = computed(batch_id, table.num_rows, latest)

st.subheader("Agreement per criterion")
st.caption("Cohen's κ (unweighted; for 1–5 ratings also linear and quadratic), "
           "Krippendorff's α and raw agreement between the two initial annotators, pooled "
           "over every language and pair, with 95% bootstrap intervals that resample source "
           "instances. n_items: the items each statistic rests on (two initial annotations; "
           "an empty consequence counts as none); n_irregular: those left out (one or three "
           "annotators).")
show_table(scores.to_pandas())
st.download_button("Agreement CSV", export.to_bytes(scores, "csv"),
                   file_name=f"{batch_id}-agreement.csv", mime="text/csv")

st.subheader("Agreement per language group and annotator pair")
floor = st.number_input("κ floor (a group whose κ is below it is flagged)", min_value=-1.0,
                        max_value=1.0, value=agreement.KAPPA_FLOOR, step=0.05,
                        key="kappa_floor")
st.caption("Raw agreement and κ within each group, each with its own n (items with two "
           "initial annotations), clusters and 95% bootstrap interval over that group's "
           "source instances; a pooled κ can hide one weak pair. Click a column to sort.")

def below_floor(where: str, rows: list[dict]) -> None:
    """One warning per table: each κ below the floor with its criterion, slice, raw
    agreement and n (agreement.floor_notes)."""
    notes = agreement.floor_notes(rows, float(floor))
    if notes:
        say(st.warning, f"Below the κ floor {floor:g}, {where}: {{notes}}",
            notes="; ".join(notes))


below_floor("pooled", scores.to_pylist())
for by in agreement.BREAKDOWNS:
    grouped = breakdown(batch_id, table.num_rows, latest, by, float(floor))
    label = "language group" if by == "language" else "annotator pair"
    below_floor(f"per {label}", grouped.to_pylist())
    figure = reports.figure(f"agreement_by_{by}", grouped)
    if figure is not None:
        st.plotly_chart(figure, key=f"chart-agreement-{by}")
    show_table(grouped.to_pandas())
    st.download_button(f"Agreement per {label} CSV", export.to_bytes(grouped, "csv"),
                       file_name=f"{batch_id}-agreement-by-{by}.csv", mime="text/csv",
                       key=f"csv-agreement-{by}")

for name, report in tables.items():
    st.subheader(name.replace("_", " ").capitalize())
    figure = reports.figure(name, report)
    if figure is not None:
        st.plotly_chart(figure, key=f"chart-{name}")
    show_table(report.to_pandas())
    st.download_button(f"{name} CSV", export.to_bytes(report, "csv"),
                       file_name=f"{batch_id}-{name}.csv", mime="text/csv", key=f"csv-{name}")

st.subheader("Preservation checks against the human flags")
st.caption("answer_not_in_evidence against answer_preserved, bridge_entity_lost against "
           "entities_preserved: on the batch's paragraph and instance units drawn from the "
           "release in the sidebar (left out: units this release lacks or whose text differs "
           "from what the annotators read), resolved labels only; precision and recall with "
           "Wilson 95% intervals, for review findings and for review and info findings.")
versus = check_agreement.against_humans(final, result, batch_id, current().reviews)
show_table(versus.to_pandas())
st.download_button("Checks vs humans CSV", export.to_bytes(versus, "csv"),
                   file_name=f"{batch_id}-checks-vs-humans.csv", mime="text/csv")

st.subheader("Final labels")
st.caption("Item × criterion: the value the reports use and its origin, agreed by the two "
           "initial annotators or adjudicated; empty while open.")
show_table(final.to_pandas(), height=260)
st.download_button("Final labels CSV", export.to_bytes(final, "csv"),
                   file_name=f"{batch_id}-final-labels.csv", mime="text/csv")

st.subheader("Adjudication queue")
adjudication.queue_section(batch_id, queue, "items on which the two initial annotators "
                           "disagree")
