"""Prediction evaluation by language vector: slices, contrasts, the flagged-item sensitivity
and paired two-file differences (paper Tables 9, 12, 13, 15, 17; SPEC §4, §6).

Slices (families of groups; every item is in exactly one group of a family):
    overall, question_language (ℓq), macro_language (the unweighted mean of the
    question-language means), stratum (S0–S4, NA, undefined when G is empty),
    script_relation, role_condition (Table 3 cell, or undetermined / comparison),
    interface_crossing (I), composition_crossing (C), status (our scan's derived status).
Each slice mean has a 2,000-replicate (default) stratified item-bootstrap interval: the
group's items resampled within it.

Contrasts (positive group minus negative group, disjoint; stratified item bootstrap with both
groups resampled independently; two-sided bootstrap p-values, Holm's correction across the
family of contrasts of one prediction file and metric): S4 − S2 and different − same script
(Table 9), answer-hop language aligned vs not, bridge-hop vs answer-hop mismatch, any
question-language distractor vs none, a distractor sharing a gold language vs none,
K_C ≥ 9 vs ≤ 8 (Table 15), accepted vs flagged (status). n₊ and n₋ are reported.

Sensitivity (Table 17): each contrast recomputed on the rows our scan does not quarantine
(no release-blocking finding); shift = clean − all with a paired source-clustered bootstrap
(sources resampled once, both contrasts computed on the same resample).

Two prediction files: per slice group the mean of the per-item difference B − A with a
source-clustered bootstrap interval (paired: the same sources carry both files' scores),
Holm across the groups of a family.

Contrasts, sensitivity and paired differences use the release protocol
(unicode_script_aware); slices are given under both protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq

from ..analysis import stats
from ..io.atomic import staged_directory, write_json
from ..language.descriptors import ROLE_CONDITIONS, ROLE_STATUSES, SCRIPT_RELATIONS, STRATA
from ..languages import CODES
from ..sql.connection import connect
from . import predictions as pred
from .metrics import DEFAULT_PROTOCOL, PROTOCOLS

N_BOOT = 2000
SEED = stats.SEED
UNDEFINED = "undefined"
FAMILIES = ("overall", "question_language", "stratum", "script_relation", "role_condition",
            "interface_crossing", "composition_crossing", "status")
MACRO = "macro_language"
GROUP_ORDER = {
    "question_language": CODES + ("und",),
    "stratum": STRATA,
    "script_relation": SCRIPT_RELATIONS,
    "role_condition": ROLE_CONDITIONS + ROLE_STATUSES[1:],
    "interface_crossing": ("I = 1", "I = 0"),
    "composition_crossing": ("C = 1", "C = 0"),
    "status": ("accepted", "review_required", "quarantined"),
}


@dataclass(frozen=True)
class Contrast:
    name: str
    source: str        # where the paper reports it
    positive: str      # labels of the two groups
    negative: str
    sql: str           # a boolean over the labels query: TRUE positive, FALSE negative


CONTRASTS = (
    Contrast("S4 − S2", "Table 9", "S4", "S2",
             "CASE stratum WHEN 'S4' THEN TRUE WHEN 'S2' THEN FALSE END"),
    Contrast("different − same script", "Table 9", "different-script", "same-script",
             "CASE script_relation WHEN 'different-script' THEN TRUE "
             "WHEN 'same-script' THEN FALSE END"),
    Contrast("answer-hop language aligned vs not", "Table 15", "ℓt = ℓq", "ℓt ≠ ℓq",
             "answer_hop_aligned"),
    Contrast("bridge-hop mismatch vs answer-hop mismatch", "Table 15", "bridge mismatch",
             "answer-hop mismatch",
             "CASE role_condition WHEN 'bridge mismatch' THEN TRUE "
             "WHEN 'answer-hop mismatch' THEN FALSE END"),
    Contrast("any question-language distractor vs none", "Table 15", "ℓq among distractors",
             "ℓq not among distractors",
             "list_contains(coalesce(distractor_languages, []), question_language)"),
    Contrast("distractor shares a gold language vs none", "Table 15",
             "a distractor in a gold language", "no distractor in a gold language",
             "CASE WHEN gold_languages IS NOT NULL THEN len(list_intersect("
             "coalesce(distractor_languages, []), gold_languages)) > 0 END"),
    Contrast("K_C ≥ 9 vs K_C ≤ 8", "Table 15", "K_C ≥ 9", "K_C ≤ 8", "k_c >= 9"),
    Contrast("accepted vs flagged", "status", "accepted", "review_required or quarantined",
             "status = 'accepted'"),
)

_LABELS_QUERY = """
WITH d AS (SELECT d.*, s.status FROM descriptors d LEFT JOIN status s ON s."row" = d.rid)
SELECT rid, source_id, 'all' AS overall,
       coalesce(question_language, 'und') AS question_language,
       coalesce(stratum, 'undefined') AS stratum,
       coalesce(script_relation, 'undefined') AS script_relation,
       coalesce(role_condition, 'undefined') AS role_condition,
       CASE interface_crossing WHEN TRUE THEN 'I = 1' WHEN FALSE THEN 'I = 0'
            ELSE 'undefined' END AS interface_crossing,
       CASE composition_crossing WHEN TRUE THEN 'C = 1' WHEN FALSE THEN 'C = 0'
            ELSE 'undefined' END AS composition_crossing,
       coalesce(status, 'unknown') AS status,
       coalesce(status = 'quarantined', FALSE) AS quarantined,
       {contrasts}
