"""Compare: this release (NEW) against an earlier version (OLD), unit by unit — key equality,
target-language agreement, what changed, R_struct and ΔR (Eq. 36) per slice, status
transitions — and the acceptance gate's verdict with a paired review batch (Eq. 37)."""

from __future__ import annotations

import json

import streamlit as st

from audit.engine import policy
from audit.errors import InputError
from audit.io import tables
from audit.reports import acceptance, acceptance_html, compare, render
from audit.review.kinds import paired
from audit.settings import demo_sources
from workbench.serving import served_file
from workbench.shell import (
    CannotOpen,
    current_view,
    follow_url,
    html,
    say,
    scan_of,
    scope_line,
    setup,
    show_table,
)
from workbench.viewstate import View

result = setup("Compare", "Compare two releases", complete_scan=True)
scope_line(result, filtered=False)
view = current_view()
st.caption("NEW is this release (sidebar). OLD is scanned with the same HotpotQA source "
           "and policy. Units are matched on source_id, view, unit, paragraph_id and "
           "sentence; a unit whose target language changed is listed and left out.")


def _set_old() -> None:
    value = st.session_state["compare_old"].strip()
    if value:
        st.query_params["old"] = value
    else:
        st.query_params.pop("old", None)


old_path = str(st.query_params.get("old", "")).strip()
follow_url("compare_old", old_path)
st.text_input("Earlier release (OLD): path, directory of shards or glob", key="compare_old",
              on_change=_set_old, placeholder="e.g. data/releases/v1")
if not old_path:
    st.info("Name the earlier release (OLD) to compare this one with it.")
    st.stop()

sources = view.sources or (tuple(tuple(spec.split("=", 1)) for spec in demo_sources())
                           if view.release is None else ())
try:
    old_result = scan_of(View(release=old_path, sources=sources, policy=view.policy))
except CannotOpen as failed:
    what = "earlier release" if failed.what == "release" else failed.what
    say(st.error, f"Cannot open the {what}: " + "{problem}", problem=failed.error)
    st.stop()


@st.cache_resource(show_spinner="Matching units and bootstrapping ΔR…", max_entries=4)
def compared(old_identity: str, new_identity: str, _old, _new) -> compare.Comparison:
    return compare.compare(compare.version_of(_old), compare.version_of(_new))


try:
    comparison = compared(old_result.identity, result.identity, old_result, result)
except InputError as error:     # e.g. no source_id in common: not two versions of one release
    say(st.error, "Cannot compare {new} (NEW) with {old} (OLD): {problem}",
        new=result.summary["release"], old=old_path, problem=error)
    st.stop()
summary = comparison.as_json()

cols = st.columns(4)
cols[0].metric("Sources in both", f"{comparison.sources:,}")
cols[1].metric("R_struct OLD", f"{comparison.r_struct['old']:.2%}")
cols[2].metric("R_struct NEW", f"{comparison.r_struct['new']:.2%}")
low, high = comparison.delta_r_ci
cols[3].metric("ΔR (NEW − OLD)", f"{comparison.delta_r:+.2%}",
               help=f"95% paired source bootstrap interval [{low:+.2%}, {high:+.2%}], "
                    f"{comparison.n_boot:,} replicates")
say(st.caption, "ΔR {delta}, 95% interval {interval} ({n} paired source bootstrap "
    "replicates); R_struct = share of the {sources} sources in both versions with a "
    "quarantined row (a release-blocking defect).", delta=f"{comparison.delta_r:+.2%}",
    interval=f"[{low:+.2%}, {high:+.2%}]", n=f"{comparison.n_boot:,}",
    sources=f"{comparison.sources:,}")

st.subheader("Key equality")
keys = comparison.key_equality
k1, k2, k3, k4 = st.columns(4)
k1.metric("Only in OLD", f"{keys['only_old']:,}")
k2.metric("Only in NEW", f"{keys['only_new']:,}")
k3.metric("Unit set differs", f"{keys['unit_set_differs']:,}")
k4.metric("Language changed (units)", f"{comparison.changes['language_changed']:,}")
if comparison.keys.num_rows:
    show_table(comparison.keys.slice(0, 1000).to_pandas())

st.subheader("What changed")
by_unit = comparison.changes["by_unit"]
show_table([{"unit": unit, **counts} for unit, counts in by_unit.items()])
found = comparison.findings
say(st.caption, "Paragraphs whose sentence count changed: {n}. Findings on matched units: "
    "{fixed} fixed, {introduced} introduced, {kept} kept.",
    n=f"{comparison.changes['sentence_count_changed']:,}", fixed=f"{found['fixed']:,}",
    introduced=f"{found['introduced']:,}", kept=f"{found['kept']:,}")
