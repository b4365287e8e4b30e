"""Inter-annotator agreement, the adjudication queue and final labels over pulled review
annotations (SPEC §5; XHotpotQA App. C.5; MAPLE App. D.1–D.2). Pure functions over one table.

Annotations table (pyarrow.Table or polars.DataFrame), long format, one row per
(annotation, criterion):

    item_id        str        the reviewed unit (one Label Studio task)
    cluster_id     str        source instance id; the bootstrap resamples these
    kind           str        "translation" | "realism" | "relevance"
    language       str|null   assigned language of the unit (null for MAPLE)
    unit           str|null   "paragraph" | "question" | "answer" | "instance" (null for MAPLE)
    setting        str|null   MAPLE realism comparison "<first> vs <second>" (else null)
    annotator      str
    role           str        "initial" | "adjudication"
    criterion      str        see CRITERIA; "comment" rows are accepted and ignored
    value          str|null   in the criterion's domain; null = not answered
    annotation_id  int
    updated_at     timestamp
    source_a, source_b  str|null  optional, realism only: the unblinded sources shown as A, B

Criteria (kind: criterion -> values):

    translation: adequacy, fluency                      "1" .. "5" (ordinal)
                 answer_preserved, entities_preserved,
                 alignment_preserved, assigned_language  "yes" | "no"
                 consequence   cosmetic | metric-sensitive | reasoning-changing |
                               label-invalidating; initial annotators leave it empty when
                               there is no error, an adjudicator answers "none"
    realism:     preference    "A" | "Tie" | "B"   (A = source_a was preferred)
    relevance:   relevance     relevant | irrelevant

Conventions:
- A re-submission replaces the earlier one: per (item, criterion, annotator, role) the row
  with the latest (updated_at, annotation_id) counts.
- Realism preferences are re-expressed relative to the setting, so "A" always means its
  first-named source ("MAPLE vs Human": A = MAPLE), whatever the blind display order was.
- In a pair, annotator 1 is the name that sorts first: with one fixed pair of annotators
  this is exactly the two-rater Cohen's κ.
- A criterion one initial annotator answered and the other did not is a disagreement
  (queue, final label null) but not a pair (it is listed among the irregular pairs). The
  consequence is the exception: the form asks for one only when there is an error, so an
  initial annotator who left it empty on an item they annotated is scored "none" (as the
  final labels read it), and "cosmetic" against empty is a scored disagreement, not
  irregular (in a table where anyone named a consequence at all).
- Adjudication settles disputed criteria only: an adjudicator's answer on a criterion the
  two initial annotators agree on is ignored (the agreed value is kept). Several
  adjudications of one item and criterion: the latest counts.
- Final labels (final_labels) are the item × criterion table the reports read: each value
  with its origin, "agreed" or "adjudicated" (null while unresolved; status says why:
  disagreement = open in the adjudication queue, incomplete = fewer than two initial
  annotations). A translation item both initial annotators left without a consequence
  gets consequence "none", agreed.
- Undefined statistics never raise: κ and α are NaN with a note when every annotation is
  in one category (chance agreement 1) or no item has two initial annotations. Bootstrap
  replicates that are undefined (a resample with one category) are left out of the
  percentiles and counted (n_boot_defined, note).

α comes from the `krippendorff` package. κ is computed from the contingency table
(kappa_of_tables, one array expression for the point estimate and all 2,000 bootstrap
tables; tests hold it equal to sklearn's cohen_kappa_score with fixed `labels` on random
tables): sklearn's call validates its input for ~2.4 ms, 500 times per report with the
language and pair breakdowns. Bootstrap α is computed the same way for all tables at once
(alpha_of_tables: the package's coincidence computation specialised to two coders; tests
hold it equal to the package's value), because a library call per replicate (~0.2 ms)
takes ~3 s for the seven translation criteria, and a multiple of that per language and
pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

import krippendorff
import numpy as np
import polars as pl
import pyarrow as pa

# The bootstrap helpers live in the shared statistics module (also used by evaluation).
from ..analysis.stats import CI_LEVEL, SEED, cluster_weights, percentile_interval, rng_for  # noqa: F401

RATING = ("1", "2", "3", "4", "5")
YES_NO = ("no", "yes")
CONSEQUENCES = ("cosmetic", "metric-sensitive", "reasoning-changing", "label-invalidating")
NO_CONSEQUENCE = "none"   # an adjudicator's "no error": valid for role adjudication only
PREFERENCE = ("A", "Tie", "B")
RELEVANCE = ("relevant", "irrelevant")


@dataclass(frozen=True)
class Scale:
    labels: tuple[str, ...]
    ordinal: bool = False

    @property
    def level(self) -> str:
        return "ordinal" if self.ordinal else "nominal"


CRITERIA: dict[str, dict[str, Scale]] = {
    "translation": {
        "adequacy": Scale(RATING, ordinal=True),
        "fluency": Scale(RATING, ordinal=True),
        "answer_preserved": Scale(YES_NO),
        "entities_preserved": Scale(YES_NO),
        "alignment_preserved": Scale(YES_NO),
        "assigned_language": Scale(YES_NO),
        "consequence": Scale(CONSEQUENCES),
    },
    "realism": {"preference": Scale(PREFERENCE)},
    "relevance": {"relevance": Scale(RELEVANCE)},
}
COMMENT = "comment"
ROLES = ("initial", "adjudication")
REQUIRED = ("item_id", "cluster_id", "kind", "language", "unit", "setting", "annotator", "role",
            "criterion", "value", "annotation_id", "updated_at")
ITEM = ["item_id", "cluster_id", "kind", "language", "unit", "setting"]


# ---------------------------------------------------------------- validation and preparation

def prepare(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """Validated annotations: comments and unanswered rows dropped, re-submissions reduced to
    the latest, realism preferences relative to the setting. Raises ValueError on bad input."""
    frame = _as_polars(table)
    missing = [name for name in REQUIRED if name not in frame.columns]
    if missing:
        raise ValueError(f"annotations table is missing column(s) {', '.join(map(repr, missing))}"
                         f" (required: {', '.join(REQUIRED)})")
    frame = frame.with_columns(pl.col(name).cast(pl.String) for name in
                               ("item_id", "cluster_id", "kind", "language", "unit", "setting",
                                "annotator", "role", "criterion", "value"))
    _check_not_null(frame, ("item_id", "cluster_id", "kind", "annotator", "role", "criterion"))
    _check_domain(frame)
    frame = frame.filter(pl.col("criterion") != COMMENT, pl.col("value").is_not_null())
    _check_items(frame)
    return _relative_preferences(_latest(frame))


def _as_polars(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    if isinstance(table, pl.DataFrame):
        return table
    if isinstance(table, pa.Table):
        return pl.from_arrow(table)
    raise ValueError(f"annotations must be a pyarrow.Table or polars.DataFrame, "
                     f"not {type(table).__name__}")


def _check_not_null(frame: pl.DataFrame, names: tuple[str, ...]) -> None:
    for name in names:
        if frame[name].null_count():
            raise ValueError(f"annotations column {name!r} has {frame[name].null_count()} null(s)")


def _check_domain(frame: pl.DataFrame) -> None:
    bad_roles = set(frame["role"].unique()) - set(ROLES)
    if bad_roles:
        raise ValueError(f"unknown role(s) {sorted(bad_roles)} (expected {ROLES})")
    seen = frame.select("kind", "criterion", "value", "role").unique().iter_rows()
    for kind, criterion, value, role in seen:
        if kind not in CRITERIA:
            raise ValueError(f"unknown kind {kind!r} (expected {tuple(CRITERIA)})")
        if criterion == COMMENT:
            continue
        scale = CRITERIA[kind].get(criterion)
        if scale is None:
            raise ValueError(f"unknown {kind} criterion {criterion!r} "
                             f"(expected {tuple(CRITERIA[kind])} or {COMMENT!r})")
        if (criterion, value, role) == ("consequence", NO_CONSEQUENCE, "adjudication"):
            continue
        if value is not None and value not in scale.labels:
            raise ValueError(f"{kind} {criterion} value {value!r} is not one of {scale.labels}")


def _check_items(frame: pl.DataFrame) -> None:
    """An item belongs to one source instance and has one kind, language, unit and setting."""
    spread = frame.group_by("item_id").agg(pl.col(c).n_unique() for c in ITEM[1:])
    for column in ITEM[1:]:
        bad = spread.filter(pl.col(column) > 1)
        if bad.height:
            raise ValueError(f"item {bad['item_id'][0]!r} has more than one {column}")
    realism = frame.filter(pl.col("kind") == "realism")
    if realism["setting"].null_count():
        raise ValueError("realism rows need a setting such as 'MAPLE vs Human'")


def _latest(frame: pl.DataFrame) -> pl.DataFrame:
    # Label Studio keeps edits in place; a second submission by the same person replaces the first.
    return (frame.sort("updated_at", "annotation_id")
            .unique(subset=["item_id", "criterion", "annotator", "role"], keep="last",
                    maintain_order=True))


def split_setting(setting: str) -> tuple[str, str]:
    """'MAPLE vs Human' -> ('MAPLE', 'Human'); A is always the first-named source."""
    parts = re.split(r"\s+vs\.?\s+", setting.strip())
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"realism setting {setting!r} is not '<source> vs <source>'")
    return parts[0], parts[1]


def _relative_preferences(frame: pl.DataFrame) -> pl.DataFrame:
    """Flip A/B where the pair was stored in the order opposite to the setting's name."""
    sources = [c for c in ("source_a", "source_b") if c in frame.columns]
    realism = frame.filter(pl.col("kind") == "realism")
    if len(sources) < 2 or realism.height == 0:
        return frame.drop(sources)
    flipped = pl.lit(False)
    for setting, source_a, source_b in realism.select("setting", *sources).unique().iter_rows():
        first, second = split_setting(setting)
        if (source_a, source_b) in ((None, None), (first, second)):
            continue
        if (source_a, source_b) != (second, first):
            raise ValueError(f"realism sources ({source_a!r}, {source_b!r}) do not match "
                             f"setting {setting!r}")
        flipped = flipped | ((pl.col("setting") == setting) & (pl.col("source_a") == source_a)
                             & (pl.col("source_b") == source_b))
    flip = (pl.col("kind") == "realism") & flipped.fill_null(False)
    value = (pl.when(flip & (pl.col("value") == "A")).then(pl.lit("B"))
             .when(flip & (pl.col("value") == "B")).then(pl.lit("A"))
             .otherwise(pl.col("value")))
    return frame.with_columns(value.alias("value")).drop(sources)


