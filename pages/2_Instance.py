"""Instance: question and answer beside their English source, every candidate in release
order with language/script badges, gold paragraphs and supporting sentences marked,
translated and English sentences aligned by index, every finding at its sentence."""

from __future__ import annotations

import streamlit as st

from audit.analysis import browse, queries
from audit.reports import render
from workbench.shell import current_view, follow_url, html, int_param, say, scope_line, setup

result = setup("Instance")
view = current_view()
filters = view.filters
rows = result.release.rows
matching = browse.matching_rows(result, filters)
# No row in the URL: the first row of the filter.
row = int_param("row", matching[0] if matching else 0, 0, rows - 1, "row")
position = matching.index(row) + 1 if row in matching else None
scope_line(result, len(matching))


def go(target: int) -> None:
    st.query_params["row"] = str(target)


follow_url("row_input", row)
chooser, prev_col, next_col, back_col = st.columns([3, 1, 1, 1])
chooser.number_input("Release row", min_value=0, max_value=rows - 1, step=1, key="row_input",
                     on_change=lambda: go(int(st.session_state["row_input"])))
# Previous/next walk the rows of the current Browse filter.
before, after = browse.neighbours(result, filters, row)
prev_col.button("◀ previous", disabled=before is None, on_click=go, args=(before,))
next_col.button("next ▶", disabled=after is None, on_click=go, args=(after,))
with back_col:
    st.page_link("pages/1_Browse.py", label="back to Browse", query_params=view.to_query())
if position is not None:
    st.caption(f"Row {row}: {position:,} of {len(matching):,} under the filter; previous and "
               "next follow it.")
else:
    say(st.warning, "Row {row} is outside the current filter ({filter}); previous and next "
                    "go to the nearest rows that match it.",
        row=str(row), filter=view.describe_filter())
st.query_params["row"] = str(row)


def evidence(findings: list[dict], key: str = "evidence") -> tuple[str, ...]:
    """What these findings point at in the translated text (a changed number, a loop, a
    mangled stretch, the best match of a lost answer), or with key="source_evidence" in the
    English one (the answer or entity looked for): highlighted where it occurs."""
    return tuple(dict.fromkeys(f[key] for f in findings if f.get(key)))


def unit_findings(unit: str) -> list[dict]:
    """The row's findings on its question or answer."""
    return [f for f in item["row_findings"] if f.get("unit") == unit]


STATUS_KIND = {"quarantined": "blocking", "review_required": "review", "accepted": "accepted"}


def findings_html(findings: list[dict]) -> str:
    return "".join(render.badge(f"{f['check']}: {f['detail']}", f["severity"])
                   for f in findings)


SEVERITIES = ("blocking", "review", "info")


def summary(placed: list[tuple[dict, str, str]]) -> None:
    """The row's findings at the top, worst first, each a link to where it sits: (finding,
    where in words, anchor). Info notes fold under one line."""
    by = {kind: [p for p in placed if p[0]["severity"] == kind] for kind in SEVERITIES}
    counts = " · ".join(f"{len(by[k])} {k}" for k in SEVERITIES if by[k]) or "none"
    links = {k: [render.jump(f"{f['check']} · {where}", name, k) for f, where, name in by[k]]
             for k in SEVERITIES}
    html(render.strong(f"Findings: {counts}"), " ", *links["blocking"], *links["review"],
         render.more(render.plural(len(by["info"]), "info note"), *links["info"])
         if by["info"] else "")


if result.release.layout.has("aligned"):
    # A mapped benchmark: the item's source beside its every language, column by column.
    item = queries.across_languages(result, row)
    html(render.strong("Item "), render.badge(item["id"]),
         render.text(f" · {len(item['rows'])} languages beside the source "
                     f"({item['source_language']})"))
    names = {column["name"]: f"at-col{k}" for k, column in enumerate(item["columns"])}
    summary([(f, f"{r['language']} {unit or 'row'}", names.get(unit, "at-top"))
             for r in item["rows"] for unit, found in r["findings"].items() for f in found])
    html(render.anchor("at-top"))
    for r in item["rows"]:
        if None in r["findings"]:
            html(render.badge(r["language"]), findings_html(r["findings"][None]))
    for column in item["columns"]:
        st.divider()
        html(render.anchor(names[column["name"]]), render.strong(column["name"]), " ",
             render.badge(column["role"]))
        lines = [[render.badge(item["source_language"]), render.text("source"),
                  render.paragraph(item["source"][column["name"]], item["source_language"]),
                  ""]]
        for r in item["rows"]:
            on_unit = r["findings"].get(column["name"], [])
            here = render.strong(r["language"]) if r["row"] == row else render.text(
                r["language"])
            lines.append([
                here, render.badge(r["status"], STATUS_KIND.get(r["status"], "info")),
                render.missing("(no row in this language)") if r["missing"]
                else render.paragraph(r["values"][column["name"]] or "", r["language"],
                                      evidence=evidence(on_unit)),
                findings_html(on_unit)])
        html(render.table(["language", "status", "text", "findings"], lines))
    st.stop()
item = queries.instance(result, row)
html(render.badge(item["status"], STATUS_KIND.get(item["status"], "info")),
     render.badge(f"shipped {item['shipped_status']}"), render.badge(item["question_type"]),
     render.badge(item["source_split"]), render.badge(item["id"]))
summary([(f, f["unit"] or "row", "at-top") for f in item["row_findings"]]
        + [(f, f"{c['paragraph_id']} title" if f["sentence_index"] is None
            else f"{c['paragraph_id']} · {f['sentence_index']}",
            f"at-c{k}" if f["sentence_index"] is None else f"at-c{k}-{f['sentence_index']}")
           for k, c in enumerate(item["candidates"])
           for f in c["findings"] + [g for line in c["lines"] for g in line["findings"]]]
        + [(f, f"{f['paragraph_id']} · {f['sentence_index']} (no such candidate)", "at-top")
           for f in item["unplaced_findings"]])
html(render.anchor("at-top"))
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

for k, cand in enumerate(item["candidates"]):
    st.divider()
    html(render.anchor(f"at-c{k}"), render.strong(cand["paragraph_id"]), " ",
         render.badge(cand["language_code"]),
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
            html(render.anchor(f"at-c{k}-{line['index']}"), mark,
                 render.paragraph(line["text"], cand["language_code"],
                                  evidence=evidence(line["findings"])),
                 findings_html(line["findings"]))
        with right:
            html(render.paragraph(render.source_sentence(line["source"]), "en",
                                  evidence=evidence(line["findings"], "source_evidence")))
