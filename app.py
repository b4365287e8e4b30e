"""XHotpotQA audit workbench — Overview. Run with `streamlit run app.py`."""

from __future__ import annotations

import streamlit as st

from audit.analysis import browse, queries
from audit.analysis.browse import Filters
from audit.engine import store
from audit.engine.scan import status_disagreements
from audit.reports import render
from audit.reports.render import plural
from workbench.shell import (
    counted,
    current_view,
    html,
    no_source_notice,
    orientation,
    say,
    scope_line,
    setup,
    show_table,
)
from workbench.viewstate import View

result = setup("Overview", "Release overview")
summary = result.summary
scope_line(result, filtered=False)
orientation(result)
no_source_notice(result)
cols = st.columns(4)
cols[0].metric("Rows", f"{summary['rows']:,}")
for col, status in zip(cols[1:], ("accepted", "review_required", "quarantined")):
    col.metric(counted(result, status.replace("_", " ")),
               f"{summary['status_counts'].get(status, 0):,}")

MAPPED = result.release.layout.has("aligned")   # rows are items in one language each
view = current_view()
KIND = {"quarantined": "blocking", "review_required": "review", "accepted": "accepted"}


def browse_link(**chosen: str) -> str:
    """Browse on this release, filtered to these values."""
    return View(view.release, view.sources, view.policy).with_filters(
        Filters(**{k: [v] for k, v in chosen.items()})).href("Browse")


def status_explained() -> None:
    """Which checks put how many rows into each status, each a link to those rows; and
    the status by the release's own structural rules alone, beside the full policy."""
    drivers = queries.status_drivers(result).to_pylist()
    columns = st.columns(2)
    for column, status, word in ((columns[0], "quarantined", "blocking"),
                                 (columns[1], "review_required", "review")):
        here = [d for d in drivers if d["status"] == status]
        largest = max((d["rows"] for d in here), default=0)
        with column:
            html(render.strong(f"{status.replace('_', ' ')}: rows per {word} check"),
                 *(render.facet_value(d["check"], d["rows"], largest,
                                      browse_link(status=status, check=d["check"]),
                                      kind=KIND[status]) for d in here)
                 or [render.text("none")])
    if browse.REFERENCE_CHECKS and not MAPPED:
        counts = queries.structural_status_counts(result)
        html(render.text("By the release's own structural rules alone (its reference checks, "
                         "as the reference toolkit derives the status): "),
             *(render.pill(f"{counts.get(s, 0):,} {s.replace('_', ' ')}",
                           browse_link(structural_status=s))
               for s in ("quarantined", "review_required", "accepted")))
    st.caption("A row with several checks counts under each; the links open those rows in "
               "Browse.")


def per_language() -> None:
    """A mapped release: each language's rows by status, and what holds for a whole file."""
    st.subheader("Status per language")
    table = queries.status_by_language(result)
    show_table(table.to_pandas(), height=min(38 + 35 * table.num_rows, 420))
    whole = queries.release_findings(result)
    if whole.num_rows:
        st.subheader("Findings on the release as a whole")
        show_table(whole.to_pandas())


def per_split() -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Rows per split")
        show_table([{"split": k, "rows": v} for k, v in summary["rows_per_split"].items()])
    with right:
        st.subheader("Shipped status")
        show_table([{"status": k, "rows": v}
                      for k, v in summary["shipped_status_counts"].items()])


st.subheader("What puts rows into review or quarantine")
status_explained()
if MAPPED:
    per_language()
else:
    per_split()

st.subheader("Findings by check")
by_check = queries.findings_by_check(result).to_pylist()
if by_check:
    # An HTML table, not a chart: the first page a person opens draws without loading a
    # chart library, and every count is exact and readable.
    largest = max(c["findings"] for c in by_check)
    html(render.table(
        ["check", "severity", "origin", "findings (bar: log scale)", "rows", "share of rows",
         "categories"],
        [[render.text(c["check"]), render.badge(c["severity"], c["severity"]),
          render.text(c["origin"]), render.meter(c["findings"], largest, c["severity"]),
          render.text(f"{c['rows']:,}"), render.text(f"{c['share_pct']:g}%"),
          render.text(c["categories"])] for c in by_check]))
else:
    st.success("No findings.")
if summary["checks_from_shipped_flags"]:
    say(st.caption, "Taken from the shipped flags (this layout or input cannot show them): "
                    "{checks}", checks=", ".join(summary["checks_from_shipped_flags"]))

if result.release.layout.has("shipped_status"):
    st.subheader("Shipped vs derived status")
    disagree = status_disagreements(result)
    st.write(f"{plural(disagree.num_rows, 'row')} where the shipped status differs from the "
             "derived one (the derived status also counts the checks the reference lacks).")
    behind = queries.status_drivers(result, disagreeing=True).to_pylist()
    if behind:
        html(render.text("The checks behind the derived status of those rows: "),
             *(render.pill(f"{d['check']} ({d['rows']:,} {d['status'].replace('_', ' ')})",
                           browse_link(status=d["status"], check=d["check"]))
               for d in behind))
    if disagree.num_rows:
        show_table(disagree.slice(0, 500).to_pandas())

st.subheader("Scan history")
history = store.scan_history(result.release)
if history:
    show_table(history)
else:
    st.caption("No saved scan of this release yet — save one on the Export page.")

with st.expander("Manifest summary"):
    st.json({k: summary[k] for k in ("policy", "registry_fingerprint", "sources",
                                     "checks_skipped", "seconds")})
