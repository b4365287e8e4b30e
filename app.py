"""XHotpotQA audit workbench — Overview. Run with `streamlit run app.py`."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from audit import registry
from audit.errors import InputError
from audit.scan import status_disagreements
from audit.workspace import scan_release

st.set_page_config(page_title="XHotpotQA audit", layout="wide")


@st.cache_resource(show_spinner="Scanning the release…")
def cached_scan(path: str | None):
    return scan_release(path or None)


st.title("Release overview")
path = st.text_input("Release (Parquet file, directory of shards, glob or JSONL)",
                     placeholder="empty = the bundled demo release")
try:
    result = cached_scan(path.strip() or None)
except InputError as error:
    st.error(f"Cannot open this release: {error}")
    st.stop()

summary = result.summary
st.caption(f"{summary['release']} · {summary['layout']} layout · {summary['rows']:,} rows · "
           f"scan took {summary['seconds']['total']:.1f} s")
cols = st.columns(4)
cols[0].metric("Rows", f"{summary['rows']:,}")
for col, status in zip(cols[1:], ("accepted", "review_required", "quarantined")):
    col.metric(status.replace("_", " "), f"{summary['status_counts'].get(status, 0):,}")

st.subheader("Rows per split")
st.dataframe([{"split": k, "rows": v} for k, v in summary["rows_per_split"].items()],
             hide_index=True)

st.subheader("Findings by check")
rows = [{"check": name, "severity": result.policy.severity(name),
         "origin": registry.BY_NAME[name].origin, "findings": count,
         "rows": summary["rows_per_check"].get(name, 0)}
        for name, count in summary["check_counts"].items()]
if rows:
    st.plotly_chart(px.bar(rows, x="findings", y="check", color="severity", orientation="h",
                           hover_data=["origin", "rows"], height=40 + 24 * len(rows)))
    st.dataframe(rows, hide_index=True)
else:
    st.success("No findings.")

st.subheader("Shipped vs derived status")
disagree = status_disagreements(result)
st.write(f"{disagree.num_rows:,} rows where the shipped status differs from the derived one "
         "(the derived status also counts the checks the reference lacks).")
if disagree.num_rows:
    st.dataframe(disagree.slice(0, 500).to_pylist(), hide_index=True)
