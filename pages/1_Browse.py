"""Browse: facets over the language vector with counts under the current filter, a paged
result table, and the whole selection in the URL so a view can be shared and reloaded."""

from __future__ import annotations

import streamlit as st

from audit import browse
from pages import current_filters, int_param, say, setup

result = setup("Browse")
st.title("Browse")

filters = current_filters()
page_no = int_param("page", 0, 0, result.release.rows // browse.PAGE_SIZE)
try:
    page = browse.search(result, filters, page_no)
    last = max((page.total - 1) // browse.PAGE_SIZE, 0)
    if page_no > last:      # past the end of this filter's results: show its last page
        page_no = last
        page = browse.search(result, filters, page_no)
except browse.QueryTimeout as error:
    say(st.warning, "This view is too slow to compute: {problem}", problem=error)
    st.stop()

LABELS = {"split": "Split", "question_language": "Question language ℓq",
          "gold_language": "Gold-paragraph languages", "distractor_language":
          "Distractor languages", "stratum": "Stratum", "script_relation": "Script relation",
          "role_condition": "Role condition", "pair_relation": "Gold pair relation",
          "question_type": "Question type", "status": "Status (derived)",
          "check": "Check fired"}
chosen: dict[str, list[str]] = {}
with st.sidebar:
    st.markdown("**Filters** — counts under the other filters")
    for name, label in LABELS.items():
        counts = dict(page.facets[name])
        current = getattr(filters, name)
        options = sorted(set(counts) | set(current), key=lambda v: (-counts.get(v, 0), v))
        chosen[name] = st.multiselect(
            label, options, default=current, key=f"facet_{name}",
            format_func=lambda v, counts=counts: f"{v} ({counts.get(v, 0):,})")
        if name == "gold_language":
            mode = st.radio("Gold languages match", ["any", "all"], horizontal=True,
                            index=1 if filters.gold_mode == "all" else 0, key="gold_mode")
    k_c = st.slider("K_C (distinct candidate languages)", 1, 24,
                    (filters.k_c_min or 1, filters.k_c_max or 24), key="k_c")

wanted = browse.Filters(**chosen, gold_mode=mode,
                        k_c_min=k_c[0] if k_c[0] > 1 else None,
                        k_c_max=k_c[1] if k_c[1] < 24 else None)
if wanted != filters:
    keep = {k: v for k, v in st.query_params.to_dict().items()
            if k not in browse.FILTER_KEYS and k != "page"}
    st.query_params.from_dict({**keep, **wanted.to_query()})
    st.rerun()

pages = max((page.total - 1) // browse.PAGE_SIZE + 1, 1)
st.write(f"**{page.total:,}** of {result.release.rows:,} rows match · page {page_no + 1} "
         f"of {pages} · {page.seconds * 1000:.0f} ms")
left, right, _ = st.columns([1, 1, 6])
if left.button("◀ previous page", disabled=page_no == 0):
    st.query_params["page"] = str(page_no - 1)
    st.rerun()
if right.button("next page ▶", disabled=page_no >= pages - 1):
    st.query_params["page"] = str(page_no + 1)
    st.rerun()

table = page.rows.to_pandas()
picked = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row",
                      key="results", column_config={
                          "question": st.column_config.TextColumn(width="large"),
                          "row": st.column_config.NumberColumn(format="%d")})
if picked.selection.rows:
    st.query_params["row"] = str(int(table.iloc[picked.selection.rows[0]]["row"]))
    st.switch_page("pages/2_Instance.py", query_params=st.query_params.to_dict())