def _items(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by("item_id").agg(pl.col(c).first() for c in ITEM[1:])


# --------------------------------------------------------------------------------- pairs

class Pairs(NamedTuple):
    complete: pa.Table   # (item, criterion) with exactly two initial annotators
    irregular: pa.Table  # (item, criterion) with fewer or more: reported, never dropped


def pairs(table: pa.Table | pl.DataFrame) -> Pairs:
    """For each (item, criterion) the two initial annotations, annotator names sorted."""
    complete, irregular = pair_frames(prepare(table))
    return Pairs(complete.to_arrow(), irregular.to_arrow())


def pair_frames(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    initial = _empty_consequence_as_none(frame.filter(pl.col("role") == "initial"))
    initial = initial.sort("annotator")
    per_item = initial.group_by("item_id").agg(
        pl.col("annotator").n_unique().alias("n_item_annotators"))
    grouped = (initial.group_by(ITEM + ["criterion"], maintain_order=True)
               .agg(pl.col("annotator"), pl.col("value"), pl.len().alias("n_annotators"))
               .join(per_item, on="item_id")
               .sort("kind", "criterion", "item_id"))
    complete = grouped.filter(pl.col("n_annotators") == 2).select(
        *ITEM, "criterion",
        pl.col("annotator").list.get(0).alias("annotator_1"),
        pl.col("annotator").list.get(1).alias("annotator_2"),
        pl.col("value").list.get(0).alias("value_1"),
        pl.col("value").list.get(1).alias("value_2"))
    irregular = grouped.filter(pl.col("n_annotators") != 2).select(
        *ITEM, "criterion", "n_annotators", "n_item_annotators",
        pl.col("annotator").alias("annotators"), pl.col("value").alias("values"))
    return complete, irregular


def _empty_consequence_as_none(initial: pl.DataFrame) -> pl.DataFrame:
    """A "none" consequence row for each (translation item, initial annotator) that has
    annotations but no consequence: empty is how the form says "no error". Only where
    someone named a consequence: without one, nothing shows the form asked for it."""
    translation = initial.filter(pl.col("kind") == "translation")
    answered = translation.filter(pl.col("criterion") == "consequence").select(
        "item_id", "annotator")
    if answered.height == 0:
        return initial
    silent = (translation.unique(subset=["item_id", "annotator"], keep="first",
                                 maintain_order=True)
              .join(answered, on=["item_id", "annotator"], how="anti")
              .with_columns(pl.lit("consequence").alias("criterion"),
                            pl.lit(NO_CONSEQUENCE).alias("value")))
    return pl.concat([initial, silent.select(initial.columns)], how="vertical")


def scored_scale(kind: str, criterion: str) -> Scale:
    """The categories agreement scores: the form's, plus "none" for the consequence."""
    scale = CRITERIA[kind][criterion]
    if (kind, criterion) == ("translation", "consequence"):
        return Scale((NO_CONSEQUENCE, *scale.labels))
    return scale


# ----------------------------------------------------------------- single-sample statistics

def codes(values, scale: Scale) -> np.ndarray:
    """Category index of each value, in the scale's fixed order (ratings: 1..5 -> 0..4)."""
    index = {label: i for i, label in enumerate(scale.labels)}
    return np.array([index[v] for v in values], dtype=np.int64)


def raw_agreement(first: np.ndarray, second: np.ndarray) -> float:
    return float(np.mean(first == second)) if len(first) else float("nan")


def cohen_kappa(first: np.ndarray, second: np.ndarray, n_labels: int,
                weights: str | None = None) -> float:
    """κ over category codes with every label fixed, so an unused category cannot change
    the weighting scale. NaN when undefined (no pairs, or chance agreement is 1)."""
    if len(first) == 0:
        return float("nan")
    table = np.zeros((1, n_labels, n_labels))
    np.add.at(table, (0, first, second), 1)
    return float(kappa_of_tables(table, weights)[0])


def krippendorff_alpha(first: np.ndarray, second: np.ndarray, n_labels: int,
                       level: str) -> float:
    """The `krippendorff` package's α over two coders. NaN when undefined."""
    if len(first) == 0:
        return float("nan")
    data = np.vstack([first, second]).astype(float)
    return _alpha(lambda: krippendorff.alpha(reliability_data=data,
                                             value_domain=np.arange(n_labels),
                                             level_of_measurement=level))


def _alpha(compute: Callable[[], float]) -> float:
    try:
        with np.errstate(all="ignore"):   # expected disagreement 0 -> 0/0 -> NaN
            return float(compute())
    except ValueError:                    # no unit coded twice
        return float("nan")


def undefined_note(first: np.ndarray, second: np.ndarray, scale: Scale) -> str:
    if len(first) == 0:
        return "no item has two initial annotations"
    used = np.union1d(first, second)
    if len(used) == 1:
        return (f"every annotation is {scale.labels[used[0]]!r}: chance agreement is 1, "
                f"so κ and α are undefined")
    return "undefined"


def kappa_with_note(pairs: pl.DataFrame, scale: Scale) -> tuple[float, int, str]:
    """Cohen's κ of complete pairs (value_1, value_2), how many, and why it is undefined
    when it is."""
    first, second = codes(pairs["value_1"], scale), codes(pairs["value_2"], scale)
    kappa = cohen_kappa(first, second, len(scale.labels))
    note = undefined_note(first, second, scale) if np.isnan(kappa) else ""
    return kappa, pairs.height, note


# ------------------------------------------------------ statistics of a contingency table

def kappa_of_tables(tables: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Same estimator as cohen_kappa, for each of a stack of (n, L, L) contingency tables
    at once: κ = 1 - Σ w·p_observed / Σ w·p_row·p_column with disagreement weights w
    (1 off the diagonal; |i-j|; (i-j)²). NaN where undefined (empty, or chance agreement 1).
    One array expression: the per-table call of a library costs ~50 µs, 2,000 replicates per
    criterion and group."""
    n_labels = tables.shape[-1]
    index = np.arange(n_labels)
    distance = np.abs(index[:, None] - index[None, :]).astype(float)
    weight = {None: (distance > 0).astype(float), "linear": distance,
              "quadratic": distance ** 2}[weights]
    with np.errstate(all="ignore"):
        p = tables / tables.sum(axis=(1, 2), keepdims=True)
        chance = p.sum(axis=2)[:, :, None] * p.sum(axis=1)[:, None, :]
        expected = (weight * chance).sum(axis=(1, 2))
        kappa = 1 - (weight * p).sum(axis=(1, 2)) / expected
    return np.where(expected > 0, kappa, np.nan)


def alpha_of_tables(tables: np.ndarray, level: str) -> np.ndarray:
    """Same α as krippendorff_alpha, for each of a stack of (n, L, L) contingency tables at
    once, following the package's own computation. With two coders on every unit the
    coincidence matrix is o = T + Tᵀ (an agreeing unit adds 2 to the diagonal), the
    expected one e = (n_c·n_k − diag(n_c)) / (n − 1) from o's marginals n_c, and the
    ordinal distance δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² (nominal: c ≠ k);
    α = 1 − Σ o·δ / Σ e·δ. NaN where undefined (empty, or one category only)."""
    o = tables + np.swapaxes(tables, 1, 2)
    marginal = o.sum(axis=2)                                     # (n, L)
    total = marginal.sum(axis=1)                                 # 2 x units
    n_labels = tables.shape[-1]
    with np.errstate(all="ignore"):
        e = (marginal[:, :, None] * marginal[:, None, :] -
             marginal[:, :, None] * np.eye(n_labels)) / (total - 1)[:, None, None]
        if level == "ordinal":
            low = np.minimum.outer(np.arange(n_labels), np.arange(n_labels))
            high = np.maximum.outer(np.arange(n_labels), np.arange(n_labels))
            through = np.cumsum(marginal, axis=1)
            between = through[:, high] - through[:, low] + marginal[:, low]
            delta = (between - (marginal[:, :, None] + marginal[:, None, :]) / 2) ** 2
        else:
            delta = np.broadcast_to(1.0 - np.eye(n_labels), o.shape)
        expected = (e * delta).sum(axis=(1, 2))
        alpha = 1 - (o * delta).sum(axis=(1, 2)) / expected
    return np.where((total > 0) & (expected > 0), alpha, np.nan)


def raw_of_tables(tables: np.ndarray) -> np.ndarray:
    total = tables.sum(axis=(1, 2))
    with np.errstate(all="ignore"):
        return np.where(total > 0, np.trace(tables, axis1=1, axis2=2) / total, np.nan)


@dataclass(frozen=True)
class Statistic:
    name: str
    point: Callable[[np.ndarray, np.ndarray, Scale], float]
    of_tables: Callable[[np.ndarray, Scale], np.ndarray]   # (n, L, L) -> n replicates


def statistics(scale: Scale) -> list[Statistic]:
    """Raw agreement, κ (unweighted; for ratings also linear and quadratic), α."""
    n = len(scale.labels)
    stats = [Statistic("raw_agreement", lambda a, b, s: raw_agreement(a, b),
                       lambda t, s: raw_of_tables(t))]
    # Unweighted κ on ratings too: it says how often a pair gives the same rating, which
    # the weighted κ (near misses count as partial agreement) does not.
    kappas = ((None, "linear", "quadratic") if scale.ordinal else (None,))
    for weights in kappas:
        name = "cohen_kappa" + (f"_{weights}" if weights else "")
        stats.append(Statistic(name, lambda a, b, s, w=weights: cohen_kappa(a, b, n, w),
                               lambda t, s, w=weights: kappa_of_tables(t, w)))
    stats.append(Statistic("krippendorff_alpha",
                           lambda a, b, s: krippendorff_alpha(a, b, n, s.level),
                           lambda t, s: alpha_of_tables(t, s.level)))
    return stats


# --------------------------------------------------------------------------------- bootstrap

def bootstrap_tables(first: np.ndarray, second: np.ndarray, clusters: np.ndarray,
                     n_labels: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, L, L) contingency tables of cluster resamples: each replicate table is the
    weighted sum of the per-cluster tables."""
    _, cluster_index = np.unique(clusters, return_inverse=True)
    n_clusters = int(cluster_index.max()) + 1 if len(clusters) else 0
    per_cluster = np.zeros((n_clusters, n_labels * n_labels))
    np.add.at(per_cluster, (cluster_index, first * n_labels + second), 1)
    weights = cluster_weights(n_clusters, n_boot, rng)
    return (weights @ per_cluster).reshape(n_boot, n_labels, n_labels)


# --------------------------------------------------------------------------------- agreement

AGREEMENT_SCHEMA = pa.schema([
    ("kind", pa.string()), ("criterion", pa.string()), ("level", pa.string()),
    ("statistic", pa.string()), ("n_items", pa.int64()), ("n_clusters", pa.int64()),
    ("n_irregular", pa.int64()), ("estimate", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("n_boot", pa.int64()), ("n_boot_defined", pa.int64()),
    ("note", pa.string()), ("kappa_floor", pa.float64()), ("flagged", pa.bool_()),
])
# A manager's policy: a pair or language whose κ falls below this is flagged for a look
# (0.6 is the lower end of "substantial" agreement in Landis & Koch's reading of κ).
KAPPA_FLOOR = 0.6


def below_floor(statistic: str, estimate: float | None, kappa_floor: float) -> bool:
    """The floor rule of every agreement table (pooled, per group, per realism setting): a
    κ (any weighting) whose estimate, not its interval, is below the floor. An undefined
    κ (NaN, or None as a CSV reads it back) is not flagged: no κ is not a low κ, and its
    note says why."""
    return statistic.startswith("cohen_kappa") and estimate is not None and \
        bool(estimate < kappa_floor)


def agreement(table: pa.Table | pl.DataFrame, n_boot: int = 2000, seed: int = SEED,
              kappa_floor: float = KAPPA_FLOOR) -> pa.Table:
    """Per criterion: raw agreement, Cohen's κ, Krippendorff's α with source-clustered
    percentile bootstrap 95% intervals. One row per (criterion, statistic); `flagged`: a
    κ below kappa_floor (below_floor)."""
    complete, irregular = pair_frames(prepare(table))
    return pa.Table.from_pylist(_criteria_rows(complete, irregular, n_boot, seed, kappa_floor),
                                schema=AGREEMENT_SCHEMA)


def _criteria_rows(complete: pl.DataFrame, irregular: pl.DataFrame, n_boot: int, seed: int,
                   kappa_floor: float, statistic_names: tuple[str, ...] | None = None
                   ) -> list[dict]:
    """Each criterion's rows. Its bootstrap is seeded by the criterion and its sorted item
    ids, never the slice's name, so two slices of the same items (a language and the one
    pair that read it) get the same interval."""
    rows = []
    # One partition, not a filter per criterion: ~1.5 ms a filter, 500 per breakdown.
    groups = complete.partition_by("kind", "criterion", as_dict=True)
    irregulars = {(kind, criterion): n for kind, criterion, n in
                  irregular.group_by("kind", "criterion").len().iter_rows()}
    for kind, criteria in CRITERIA.items():
        for criterion in criteria:
            group = groups.get((kind, criterion), complete.clear())
            n_irregular = irregulars.get((kind, criterion), 0)
            if group.height or n_irregular:
                items = sorted(group["item_id"].unique())
                rows += criterion_agreement(group, scored_scale(kind, criterion), n_boot,
                                            rng_for(seed, kind, criterion, *items),
                                            statistic_names, kind=kind, criterion=criterion,
                                            n_irregular=n_irregular)
    return [row | {"kappa_floor": kappa_floor,
                   "flagged": below_floor(row["statistic"], row["estimate"], kappa_floor)}
            for row in rows]


BREAKDOWNS = ("language", "pair")
# The breakdowns bootstrap raw agreement and κ only: α per group would multiply the
# slowest estimator by the number of groups, and the pooled table has it.
BREAKDOWN_STATISTICS = ("raw_agreement", "cohen_kappa", "cohen_kappa_linear",
                        "cohen_kappa_quadratic")
BREAKDOWN_SCHEMA = pa.schema([
    ("by", pa.string()), ("group", pa.string()), ("language", pa.string()),
    ("annotator_1", pa.string()), ("annotator_2", pa.string()),
    *(field for field in AGREEMENT_SCHEMA),
])


def agreement_by(table: pa.Table | pl.DataFrame, by: str, n_boot: int = 2000, seed: int = SEED,
                 kappa_floor: float = KAPPA_FLOOR) -> pa.Table:
    """agreement() within each language group (by="language") or annotator pair
    (by="pair"), each with its own n and cluster bootstrap. `flagged`: a κ whose estimate
    is below kappa_floor (below_floor). A pair's items with a third or a missing annotator
    count among its language's irregular pairs, not its own; `language` of a pair lists
    every language it annotated."""
    if by not in BREAKDOWNS:
        raise ValueError(f"agreement breakdown {by!r} is not one of {BREAKDOWNS}")
    complete, irregular = pair_frames(prepare(table))
    keys = ["language"] if by == "language" else ["annotator_1", "annotator_2"]
    rows = []
    for values, group in complete.sort(keys, nulls_last=True).group_by(keys,
                                                                       maintain_order=True):
        labels = dict(zip(keys, values))
        if by == "language":
            language = labels["language"]
            name = language if language is not None else "(no language)"
            mine = irregular.filter(pl.col("language").eq_missing(language))
        else:
            name = f"{labels['annotator_1']} & {labels['annotator_2']}"
            language = ", ".join(sorted(group["language"].drop_nulls().unique()))
            mine = irregular.clear()
        for row in _criteria_rows(group, mine, n_boot, seed, kappa_floor,
                                  statistic_names=BREAKDOWN_STATISTICS):
            rows.append({"by": by, "group": name, "language": language,
                         "annotator_1": labels.get("annotator_1"),
                         "annotator_2": labels.get("annotator_2"), **row})
    return pa.Table.from_pylist(rows, schema=BREAKDOWN_SCHEMA)


def floor_notes(rows: list[dict], kappa_floor: float) -> list[str]:
    """One line per κ below the floor (below_floor, judged against kappa_floor, not the
    table's own) in rows of agreement() or agreement_by(): the criterion, the slice (all
    items, a language, a pair and its languages), κ, the slice's raw agreement on that
    criterion, and n, e.g. "answer_preserved, pair a & b (de): κ 0.467, raw agreement
    0.750, n = 8"."""
    def where(row: dict) -> tuple:
        return row.get("by"), row.get("group"), row["kind"], row["criterion"]

    raw = {where(r): r["estimate"] for r in rows if r["statistic"] == "raw_agreement"}
    return [f"{row['criterion']}, {_slice(row)}: κ{_weighting(row['statistic'])} "
            f"{row['estimate']:.3f}, raw agreement {raw.get(where(row), float('nan')):.3f}, "
            f"n = {row['n_items']}"
            for row in rows if below_floor(row["statistic"], row["estimate"], kappa_floor)]


def _slice(row: dict) -> str:
    if row.get("by") == "language":
        return f"language {row['group']}"
    if row.get("by") == "pair":
        return f"pair {row['group']} ({row['language']})"
    return "all items"


def _weighting(statistic: str) -> str:
    """' linear' for cohen_kappa_linear; '' for the unweighted κ."""
    return statistic.removeprefix("cohen_kappa").replace("_", " ")


def criterion_agreement(group: pl.DataFrame, scale: Scale, n_boot: int,
                        rng: np.random.Generator, statistic_names: tuple[str, ...] | None = None,
                        **labels) -> list[dict]:
    """Rows for one criterion from its complete pairs (value_1, value_2, cluster_id); only
    the statistics named in statistic_names when given."""
    first, second = codes(group["value_1"], scale), codes(group["value_2"], scale)
    clusters = group["cluster_id"].to_numpy()
    tables = bootstrap_tables(first, second, clusters, len(scale.labels), n_boot, rng)
    rows = []
    for stat in statistics(scale):
        if statistic_names is not None and stat.name not in statistic_names:
            continue
        estimate = stat.point(first, second, scale)
        if np.isnan(estimate):   # undefined on the data: no interval either
            low, high, defined = float("nan"), float("nan"), 0
            note = undefined_note(first, second, scale)
        else:
            replicates = stat.of_tables(tables, scale)
            low, high, defined = percentile_interval(replicates)
            note = (f"{n_boot - defined} of {n_boot} bootstrap replicates undefined, excluded"
                    if defined < n_boot else "")
        rows.append({**labels, "level": scale.level, "statistic": stat.name,
                     "n_items": group.height, "n_clusters": len(np.unique(clusters)),
                     "estimate": estimate, "ci_low": low, "ci_high": high,
                     "n_boot": n_boot, "n_boot_defined": defined, "note": note})
    return rows


# ------------------------------------------------------------ adjudication and final labels

def adjudication_queue(table: pa.Table | pl.DataFrame) -> pa.Table:
    """Items whose initial annotators disagree on any criterion (comments excluded): the
    disputed criteria, those an adjudication settled (`resolved`) and those still `open`,
    and the item's state: "open" while any disputed criterion is unsettled, else
    "resolved". Resolved items stay listed; the adjudication push sends open ones."""
    return queue_frame(final_frame(prepare(table))).to_arrow()


def queue_frame(final: pl.DataFrame) -> pl.DataFrame:
    disputed = final.filter(pl.col("status").is_in(["disagreement", "adjudicated"]))
    return (disputed.group_by("item_id", maintain_order=True)
            .agg(*(pl.col(c).first() for c in ITEM[1:]),
                 pl.col("criterion").sort().alias("criteria"),
                 pl.col("criterion").filter(pl.col("status") == "adjudicated").sort()
                 .alias("resolved"),
                 pl.col("criterion").filter(pl.col("status") == "disagreement").sort()
                 .alias("open"))
            .select(*ITEM, "criteria", "resolved", "open",
                    pl.col("criteria").list.len().alias("n_criteria"),
                    pl.when(pl.col("open").list.len() > 0).then(pl.lit("open"))
                    .otherwise(pl.lit("resolved")).alias("state"))
            .sort("kind", "item_id"))


def _initial_status(frame: pl.DataFrame) -> pl.DataFrame:
    """Per (item, criterion) with initial annotations: agreed / disagreement / incomplete.
    An unanswered criterion counts as a different answer once an item has two annotators;
    a translation item both annotators left without a consequence agrees on "none"."""
    initial = frame.filter(pl.col("role") == "initial").sort("annotator")
    per_item = initial.group_by("item_id").agg(
        pl.col("annotator").n_unique().alias("n_item_annotators"))
    status = (pl.when(pl.col("n_item_annotators") < 2).then(pl.lit("incomplete"))
              .when((pl.col("n_values") == 1)
                    & (pl.col("n_initial") == pl.col("n_item_annotators"))).then(pl.lit("agreed"))
              .otherwise(pl.lit("disagreement")))
    grouped = (initial.group_by("item_id", "criterion", maintain_order=True)
               .agg(pl.col("value").alias("initial_values"),
                    pl.col("value").n_unique().alias("n_values"),
                    pl.len().alias("n_initial"))
               .join(per_item, on="item_id")
               .with_columns(status.alias("status")))
    without = (initial.filter(pl.col("kind") == "translation")
               .group_by("item_id")
               .agg((pl.col("criterion") == "consequence").any().alias("has"))
               .filter(~pl.col("has")).join(per_item, on="item_id")
               .filter(pl.col("n_item_annotators") >= 2)
               .select("item_id", pl.lit("consequence").alias("criterion"),
                       pl.lit([], dtype=pl.List(pl.String)).alias("initial_values"),
                       pl.lit(1, dtype=pl.UInt32).alias("n_values"),
                       pl.lit(0, dtype=pl.UInt32).alias("n_initial"),
                       "n_item_annotators", pl.lit("agreed").alias("status")))
    return pl.concat([grouped, without.cast(grouped.schema)], how="vertical")


def final_labels(table: pa.Table | pl.DataFrame) -> pa.Table:
    """The final-labels table (module docstring): per item and criterion the value and its
    origin, agreed or adjudicated; null while unresolved."""
    return final_frame(prepare(table)).to_arrow()


FINAL_COLUMNS = (*ITEM, "criterion", "value", "origin", "status", "n_initial",
                 "initial_values")


def final_frame(frame: pl.DataFrame) -> pl.DataFrame:
    # Several adjudications of one criterion (a second adjudicator): the latest counts.
    adjudicated = (frame.filter(pl.col("role") == "adjudication")
                   .sort("updated_at", "annotation_id")
                   .group_by("item_id", "criterion")
                   .agg(pl.col("value").last().alias("adjudicated")))
    labels = _initial_status(frame).join(adjudicated, on=["item_id", "criterion"],
                                         how="left")
    settled = (pl.col("status") == "disagreement") & pl.col("adjudicated").is_not_null()
    agreed_value = (pl.when(pl.col("n_initial") == 0).then(pl.lit(NO_CONSEQUENCE))
                    .otherwise(pl.col("initial_values").list.first()))
    value = (pl.when(settled).then(pl.col("adjudicated"))
             .when(pl.col("status") == "agreed").then(agreed_value))
    status = pl.when(settled).then(pl.lit("adjudicated")).otherwise(pl.col("status"))
    origin = (pl.when(settled).then(pl.lit("adjudicated"))
              .when(pl.col("status") == "agreed").then(pl.lit("agreed")))
    return (labels.join(_items(frame), on="item_id")
            .select(*ITEM, "criterion", value.alias("value"), origin.alias("origin"),
                    status.alias("status"), pl.col("n_initial").cast(pl.Int64),
                    "initial_values")
            .sort("kind", "item_id", "criterion"))
