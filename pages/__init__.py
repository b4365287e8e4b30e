"""Shared set-up called at the top of every page (so a deep link to any page gets the same
page config, release and filters as navigating there), plus safe text rendering.

Outside text (release fields, paths, URL parameters, exports) is untrusted: pages show it only
through `html` (fragments from `audit.render`), `say` (Streamlit's boxes with each value
verbatim), or as data in tables and charts; never as Markdown of their own.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import streamlit as st

from audit import browse, render
from audit.errors import InputError
from audit.outputs import staged_file
from audit.scan import ScanResult
from audit.workspace import UPLOADS, scan_release, served_files, stamp


def html(*fragments: str) -> None:
    """Show fragments built by `audit.render` (the only HTML a page may show)."""
    st.markdown(render.block(*fragments), unsafe_allow_html=True)


def say(box, template: str, **values: object) -> None:
    """One of Streamlit's boxes (st.error, st.info, st.caption…) with our wording and
    every outside value shown verbatim: say(st.error, "Cannot open {path}", path=p)."""
    box(render.message(template, **values))


@st.cache_resource(show_spinner="Scanning the release…", max_entries=4)
def _scan(path: str | None, stamp: tuple) -> ScanResult:
    """One scan (with its browse index) per release and file state; every page and session
    shares it. `stamp` (the files' paths, times and sizes) makes a changed file, or a glob
    that now matches more files, a new entry."""
    files = [Path(f) for f, _, _ in stamp] if path else None
    result = scan_release(path, files=files)
    browse.build_index(result)
    return result


def _save_upload(upload) -> str:
    """Keep an uploaded release under the upload area, named by its content hash (the
    uploaded name is never used as a path)."""
    data = upload.getvalue()
    suffix = ".jsonl" if Path(upload.name).suffix.lower() == ".jsonl" else ".parquet"
    target = UPLOADS / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not target.exists():
        UPLOADS.mkdir(parents=True, exist_ok=True)
        with staged_file(target) as staging:
            staging.write_bytes(data)
    return str(target)


def release_picker() -> str | None:
    """The release in the URL (`?release=PATH`), chosen in the sidebar; None = the demo."""
    current = st.query_params.get("release") or None
    with st.sidebar:
        st.markdown("**Release**")
        typed = st.text_input("Path, directory of shards or glob", value=current or "",
                              placeholder="empty = bundled demo release", key="release_path")
        upload = st.file_uploader("…or upload a Parquet / JSONL file",
                                  type=["parquet", "jsonl"], key="release_upload")
    chosen = _save_upload(upload) if upload is not None else (typed.strip() or None)
    if chosen != current:
        if chosen:
            st.query_params["release"] = chosen
        else:
            st.query_params.pop("release", None)
    return chosen


def setup(title: str) -> ScanResult:
    """Page config, release picker and the cached scan; stops the page with an error box
    when the release cannot be served or read."""
    st.set_page_config(page_title=f"{title} · XHotpotQA audit", layout="wide")
    st.markdown(render.CSS, unsafe_allow_html=True)
    path = release_picker()
    try:
        result = _scan(path, stamp(served_files(path)) if path else ())
    except InputError as error:
        st.title(title)
        say(st.error, "Cannot open this release: {problem}", problem=error)
        st.stop()
    say(st.sidebar.caption, "{release} · {layout} · {rows} rows",
        release=result.summary["release"], layout=result.summary["layout"],
        rows=f"{result.summary['rows']:,}")
    return result


def int_param(name: str, default: int, low: int, high: int) -> int:
    """An integer URL parameter clamped to [low, high]; anything else is the default."""
    raw = str(st.query_params.get(name, "")).strip()
    value = int(raw) if re.fullmatch(r"-?[0-9]{1,18}", raw) else default
    return min(max(value, low), high)


def current_filters() -> browse.Filters:
    """The Browse selection carried in the URL, so every page sees the same filter."""
    return browse.Filters.from_query(st.query_params.to_dict())


def filtered_rows(result: ScanResult) -> list[int]:
    return browse.matching_rows(result, current_filters())
