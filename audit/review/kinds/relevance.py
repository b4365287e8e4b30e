"""The MAPLE relevance kind: two annotators judge whether a paper is relevant to a query
and aspect. Report: the share relevant with a Wilson 95% interval, and κ."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl
import pyarrow as pa
from statsmodels.stats.proportion import proportion_confint

from .. import agreement as ag
from .. import maple, routing
from ..batches import ReviewBatch, content_id
from ..charts import Chart, bars, error_bars
from ..configs import COMMENT, Control, LabelConfig
from ..schemas import ITEM_SCHEMA
from .base import ReviewKind, from_pairs

FORM = LabelConfig("maple_relevance", {
    "relevance": Control("Choices", "text", ("relevant", "irrelevant")),
    COMMENT: Control("TextArea", "text"),
}, ("query", "aspect", "title", "abstract", "text"))
ADJUDICATION = FORM.adjudication("maple_relevance_adjudication")


def payload(pair: maple.RelevancePair, batch_id: str) -> dict:
    return FORM.payload(item_id=f"relevance:{pair.pair_id}", batch_id=batch_id,
                        query=pair.query, aspect=pair.aspect, title=pair.title,
                        abstract=pair.abstract, text=pair.text)


def relevance_batch(pairs: Sequence[maple.RelevancePair], batch_id: str | None = None
                    ) -> ReviewBatch:
    """Query–paper pairs; the cluster is the query."""
    pairs = list(pairs)
    batch_id = batch_id or content_id(KIND.name, [p.pair_id for p in pairs])
    tasks = [payload(pair, batch_id) for pair in pairs]
    table = pa.Table.from_pylist([
        {"item_id": task["item_id"], "cluster_id": pair.query_id, "kind": KIND.annotation,
         "language": None, "unit": None, "setting": None, "source_a": None, "source_b": None,
         "group": routing.NO_LANGUAGE}
        for pair, task in zip(pairs, tasks)], schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, FORM.name, table, tasks)


def from_file(path: Path, seed: int, batch_id: str | None = None) -> ReviewBatch:
    """The relevance pairs of a file (in file order: nothing to blind)."""
    return relevance_batch(maple.read_relevance_pairs(path), batch_id)


RELEVANCE_SCHEMA = pa.schema([
    ("n", pa.int64()), ("n_relevant", pa.int64()), ("share_relevant", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_unresolved", pa.int64()),
    ("kappa", pa.float64()), ("n_pairs", pa.int64()), ("note", pa.string()),
])


def relevance_summary(table: pa.Table | pl.DataFrame) -> pa.Table:
    """Share of relevant query-paper pairs (Wilson 95%) and κ from the initial pairs."""
    frame = ag.prepare(table)
    return _relevance_summary(ag.final_frame(frame), ag.pair_frames(frame)[0])


def _relevance_summary(final: pl.DataFrame, complete: pl.DataFrame) -> pa.Table:
    labels = final.filter(pl.col("kind") == KIND.annotation)
    resolved = labels["value"].drop_nulls().to_list()
    n, relevant = len(resolved), resolved.count("relevant")
    low, high = (proportion_confint(relevant, n, alpha=0.05, method="wilson") if n
                 else (float("nan"), float("nan")))
    kappa, n_pairs, note = ag.kappa_with_note(
        complete.filter(pl.col("kind") == KIND.annotation),
        ag.CRITERIA[KIND.annotation]["relevance"])
    return pa.Table.from_pylist([{
        "n": n, "n_relevant": relevant, "share_relevant": relevant / n if n else float("nan"),
        "ci_low": float(low), "ci_high": float(high), "n_unresolved": labels.height - n,
        "kappa": kappa, "n_pairs": n_pairs, "note": note}], schema=RELEVANCE_SCHEMA)


def reports(final: pl.DataFrame, complete: pl.DataFrame, n_boot: int,
            seed: int) -> dict[str, pa.Table]:
    return {"relevance": _relevance_summary(final, complete)}


def _chart(rows: list[dict]):
    fig = bars()
    fig.add_bar(x=["relevant"], y=[r["share_relevant"] for r in rows],
                error_y=error_bars(rows, "share_relevant"))
    fig.update_layout(yaxis_range=[0, 1], yaxis_title="share relevant")
    return fig


KIND = ReviewKind("relevance", FORM, "relevance", "MAPLE relevance pairs",
                  from_pairs(from_file), adjudication_form=ADJUDICATION,
                  needs=(("pairs", "the relevance pairs file (JSONL or Parquet)"),),
                  pairs=from_file, reports=reports,
                  charts={"relevance": Chart("Query–paper relevance (Wilson 95%)", _chart)},
                  demo_pairs=maple.DEMO_RELEVANCE_PAIRS)
