"""Instance: question and answer beside their English source, every candidate in release
order with language/script badges, gold paragraphs and supporting sentences marked,
translated and English sentences aligned by index, every finding at its sentence."""

from __future__ import annotations

import streamlit as st

from audit import browse, inspect
from pages import badge, current_filters, setup, text_html

result = setup("Instance")
st.title("Instance")

rows = result.release.rows
try:
    row = int(st.query_params.get("row", 0))
except ValueError:
    row = 0
row = min(max(row, 0), rows - 1)
filters = current_filters()
# The URL is the source of truth: the widget follows it, and every move writes it back.
st.session_state["row_input"] = row


def go(target: int) -> None:
    st.query_params["row"] = str(target)
    st.session_state["row_input"] = target


chooser, prev_col, next_col = st.columns([4, 1, 1])
chooser.number_input("Release row", min_value=0, max_value=rows - 1, step=1, key="row_input",
                     on_change=lambda: go(int(st.session_state["row_input"])))
# Previous/next walk the rows of the current Browse filter.
before, after = browse.neighbours(result, filters, row)
prev_col.button("◀ previous", disabled=before is None, on_click=go, args=(before,))
next_col.button("next ▶", disabled=after is None, on_click=go, args=(after,))
if filters.to_query():
    st.caption("Previous/next follow the Browse filter: " + ", ".join(
        f"{k}={v}" for k, v in filters.to_query().items()))
st.query_params["row"] = str(row)
item = inspect.instance(result, row)


def findings_html(findings: list[dict]) -> str:
    return "".join(badge(f"{f['check']}: {f['detail']}", f["severity"]) for f in findings)


st.markdown(
    badge(item["status"], {"quarantined": "blocking", "review_required": "review"}.get(
        item["status"], "info"))
    + badge(f"shipped {item['shipped_status']}") + badge(item["question_type"] or "")
    + badge(item["source_split"]) + badge(item["id"]), unsafe_allow_html=True)
left, right = st.columns(2)
with left:
    st.markdown(f"**Question** {badge(item['question_language'])}", unsafe_allow_html=True)
    st.markdown(text_html(item["question"], item["question_language"]), unsafe_allow_html=True)
    st.markdown(f"**Answer** {badge(item['answer_language'])}", unsafe_allow_html=True)
    st.markdown(text_html(item["answer"], item["answer_language"]), unsafe_allow_html=True)
with right:
    st.markdown(f"**English question** {badge('en')}", unsafe_allow_html=True)
    st.markdown(text_html(item["source_question"], "en"), unsafe_allow_html=True)
    st.markdown(f"**English answer** {badge('en')}", unsafe_allow_html=True)
    st.markdown(text_html(item["source_answer"], "en"), unsafe_allow_html=True)
if item["row_findings"]:
    st.markdown(findings_html(item["row_findings"]), unsafe_allow_html=True)
if item["unplaced_findings"]:
    st.markdown("**Findings at sentences no candidate has:** "
                + findings_html(item["unplaced_findings"]), unsafe_allow_html=True)

for cand in item["candidates"]:
    header = (f"{cand['paragraph_id']} · {badge(cand['language_code'])}"
              f"{badge(cand['script'])}" + (badge("gold", "gold") if cand["gold"] else ""))
    st.markdown(f"#### {header}", unsafe_allow_html=True)
    title_l, title_r = st.columns(2)
    title_l.markdown("<b>" + text_html(cand["title"], cand["language_code"]) + "</b>",
                     unsafe_allow_html=True)
    title_r.markdown("<b>" + text_html(cand["source_title"], "en") + "</b>",
                     unsafe_allow_html=True)
    if cand["findings"]:
        st.markdown(findings_html(cand["findings"]), unsafe_allow_html=True)
    for line in cand["lines"]:
        left, right = st.columns(2)
        mark = badge(f"{cand['paragraph_id']} · {line['index']}"
                     + (" ★ support" if line["support"] else ""),
                     "gold" if line["support"] else "")
        left.markdown(mark + text_html(line["text"], cand["language_code"])
                      + findings_html(line["findings"]), unsafe_allow_html=True)
        right.markdown(text_html(line["source"], "en"), unsafe_allow_html=True)
