"""Repair: from the findings to a corrected release. The work list of units a text
correction can repair (with their findings, current text and English source); an operator
applies a corrections file or a pulled post-edit batch and sees each correction's outcome
— old and new text side by side with a character-level diff, the checks before and after,
what holds it — accepts or rejects what is held, and opens Compare on the two versions
(audit.repair)."""

from __future__ import annotations

import json

import pyarrow as pa
import streamlit as st

from audit.engine import policy
from audit.errors import InputError
from audit.repair import apply as repair
from audit.repair import corrections, desk, plan
from audit.repair.record import Workspace
from audit.reports import render
from audit.review.kinds import post_edit as postedit
from audit.settings import DEMO_RELEASE, current, demo_sources
from workbench import auth
from workbench.serving import repairs_root, served_file
from workbench.shell import current_view, html, save_upload, say, scope_line, setup, show_table
from workbench.viewstate import View

STATUS_BADGE = {"quarantined": "blocking", "review_required": "review",
                "applied": "accepted", "held": "review", "refused": "blocking"}

result = setup("Repair", "Repair", complete_scan=True)
scope_line(result, filtered=False)
view = current_view()
release = result.release
st.caption(("Units a text correction can repair: a text or answer column of an item in one "
            "language. A correction names the item's id, its language and the column" if
            release.layout.has("aligned") else
            "Units a text correction can repair: a question, an answer, a title, a "
            "sentence, or a whole paragraph where the sentence count is wrong. A correction "
            "names the unit") +
           ", the SHA-256 of the text it replaces and the new text (README, Repair); every "
           "text check judges the new text before it is applied, and one that still raises a "
           "blocking or review finding is held until an operator accepts it.")


@st.cache_resource(show_spinner="Placing the findings on units…", max_entries=4)
def work_list(identity: str, _result) -> pa.Table:
    return plan.work_list(_result)


# ------------------------------------------------------------------------ work list

work = work_list(result.identity, result)
st.subheader("Work list")
c1, c2, c3 = st.columns(3)
statuses = c1.multiselect("Status", list(plan.STATUSES), key="repair_status")
checks = c2.multiselect("Check", sorted({c for cs in work.column("required_for").to_pylist()
                                          for c in cs}), key="repair_check")
languages = c3.multiselect("Language", sorted({str(x) for x in work.column("language")
                                               .to_pylist()}), key="repair_language")
chosen = desk.select(work, statuses, checks, languages)
counts = plan.summary(chosen)
say(st.caption, "{units} on {views} of {all} on the work list; per unit: "
    "{per_unit}.", units=render.plural(counts["units"], "unit"),
    views=render.plural(counts["views"], "view"),
    all=f"{work.num_rows:,}", per_unit=", ".join(f"{k} {v}" for k, v in
                                                counts["per_unit"].items()) or "none")
columns = ["unit", "id", "paragraph_id", "sentence_index", "language", "views", "status",
           "severity", "required_for"]
picked = show_table(chosen.select(columns).to_pandas(),
                      on_select="rerun", selection_mode="single-row", key="repair_units")
st.download_button("Corrections template (JSONL, the chosen units pre-filled)",
                   "".join(line + "\n" for line in plan.template(
                       chosen, by_language=release.layout.has("aligned"))),
                   file_name=f"{release.name}-corrections.template.jsonl",
                   mime="application/x-ndjson", key="repair_template")


def findings_table(findings: list[dict]) -> None:
    html(render.table(["check", "severity", "sentence", "detail"], [
        [render.text(f["check"]), render.badge(f["severity"], f["severity"]),
         render.text(f["sentence_index"]), render.text(f["detail"])] for f in findings]))


def _unit_text(unit: dict, side: str) -> list[str]:
    if unit["unit"] == "paragraph":
        return list(unit["sentences" if side == "text" else "source_sentences"] or [])
    return [unit["text" if side == "text" else "source_text"] or ""]


def show_unit(unit: dict) -> None:
    """English source beside the current translation, each finding's evidence marked."""
    where = " · ".join(str(x) for x in (unit["unit"], unit["id"], unit["paragraph_id"],
                                         unit["sentence_index"]) if x is not None)
    html(render.strong(where), render.text(f" · {unit['language']} · "),
         render.badge(unit["status"], STATUS_BADGE.get(unit["status"], "")))
    marks = tuple(f["evidence"] for f in unit["findings"] if f["evidence"])
    left, right = st.columns(2)
    with left:
        st.markdown("**English source**")
        html(*(render.paragraph(render.source_sentence(s), "en")
               for s in _unit_text(unit, "source")))
    with right:
        st.markdown("**Current translation**")
        html(*(render.paragraph(s, unit["language"], evidence=marks)
               for s in _unit_text(unit, "text")))
    findings_table(unit["findings"])


rows = picked.selection.rows if picked else []
if rows:
    show_unit(chosen.slice(rows[0], 1).to_pylist()[0])
else:
    st.caption("Select a unit to see its text, its English source and its findings.")

