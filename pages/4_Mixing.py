"""Mixing: expected vs realised crossing under independent assignment (paper Figure 3 a/b),
the language distribution (Table 11), strata and relation counts, ℓq × gold-language. The
Browse filter applies."""

from __future__ import annotations

import math

import plotly.express as px
import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st
from plotly.subplots import make_subplots

from audit.analysis import browse, mixing
from audit.reports import render
from workbench.shell import current_view, filtered_rows, needs_vector, scope_line, setup, show_table

result = setup("Mixing", "Language mixing")
needs_vector(result, 'Language mixing')
view = current_view()
scope = filtered_rows(result) if view.filters.to_query() else None
scope_line(result, len(scope) if scope is not None else result.release.rows)

WORDS = {"I": "evidence leaves the question language (I)",
         "C": "evidence in more than one language (C)",
         "question_language_absent": "question language absent from every candidate",
         "K_C": "distinct candidate languages (K_C)"}


@st.cache_data(show_spinner="Computing the mixing statistics…", max_entries=8)
def stats(identity: str, rows: tuple[int, ...] | None, _result) -> dict:
    table = browse.descriptor_table(_result)
    if rows is not None:
        table = table.filter(pc.is_in(table["rid"], pa.array(rows, pa.int64())))
    return mixing.mixing(table)


if scope == []:
    st.info("No row matches the Browse filter.")
    st.stop()
data = stats(result.identity, tuple(scope) if scope is not None else None, result)
rates = data["rates"].to_pandas()

st.subheader("Expected under independent assignment vs realised")
st.caption("Points: realised share (K_C: mean) with a Wilson 95% interval (K_C: t interval); "
           "diamonds: expected if each paragraph's language were drawn uniformly from the 24.")
overall = rates[rates["group"].isin([mixing.ALL, "split"])]
# Two by two: each panel's title whole and legible at laptop width.
figure = make_subplots(rows=2, cols=2, subplot_titles=[WORDS[m] for m in mixing.MEASURES],
                       vertical_spacing=0.2)
for i, measure in enumerate(mixing.MEASURES, start=1):
    at = {"row": (i - 1) // 2 + 1, "col": (i - 1) % 2 + 1}
    part = overall[overall["measure"] == measure]
    labels = part["value"].map(render.chart_label)
    figure.add_trace(go.Scatter(
        x=labels, y=part["realised"], mode="markers", name="realised", showlegend=i == 1,
        marker=dict(color="#2f5fb3", size=9),
        error_y=dict(type="data", symmetric=False, array=part["ci_high"] - part["realised"],
                     arrayminus=part["realised"] - part["ci_low"])), **at)
    figure.add_trace(go.Scatter(x=labels, y=part["expected"], mode="markers", name="expected",
                                showlegend=i == 1,
                                marker=dict(color="#d9822b", symbol="diamond", size=9)),
                     **at)
figure.update_annotations(font_size=15)
figure.update_layout(height=620, margin=dict(t=60))
st.plotly_chart(figure, key="overall")

st.subheader("Per question language")
measure = st.radio("Measure", list(mixing.MEASURES), horizontal=True, key="mixing_measure",
                   format_func=WORDS.get)
part = rates[(rates["group"] == "question_language") & (rates["measure"] == measure)]
if len(part):
    per = go.Figure()
    labels = part["value"].map(render.chart_label)
    per.add_trace(go.Scatter(
        x=labels, y=part["realised"], mode="markers", name="realised",
        marker=dict(color="#2f5fb3"),
        error_y=dict(type="data", symmetric=False, array=part["ci_high"] - part["realised"],
                     arrayminus=part["realised"] - part["ci_low"])))
    per.add_trace(go.Scatter(x=labels, y=part["expected"], mode="markers", name="expected",
                             marker=dict(color="#d9822b", symbol="diamond")))
    per.update_layout(height=360, xaxis_title="question language", yaxis_title=WORDS[measure])
    st.plotly_chart(per, key="per-language")
with st.expander("The numbers"):
    show_table(rates)

st.subheader("Strata, script and pair relations")
counts = data["counts"].to_pandas()
counts = counts[counts["split"] != mixing.ALL]
facets = sorted(set(counts["facet"]), key=lambda f: (f != "stratum", f))
facet = st.radio("Counts of", facets, horizontal=True, key="mixing_facet",
                 format_func=lambda f: f.replace("_", " "))
chosen = counts[counts["facet"] == facet]
st.plotly_chart(px.bar(chosen.assign(value=chosen["value"].map(render.chart_label)),
                       x="value", y="n", color="split", barmode="group", height=340,
                       labels={"n": "rows", "value": facet}), key="strata")

st.subheader("Language distribution (Table 11)")
distribution = data["distribution"].to_pandas()
long = distribution.melt(id_vars=["language", "split"], value_vars=["questions", "support",
                                                                    "docs"],
                         var_name="counted", value_name="n")
long["language"] = long["language"].map(render.chart_label)
table11 = px.bar(long, x="language", y="n", color="split", facet_row="counted",
                 barmode="group", height=620,
                 labels={"n": "occurrences", "language": "language"})
# Facet titles say what is counted ("questions"), not Plotly's "counted=questions".
table11.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1], font_size=14))
# Every language label whole, inside the figure: upright where they fit, else slanted with
# the margin grown to hold them.
table11.update_xaxes(automargin=True, tickangle=-45)
table11.update_layout(margin=dict(b=90))
st.plotly_chart(table11, key="table11")
with st.expander("Table 11 as numbers"):
    show_table(distribution)

st.subheader("Question language × gold-paragraph language")
matrix = data["matrix"].to_pandas()
matrix = matrix[matrix["split"] == mixing.ALL]
if len(matrix):
    pivot = matrix.pivot_table(index="question_language", columns="gold_language",
                               values="n", aggfunc="sum", fill_value=0)
    pivot.index = pivot.index.map(render.chart_label)
    pivot.columns = pivot.columns.map(render.chart_label)
    heatmap = px.imshow(pivot, aspect="auto", color_continuous_scale="Blues",
                        labels={"x": "gold language", "y": "question language",
                                "color": "occurrences"}, height=640)
    # Counts are whole: ticks on whole numbers (Plotly's own steps go by 0.5 for small ones).
    heatmap.update_coloraxes(cmin=0, colorbar=dict(
        tick0=0, dtick=max(1, math.ceil(int(pivot.values.max()) / 5)), tickformat=",d"))
    st.plotly_chart(heatmap, key="matrix")
