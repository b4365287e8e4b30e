"""Export: quarantine lists (CSV / JSONL / Parquet) for the whole release or the current
Browse filter, saved scans with their manifests, and comparisons of two scans."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit import export, inspect, readers, scan
from audit.errors import InputError
from audit.workspace import served_directory, served_files
from pages import filtered_rows, say, setup

result = setup("Export")
st.title("Export")

st.subheader("Quarantine list")
scope = st.radio("Rows", ["whole release", "current Browse filter"], horizontal=True,
                 key="scope")
statuses = st.multiselect("Statuses", list(scan.STATUS_ORDER[:2]) + ["accepted"],
                          default=list(scan.STATUS_ORDER[:2]), key="statuses")
rows = filtered_rows(result) if scope == "current Browse filter" else None
table = export.quarantine(result.findings, result.status, tuple(statuses), rows)
st.write(f"{table.num_rows:,} reasons on {len(set(table.column('row').to_pylist())):,} rows.")
st.dataframe(table.slice(0, 1000).to_pandas(), hide_index=True)
name = result.summary["release"]
cols = st.columns(3)
for col, fmt, mime in zip(cols, export.QUARANTINE_FORMATS,
                          ("text/csv", "application/x-ndjson", "application/octet-stream")):
    col.download_button(f"Download {fmt.upper()}", export.to_bytes(table, fmt),
                        file_name=f"{name}-quarantine.{fmt}", mime=mime, key=f"dl-{fmt}")

st.subheader("Saved scans")
if st.button("Save this scan (findings, status, summary, manifest)"):
    saved = export.write_scan(result)
    say(st.success, "Saved to {path}", path=saved)
history = export.scan_history(name)
if history:
    st.dataframe(history, hide_index=True)
    chosen = st.selectbox("Manifest of", [h["directory"] for h in history], key="manifest_of")
    manifest = (Path(chosen) / "manifest.json").read_text(encoding="utf-8")
    st.download_button("Download manifest.json", manifest, file_name="manifest.json",
                       mime="application/json")
    with st.expander("Manifest"):
        st.code(manifest, language="json")
else:
    st.caption("No saved scan of this release yet.")

st.subheader("Compare with another scan or release")
st.caption("Joined on (source_id, split): rows whose status changed, checks gained or lost.")
other = st.text_input("A saved scan directory or another release path", key="compare_with")
if other.strip():
    try:
        if (Path(other.strip()) / "summary.json").is_file():
            other_findings, other_status, _ = export.load_scan(served_directory(other))
        else:
            theirs = scan.run(readers.open_release(other.strip(),
                                                   files=served_files(other)))
            other_findings, other_status = theirs.findings, theirs.status
    except InputError as error:
        say(st.error, "Cannot compare: {problem}", problem=error)
    else:
        diff = inspect.compare((other_status, other_findings), (result.status, result.findings))
        st.write(f"{diff.num_rows:,} rows differ (before = the other one, after = this one).")
        st.dataframe(diff.slice(0, 1000).to_pandas(), hide_index=True)
        st.download_button("Download comparison CSV", export.to_bytes(diff, "csv"),
                           file_name=f"{name}-comparison.csv", mime="text/csv")
