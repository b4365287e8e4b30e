"""Export: quarantine lists (CSV / JSONL / Parquet) for the whole release or the current
Browse filter, saved scans with their manifests, and the way to the Compare page."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit.engine import staged, store
from audit.io import tables
from audit.paths import safe_name
from audit.reports import quarantine
from audit.reports.render import plural
from workbench import auth
from workbench.shell import (
    current_view,
    filtered_rows,
    follow_url,
    release_name,
    say,
    scope_line,
    setup,
    show_table,
)

result = setup("Export")
view = current_view()
# A partial scan (the slow checks still running) is shown but never exported: the buttons
# stay off until the full scan is in, and the page reruns by itself then.
lacking = staged.pending(result)
WAITING = (f"Off until the full scan is in: {plural(len(lacking), 'check')} still running."
           if lacking else None)
filtered = bool(view.filters.to_query())
top = st.container()    # the scope line, once the Rows choice below is known

st.subheader("Quarantine list")
if lacking:
    st.warning(f"**Not exportable yet.** The list below is partial: it lacks the findings "
               f"of the {plural(len(lacking), 'check')} still running (named above). "
               "Downloading and saving turn on by themselves once the full scan is in.")
SCOPES = {"filter": "rows under the current Browse filter", "release": "the whole release"}
STATUSES = ("quarantined", "review_required", "accepted")


def _write(name: str, key: str) -> None:
    value = st.session_state[key]
    st.query_params[name] = ",".join(value) if isinstance(value, list) else value


wanted_scope = st.query_params.get("scope")
follow_url("export_scope", wanted_scope if wanted_scope in SCOPES
           else "filter" if filtered else "release")
scope = st.radio("Rows", list(SCOPES), format_func=SCOPES.get, horizontal=True,
                 key="export_scope", on_change=_write, args=("scope", "export_scope"))
wanted_statuses = [s for s in str(st.query_params.get("statuses", "")).split(",")
                   if s in STATUSES] or list(STATUSES[:2])
follow_url("export_statuses", wanted_statuses)
statuses = st.multiselect("Statuses", list(STATUSES), key="export_statuses",
                          on_change=_write, args=("statuses", "export_statuses"))
# The scope line follows the Rows choice: the filter applies unless the whole release is asked.
with top:
    scope_line(result, filtered=scope == "filter" or not filtered,
               unfiltered="Rows is set to the whole release: the Browse filter, "
                          f"{view.describe_filter()}, is not applied")
rows = filtered_rows(result) if scope == "filter" else None
table = quarantine.quarantine(result.findings, result.status, tuple(statuses), rows)
name = safe_name(result.summary["release"])
described = view.describe_filter() if scope == "filter" else "whole release"
holds = "So far (partial scan), the list holds" if lacking else "The download holds"
say(st.info, f"{holds} {plural(table.num_rows, 'reason')} on "
             f"{plural(len(set(table.column('row').to_pylist())), 'row')} of "
             "{release} ({scope}; statuses {statuses}).",
    release=release_name(result), scope=described, statuses=", ".join(statuses))
show_table(table.slice(0, 1000).to_pandas())
cols = st.columns(3)
for col, fmt, mime in zip(cols, tables.QUARANTINE_FORMATS,
                          ("text/csv", "application/x-ndjson", "application/octet-stream")):
    # Built when clicked, not on every visit.
    col.download_button(f"Download {fmt.upper()}",
                        lambda fmt=fmt, table=table: tables.to_bytes(table, fmt),
                        file_name=f"{name}-quarantine.{fmt}", mime=mime, key=f"dl-{fmt}",
                        on_click="ignore", disabled=bool(lacking), help=WAITING)
if lacking:
    st.caption(WAITING)

st.subheader("Saved scans")
if auth.gate("Saving a scan") and \
        st.button("Save this scan (findings, status, summary, manifest)",
                  disabled=bool(lacking), help=WAITING):
    auth.require("Saving a scan")
    # The same inputs, policy and checks are one saved scan, not a second identical copy.
    already = store.saved_scan(result.release, result.identity)
    if already is not None:
        say(st.info, "Already saved: this scan (same files, sources, policy and checks) is "
                     "at {path}", path=already)
    else:
        say(st.success, "Saved to {path}", path=store.write_scan(result))
history = store.scan_history(result.release)
readable = [h["directory"] for h in history if not h.get("problem")]
if history:
    show_table(history)
if readable:
    chosen = st.selectbox("Manifest of", readable, key="manifest_of")
    manifest = (Path(chosen) / "manifest.json").read_text(encoding="utf-8")
    st.download_button("Download manifest.json", manifest, file_name="manifest.json",
                       mime="application/json")
    with st.expander("Manifest"):
        st.code(manifest, language="json")
elif not history:
    st.caption("No saved scan of this release yet.")

st.subheader("Compare with an earlier release")
st.page_link("pages/5_Compare.py", label="Compare this release with an earlier version, unit "
             "by unit, and run the acceptance gate", query_params=view.to_query())
