"""The translation kind: two bilingual annotators rate a sampled translation unit (its
English source beside it) for adequacy, fluency, what it preserves and the consequence of
an error; disputes go to an adjudicator.

Reports, all from final labels (adjudicated, else agreed): mean adequacy / fluency overall,
by language and by unit; preservation rates (share "yes"); error-consequence distribution.
Intervals are percentile bootstraps that resample source instances (cluster_id) with
replacement, within each reported group. A rating whose two initial annotators differ and
that has no adjudication enters as the mean of the initial ratings (a 4 and a 5 count as
4.5); other unresolved labels (a disagreement on a yes/no or a consequence, or an item with
one annotator) are left out and counted in n_unresolved. Consequence shares are among units
whose final consequence is an error (the form asks for one only when there is an error);
units whose final consequence is "none" (agreed by both leaving it empty, or adjudicated)
are counted in n_no_consequence.
"""

from __future__ import annotations

from typing import Mapping

import polars as pl
import pyarrow as pa

from ...analysis.stats import SEED, cluster_mean
from ...engine.scan import ScanResult
from ...errors import InputError
from ...io.model import Release
from ...reports.render import chart_label
from .. import agreement as ag
from .. import routing, sampling
from ..batches import ReviewBatch
from ..charts import Chart, bars, error_bars
from ..configs import COMMENT, NO_CONSEQUENCE, Control, LabelConfig
from ..inputs import Spec, design, scanned
from ..schemas import ITEM_SCHEMA
from .base import ReviewKind

YES_NO = ("yes", "no")
ERROR_CONSEQUENCES = ("cosmetic", "metric-sensitive", "reasoning-changing",
                      "label-invalidating")
FORM = LabelConfig("translation_review", {
    "adequacy": Control("Rating", "translation", max_rating=5),
    "fluency": Control("Rating", "translation", max_rating=5),
    "answer_preserved": Control("Choices", "translation", YES_NO),
    "entities_preserved": Control("Choices", "translation", YES_NO),
    "alignment_preserved": Control("Choices", "translation", YES_NO),
    "assigned_language": Control("Choices", "translation", YES_NO),
    "consequence": Control("Choices", "translation", ERROR_CONSEQUENCES),
    COMMENT: Control("TextArea", "translation"),
}, ("item_id", "unit", "language", "question", "source_question", "answer", "source_answer",
    "title", "source_title", "source_text", "translation_text"),
    unanswered={"consequence": "none (no error)"})
# The adjudicator may also settle a consequence as "none" (no error).
ADJUDICATION = FORM.adjudication("translation_adjudication", consequence=Control(
    "Choices", "translation", (*ERROR_CONSEQUENCES, NO_CONSEQUENCE)))


def payload(texts: Mapping[str, str], batch_id: str) -> dict:
    """From one entry of sampling.unit_texts()."""
    fields = {f: texts[f] for f in FORM.fields if f != "item_id"}
    return FORM.payload(item_id=texts["item_id"], batch_id=batch_id, **fields)


def translation_batch(batch: sampling.Batch, release: Release,
                      batch_id: str | None = None) -> ReviewBatch:
    """A sampled batch of translation units; the cluster is the source row, the group the
    languages the unit shows. The batch id is the sample's unless `batch_id` is given."""
    batch_id = batch_id or batch.batch_id
    texts = sampling.unit_texts(release, batch.units)
    tasks = [payload(t, batch_id) for t in texts]
    return ReviewBatch(batch_id, FORM.name, unit_items(batch.units, KIND.annotation), tasks,
                       manifest=batch.manifest)


def unit_items(units: pa.Table, annotation: str) -> pa.Table:
    """The item table of sampled units: the cluster is the source row, the group the
    languages the unit shows."""
    n = units.num_rows
    groups = [routing.group_of(languages) for languages in units["languages"].to_pylist()]
    return pa.table({
        "item_id": units["item_id"], "cluster_id": units["row_id"],
        "kind": pa.array([annotation] * n, pa.string()),
        "language": units["language"], "unit": units["unit"],
        "setting": pa.nulls(n, pa.string()), "source_a": pa.nulls(n, pa.string()),
        "source_b": pa.nulls(n, pa.string()),
        "group": pa.array(groups, pa.string())}).cast(ITEM_SCHEMA)


