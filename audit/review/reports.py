"""Review reports over pulled annotations (schema: audit/review/agreement.py), all from
final labels (adjudicated, else agreed), each returned as a pyarrow table.

- translation: mean adequacy / fluency overall, by language and by unit; preservation
  rates (share "yes"); error-consequence distribution. Intervals are percentile bootstraps
  that resample source instances (cluster_id) with replacement, within each reported group.
  A rating whose two initial annotators differ and that has no adjudication enters as the
  mean of the initial ratings (a 4 and a 5 count as 4.5); other unresolved labels (a
  disagreement on a yes/no or a consequence, or an item with one annotator) are left out
  and counted in n_unresolved. Consequence shares are among units whose final consequence
  is an error (the form asks for one only when there is an error); units whose final
  consequence is "none" (agreed by both leaving it empty, or adjudicated) are counted in
  n_no_consequence.
- MAPLE realism in the layout of the paper's Table 4: per setting Prefer A / Tie / Prefer B
  (% of final labels; A = the setting's first-named source), n, and Cohen's κ from the two
  initial annotations. Rows in the paper's order (maple.SETTINGS: MAPLE vs human-written,
  MAPLE vs LLM+human-edited, human-written vs LLM+human-edited, MAPLE vs LLM,
  human-written vs LLM); a setting outside the paper's five follows, by name.
- MAPLE relevance: share relevant with a Wilson 95% interval, and κ.

write_reports writes them all, with the agreement tables, the final labels and the
adjudication queue, as CSV (and Plotly HTML where charted) into a new directory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from statsmodels.stats.proportion import proportion_confint

from ..analysis.stats import SEED, cluster_mean
from . import agreement as ag
from . import kinds
from .maple import SETTINGS

RATINGS = ("adequacy", "fluency")
PRESERVATION = ("answer_preserved", "entities_preserved", "alignment_preserved",
                "assigned_language")


# ------------------------------------------------------------------------------ translation

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


def _translation(final: pl.DataFrame, criterion: str) -> pl.DataFrame:
    return final.filter(pl.col("kind") == "translation", pl.col("criterion") == criterion)


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
                mean, low, high = cluster_mean(scored["score"].to_numpy(),
                                               scored["cluster_id"].to_numpy(), n_boot,
                                               ag.rng_for(seed, criterion, by, str(group)))
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


# ----------------------------------------------------------------------------------- MAPLE

REALISM_SCHEMA = pa.schema([
    ("setting", pa.string()), ("prefer_a", pa.float64()), ("tie", pa.float64()),
    ("prefer_b", pa.float64()), ("n", pa.int64()), ("n_unresolved", pa.int64()),
    ("kappa", pa.float64()), ("n_pairs", pa.int64()), ("note", pa.string()),
])


def realism_table(table: pa.Table | pl.DataFrame) -> pa.Table:
    """The paper's Table 4: shares (%) from final labels, κ from the initial pairs."""
    frame = ag.prepare(table)
    return _realism_table(ag.final_frame(frame), ag.pair_frames(frame)[0])


def _setting_kappa(pairs: pl.DataFrame, scale: ag.Scale) -> tuple[float, int, str]:
    first, second = ag.codes(pairs["value_1"], scale), ag.codes(pairs["value_2"], scale)
    kappa = ag.cohen_kappa(first, second, len(scale.labels))
    note = ag.undefined_note(first, second, scale) if np.isnan(kappa) else ""
    return kappa, pairs.height, note


def paper_order(settings: list[str]) -> list[str]:
    """Table 4's row order; settings the paper lacks after it, by name."""
    rank = {name: i for i, name in enumerate(SETTINGS)}
    return sorted(settings, key=lambda s: (rank.get(s, len(rank)), s))


