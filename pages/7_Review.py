"""Review: build a stratified batch (translation units, error spans with their pre-filled
regions, or MAPLE pairs), route it to bilingual annotators, push it to Label Studio
(accounts that work, one project per language and annotator), and follow progress live."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import streamlit as st

from audit.analysis import browse
from audit.errors import InputError
from audit.reports.render import plural, visible
from audit.review import batches, kinds, push, routing, sampling, workspace
from audit.review.kinds import spans as span_kind
from audit.review.kinds.translation import translation_batch
from audit.review.labelstudio import client as labelstudio
from audit.review.sites import connect_sites, ledger_sites
from audit.review.status import status as batch_status
from audit.settings import current
from workbench import auth
from workbench.serving import served_file, shown_path
from workbench.shell import current_view, say, scope_line, setup, show_table

result = setup("Review", complete_scan=True)
MAPPED = not browse.has_vector(result)     # a mapped benchmark: units are its columns
scope_line(result, filtered=False)
STATUS_EVERY = 3   # seconds between progress polls (one cheap request per server)
PROBE_EVERY = 10   # seconds a server's "answers or not" is shown before it is asked again


@st.cache_resource(show_spinner="Listing review units…")
def units(identity: str, _result):
    return sampling.build_units(_result, browse.descriptor_table(_result))


def drawn(batch: sampling.Batch, note: str, settings: dict | None) -> batches.ReviewBatch:
    """The sampled translation units as a review batch (an error-span batch when its
    settings are given), with what was drawn per stratum."""
    st.caption(note)
    show_table([{**c["stratum"], **{k: c[k] for k in ("available", "target", "chosen",
                                                         "shortfall")}}
                  for c in batch.manifest["counts"]], height=240)
    if settings is not None:
        # The same units under another protocol or pre-fill are another batch.
        name = "-".join((span_kind.KIND.name, settings["protocol"], settings["prefill"],
                         batch.batch_id))
        return span_kind.span_batch(result, batch, name, settings)
    return translation_batch(batch, result.release)


def span_settings() -> dict:
    """The error-span options as widgets, checked as a spec's keys are."""
    left, right = st.columns(2)
    defaults = span_kind.DEFAULTS
    protocol = left.radio("Protocol", span_kind.PROTOCOLS, horizontal=True,
                          index=span_kind.PROTOCOLS.index(defaults["protocol"]),
                          format_func=str.upper, key="review_protocol",
                          help="ESA: minor and major spans, then a 0–100 score. MQM: also "
                               "critical, and a category per span.")
    prefill = right.radio("Pre-fill", span_kind.PREFILLS, horizontal=True,
                          index=span_kind.PREFILLS.index(defaults["prefill"]),
                          key="review_prefill",
                          help="findings: the scan's review and blocking findings that point "
                               "at a place become regions the annotators keep, fix or "
                               "delete (ESA-AI).")
    return span_kind.options({"protocol": protocol, "prefill": prefill},
                             Path("Review page options"))


def prefill_summary(batch: batches.ReviewBatch) -> None:
    """How many regions the push pre-fills, on how many units, from which checks."""
    if batch.settings is None or batch.settings["prefill"] == "none":
        st.caption("Nothing pre-filled: the annotators start from the bare text.")
        return
    prefill = (batch.tables or {})[span_kind.PREFILL_FILE]
    if prefill.num_rows == 0:
        st.caption("No finding of the scan points at a place in these units: nothing to "
                   "pre-fill.")
        return
    units = len(set(prefill.column("item_id").to_pylist()))
    st.caption(f"{plural(prefill.num_rows, 'region')} pre-filled on {plural(units, 'unit')} "
               "from the scan's findings, per check:")
    by_check = pl.DataFrame(prefill).group_by("origin", "severity").agg(
        regions=pl.len(), units=pl.col("item_id").n_unique(),
        languages=pl.col("language").unique().sort().str.join(", "))
    show_table(by_check.sort("origin", "severity").rename({"origin": "check"}))


