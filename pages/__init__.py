"""Shared set-up called at the top of every page (so a deep link to any page gets the same
page config, release and filters as navigating there), plus safe text rendering.

Outside text (release fields, paths, URL parameters, exports) is untrusted: pages show it only
through `html` (fragments from `audit.render`), `say` (Streamlit's boxes with each value
verbatim), or as data in tables and charts; never as Markdown of their own.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

from audit import browse, render
from audit.errors import InputError
from audit.outputs import REPO
from audit.scan import ScanResult
from audit.workspace import scan_release

UPLOADS = REPO / "data" / "uploads"


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
    shares it."""
    result = scan_release(path)
    browse.build_index(result)
    return result


def _stamp(path: str | None) -> tuple:
    if not path:
        return ()
    target = Path(path)
    files = [target] if target.is_file() else sorted(target.glob("**/*")) if target.is_dir() \
        else []
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file())


def _save_upload(upload) -> str:
    """Keep an uploaded release under data/uploads, named by its content hash."""
    data = upload.getvalue()
    suffix = Path(upload.name).suffix.lower()
    target = UPLOADS / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not target.exists():
        UPLOADS.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.rename(target)
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
    when the release cannot be read."""
    st.set_page_config(page_title=f"{title} · XHotpotQA audit", layout="wide")
    st.markdown(render.CSS, unsafe_allow_html=True)
    path = release_picker()
    try:
        result = _scan(path, _stamp(path))
    except InputError as error:
        st.title(title)
        say(st.error, "Cannot open this release: {problem}", problem=error)
        st.stop()
    st.sidebar.caption(f"{result.summary['release']} · {result.summary['layout']} · "
                       f"{result.summary['rows']:,} rows")
    return result


def current_filters() -> browse.Filters:
    """The Browse selection carried in the URL, so every page sees the same filter."""
    return browse.Filters.from_query(st.query_params.to_dict())


def filtered_rows(result: ScanResult) -> list[int]:
    return browse.matching_rows(result, current_filters())