def sampled(spec: Spec) -> tuple[ScanResult, sampling.Batch]:
    """The spec's release scanned, and its non-English units sampled with its design."""
    result = scanned(spec, spec.release, spec.sources)
    units = sampling.build_units(result)
    try:
        return result, sampling.sample_design(units, design(spec), where={
            "language": list(sampling.NON_ENGLISH)})
    except ValueError as error:
        raise InputError(spec.path, str(error), where="design") from None


def build(spec: Spec) -> ReviewBatch:
    result, sample = sampled(spec)
    return translation_batch(sample, result.release, spec.batch)


# ------------------------------------------------------------------------- reports

RATINGS = ("adequacy", "fluency")
PRESERVATION = ("answer_preserved", "entities_preserved", "alignment_preserved",
                "assigned_language")


def rating_means(table: pa.Table | pl.DataFrame, n_boot: int = 2000, seed: int = SEED) -> pa.Table:
    """Mean adequacy and fluency overall, by language and by unit, with cluster CIs."""
    return _rating_means(ag.final_frame(ag.prepare(table)), n_boot, seed)


def preservation_rates(table: pa.Table | pl.DataFrame, n_boot: int = 2000,
                       seed: int = SEED) -> pa.Table:
    """Share of "yes" per preservation criterion, with cluster CIs."""
    return _preservation_rates(ag.final_frame(ag.prepare(table)), n_boot, seed)


def consequence_distribution(table: pa.Table | pl.DataFrame) -> pa.Table:
    """Counts and shares of the four error consequences among resolved labels."""
    return _consequence_distribution(ag.final_frame(ag.prepare(table)))


def reports(final: pl.DataFrame, complete: pl.DataFrame, n_boot: int,
            seed: int) -> dict[str, pa.Table]:
    return {"rating_means": _rating_means(final, n_boot, seed),
            "preservation_rates": _preservation_rates(final, n_boot, seed),
            "consequences": _consequence_distribution(final)}


def _translation(final: pl.DataFrame, criterion: str) -> pl.DataFrame:
    return final.filter(pl.col("kind") == KIND.annotation, pl.col("criterion") == criterion)