def annotator_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


# ------------------------------------------------------------------------- batch

label = st.radio("Batch of", [k.label for k in kinds.ON_PAGE], horizontal=True,
                 key="review_kind")
kind = next(k for k in kinds.ON_PAGE if k.label == label)
seed = int(st.number_input("Seed", value=sampling.PAPER_SEED, step=1, key="review_seed"))
try:
    settings = span_settings() if kind is span_kind.KIND else None
    if kind.pairs is None and MAPPED:
        table = units(result.identity, result)
        languages = sorted(set(table.column("language").to_pylist()) - {"en"})
        columns = list(dict.fromkeys(table.column("unit").to_pylist()))
        kept = st.multiselect("Columns", columns, default=columns, key="review_units")
        by = st.multiselect("Strata", ["language", "unit", "status", "check"],
                            default=["language", "unit"], key="review_by")
        per = int(st.number_input("Units per stratum", 1, 1000, 5, key="review_per"))
        batch = sampling.sample(table, by, seed=seed, per_stratum=per,
                                where={"language": languages, "unit": kept})
        review = drawn(batch, "Every translated language of the release; each unit is one "
                              "column of one item in one language, beside the source "
                              "language's text.", settings)
    elif kind.pairs is None:
        table = units(result.identity, result)
        design = st.radio("Design", ["default: 4 paragraphs + 1 question + 1 answer per "
                                     "language", "the paper's 80 + 20 + 20 per language",
                                     "unverifiable: 4 paragraphs per language whose answer or "
                                     "bridge entity the checks cannot confirm",
                                     "custom"], key="review_design")
        scope = sampling.target_languages_only(["language"])
        preset = {"default": sampling.DEFAULT_PRESET, "the paper": sampling.PAPER_PRESET,
                  "unverifiable": sampling.UNVERIFIABLE_PRESET}
        chosen = next((p for name, p in preset.items() if design.startswith(name)), None)
        if chosen is not None:
            batch = sampling.sample_design(table, chosen, where=scope["where"])
        else:
            by = st.multiselect("Strata", list(sampling.DIMENSIONS),
                                default=["language", "unit"], key="review_by")
            kept = st.multiselect("Units", list(sampling.UNITS),
                                  default=["paragraph", "question", "answer"],
                                  key="review_units",
                                  help="An instance shows its question, answer and gold "
                                       "paragraphs: only annotators reading all their "
                                       "languages can take it.")
            allocation = st.radio("Allocation", ["equal", "proportional"], horizontal=True,
                                  key="review_allocation")
            if allocation == "equal":
                size = None
                per = int(st.number_input("Units per stratum", 1, 1000, 2, key="review_per"))
            else:
                per = None
                size = int(st.number_input("Batch size", 1, 100_000, 100, key="review_size"))
            scope = sampling.target_languages_only(by)
            batch = sampling.sample(table, by, seed=seed, allocation=allocation, size=size,
                                    per_stratum=per, where=scope["where"] | {"unit": kept},
                                    levels=scope["levels"])
        review = drawn(batch, "Non-English target languages only: an English unit's source "
                              "and translation are the same text.", settings)
    else:
        path = st.text_input("Pairs file (JSONL or Parquet)",
                             value=shown_path(kind.demo_pairs), key="review_maple_path")
        review = kind.pairs(served_file(path), seed)
        st.caption("A/B order randomised by the seed; annotators see only the two texts.")
except (InputError, ValueError) as error:
    say(st.error, "Cannot build the batch: {problem}", problem=error)
    st.stop()
say(st.markdown, "Batch {batch}: " + f"{plural(len(review.item_ids), 'unit')}.",
    batch=review.batch_id)
if kind is span_kind.KIND:
    prefill_summary(review)

# ------------------------------------------------------------------------- routing

st.subheader("Annotators and routing")
try:
    servers = labelstudio.configured()
except InputError as error:
    say(st.error, "Label Studio servers: {problem}", problem=error)
    st.stop()