def _realism_table(final: pl.DataFrame, complete: pl.DataFrame) -> pa.Table:
    scale = ag.CRITERIA["realism"]["preference"]
    final = final.filter(pl.col("kind") == "realism")
    complete = complete.filter(pl.col("kind") == "realism")
    rows = []
    for setting in paper_order(final["setting"].unique().to_list()):
        labels = final.filter(pl.col("setting") == setting)
        resolved = labels["value"].drop_nulls().to_list()
        n = len(resolved)
        shares = [100.0 * resolved.count(v) / n if n else float("nan") for v in scale.labels]
        kappa, n_pairs, note = _setting_kappa(
            complete.filter(pl.col("setting") == setting), scale)
        rows.append({"setting": setting, "prefer_a": shares[0], "tie": shares[1],
                     "prefer_b": shares[2], "n": n, "n_unresolved": labels.height - n,
                     "kappa": kappa, "n_pairs": n_pairs, "note": note})
    return pa.Table.from_pylist(rows, schema=REALISM_SCHEMA)


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
    labels = final.filter(pl.col("kind") == "relevance")
    resolved = labels["value"].drop_nulls().to_list()
    n, relevant = len(resolved), resolved.count("relevant")
    low, high = (proportion_confint(relevant, n, alpha=0.05, method="wilson") if n
                 else (float("nan"), float("nan")))
    kappa, n_pairs, note = _setting_kappa(complete.filter(pl.col("kind") == "relevance"),
                                          ag.CRITERIA["relevance"]["relevance"])
    return pa.Table.from_pylist([{
        "n": n, "n_relevant": relevant, "share_relevant": relevant / n if n else float("nan"),
        "ci_low": float(low), "ci_high": float(high), "n_unresolved": labels.height - n,
        "kappa": kappa, "n_pairs": n_pairs, "note": note}], schema=RELEVANCE_SCHEMA)


# ---------------------------------------------------------------------------------- bundle

def all_reports(table: pa.Table | pl.DataFrame, n_boot: int = 2000,
                seed: int = SEED) -> dict[str, pa.Table]:
    """Every report whose kind occurs in the table, from one preparation."""
    frame = ag.prepare(table)
    final, complete = ag.final_frame(frame), ag.pair_frames(frame)[0]
    reports: dict[str, pa.Table] = {}
    for kind in kinds.of_annotations(set(frame["kind"].unique())):
        if kind.reports is not None:
            reports |= kind.reports(final, complete, n_boot, seed)
    return reports


def to_csv(table: pa.Table | pl.DataFrame, path: str | Path) -> Path:
    """Write a report atomically through the one CSV writer (audit.export)."""
    from ..io.tables import write_table
    return write_table(table.to_arrow() if isinstance(table, pl.DataFrame) else table,
                       Path(path), "csv")


def write_reports(table, out: Path, *, n_boot: int = 2000, seed: int = SEED,
                  extra: dict | None = None, kappa_floor: float | None = None,
                  skips: list[dict] | tuple = (), batch_id: str = "BATCH") -> list[str]:
    """Every report of a pulled table (and the `extra` tables) as CSV, the charted ones also
    as Plotly HTML (with plotly.min.js beside them, so the pages open offline), into a new
    directory that appears whole or not at all."""
    from ..io.atomic import staged_directory
    from . import charts
    from .push import queue_with_skips
    frame = ag.prepare(table)
    final = ag.final_frame(frame)
    floor = ag.KAPPA_FLOOR if kappa_floor is None else kappa_floor
    tables = {"agreement": ag.agreement(table, n_boot=n_boot, seed=seed),
              **{f"agreement_by_{by}": ag.agreement_by(table, by, n_boot=n_boot,
                                                        seed=seed, kappa_floor=floor)
                 for by in ag.BREAKDOWNS},
              **all_reports(table, n_boot=n_boot, seed=seed),
              "final_labels": final.to_arrow(),
              "adjudication_queue": queue_with_skips(
                  ag.queue_frame(final).to_arrow(), skips, batch_id),
              **(extra or {})}
    written = []
    with staged_directory(out, what="report") as staging:
        for name, report in tables.items():
            to_csv(report, staging / f"{name}.csv")
            written.append(f"{name}.csv")
            fig = charts.figure(name, report)
            if fig is not None:
                fig.write_html(staging / f"{name}.html", include_plotlyjs="directory")
                written.append(f"{name}.html")
    return written
