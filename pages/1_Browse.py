"""Browse: facets over the language vector with counts under the other filters, a paged
result table whose ids open the instance, and the whole selection in the URL. A release
without a language vector (a mapped benchmark) is browsed by language, unit, check and
status."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from audit.analysis import browse
from audit.analysis.browse import Filters
from audit.reports import render
from workbench.shell import (
    current_view,
    follow_url,
    html,
    int_param,
    say,
    scope_line,
    setup,
    url_corrected,
)

result = setup("Browse")
view = current_view()
filters = view.filters

LABELS = {"status": "Status (derived)", "check": "Check holding the row",
          "question_language": "Question language ℓq", "gold_language": "Gold-paragraph languages",
          "distractor_language": "Distractor languages", "stratum": "Stratum",
          "script_relation": "Script relation", "role_condition": "Role condition",
          "pair_relation": "Gold pair relation", "question_type": "Question type",
          "split": "Split", "unit": "Unit with a finding", "note": "Info note only",
          "structural_status": "Status by structural rules alone"}
# A mapped release's rows are (item, language): no vector, no split.
VECTOR = browse.has_vector(result)
if not VECTOR:
    LABELS = {"language": "Language", "unit": "Unit with a finding (column)",
              "check": "Check holding the row", "status": "Status (derived)",
              "note": "Info note only"}
SHOWN = 8     # facet values shown before "… and N more"
STATUS_KIND = {"quarantined": "blocking", "review_required": "review", "accepted": "accepted"}

# `page` in the URL counts from 1, as the caption does.
page_no = int_param("page", 1, 1, result.release.rows // browse.PAGE_SIZE + 1, "page") - 1
try:
    page = browse.search(result, filters, page_no)
    last = max((page.total - 1) // browse.PAGE_SIZE, 0)
    if page_no > last:      # past the end of this filter's results: show its last page
        url_corrected("page", page_no + 1, f"is past this filter's last page; showing page "
                                           f"{last + 1}")
        page_no = last
        page = browse.search(result, filters, page_no)
except browse.QueryTimeout as error:
    say(st.warning, "This view is too slow to compute: {problem}", problem=error)
    st.stop()
view = replace(view, page=page_no + 1)     # the page shown, corrected, is the view's
st.query_params.from_dict(view.to_query())
scope_line(result, page.total)


# ------------------------------------------------------------ the filter (chips, widgets)

def _write_filter(name: str) -> None:
    """A facet widget changed: its value goes to the URL, the other filters stay."""
    value = st.session_state[f"facet_{name}"]
    current = current_view()
    if name == "gold_mode":
        changed = Filters.from_query({**current.filters.to_query(), "gold_mode": value})
    elif name == "k_c":
        low, high = value
        changed = Filters.from_query({**current.filters.to_query(),
                                      "k_c_min": str(low) if low > 1 else "",
                                      "k_c_max": str(high) if high < 24 else ""})
    else:
        changed = Filters.from_query({**current.filters.to_query(), name: ",".join(value)})
    st.query_params.from_dict(current.with_filters(changed).to_query())   # page → first


def _toggled(name: str, value: str) -> str:
    """The link to this view with `value` of facet `name` added, or removed if chosen."""
    chosen = list(getattr(filters, name))
    chosen = [v for v in chosen if v != value] if value in chosen else chosen + [value]
    changed = Filters.from_query({**filters.to_query(), name: ",".join(chosen)})
    return view.with_filters(changed).href("Browse")


def _chips() -> None:
    """The active filter, each value a chip that removes it, and one that clears all."""
    chips = [render.chip(f"{LABELS.get(name, name)}: {value}", _toggled(name, value))
             for name in LABELS for value in getattr(filters, name)]
    if filters.k_c_min is not None or filters.k_c_max is not None:
        without = Filters.from_query({**filters.to_query(), "k_c_min": "", "k_c_max": ""})
        chips.append(render.chip(f"K_C {filters.k_c_min or 1}–{filters.k_c_max or 24}",
                                 view.with_filters(without).href("Browse")))
    if chips:
        chips.append(render.chip("clear every filter",
                                 view.with_filters(Filters()).href("Browse"), clear=True))
        html(render.strong("Filter: "), *chips)


# Several values at once, and K_C: the facet widgets, built by the browser only when the
# popover opens (which keeps Browse's first render under a second for three users at once).
# Above the chips: a pick that adds a chip must not move the open popover's button.
with st.popover("Choose several filters at once…"):
    for name, label in LABELS.items():
        counts = dict(page.facets[name])
        chosen = getattr(filters, name)
        # A fixed order (by value), so the options do not move as counts change.
        options = sorted(set(counts) | set(chosen))
        follow_url(f"facet_{name}", list(chosen))
        st.multiselect(label, options, key=f"facet_{name}", on_change=_write_filter,
                       args=(name,), format_func=lambda v, c=counts: f"{v} ({c.get(v, 0):,})")
        if name == "gold_language":
            follow_url("facet_gold_mode", filters.gold_mode)
            st.radio("Gold languages match", ["any", "all"], horizontal=True,
                     key="facet_gold_mode", on_change=_write_filter, args=("gold_mode",))
    if VECTOR:
        follow_url("facet_k_c", (filters.k_c_min or 1, filters.k_c_max or 24))
        st.slider("K_C (distinct candidate languages)", 1, 24, key="facet_k_c",
                  on_change=_write_filter, args=("k_c",))

_chips()

# ------------------------------------------------------------ facets (main area)

KIND = browse.check_kinds(result)    # check → its worst severity in this scan


def _facet(name: str, label: str) -> str:
    counts = page.facets[name]
    if name in ("check", "note"):    # what blocks first, then by rows
        order = {"blocking": 0, "review": 1}
        counts = sorted(counts, key=lambda vn: (order.get(KIND.get(vn[0], ""), 2), -vn[1]))
    chosen = set(getattr(filters, name))
    largest = max((n for _, n in counts), default=0)
    kinds = KIND if name == "check" else STATUS_KIND if "status" in name else {}
    values = [render.facet_value(v, n, largest, _toggled(name, v), v in chosen,
                                 kinds.get(v, "")) for v, n in counts]
    rest = values[SHOWN:]
    return "".join([render.strong(label), *values[:SHOWN],
                    render.more(f"… and {len(rest)} more", *rest) if rest else ""])


with st.expander("Facets: click a value to filter by it, again to drop it (counts under the "
                 "other filters)", expanded=True):
    columns = st.columns(4)
    for i, (name, label) in enumerate(LABELS.items()):
        with columns[i % 4]:
            html(_facet(name, label))


# ------------------------------------------------------------ results

pages_total = last + 1
left, middle, right = st.columns([1, 3, 1])
with left:
    if page_no > 0:
        st.page_link("pages/1_Browse.py", label="◀ previous page",
                     query_params=replace(view, page=page_no).to_query())
middle.caption(f"{page.total:,} of {result.release.rows:,} rows match · page {page_no + 1} "
               f"of {pages_total} · {page.seconds * 1000:.0f} ms")
with right:
    if page_no < last:
        st.page_link("pages/1_Browse.py", label="next page ▶",
                     query_params=replace(view, page=page_no + 2).to_query())

if page.total == 0:
    st.info("No row matches this filter.")
    st.stop()


def _checks(checks: list[str], blocking: list[str], notes: list[str]) -> str:
    """Every check holding the row, blocking first, coloured by severity; its info notes
    after them, in grey."""
    held = "".join(render.badge(c, "blocking" if c in blocking else "review") for c in checks)
    return held + (render.text(f"info: {', '.join(notes)}") if notes else "")


def _preview(value: str | None, limit: int = 240) -> str:
    """A row's first text, cut to a table line's worth."""
    value = value or ""
    return value if len(value) <= limit else value[:limit].rstrip() + " …"


rows = []
for r in page.rows.to_pylist():
    if not VECTOR:
        rows.append([render.badge(r["status"], STATUS_KIND.get(r["status"], "")),
                     _checks(r["checks"], r["blocking"], r["notes"]),
                     render.text(", ".join(r["units"])),
                     render.text(r["language"] or ""),
                     render.link(r["id"], view.href("Instance", row=r["row"])),
                     render.text(r["row"]), render.paragraph(_preview(r["question"]),
                                                             r["language"] or "")])
        continue
    rows.append([
        render.badge(r["status"], STATUS_KIND.get(r["status"], "")),
        _checks(r["checks"], r["blocking"], r["notes"]),
        render.text(r["question_language"]),
        render.text(", ".join(r["gold_languages"] or [])),
        render.text(r["stratum"]),
        render.link(r["id"], view.href("Instance", row=r["row"])),
        render.text(r["row"]),
        render.paragraph(r["question"], r["question_language"]),
    ])
if VECTOR:
    html(render.table(["status", "checks (blocking first)", "ℓq", "gold languages", "stratum",
                       "id (open)", "row", "question"], rows))
else:
    html(render.table(["status", "checks (blocking first)", "units", "language", "id (open)", "row",
                       "text"], rows))
