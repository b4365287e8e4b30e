"""Review: build a stratified batch (translation units or MAPLE pairs), preview its strata,
push it to Label Studio (one project per annotator: our layer enforces two blind
annotators per item), and see who has done what."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit import browse
from audit.errors import InputError
from audit.review import labelstudio, loop, maple, sampling
from pages import setup

result = setup("Review")


@st.cache_resource(show_spinner="Listing review units…")
def units(release_key: str, _result):
    return sampling.build_units(_result, browse.descriptor_table(_result))


def server():
    try:
        return labelstudio.connect()
    except InputError as error:
        st.error(f"Label Studio is not reachable — {error}. Start it with "
                 "`scripts/labelstudio.sh start`, or set LABEL_STUDIO_URL and "
                 "LABEL_STUDIO_API_KEY.")
        st.stop()


kind = st.radio("Batch of", ["translation units", "MAPLE realism pairs",
                             "MAPLE relevance pairs"], horizontal=True, key="review_kind")
seed = int(st.number_input("Seed", value=sampling.PAPER_SEED, step=1, key="review_seed"))
if kind == "translation units":
    table = units(result.summary["release"] + str(result.summary["rows"]), result)
    preset = st.checkbox("The paper's design: 80 paragraphs + 20 questions + 20 answers per "
                         "non-English language", value=False, key="review_preset")
    if preset:
        batch = sampling.sample_design(table)
    else:
        by = st.multiselect("Strata", list(sampling.DIMENSIONS),
                            default=["language", "unit"], key="review_by")
        allocation = st.radio("Allocation", ["equal", "proportional"], horizontal=True,
                              key="review_allocation")
        if allocation == "equal":
            size = None
            per = int(st.number_input("Units per stratum", 1, 1000, 2, key="review_per"))
        else:
            per = None
            size = int(st.number_input("Batch size", 1, 100_000, 100, key="review_size"))
        batch = sampling.sample(table, by, seed=seed, allocation=allocation, size=size,
                                per_stratum=per)
    review = loop.translation_batch(batch, result.release)
    st.write(f"Batch `{review.batch_id}`: {len(review.item_ids):,} units; "
             f"shortfall {batch.manifest['totals']['shortfall']:,}.")
    st.dataframe([{**c["stratum"], **{k: c[k] for k in ("available", "target", "chosen",
                                                         "shortfall")}}
                  for c in batch.manifest["counts"]], hide_index=True)
else:
    default = maple.DEMO_QUERY_PAIRS if "realism" in kind else maple.DEMO_RELEVANCE_PAIRS
    path = st.text_input("Pairs file (JSONL or Parquet)", value=str(default),
                         key="review_maple_path")
    try:
        if "realism" in kind:
            review = loop.realism_batch(maple.assign_order(maple.read_query_pairs(Path(path)),
                                                           seed))
        else:
            review = loop.relevance_batch(maple.read_relevance_pairs(Path(path)))
    except InputError as error:
        st.error(f"Cannot read the pairs — {error}")
        st.stop()
    st.write(f"Batch `{review.batch_id}`: {len(review.item_ids):,} pairs "
             "(A/B order randomised by seed; annotators see only the texts).")
    st.dataframe(review.items.to_pandas(), hide_index=True)

st.subheader("Push to Label Studio")
left, right = st.columns(2)
first = left.text_input("Annotator 1 (email)", key="review_ann1")
second = right.text_input("Annotator 2 (email)", key="review_ann2")
if st.button("Push batch", disabled=not (first and second)):
    bar = st.progress(0.0, text="pushing…")
    try:
        report = loop.push(server(), review, [first, second], workspace=loop.REVIEWS,
                           progress=lambda title, sent, total: bar.progress(
                               sent / max(total, 1), text=f"{title}: {sent}/{total}"))
    except InputError as error:
        st.error(f"Push failed — {error}. Pushing again sends only what is missing.")
    else:
        st.success(f"Pushed {report.sent:,} new tasks (nothing is sent twice).")

st.subheader("Batches and who has done what")
ledgers = sorted(loop.REVIEWS.glob("*/ledger.json"))
if not ledgers:
    st.caption("No batch pushed yet.")
for ledger_path in ledgers:
    ledger = loop.read_ledger(ledger_path.parent.name, loop.REVIEWS)
    annotations = loop.read_annotations(ledger_path.parent.name, loop.REVIEWS)
    done = {}
    if annotations is not None:
        for annotator, item in set(zip(annotations.column("annotator").to_pylist(),
                                       annotations.column("item_id").to_pylist())):
            done[annotator] = done.get(annotator, 0) + 1
    st.markdown(f"**{ledger_path.parent.name}** · {ledger['kind']}")
    st.dataframe([{"project": entry["title"], "annotator": entry["annotator"],
                   "role": loop.ROLES[slot], "items annotated (pulled)":
                   done.get(entry["annotator"], 0)}
                  for slot, entry in ledger["projects"].items()], hide_index=True)
