"""Mixing: expected vs realised crossing under independent assignment (paper Figure 3 a/b),
the language distribution (Table 11), strata and relation counts, ℓq × gold-language."""

from __future__ import annotations

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from audit import browse, mixing, render
from pages import setup

result = setup("Mixing")
st.title("Language mixing")


@st.cache_data(show_spinner="Computing mixing statistics…", max_entries=4)
def stats(identity: str, _result) -> dict:
    return mixing.mixing(browse.descriptor_table(_result))


data = stats(result.identity, result)
rates = data["rates"].to_pandas()

st.subheader("Expected vs realised (Wilson 95% intervals; K_C with a t interval)")
group = st.selectbox("Per", sorted(set(rates["group"]), key=lambda g: g != mixing.ALL),
                     key="mixing_group")
shown = rates[rates["group"] == group]
measure = st.radio("Measure", list(mixing.MEASURES), horizontal=True, key="mixing_measure")
part = shown[shown["measure"] == measure]
figure = go.Figure()
labels = part["value"].map(render.chart_label)
figure.add_trace(go.Scatter(
    x=labels, y=part["realised"], mode="markers", name="realised",
    error_y=dict(type="data", symmetric=False, array=part["ci_high"] - part["realised"],
                 arrayminus=part["realised"] - part["ci_low"])))
figure.add_trace(go.Scatter(x=labels, y=part["expected"], mode="markers",
                            marker_symbol="x", name="expected"))
figure.update_layout(height=360, xaxis_title=group, yaxis_title=measure)
st.plotly_chart(figure)
st.dataframe(shown, hide_index=True)

st.subheader("Strata, script and pair relations")
counts = data["counts"].to_pandas()
facet = st.radio("Counts of", sorted(set(counts["facet"])), horizontal=True,
                 key="mixing_facet")
chosen = counts[counts["facet"] == facet]
st.plotly_chart(px.bar(chosen.assign(value=chosen["value"].map(render.chart_label)),
                       x="value", y="n", color="split", barmode="group",
                       height=340, labels={"n": "rows", "value": facet}))
st.dataframe(chosen, hide_index=True)

st.subheader("Language distribution (Table 11)")
st.dataframe(data["distribution"].to_pandas(), hide_index=True)

st.subheader("Question language × gold-paragraph language")
matrix = data["matrix"].to_pandas()
if len(matrix):
    pivot = matrix.pivot_table(index="question_language", columns="gold_language",
                               values="n", aggfunc="sum", fill_value=0)
    pivot.index = pivot.index.map(render.chart_label)
    pivot.columns = pivot.columns.map(render.chart_label)
    st.plotly_chart(px.imshow(pivot, aspect="auto", color_continuous_scale="Blues",
                              labels={"x": "gold language", "y": "question language",
                                      "color": "occurrences"}, height=640))
