"""The MAPLE realism kind: two annotators see two queries of a pair, blind (which source
is shown as A stays in the workspace's assignment key), and prefer A, B or neither.

Report, in the layout of the paper's Table 4: per setting Prefer A / Tie / Prefer B (% of
final labels; A = the setting's first-named source), n, and Cohen's κ from the two initial
annotations, flagged below the κ floor as every agreement table flags it
(agreement.below_floor). Rows in the paper's order (maple.SETTINGS: MAPLE vs
human-written, MAPLE vs LLM+human-edited, human-written vs LLM+human-edited, MAPLE vs LLM,
human-written vs LLM); a setting outside the paper's five follows, by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl
import pyarrow as pa

from ...reports.render import chart_label
from .. import agreement as ag
from .. import maple, routing
from ..batches import ReviewBatch, content_id
from ..charts import Chart, bars
from ..configs import Control, LabelConfig
from ..schemas import ITEM_SCHEMA
from .base import ReviewKind, from_pairs

FORM = LabelConfig("maple_realism",
                   {"preference": Control("Choices", "query_a", ("A", "Tie", "B"))},
                   ("query_a", "query_b"))
ADJUDICATION = FORM.adjudication("maple_realism_adjudication")


def payload(item: maple.RealismItem, batch_id: str) -> dict:
    """Only the two texts in shown order: the sources stay in the assignment key."""
    return FORM.payload(item_id=item.item_id, batch_id=batch_id, query_a=item.shown_a,
                        query_b=item.shown_b)


def realism_batch(items: Sequence[maple.RealismItem], batch_id: str | None = None
                  ) -> ReviewBatch:
    """Blind query pairs (maple.assign_order); the cluster is the pair."""
    items = list(items)
    batch_id = batch_id or content_id(KIND.name, [i.item_id for i in items])
    tasks = [payload(item, batch_id) for item in items]
    table = pa.Table.from_pylist([
        {"item_id": i.item_id, "cluster_id": i.pair_id, "kind": KIND.annotation,
         "language": None, "unit": None, "setting": i.setting, "source_a": i.shown_a_source,
         "source_b": i.shown_b_source, "group": routing.NO_LANGUAGE} for i in items],
        schema=ITEM_SCHEMA)
    return ReviewBatch(batch_id, FORM.name, table, tasks, assignments=items)


def from_file(path: Path, seed: int, batch_id: str | None = None) -> ReviewBatch:
    """The query pairs of a file in seeded A/B order."""
    return realism_batch(maple.assign_order(maple.read_query_pairs(path), seed), batch_id)


# ------------------------------------------------------------------------- report

REALISM_SCHEMA = pa.schema([
    ("setting", pa.string()), ("prefer_a", pa.float64()), ("tie", pa.float64()),
    ("prefer_b", pa.float64()), ("n", pa.int64()), ("n_unresolved", pa.int64()),
    ("kappa", pa.float64()), ("n_pairs", pa.int64()), ("note", pa.string()),
    ("kappa_floor", pa.float64()), ("flagged", pa.bool_()),
])


def realism_table(table: pa.Table | pl.DataFrame, kappa_floor: float = ag.KAPPA_FLOOR
                  ) -> pa.Table:
    """The paper's Table 4: shares (%) from final labels, κ from the initial pairs."""
    frame = ag.prepare(table)
    return _realism_table(ag.final_frame(frame), ag.pair_frames(frame)[0], kappa_floor)


def paper_order(settings: list[str]) -> list[str]:
    """Table 4's row order; settings the paper lacks after it, by name."""
    rank = {name: i for i, name in enumerate(maple.SETTINGS)}
    return sorted(settings, key=lambda s: (rank.get(s, len(rank)), s))


def _realism_table(final: pl.DataFrame, complete: pl.DataFrame,
                   kappa_floor: float = ag.KAPPA_FLOOR) -> pa.Table:
    scale = ag.CRITERIA[KIND.annotation]["preference"]
    final = final.filter(pl.col("kind") == KIND.annotation)
    complete = complete.filter(pl.col("kind") == KIND.annotation)
    rows = []
    for setting in paper_order(final["setting"].unique().to_list()):
        labels = final.filter(pl.col("setting") == setting)
        resolved = labels["value"].drop_nulls().to_list()
        n = len(resolved)
        shares = [100.0 * resolved.count(v) / n if n else float("nan") for v in scale.labels]
        kappa, n_pairs, note = ag.kappa_with_note(
            complete.filter(pl.col("setting") == setting), scale)
        rows.append({"setting": setting, "prefer_a": shares[0], "tie": shares[1],
                     "prefer_b": shares[2], "n": n, "n_unresolved": labels.height - n,
                     "kappa": kappa, "n_pairs": n_pairs, "note": note,
                     "kappa_floor": kappa_floor,
                     "flagged": ag.below_floor("cohen_kappa", kappa, kappa_floor)})
    return pa.Table.from_pylist(rows, schema=REALISM_SCHEMA)


def reports(final: pl.DataFrame, complete: pl.DataFrame, n_boot: int,
            seed: int) -> dict[str, pa.Table]:
    return {"realism": _realism_table(final, complete)}


def _with_source_a(setting: str) -> str:
    """'MAPLE vs Human' -> 'MAPLE vs Human (A = MAPLE)': which source Prefer A means."""
    return f"{setting} (A = {ag.split_setting(setting)[0]})"


def _chart(rows: list[dict]):
    fig = bars()
    settings = [chart_label(_with_source_a(r["setting"])) for r in rows]
    for column, label in (("prefer_a", "Prefer A"), ("tie", "Tie"), ("prefer_b", "Prefer B")):
        fig.add_bar(name=label, y=settings, x=[r[column] for r in rows], orientation="h")
    # The legend reads left to right like the stacked segments (Plotly reverses a stacked
    # chart's legend by default), under the plot.
    fig.update_layout(barmode="stack", xaxis_title="% of pairs",
                      yaxis={"autorange": "reversed"},   # the paper's order, top down
                      legend={"orientation": "h", "traceorder": "normal", "x": 0, "y": -0.2})
    return fig


KIND = ReviewKind("realism", FORM, "realism", "MAPLE realism pairs", from_pairs(from_file),
                  adjudication_form=ADJUDICATION,
                  needs=(("pairs", "the realism pairs file (JSONL or Parquet)"),),
                  pairs=from_file, reports=reports,
                  charts={"realism": Chart("Table 4: blinded realism preferences "
                                           "(% of final labels)", _chart)},
                  shown_order=True, demo_pairs=maple.DEMO_QUERY_PAIRS)
