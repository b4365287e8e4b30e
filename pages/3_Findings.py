"""Findings: one row per check, drill-down to example instances, language × check heatmap,
exact-copy categories."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from audit import inspect, render
from pages import say, setup

result = setup("Findings")
st.title("Findings")

by_check = inspect.findings_by_check(result)
if by_check.num_rows == 0:
    st.success("No check fired on this release.")
    st.stop()
st.dataframe(by_check.to_pandas(), hide_index=True, column_config={
    "share_pct": st.column_config.NumberColumn("share of rows %", format="%.2f")})

checks = by_check.column("check").to_pylist()
default = st.query_params.get("check")
check = st.selectbox("Examples of", checks,
                     index=checks.index(default) if default in checks else 0, key="check")
st.query_params["check"] = check
examples = inspect.examples(result, check).to_pandas()
say(st.caption, "First {n} findings of {check}; open one on the Instance page.",
    n=len(examples), check=check)
picked = st.dataframe(examples, hide_index=True, on_select="rerun",
                      selection_mode="single-row", key="examples")
if picked.selection.rows:
    row = int(examples.iloc[picked.selection.rows[0]]["row"])
    st.query_params["row"] = str(row)
    st.switch_page("pages/2_Instance.py", query_params=dict(st.query_params))

st.subheader("Findings by unit language and check")
matrix = inspect.language_check_counts(result).to_pandas()
if len(matrix):
    pivot = matrix.pivot_table(index="check", columns="language", values="findings",
                               fill_value=0)
    pivot.columns = pivot.columns.map(render.chart_label)
    st.plotly_chart(px.imshow(pivot, aspect="auto", color_continuous_scale="Reds",
                              labels={"color": "findings"}, height=120 + 24 * len(pivot)))

st.subheader("Exact source copies by category")
st.caption("Numbers, punctuation and name-like strings legitimately stay as they are; "
           "an ordinary copied sentence does not.")
st.dataframe(inspect.copy_categories(result).to_pandas(), hide_index=True)