names = list(servers)


@st.cache_data(ttl=PROBE_EVERY, show_spinner=False)
def answering(urls: tuple[str, ...]) -> tuple[dict[str, labelstudio.Probe], str]:
    """Whether each configured server answers right now (one request of at most
    labelstudio.PROBE_TIMEOUT seconds, all at once, no token sent), and when they were
    asked; kept PROBE_EVERY seconds, so a rerun of the page does not wait on them again."""
    return labelstudio.probe_all(urls), f"{dt.datetime.now():%H:%M:%S}"


answers, asked = answering(tuple(c.url for c in servers.values()))


def answer_line(box, name: str) -> None:
    found = answers[servers[name].url]
    say(box, "{server} answers ({detail})" if found.answers else
        "{server} does not answer: {detail}", server=name, detail=found.detail)


def server_choice(column, label: str, key: str, default: int) -> str:
    """A configured server: tokens go only where they were configured, so there is no
    box for a URL. Whether it answers right now is said under it."""
    chosen = column.selectbox(label, names, index=min(default, len(names) - 1), key=key,
                              format_func=lambda name: visible(servers[name].label))
    answer_line(column.caption, chosen)
    return chosen


mode = st.radio("Label Studio", ["one shared server (blinding only detected)",
                                 "one server per side (blinding enforced)"],
                key="review_mode", horizontal=True)
hint = "One per line: email:languages, e.g. ana@example.org:ar,fa"
if mode.startswith("one shared"):
    targets: str | dict = server_choice(st, "Server", "review_server", 0)
    annotators: list[str] | dict = annotator_lines(
        st.text_area("Annotators", key="review_annotators", help=hint, placeholder=hint))
else:
    left, right, third = st.columns(3)
    targets = {"annotator 1": server_choice(left, "Side 1 server", "review_server1", 0),
               "annotator 2": server_choice(right, "Side 2 server", "review_server2", 1),
               "adjudication": server_choice(third, "Adjudication server", "review_server3",
                                             2)}
    annotators = {"annotator 1": annotator_lines(left.text_area("Side 1 annotators",
                                                                key="review_side1", help=hint)),
                  "annotator 2": annotator_lines(right.text_area("Side 2 annotators",
                                                                 key="review_side2",
                                                                 help=hint))}
    if len(set(targets.values())) < 3:
        st.caption("Blinding needs three different servers: configure more (below).")
with st.expander("The servers: where they come from and whether they answer"):
    st.caption("Only configured servers receive a token, each its own: \"default\" "
               "(LABEL_STUDIO_URL with LABEL_STUDIO_API_KEY, else the local server), the "
               "settings file .labelstudio-servers.toml (one [name] table with url and "
               "token_env each; AUDIT_LABEL_STUDIO_SERVERS moves it), and every server "
               "scripts/labelstudio.sh runs here.")
    show_table([{"server": name, "url": visible(c.url), "configured by": c.origin,
                   "right now": visible(answers[c.url].text)}
                  for name, c in servers.items()])
    st.caption(f"\"Right now\": asked at {asked} (GET /api/version, no token sent, "
               f"{labelstudio.PROBE_TIMEOUT:g} s at most), again after {PROBE_EVERY} s.")
people = None
if any(annotators.values() if isinstance(annotators, dict) else annotators):
    try:
        people = routing.parse_annotators(annotators)
    except InputError as error:
        say(st.error, "Annotators: {problem}", problem=error)
if people:
    plan = routing.route(review.item_ids, review.groups, people)
    show_table([{"group": g or "(MAPLE)", "annotator 1": a, "annotator 2": b,
                   "units": sum(1 for v in plan.items.values() if v == g)}
                  for g, (a, b) in sorted(plan.pairs.items())])
    short = [r for r in plan.shortfall if r["left_out"]]
    if short:
        st.caption("Left out: no two annotators read these languages.")
        show_table(short)