# ---------------------------------------------------------------------------- apply

area = desk.area(repairs_root(), release)
original = view.release or str(DEMO_RELEASE)


def run_apply(found: list, decisions: list[repair.Decision], inputs: list) -> None:
    """One apply of the corrections (and the area's earlier proposals and decisions) to
    this release, with its stages shown; the page then shows its outcome."""
    auth.require("Applying corrections")
    rules = policy.load(served_file(view.policy)) if view.policy else policy.DEFAULT
    out = desk.next_out(area)
    area.mkdir(parents=True, exist_ok=True)
    with st.status("Applying the corrections…", expanded=True) as box:
        # The box always ends in a final state with its own label: nothing is written
        # unless the apply completes (repair.apply stages its output).
        try:
            done = repair.apply(release, found, out, workspace=desk.workspace(area),
                                decisions=decisions, policy=rules, inputs=inputs,
                                progress=lambda message: box.write(render.message(
                                    "{m}", m=message)))
        except BaseException as error:   # an InputError, a failure, or a stopped run
            why = ("(the reason is below)" if isinstance(error, InputError) else
                   ": the apply failed" if isinstance(error, Exception) else
                   ": the apply was interrupted")
            box.update(label=f"Not applied {why}; nothing was written".replace(" :", ":"),
                       state="error", expanded=isinstance(error, Exception)
                       and not isinstance(error, InputError))
            raise
        counts = done.manifest["counts"]
        box.update(label=f"Done: {counts['applied']:,} applied, {counts['held']:,} held, "
                   f"{counts['refused']:,} refused", state="complete", expanded=False)
    st.session_state["repair_latest"] = done.out.name
    st.session_state["repair_done"] = render.message(
        "Applied {a}, held {h}, refused {r} of {n}; {rows} changed. "
        "Written to {out}", a=counts["applied"], h=counts["held"], r=counts["refused"],
        n=render.plural(counts["corrections"], "correction"),
        rows=render.plural(counts["rows_changed"], "row"),
        out=done.out)


def from_file() -> None:
    """A corrections file, named by its path or uploaded: exactly one of the two. Which one
    Apply reads is said before it is pressed; with both given, Apply refuses and names
    both (neither silently wins)."""
    typed = st.text_input("Corrections file (JSONL or CSV) under the data roots",
                          key="repair_file",
                          placeholder="e.g. data/corrections/vendor-2026-12.jsonl").strip()
    upload = st.file_uploader("…or upload one (.jsonl, .csv)", type=["jsonl", "csv"],
                              key="repair_upload")
    if typed and upload:
        say(st.caption, "Both a path ({path}) and an upload ({upload}) are given: clear one; "
            "Apply refuses until then.", path=typed, upload=upload.name)
    elif typed or upload:
        say(st.caption, "Apply reads " + ("the uploaded file {name}." if upload else
                                          "the file {name}."),
            name=upload.name if upload else typed)
    author = st.text_input("Author of lines that name none", key="repair_author",
                           placeholder="e.g. the vendor's name")
    if st.button("Apply", key="repair_go", type="primary"):
        if typed and upload:
            say(st.error, "Not applied: both a path ({path}) and an upload ({upload}) are "
                "given. Clear the path box or remove the upload, so that one file is "
                "applied.", path=typed, upload=upload.name)
            return
        try:
            named = save_upload(upload, (".jsonl", ".csv")) if upload else typed
            if not named:
                raise InputError("corrections file", "none given",
                                 expected="a path under the data roots, or an upload")
            path = served_file(named)
            run_apply(corrections.read_file(path, author.strip() or None), [], [path])
        except InputError as error:
            say(st.error, "Cannot apply: {problem}", problem=error)


def from_batch() -> None:
    """The corrections a post-edit batch's pulls recorded (the Review page's workspace)."""
    pulled = postedit.batches_of(release, current().reviews)
    if not pulled:
        say(st.caption, "No post-edit batch of this release in the review workspace "
            "{workspace}: push one (`python -m audit review push SPEC` with kind = "
            "\"post-edit\") and pull its editors' work (`review pull BATCH`).",
            workspace=current().reviews)
        return
    names = [b["batch"] for b in pulled]
    shown = st.selectbox("Post-edit batch", names, key="repair_batch", format_func=lambda n: (
        f"{n} ({render.plural(pulled[names.index(n)]['corrections'], 'correction')} "
        "pulled)"))
    chosen = pulled[names.index(shown)]
    if not chosen["corrections"]:
        say(st.info, "No correction pulled from {batch} yet: {pull} once its editors have "
            "submitted.", batch=shown, pull=f"python -m audit review pull {shown}")
    if st.button("Apply the batch's corrections", key="repair_batch_go", type="primary",
                 disabled=not chosen["corrections"]):
        try:
            folder = chosen["folder"]
            run_apply(postedit.batch_corrections(folder, release), [],
                      Workspace(folder).files())
        except InputError as error:
            say(st.error, "Cannot apply: {problem}", problem=error)


