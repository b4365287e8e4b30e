"""XHotpotQA audit workbench — Overview. Run with `streamlit run app.py`."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from audit.engine import store
from audit.analysis import queries
from audit.reports.render import plural
from audit.engine.scan import status_disagreements
from workbench.shell import no_source_notice, orientation, say, scope_line, setup

SEVERITY_COLOURS = {"blocking": "#c0392b", "review": "#e69b22", "info": "#8fb3de"}

result = setup("Overview", "Release overview")
summary = result.summary
scope_line(result, filtered=False)
orientation(result)
no_source_notice(result)
cols = st.columns(4)
cols[0].metric("Rows", f"{summary['rows']:,}")
for col, status in zip(cols[1:], ("accepted", "review_required", "quarantined")):
    col.metric(status.replace("_", " "), f"{summary['status_counts'].get(status, 0):,}")

left, right = st.columns(2)
with left:
    st.subheader("Rows per split")
    st.dataframe([{"split": k, "rows": v} for k, v in summary["rows_per_split"].items()],
                 hide_index=True)
with right:
    st.subheader("Shipped status")
    st.dataframe([{"status": k, "rows": v} for k, v in summary["shipped_status_counts"].items()],
                 hide_index=True)

st.subheader("Findings by check")
by_check = queries.findings_by_check(result).to_pylist()
if by_check:
    # The same colour for a severity in every release: blocking strongest.
    st.plotly_chart(px.bar(by_check, x="findings", y="check", color="severity",
                           color_discrete_map=SEVERITY_COLOURS,
                           category_orders={"severity": list(SEVERITY_COLOURS)},
                           pattern_shape="origin", orientation="h", log_x=True,
                           hover_data=["origin", "rows", "share_pct", "categories"],
                           height=120 + 22 * len(by_check)))
else:
    st.success("No findings.")
if summary["checks_from_shipped_flags"]:
    say(st.caption, "Taken from the shipped flags (this layout or input cannot show them): "
                    "{checks}", checks=", ".join(summary["checks_from_shipped_flags"]))

st.subheader("Shipped vs derived status")
disagree = status_disagreements(result)
st.write(f"{plural(disagree.num_rows, 'row')} where the shipped status differs from the derived "
         "one "
         "(the derived status also counts the checks the reference lacks).")
if disagree.num_rows:
    st.dataframe(disagree.slice(0, 500).to_pandas(), hide_index=True)

st.subheader("Scan history")
history = store.scan_history(result.release)
if history:
    st.dataframe(history, hide_index=True)
else:
    st.caption("No saved scan of this release yet — save one on the Export page.")

with st.expander("Manifest summary"):
    st.json({k: summary[k] for k in ("policy", "registry_fingerprint", "sources",
                                     "checks_skipped", "seconds")})