def rating_scores(final: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """One score per item: the final rating, else the mean of >= 2 differing initial
    ratings (null when the item is incomplete)."""
    initial_mean = (pl.col("initial_values").list.eval(pl.element().cast(pl.Float64))
                    .list.mean())
    score = (pl.when(pl.col("value").is_not_null()).then(pl.col("value").cast(pl.Float64))
             .when((pl.col("status") == "disagreement") & (pl.col("n_initial") >= 2))
             .then(initial_mean))
    return _translation(final, criterion).with_columns(
        score.alias("score"),
        (pl.col("value").is_null() & score.is_not_null()).alias("mean_of_initial"))

MEANS_SCHEMA = pa.schema([
    ("criterion", pa.string()), ("by", pa.string()), ("group", pa.string()),
    ("n_items", pa.int64()), ("n_clusters", pa.int64()), ("n_mean_of_initial", pa.int64()),
    ("n_unresolved", pa.int64()), ("mean", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()),
])


def _rating_means(final: pl.DataFrame, n_boot: int, seed: int) -> pa.Table:
    rows = []
    for criterion in RATINGS:
        scores = rating_scores(final, criterion).with_columns(pl.lit("all").alias("all"))
        for by in ("all", "language", "unit"):
            for (group,), part in scores.sort(by).group_by(by, maintain_order=True):
                scored = part.filter(pl.col("score").is_not_null())
                # Seeded by the items, not the slice's name: the same items (all, and
                # the one language there is) get the same interval.
                mean, low, high = cluster_mean(scored["score"].to_numpy(),
                                               scored["cluster_id"].to_numpy(), n_boot,
                                               ag.rng_for(seed, criterion,
                                                          *sorted(scored["item_id"])))
                rows.append({"criterion": criterion, "by": by, "group": group,
                             "n_items": scored.height,
                             "n_clusters": scored["cluster_id"].n_unique(),
                             "n_mean_of_initial": int(scored["mean_of_initial"].sum()),
                             "n_unresolved": part.height - scored.height,
                             "mean": mean, "ci_low": low, "ci_high": high})
    return pa.Table.from_pylist(rows, schema=MEANS_SCHEMA)


RATES_SCHEMA = pa.schema([
    ("criterion", pa.string()), ("n_items", pa.int64()), ("n_clusters", pa.int64()),
    ("n_unresolved", pa.int64()), ("n_yes", pa.int64()), ("share_yes", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()),
])


def _preservation_rates(final: pl.DataFrame, n_boot: int, seed: int) -> pa.Table:
    rows = []
    for criterion in PRESERVATION:
        labels = _translation(final, criterion)
        resolved = labels.filter(pl.col("value").is_not_null())
        yes = (resolved["value"] == "yes").to_numpy().astype(float)
        share, low, high = cluster_mean(yes, resolved["cluster_id"].to_numpy(), n_boot,
                                        ag.rng_for(seed, criterion))
        rows.append({"criterion": criterion, "n_items": resolved.height,
                     "n_clusters": resolved["cluster_id"].n_unique(),
                     "n_unresolved": labels.height - resolved.height, "n_yes": int(yes.sum()),
                     "share_yes": share, "ci_low": low, "ci_high": high})
    return pa.Table.from_pylist(rows, schema=RATES_SCHEMA)


CONSEQUENCE_SCHEMA = pa.schema([
    ("consequence", pa.string()), ("n", pa.int64()), ("share", pa.float64()),
    ("n_resolved", pa.int64()), ("n_unresolved", pa.int64()), ("n_no_consequence", pa.int64()),
])


def _consequence_distribution(final: pl.DataFrame) -> pa.Table:
    """Shares among final error consequences; "none" and unresolved counted apart."""
    values = _translation(final, "consequence")["value"].to_list()
    errors = [v for v in values if v in ag.CONSEQUENCES]
    rows = [{"consequence": category, "n": errors.count(category),
             "share": errors.count(category) / len(errors) if errors else float("nan"),
             "n_resolved": len(errors), "n_unresolved": values.count(None),
             "n_no_consequence": values.count(ag.NO_CONSEQUENCE)}
            for category in ag.CONSEQUENCES]
    return pa.Table.from_pylist(rows, schema=CONSEQUENCE_SCHEMA)


# ------------------------------------------------------------------------- charts

def _rating_chart(rows: list[dict]):
    fig = bars()
    for criterion in RATINGS:
        part = [r for r in rows if r["by"] == "language" and r["criterion"] == criterion]
        fig.add_bar(name=criterion, x=[chart_label(r["group"]) for r in part],
                    y=[r["mean"] for r in part], error_y=error_bars(part, "mean"))
    fig.update_layout(barmode="group", xaxis_title="language",
                      yaxis_title="mean rating (1–5)")
    return fig


def _preservation_chart(rows: list[dict]):
    fig = bars()
    fig.add_bar(x=[chart_label(r["criterion"]) for r in rows],
                y=[r["share_yes"] for r in rows], error_y=error_bars(rows, "share_yes"))
    fig.update_layout(yaxis_title="share preserved", yaxis_range=[0, 1])
    return fig


def _consequence_chart(rows: list[dict]):
    fig = bars()
    fig.add_bar(x=[chart_label(r["consequence"]) for r in rows], y=[r["n"] for r in rows])
    fig.update_layout(yaxis_title="units")
    return fig


CHARTS = {
    "rating_means": Chart("Mean adequacy and fluency by language (95% cluster bootstrap)",
                          _rating_chart),
    "preservation_rates": Chart("Share preserved (95% cluster bootstrap)", _preservation_chart),
    "consequences": Chart("Error consequences (final labels)", _consequence_chart),
}

KIND = ReviewKind("translation", FORM, "translation", "translation units", build,
                  adjudication_form=ADJUDICATION, reports=reports, charts=CHARTS)