distinct = isinstance(targets, str) or len(set(targets.values())) == 3
if auth.gate("Pushing a batch (and creating Label Studio accounts)") and \
        st.button("Push batch", disabled=not people or not distinct):
    bar = st.progress(0.0, text="pushing…")
    try:
        sites = connect_sites(targets)
        try:
            report = push.push(sites, review, annotators, workspace=current().reviews,
                               progress=lambda title, sent, total: bar.progress(
                                   sent / max(total, 1), text=f"{sent}/{total}"))
        finally:
            sites.close()
    except InputError as error:
        say(st.error, "Push failed: {problem}. Pushing again sends only what is missing.",
            problem=error)
    else:
        bar.progress(1.0, text="done")
        st.success(f"Pushed {plural(report.sent, 'new task')} to "
                   f"{plural(len(report.projects), 'project')} "
                   f"(nothing is sent twice); blinding {report.blinding}.")
        show_table([{"project": p.title, "annotator": p.annotator, "items": p.n_items,
                       "sent": p.sent} for p in report.projects])
        for note in report.intrusion_notes():   # names the intruders; releases nothing
            say(st.warning, "{note}", note=note)
        if report.credentials:
            st.warning("New accounts: hand these logins over now. They are shown only "
                       "here, once, and kept in the batch's credentials.txt (mode 600).")
            show_table([{"login page": f"{n.server}/user/login/", "email": n.email,
                           "password": n.password} for n in report.credentials], key="review_credentials")
        found = sorted({n.email for n in report.accounts if not n.created})
        if found:
            st.caption("Accounts that existed already (the person signed up first):")
            show_table([{"email": email} for email in found])

# ------------------------------------------------------------------------- progress

st.subheader("Progress")
pushed = workspace.batches(current().reviews)
if not pushed:
    st.caption("No batch pushed yet.")
    st.stop()
chosen = st.selectbox("Batch", pushed, key="review_progress_batch",
                      index=pushed.index(review.batch_id) if review.batch_id in pushed
                      else 0)


@st.fragment(run_every=STATUS_EVERY)
def progress(batch_id: str) -> None:
    """Each project's own annotator's work, polled every few seconds (status.status)."""
    try:
        sites = ledger_sites(batch_id, current().reviews)
        try:
            status = batch_status(sites, batch_id, workspace=current().reviews)
        finally:
            sites.close()
    except InputError as error:
        say(st.error, "Progress unavailable: {problem}", problem=error)
        return
    done = sum(p.done for p in status.projects)
    total = sum(p.tasks for p in status.projects)
    st.progress(done / total if total else 0.0,
                text=f"{done:,} of {total:,} tasks done · blinding {status.blinding} · "
                     f"{plural(status.left_out, 'unit')} left out · "
                     f"read {dt.datetime.now():%H:%M:%S}")
    left, right = st.columns(2)
    left.caption("Per annotator")
    left.dataframe(status.by("annotator"), key="progress_annotators")
    right.caption("Per language")
    right.dataframe(status.by("group"), key="progress_groups")
    missing = [p.key for p in status.projects if p.missing]
    if missing:
        say(st.warning, "Projects missing on the server: {projects}",
            projects=", ".join(missing))
    intrusions = status.intrusions()
    if intrusions:
        say(st.warning, "Annotations by someone other than the project's annotator, not "
            "counted as done; `python -m audit review release {batch}` logs them and gives "
            "the tasks back.", batch=batch_id)
        show_table(intrusions, key="progress_intrusions")


progress(chosen)
if workspace.Workspace(chosen, current().reviews).ledger().get("config") == \
        kinds.KINDS["post-edit"].config:
    say(st.caption, "A post-edit batch: one editor per language. {pull} turns each "
        "submission into a correction record; the Repair page of the release it was pushed "
        "from applies them (Corrections from: a post-edit batch).",
        pull=f"python -m audit review pull {chosen}")
    st.page_link("pages/12_Repair.py", label="Repair: apply its corrections",
                 query_params=current_view().to_query())