FROM d ORDER BY rid
"""


def labels(descriptors: pa.Table, status: pa.Table) -> pa.Table:
    """Per release row: the slice label of every family, quarantined, and each contrast's
    side (TRUE positive, FALSE negative, NULL neither)."""
    con = connect()
    con.register("descriptors", descriptors)
    con.register("status", status.select(["row", "status"]))
    sides = ", ".join(f"({c.sql}) AS contrast_{i}" for i, c in enumerate(CONTRASTS))
    table = con.sql(_LABELS_QUERY.format(contrasts=sides)).to_arrow_table()
    con.close()
    return table


def _codes(column: pa.ChunkedArray, family: str) -> tuple[np.ndarray, list[str]]:
    """Group index per item and the group names in presentation order."""
    encoded = column.combine_chunks().dictionary_encode()
    present = encoded.dictionary.to_pylist()
    order = [g for g in GROUP_ORDER.get(family, ()) if g in present]
    order += sorted(set(present) - set(order))
    remap = np.array([order.index(g) for g in present], dtype=np.int64)
    return remap[np.asarray(encoded.indices)], order


def family_codes(label_table: pa.Table) -> dict[str, tuple[np.ndarray, list[str]]]:
    return {family: _codes(label_table.column(family), family) for family in FAMILIES}


@dataclass
class Evaluation:
    """Everything `evaluate` computes; `slices` and `contrasts` are long tables."""

    runs: list[str]                      # labels A, B
    files: list[str]
    labels: pa.Table
    scores: list[dict[str, pred.Scores]]  # per run: protocol → scores
    slices: pa.Table
    contrasts: pa.Table
    summary: dict = field(default_factory=dict)

    def metrics_json(self) -> dict:
        """metrics.json (names fixed; scripts depend on them): the first file, release
        protocol."""
        rows = [r for r in self.slices.to_pylist()
                if r["run"] == self.runs[0] and r["protocol"] == DEFAULT_PROTOCOL]
        scores = self.scores[0][DEFAULT_PROTOCOL]

        def block(family: str, group: str) -> dict:
            return {r["metric"]: r["mean"] for r in rows
                    if r["family"] == family and r["group"] == group}

        languages = {}
        for r in rows:
            if r["family"] == "question_language":
                languages.setdefault(r["group"], {"n": r["n"]})[r["metric"]] = r["mean"]
        return {"protocol": DEFAULT_PROTOCOL, "n": len(scores.missing),
                "missing": int(scores.missing.sum()), "overall": block("overall", "all"),
                "macro_language": block(MACRO, "macro"),
                "by_question_language": languages}


SLICE_SCHEMA = pa.schema([
    ("run", pa.string()), ("protocol", pa.string()), ("family", pa.string()),
    ("group", pa.string()), ("metric", pa.string()), ("n", pa.int64()), ("mean", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_boot", pa.int64()),
])
CONTRAST_SCHEMA = pa.schema([
    ("run", pa.string()), ("protocol", pa.string()), ("kind", pa.string()),
    ("family", pa.string()), ("contrast", pa.string()), ("positive", pa.string()),
    ("negative", pa.string()), ("metric", pa.string()), ("n_pos", pa.int64()),
    ("n_neg", pa.int64()), ("estimate", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("p_value", pa.float64()), ("p_holm", pa.float64()),
    ("holm_family_size", pa.int64()), ("all_estimate", pa.float64()),
    ("clean_estimate", pa.float64()), ("n_excluded", pa.int64()), ("design", pa.string()),
    ("n_boot", pa.int64()),
])
ITEM_DESIGN = "stratified item bootstrap"
CLUSTER_DESIGN = "paired source-clustered bootstrap"


# ------------------------------------------------------------------------------- slices

def _slices(codes_by_family: dict, run: str, protocol: str, scores: pred.Scores,
            n_boot: int, seed: int) -> list[dict]:
    rows = []
    for family in FAMILIES:
        codes, groups = codes_by_family[family]
        for metric in pred.METRICS:
            result = stats.group_means(scores.values[metric], codes, len(groups), n_boot,
                                       stats.rng_for(seed, run, protocol, family, metric))
            low, high, _ = stats.percentile_intervals(result.replicates)
            rows += [{"run": run, "protocol": protocol, "family": family, "group": group,
                      "metric": metric, "n": int(result.n[g]), "mean": float(result.mean[g]),
                      "ci_low": float(low[g]), "ci_high": float(high[g]), "n_boot": n_boot}
                     for g, group in enumerate(groups)]
            if family == "question_language":
                macro = result.replicates.mean(axis=1)
                low, high, _ = stats.percentile_interval(macro)
                rows.append({"run": run, "protocol": protocol, "family": MACRO,
                             "group": "macro", "metric": metric, "n": int(result.n.sum()),
                             "mean": float(result.mean.mean()), "ci_low": low,
                             "ci_high": high, "n_boot": n_boot})
    return rows


# ---------------------------------------------------------------------------- contrasts

def _sides(label_table: pa.Table) -> list[np.ndarray]:
    """Per contrast: 0 positive, 1 negative, -1 neither."""
    out = []
    for i in range(len(CONTRASTS)):
        side = label_table.column(f"contrast_{i}")
        positive = np.asarray(side.fill_null(False))
        negative = np.asarray(pa.compute.invert(side).fill_null(False))
        out.append(np.where(positive, 0, np.where(negative, 1, -1)))
    return out


def _contrasts(sides: list[np.ndarray], run: str, scores: pred.Scores, n_boot: int,
               seed: int) -> list[dict]:
    rows = []
    for metric in pred.METRICS:
        family = []
        for contrast, side in zip(CONTRASTS, sides):
            result = stats.group_means(scores.values[metric], side, 2, n_boot,
                                       stats.rng_for(seed, run, "contrast", contrast.name,
                                                     metric))
            delta = result.replicates[:, 0] - result.replicates[:, 1]
            low, high, _ = stats.percentile_interval(delta)
            family.append({"run": run, "protocol": DEFAULT_PROTOCOL, "kind": "contrast",
                           "family": contrast.source, "contrast": contrast.name,
                           "positive": contrast.positive, "negative": contrast.negative,
                           "metric": metric, "n_pos": int(result.n[0]),
                           "n_neg": int(result.n[1]),
                           "estimate": float(result.mean[0] - result.mean[1]),
                           "ci_low": low, "ci_high": high,
                           "p_value": stats.bootstrap_p_value(delta), "design": ITEM_DESIGN,
                           "n_boot": n_boot})
        rows += _with_holm(family)
    return rows


def _with_holm(family: list[dict]) -> list[dict]:
    adjusted = stats.holm([r["p_value"] for r in family])
    size = int(np.count_nonzero(~np.isnan([r["p_value"] for r in family])))
    return [{**r, "p_holm": float(p), "holm_family_size": size}
            for r, p in zip(family, adjusted)]


def _sensitivity(sides: list[np.ndarray], quarantined: np.ndarray, boot: stats.ClusterBootstrap,
                 run: str, scores: pred.Scores) -> list[dict]:
    """Table 17: every contrast on all rows and on the rows not quarantined, one paired
    source-clustered resample for both."""
    partitions = [p for side in sides for p in ((side, 2), (np.where(quarantined, -1, side), 2))]
    estimate, replicates = boot.means(scores.matrix(), partitions)
    rows = []
    for j, metric in enumerate(pred.METRICS):
        family = []
        for i, (contrast, side) in enumerate(zip(CONTRASTS, sides)):
            pa_, na_, pc, nc = (4 * i + k for k in range(4))
            n_pos, n_neg = int(((side == 0) & ~quarantined).sum()), \
                int(((side == 1) & ~quarantined).sum())
            all_value = estimate[pa_, j] - estimate[na_, j]
            clean_value = estimate[pc, j] - estimate[nc, j]
            shift = ((replicates[:, pc, j] - replicates[:, nc, j])
                     - (replicates[:, pa_, j] - replicates[:, na_, j]))
            low, high, _ = stats.percentile_interval(shift)
            family.append({
                "run": run, "protocol": DEFAULT_PROTOCOL, "kind": "sensitivity",
                "family": "Table 17", "contrast": contrast.name, "positive": contrast.positive,
                "negative": contrast.negative, "metric": metric,
                "n_pos": n_pos, "n_neg": n_neg,
                "estimate": float(clean_value - all_value), "ci_low": low, "ci_high": high,
                "p_value": stats.bootstrap_p_value(shift), "all_estimate": float(all_value),
                "clean_estimate": float(clean_value),
                "n_excluded": int(((side >= 0) & quarantined).sum()),
                "design": CLUSTER_DESIGN, "n_boot": boot.n_boot})
        rows += _with_holm(family)
    return rows


def _paired(codes_by_family: dict, a: pred.Scores, b: pred.Scores,
            boot: stats.ClusterBootstrap, runs: list[str]) -> list[dict]:
    """Per slice group: mean of B − A per item, source-clustered; Holm across a family's
    groups."""
    difference = b.matrix() - a.matrix()
    partitions, names, sizes = [], [], []
    for family in FAMILIES:
        codes, groups = codes_by_family[family]
        partitions.append((codes, len(groups)))
        names += [(family, group) for group in groups]
        sizes += list(np.bincount(codes, minlength=len(groups)))
    estimate, replicates = boot.means(difference, partitions)
    languages = [i for i, (family, _) in enumerate(names) if family == "question_language"]
    rows = []
    label = f"{runs[1]} − {runs[0]}"
    for j, metric in enumerate(pred.METRICS):
        by_family: dict[str, list[dict]] = {}
        for i, (family, group) in enumerate(names):
            reps = replicates[:, i, j]
            low, high, _ = stats.percentile_interval(reps)
            n = int(sizes[i])
            by_family.setdefault(family, []).append({
                "run": label, "protocol": DEFAULT_PROTOCOL, "kind": "paired", "family": family,
                "contrast": group, "positive": runs[1], "negative": runs[0], "metric": metric,
                "n_pos": n, "n_neg": n, "estimate": float(estimate[i, j]), "ci_low": low,
                "ci_high": high, "p_value": stats.bootstrap_p_value(reps),
                "design": CLUSTER_DESIGN, "n_boot": boot.n_boot})
        macro = np.nanmean(replicates[:, languages, j], axis=1)
        low, high, _ = stats.percentile_interval(macro)
        by_family[MACRO] = [{
            "run": label, "protocol": DEFAULT_PROTOCOL, "kind": "paired", "family": MACRO,
            "contrast": "macro", "positive": runs[1], "negative": runs[0], "metric": metric,
            "n_pos": len(difference), "n_neg": len(difference),
            "estimate": float(np.mean(estimate[languages, j])), "ci_low": low,
            "ci_high": high, "p_value": stats.bootstrap_p_value(macro),
            "design": CLUSTER_DESIGN, "n_boot": boot.n_boot}]
        for family_rows in by_family.values():
            rows += _with_holm(family_rows)
    return rows


# -------------------------------------------------------------------------------- entry

def evaluate(gold_rows: pa.Table, descriptors: pa.Table, status: pa.Table,
             prediction_files: list[pred.Predictions], n_boot: int = N_BOOT,
             seed: int = SEED) -> Evaluation:
    """Score one or two prediction files against a release and slice them (module doc)."""
    if not 1 <= len(prediction_files) <= 2:
        raise ValueError("evaluate takes one or two prediction files")
    runs = ["A", "B"][:len(prediction_files)]
    label_table = labels(descriptors, status)
    if label_table.num_rows != gold_rows.num_rows:
        raise ValueError(f"descriptors cover {label_table.num_rows} rows, the release "
                         f"{gold_rows.num_rows}")
    scores = [pred.score(gold_rows, p) for p in prediction_files]
    slice_rows, contrast_rows = [], []
    sides = _sides(label_table)
    quarantined = np.asarray(label_table.column("quarantined"))
    boot = stats.ClusterBootstrap(label_table.column("source_id").to_numpy(zero_copy_only=False),
                                  n_boot, seed, "sources")
    codes_by_family = family_codes(label_table)
    for run, run_scores in zip(runs, scores):
        for protocol in PROTOCOLS:
            slice_rows += _slices(codes_by_family, run, protocol, run_scores[protocol], n_boot,
                                  seed)
        contrast_rows += _contrasts(sides, run, run_scores[DEFAULT_PROTOCOL], n_boot, seed)
        contrast_rows += _sensitivity(sides, quarantined, boot, run,
                                      run_scores[DEFAULT_PROTOCOL])
    if len(scores) == 2:
        contrast_rows += _paired(codes_by_family, scores[0][DEFAULT_PROTOCOL],
                                 scores[1][DEFAULT_PROTOCOL], boot, runs)
    summary = {
        "runs": {run: {"file": str(p.path), "predictions": p.lines,
                       "missing": int(s[DEFAULT_PROTOCOL].missing.sum()),
                       "unexpected": s[DEFAULT_PROTOCOL].unexpected}
                 for run, p, s in zip(runs, prediction_files, scores)},
        "rows": gold_rows.num_rows,
        "sources": boot.n_clusters,
        "unknown_answer_language_rows": scores[0][DEFAULT_PROTOCOL].unknown_language,
        "unresolved_gold_facts": scores[0][DEFAULT_PROTOCOL].unresolved_facts,
        "quarantined_rows": int(quarantined.sum()),
        "n_boot": n_boot, "seed": seed, "protocols": list(PROTOCOLS),
        "contrast_protocol": DEFAULT_PROTOCOL,
    }
    return Evaluation(runs, [str(p.path) for p in prediction_files], label_table, scores,
                      pa.Table.from_pylist(slice_rows, schema=SLICE_SCHEMA),
                      pa.Table.from_pylist(contrast_rows, schema=CONTRAST_SCHEMA), summary)


def write(result: Evaluation, out: Path) -> Path:
    """metrics.json, slices.parquet, contrasts.parquet and summary.json into a new directory,
    atomically (it appears whole or not at all, and never replaces an earlier one)."""
    with staged_directory(Path(out)) as staging:
        write_json(staging / "metrics.json", result.metrics_json())
        pq.write_table(result.slices, staging / "slices.parquet")
        pq.write_table(result.contrasts, staging / "contrasts.parquet")
        write_json(staging / "summary.json", result.summary)
    return Path(out)


def item_scores(result: Evaluation, run: int = 0, protocol: str = DEFAULT_PROTOCOL
                ) -> pa.Table:
    """One row per release row: rid, id, its slice labels and its scores (drill-down)."""
    scores = result.scores[run][protocol]
    table = result.labels.select(["rid", "source_id", *FAMILIES[1:]])
    for name in pred.PARTS:
        table = table.append_column(name, pa.array(scores.values[name]))
    return table.append_column("missing", pa.array(scores.missing))