st.subheader("Apply corrections")
if auth.gate("Applying corrections"):
    origin = st.radio("Corrections from", ["a corrections file", "a post-edit batch"],
                      horizontal=True, key="repair_from")
    if origin == "a corrections file":
        from_file()
    else:
        from_batch()

# --------------------------------------------------------------------------- outcome

made = desk.applies(area)
if not made:
    st.caption("No apply of this release yet.")
    st.stop()
names = [m["out"].name for m in made]
# The newest apply is shown after each apply; else the one chosen stays.
latest = st.session_state.pop("repair_latest", None)
if latest in names or st.session_state.get("repair_apply") not in names:
    st.session_state["repair_apply"] = latest if latest in names else names[0]
st.subheader("Outcome")
if "repair_done" in st.session_state:
    st.success(st.session_state.pop("repair_done"))
shown_name = st.selectbox("Apply", names, key="repair_apply",
                          format_func=lambda n: f"{n} (newest)" if n == names[0] else n)
entry = made[names.index(shown_name)]
if "problem" in entry:
    say(st.error, "Cannot read this apply: {problem}", problem=entry["problem"])
    st.stop()
out = entry["out"]
manifest = desk.manifest(out)
counts = manifest["counts"]
m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Corrections", f"{counts['corrections']:,}")
m2.metric("Applied", f"{counts['applied']:,}")
m3.metric("Held", f"{counts['held']:,}")
m4.metric("Refused", f"{counts['refused']:,}")
m5.metric("Rows changed", f"{counts['rows_changed']:,}")
left, right = st.columns(2)
left.dataframe([{"check fixed": k, "units": v} for k, v in manifest["fixed_per_check"].items()])
right.dataframe([{"language": k, **{n: v.get(n, 0) for n in ("applied", "held", "refused",
                                                             "views")}}
                 for k, v in manifest["per_language"].items()])

table = desk.outcomes(out)
listed = table.select(["action", "unit", "row_id", "paragraph_id", "sentence_index",
                       "language", "author", "fixed", "introduced", "held_for", "note",
                       "correction_id"])
picked = show_table(listed.to_pandas(), on_select="rerun",
                      selection_mode="single-row", key=f"repair_outcomes_{shown_name}")
rows = picked.selection.rows if picked else []


def show_change(change: dict) -> None:
    """Old and new text side by side, the character-level changes marked, and the checks
    on the unit before and after."""
    html(render.badge(change["action"], STATUS_BADGE[change["action"]]),
         render.text(f" {change['unit']} · {change['row_id']} · {change['language']}"))
    for reason in change["held_for"]:
        say(st.warning, "Held: {reason}", reason=reason)
    old = desk.paragraph_lines(change["unit"], change["old_text"])
    new = desk.paragraph_lines(change["unit"], change["new_text"])
    left, right = st.columns(2)
    left.markdown("**Old**")
    right.markdown("**New**")
    for k in range(max(len(old), len(new))):
        pieces = desk.char_diff(old[k] if k < len(old) else "", new[k] if k < len(new) else "")
        with left:
            html(render.diff(pieces, "old", change["language"]))
        with right:
            html(render.diff(pieces, "new", change["language"]))
    for label, findings in (("Checks before", change["before"]),
                            ("Checks after", change["after"])):
        st.markdown(f"**{label}**")
        if findings:
            findings_table(findings)
        else:
            st.caption("none")


if rows:
    change = table.slice(rows[0], 1).to_pylist()[0]
    show_change(change)
    if change["action"] == "held" and auth.gate("Deciding on a held correction"):
        reviewer = st.text_input("Reviewer (your name)", key="repair_reviewer")
        a, r = st.columns(2)
        action = "accepted" if a.button("Accept and apply again", key="repair_accept") else \
            "rejected" if r.button("Reject and apply again", key="repair_reject") else None
        if action:
            if not reviewer.strip():
                st.error("A decision needs the reviewer's name.")
            else:
                try:
                    run_apply([], [repair.Decision(action, change["correction_id"],
                                                   reviewer.strip())], [])
                except InputError as error:
                    say(st.error, "Cannot apply the decision: {problem}", problem=error)
                else:
                    st.rerun()
else:
    st.caption("Select a correction to see its old and new text and the checks on both.")

d1, d2 = st.columns(2)
d1.download_button("repair_manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False),
                   file_name="repair_manifest.json", mime="application/json",
                   key="repair_manifest_dl")
d2.download_button("CHANGELOG.md", (out / repair.CHANGELOG_FILE).read_text(encoding="utf-8"),
                   file_name="CHANGELOG.md", mime="text/markdown", key="repair_changelog_dl")
sources = view.sources or (tuple(tuple(spec.split("=", 1)) for spec in demo_sources())
                           if view.release is None else ())
corrected = View(release=str(out), sources=sources, policy=view.policy)
st.page_link("pages/5_Compare.py", label="Compare the corrected release with this one, and "
             "run the acceptance gate", query_params={**corrected.to_query(), "old": original})
