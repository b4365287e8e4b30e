"""Findings: status counts, one row per check and severity in force, drill-down to the
instances, language × check heatmap, exact-copy categories. The Browse filter applies."""

from __future__ import annotations

import math
from dataclasses import replace

import plotly.express as px
import streamlit as st

from audit.analysis import queries
from audit.reports import render
from workbench.shell import (
    counted,
    current_view,
    filtered_rows,
    follow_url,
    html,
    no_source_notice,
    say,
    scope_line,
    setup,
    show_table,
    show_view,
)

result = setup("Findings")
view = current_view()
scope = filtered_rows(result) if view.filters.to_query() else None
scope_line(result, len(scope) if scope is not None else result.release.rows)
no_source_notice(result)

statuses = queries.status_counts(result, scope)
cols = st.columns(4)
cols[0].metric(counted(result, "quarantined"), f"{statuses.get('quarantined', 0):,}")
cols[1].metric(counted(result, "review required"), f"{statuses.get('review_required', 0):,}")
cols[2].metric(counted(result, "accepted"), f"{statuses.get('accepted', 0):,}")
cols[3].metric("rows in scope", f"{sum(statuses.values()):,}")

by_check = queries.findings_by_check(result, scope)
if by_check.num_rows == 0:
    st.success("No check fired on these rows.")
    st.stop()


def _show_info() -> None:
    if st.session_state["show_info"]:
        st.query_params["info"] = "1"
    else:
        st.query_params.pop("info", None)


follow_url("show_info", st.query_params.get("info") == "1")
show_info = st.toggle("Show info-level findings (legitimate copies, zero-width spaces…)",
                      key="show_info", on_change=_show_info)
table = by_check.to_pandas()
folded = table[table["severity"] == "info"]
shown = table if show_info else table[table["severity"] != "info"]
show_table(shown, column_config={
    "share_pct": st.column_config.NumberColumn("share of rows %", format="%.2f"),
    "categories": st.column_config.TextColumn("categories at this severity")})
if not show_info and len(folded):
    st.caption(f"{render.plural(int(folded['findings'].sum()), 'info-level finding')} of "
               f"{render.plural(len(folded), 'check')} folded away; they never change a "
               "row's status.")

st.subheader("Where a check fired")
checks = sorted(set(table["check"]))


def _write_examples() -> None:
    # A drill-down is this page's own choice (`examples=`): it never touches the view's
    # filter, whose `check=` would narrow every page's rows.
    st.query_params["examples"] = st.session_state["examples_of"]


wanted = st.query_params.get("examples")
follow_url("examples_of", wanted if wanted in checks else str(shown["check"].iloc[0]
                                                              if len(shown) else checks[0]))
check = st.selectbox("Examples of", checks, key="examples_of", on_change=_write_examples)
# A check that holds rows narrows by `check`; one with only info findings, by `note`.
facet = "check" if check in set(table.loc[table["severity"] != "info", "check"]) else "note"
if check not in getattr(view.filters, facet) and st.button(
        "Narrow the view's filter to rows where this check fired"
        + (" (info only)" if facet == "note" else ""),
        help="Adds it to the Browse filter, which every page (and Export) then works on"):
    show_view(view.with_filters(replace(view.filters, **{
        facet: [*getattr(view.filters, facet), check]})), examples=check)
examples = queries.examples(result, check, rows=scope).to_pylist()
say(st.caption, "The first {n} findings of {check}; the id opens the instance on the same view.",
    n=str(len(examples)), check=check)
html(render.table(
    ["id (open)", "severity", "unit", "paragraph", "sentence", "detail", "category"],
    [[render.link(e["id"], view.href("Instance", row=e["row"])) if e["row"] is not None
      else render.text(e["id"]),
      render.badge(e["severity"], e["severity"]), render.text(e["unit"]),
      render.text(e["paragraph_id"]),
      render.text(e["sentence_index"]), render.text(e["detail"]),
      render.text(e["category"])] for e in examples]))

st.subheader("Findings by unit language and check")
matrix = queries.language_check_counts(result, scope, info=show_info).to_pandas()
if not show_info:
    st.caption("Review and blocking findings; info-level ones are folded away, as above.")
if len(matrix):
    pivot = matrix.pivot_table(index="check", columns="language", values="findings",
                               fill_value=0, aggfunc="sum")
    pivot.columns = pivot.columns.map(render.chart_label)
    # Log colour: one blocking finding stays visible beside hundreds of info ones.
    top = max(int(pivot.values.max()), 1)
    ticks = [10 ** k for k in range(0, int(math.log10(top)) + 1)]
    figure = px.imshow(pivot.map(lambda n: math.log10(n) if n > 0 else float("nan")),
                       aspect="auto", color_continuous_scale="Reds",
                       labels={"color": "findings", "x": "language", "y": "check"},
                       height=140 + 24 * len(pivot))
    figure.update_traces(customdata=pivot.values,
                         hovertemplate="%{y} · %{x}: %{customdata:,} findings<extra></extra>")
    figure.update_coloraxes(colorbar=dict(tickvals=[math.log10(t) for t in ticks],
                                          ticktext=[f"{t:,}" for t in ticks]),
                            cmin=0, cmax=max(math.log10(top), 1))
    st.plotly_chart(figure, key="heatmap")

st.subheader("Exact source copies by category")
st.caption("Numbers, punctuation and name-like strings legitimately stay as they are; "
           "an ordinary copied sentence does not.")
show_table(queries.copy_categories(result, scope).to_pandas())
