"""The Annotations page's adjudication queue, for every adjudicated kind (categorical labels
and error spans alike): its open, skipped and resolved items, and the push of the open ones
to adjudicators (push.push_adjudication builds each kind's own tasks)."""

from __future__ import annotations

import pyarrow as pa
import streamlit as st

from audit.errors import InputError
from audit.review import push, routing, workspace
from audit.review.sites import ledger_sites
from audit.settings import current
from workbench import auth
from workbench.shell import say, show_table


def queue_section(batch_id: str, queue: pa.Table, disputed: str) -> None:
    """The queue (state open | resolved; an open item its adjudicator skipped shows as
    skipped) with counts, a state filter and the push controls; `disputed` says which items
    it holds."""
    files = workspace.Workspace(batch_id, current().reviews)
    queue = push.queue_with_skips(queue, files.skips(), batch_id)
    states = queue.column("state").to_pylist()
    open_n, resolved_n = states.count("open"), states.count("resolved")
    skipped_n = states.count("skipped")
    st.write(f"{open_n:,} open, {skipped_n:,} skipped, {resolved_n:,} resolved: {disputed}.")
    if skipped_n:
        say(st.warning, "{n} open items were skipped by their adjudicator (as of the last "
            "pull): Label Studio no longer offers them. Re-offer them below, or run "
            "{command}.", n=f"{skipped_n:,}",
            command=f"python -m audit review adjudicate {batch_id} --reoffer")
    shown = st.radio("Show", ["open", "skipped", "resolved", "all"], horizontal=True,
                     key="queue_state")
    rows = queue.to_pandas()
    show_table(rows if shown == "all" else rows[rows["state"] == shown])
    if open_n or skipped_n:
        push_controls(batch_id, reoffer_offered=bool(skipped_n))


def push_controls(batch_id: str, reoffer_offered: bool) -> None:
    """Adjudicators, the re-offer box (when items were skipped) and the push, behind the
    write gate; what the push sent and the new accounts' logins."""
    if not auth.gate("Pushing the open items to adjudicators (and creating their accounts)"):
        return
    lines = st.text_area("Adjudicators (one per line: email:languages; never one of the "
                         "item's two annotators)", key="adjudicators")
    adjudicators = [line.strip() for line in lines.splitlines() if line.strip()]
    reoffer = reoffer_offered and st.checkbox(
        "Also offer the skipped items again (deletes their skips in Label Studio; the skips "
        "stay in skips.log.jsonl)", key="reoffer")
    if not st.button("Push the open items to the adjudicators", disabled=not adjudicators):
        return
    try:
        routing.parse_annotators(adjudicators, where="adjudicators")
        sites = ledger_sites(batch_id, current().reviews)
        try:
            pushed = push.push_adjudication(sites, batch_id, adjudicators,
                                             workspace=current().reviews, reoffer=bool(reoffer))
        finally:
            sites.close()
    except InputError as error:
        say(st.error, "Push failed: {problem}", problem=error)
        return
    st.success(f"Sent {pushed.sent:,} new adjudication tasks; offered "
               f"{len(pushed.reoffered):,} skipped ones again.")
    show_table([{"project": p.title, "adjudicator": p.annotator, "items": p.n_items,
                 "sent": p.sent} for p in pushed.projects])
    if pushed.routing["left_out"]:
        show_table(pushed.routing["left_out"])
    if pushed.credentials:
        st.warning("New accounts: hand these logins over now (shown once; also in the "
                   "batch's credentials.txt, mode 600).")
        show_table([{"login page": f"{n.server}/user/login/", "email": n.email,
                     "password": n.password} for n in pushed.credentials])
