"""Shared set-up called at the top of every page (so a deep link to any page gets the same
page config, release and filters as navigating there), plus safe text rendering.

Dataset text is untrusted: it is only ever shown through `text_html`, which escapes it, or
through Streamlit's own text elements; never as Markdown.
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path

import streamlit as st

from audit import browse
from audit.errors import InputError
from audit.languages import RTL_CODES
from audit.outputs import REPO
from audit.scan import ScanResult
from audit.workspace import scan_release

UPLOADS = REPO / "data" / "uploads"
# HTML's specials plus every character Markdown or Streamlit's math could interpret.
_ESCAPES = {ord(ch): f"&#{ord(ch)};" for ch in "&<>\"'\\`*_{}[]()#+-.!|~$:"}
CSS = """
<style>
.xt { white-space: pre-wrap; unicode-bidi: plaintext; }
.xt-rtl { direction: rtl; text-align: right; }
.badge { display: inline-block; padding: 0 .45em; margin-right: .3em; border-radius: .4em;
         font-size: .8em; background: #e8eaf0; }
.badge-gold { background: #ffe08a; } .badge-blocking { background: #f7b1ab; }
.badge-review { background: #fde2a7; } .badge-info { background: #d7e8fb; }
.missing { color: #a33; font-style: italic; }
</style>
"""


def escape(text: str) -> str:
    """HTML-escape, and turn every character Markdown or Streamlit's math would interpret
    into a numeric entity, so the text shows literally inside st.markdown."""
    return text.translate(_ESCAPES)


def text_html(text: str | None, language: str | None = None, css: str = "xt") -> str:
    """Escaped HTML for one dataset string, right-to-left where the language is."""
    if text is None:
        return '<span class="missing">(no sentence)</span>'
    rtl = " xt-rtl" if language in RTL_CODES else ""
    lang = f' lang="{html.escape(language)}"' if language else ""
    return f'<div class="{css}{rtl}"{lang} dir="auto">{escape(text)}</div>'


def badge(label: str, kind: str = "") -> str:
    return f'<span class="badge badge-{kind}">{escape(label)}</span>'


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
    st.markdown(CSS, unsafe_allow_html=True)
    path = release_picker()
    try:
        result = _scan(path, _stamp(path))
    except InputError as error:
        st.title(title)
        st.error(f"Cannot open this release — {error}")
        st.stop()
    st.sidebar.caption(f"{result.summary['release']} · {result.summary['layout']} · "
                       f"{result.summary['rows']:,} rows")
    return result


def current_filters() -> browse.Filters:
    """The Browse selection carried in the URL, so every page sees the same filter."""
    return browse.Filters.from_query(st.query_params.to_dict())


def filtered_rows(result: ScanResult) -> list[int]:
    return browse.matching_rows(result, current_filters())
