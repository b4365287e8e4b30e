"""Instance: question and answer beside their English source, every candidate in release
order with language/script badges, gold paragraphs and supporting sentences marked,
translated and English sentences aligned by index, every finding at its sentence."""

from __future__ import annotations

import streamlit as st

from audit import browse, inspect, render
from pages import current_filters, html, say, setup

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
    say(st.caption, "Previous/next follow the Browse filter: {filter}", filter=", ".join(
        f"{k}={v}" for k, v in filters.to_query().items()))
st.query_params["row"] = str(row)
item = inspect.instance(result, row)


def evidence(findings: list[dict]) -> str | None:
    """What the first of these findings points at in its text (a changed number, a loop, a
    mangled stretch): highlighted where it occurs."""
    return next((f["evidence"] for f in findings if f["evidence"]), None)


def unit_findings(unit: str) -> list[dict]:
    """The row's findings about its question or answer (their detail names the unit)."""
    return [f for f in item["row_findings"] if f["detail"].startswith(f"{unit}:")]


def findings_html(findings: list[dict]) -> str:
    return "".join(render.badge(f"{f['check']}: {f['detail']}", f["severity"])
                   for f in findings)


STATUS_KIND = {"quarantined": "blocking", "review_required": "review", "accepted": "accepted"}
html(render.badge(item["status"], STATUS_KIND.get(item["status"], "info")),
     render.badge(f"shipped {item['shipped_status']}"), render.badge(item["question_type"]),
     render.badge(item["source_split"]), render.badge(item["id"]))
left, right = st.columns(2)
with left:
    html(render.strong("Question "), render.badge(item["question_language"]),
         render.paragraph(item["question"], item["question_language"],
                          evidence=evidence(unit_findings("question"))))
    html(render.strong("Answer "), render.badge(item["answer_language"]),
         render.paragraph(item["answer"], item["answer_language"],
                          evidence=evidence(unit_findings("answer"))))
with right:
    html(render.strong("English question "), render.badge("en"),
         render.paragraph(item["source_question"], "en"))
    html(render.strong("English answer "), render.badge("en"),
         render.paragraph(item["source_answer"], "en"))
if item["row_findings"]:
    html(findings_html(item["row_findings"]))
if item["unplaced_findings"]:
    html(render.strong("Findings at sentences no candidate has: "),
         findings_html(item["unplaced_findings"]))

for cand in item["candidates"]:
    st.divider()
    html(render.strong(cand["paragraph_id"]), " ", render.badge(cand["language_code"]),
         render.badge(cand["script"]), render.badge("gold", "gold") if cand["gold"] else "")
    title_l, title_r = st.columns(2)
    with title_l:
        html(render.paragraph(cand["title"], cand["language_code"], css="xt xt-title",
                              evidence=evidence(cand["findings"])))
    with title_r:
        html(render.paragraph(cand["source_title"], "en", css="xt xt-title"))
    if cand["findings"]:
        html(findings_html(cand["findings"]))
    for line in cand["lines"]:
        left, right = st.columns(2)
        mark = render.badge(f"{cand['paragraph_id']} · {line['index']}"
                            + (" ★ support" if line["support"] else ""),
                            "gold" if line["support"] else "")
        with left:
            html(mark, render.paragraph(line["text"], cand["language_code"],
                                        evidence=evidence(line["findings"])),
                 findings_html(line["findings"]))
        with right:
            html(render.paragraph(line["source"], "en"))