if found["fixed_unchanged"] or found["introduced_unchanged"]:
    say(st.caption, "In rows none of whose units changed, {came} findings came and {went} "
        "went: no edit of those rows made them; a check calibrated over the whole release "
        "(the length outlier) moved with the edited rows. They are not counted above.",
        came=f"{found['introduced_unchanged']:,}", went=f"{found['fixed_unchanged']:,}")

st.subheader("Structural change per slice (Eq. 36)")
slices = comparison.structural.to_pandas()
by = st.radio("Slice by", ["unit", "language", "check"], horizontal=True, key="compare_by")
st.plotly_chart(acceptance_html.interval_figure(
    [f"{g}" for g in slices[slices["by"] == by]["group"]],
    list(slices[slices["by"] == by]["delta"]), list(slices[slices["by"] == by]["ci_low"]),
    list(slices[slices["by"] == by]["ci_high"]), "ΔR = R_new − R_old", percent=True),
    key="compare_slices")
show_table(slices[slices["by"].isin(["all", by])],
           percent=("old", "new", "delta", "ci_low", "ci_high"))

st.subheader("Status of matched rows, OLD → NEW")
st.plotly_chart(acceptance_html.transitions_figure(comparison), key="compare_sankey")

st.subheader("Units")
changes = st.multiselect("Change", list(compare.CHANGES), default=["text_changed",
                                                                  "language_changed"],
                         key="compare_changes")
units = comparison.units.to_pandas()
shown = units[units["change"].isin(changes)]
say(st.caption, "{n} units; the first 1,000 are listed.", n=f"{len(shown):,}")
show_table(shown.head(1000))


@st.cache_resource(max_entries=8, show_spinner=False)
def kept_files(key: tuple, _build) -> dict[str, bytes]:
    """A comparison's download files, built once per `key` and kept: every click of a
    download serves these same bytes, whenever it comes (a file rebuilt on each rerun
    could vanish under a click that came a moment after another)."""
    return _build()


def comparison_files() -> dict[str, bytes]:
    return {"compare.json": json.dumps(summary, indent=2, ensure_ascii=False).encode(),
            "units.csv": tables.to_bytes(comparison.units, "csv")}


files = kept_files(("compare", old_result.identity, result.identity), comparison_files)
d1, d2 = st.columns(2)
# on_click="ignore": a download does not rerun the page.
d1.download_button("compare.json", files["compare.json"], file_name="compare.json",
                   mime="application/json", on_click="ignore")
d2.download_button("units CSV", files["units.csv"], file_name="units.csv", mime="text/csv",
                   on_click="ignore")

st.subheader("Acceptance gate")
st.caption("Criteria 3 and 4 need a paired review batch: the OLD and NEW version of the same "
           "units rated blind by the same annotators (`review push` with kind = \"paired\"). "
           "Unpaired comparisons, such as the V2 − V1 judge scores of the Judge page, are "
           "descriptive only and are not evidence here.")
batches = paired.paired_batches()
batch = st.selectbox("Paired review batch", ["(none)"] + batches, key="compare_batch")
try:
    rules = policy.load(served_file(view.policy)) if view.policy else policy.DEFAULT
    evidence = None if batch == "(none)" else paired.evidence(batch)
except InputError as error:
    say(st.error, "Cannot read the gate's inputs: {problem}", problem=error)
    st.stop()
decision = acceptance.decide(summary, evidence, rules.acceptance())
KIND = {"pass": "accepted", "fail": "blocking", "insufficient": "review"}
html(render.strong("Verdict: "), render.badge(decision.verdict.upper(),
                                              KIND[decision.verdict]))
html(render.table(["#", "criterion", "verdict", "why"],
                  [[render.text(c.criterion), render.text(c.name.replace("_", " ")),
                    render.badge(c.verdict, KIND[c.verdict]), render.text(c.reason)]
                   for c in decision.criteria]))
with st.expander("Numbers and thresholds"):
    st.json(decision.as_json()["criteria"])


def gate_files() -> dict[str, bytes]:
    return {"acceptance.json": json.dumps({**decision.as_json(), "evidence": evidence}, indent=2,
                                          ensure_ascii=False).encode(),
            "report.html": acceptance_html.report_html(decision, comparison, evidence).encode()}


gate = kept_files(("gate", old_result.identity, result.identity, batch,
                   json.dumps(decision.as_json(), sort_keys=True, default=str)), gate_files)
g1, g2 = st.columns(2)
g1.download_button("acceptance.json", gate["acceptance.json"], file_name="acceptance.json",
                   mime="application/json", on_click="ignore")
g2.download_button("report.html", gate["report.html"], file_name="acceptance-report.html",
                   mime="text/html", on_click="ignore")
