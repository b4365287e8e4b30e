"""Paired human evidence on matched units (paper C.4, Eq. 37; issue 13, "Human evidence").

The design. `paired_batch(old, new)` samples translation units (question, answer,
paragraph) of the OLD release with a sampling design (by default the paper's 80:20:20 per
language and unit), keeps the units that have a match in NEW and pushes BOTH versions of
each to the same annotators, in one batch:

- Matching. A unit j = (i, u, ℓ) is keyed by its row's source_id, the row's view (its
  rank among the rows sharing that source_id, ordered by id: 0 in a release with one row
  per source), the unit, and for a paragraph its paragraph key (paragraph_id, or
  paragraph_id#position when the id is missing or repeats in the row; sampling.py).
  A matched unit must have the same target language in both versions (the paper's frozen
  assignment). A sampled unit is excluded, and the manifest's "paired" section says how
  many and which, when: its row has no source id (no_source_id), NEW has no row for its
  source and view (source_not_in_new), NEW's row lacks the unit (unit_not_in_new), its
  language is unknown (language_unknown) or changed (language_changed). Exclusion comes
  after sampling, so a stratum may fall short of the design by its exclusions.
- Blinding. Each matched unit is a pair with an opaque id, pair-<sha256(seed:pair:key)>,
  and two items, "<pair>:x" and "<pair>:y". Which of x and y is OLD is drawn per pair from
  sha256(seed:order:pair) (as maple.is_swapped draws A/B); x is pushed right before y.
  The task data is the translation_review payload of that version's text and nothing
  else: no version, no release name, no key. The version key (item -> pair, version,
  source_id, unit, language, the release's own item id) goes to pairs.jsonl in the batch
  folder (ReviewBatch.pairs), beside the sampling manifest.
- Same annotators, same day, same rubric. Both items of a pair have the unit's routing
  group, so push.push (unchanged) sends them to the same two annotators' projects, with
  the unchanged translation_review config. cluster_id is the source_id, so every
  bootstrap resamples sources.

The evidence (`evidence(batch_id)`), from the pulled annotations (initial annotators, each
one's latest answer; adjudication does not enter: Eq. 37 averages reviewers):

- paired_scores: one row per (pair, reviewer) who rated both versions: adequacy h_old,
  h_new (1-5) and the preservation flags answer / entities / language (answer_preserved,
  entities_preserved, assigned_language) old and new. A criterion is filled only when the
  reviewer answered it on both versions.
- ΔH (Eq. 37): d_j = mean over the unit's reviewers of h_new − h_old; ΔH = mean over the
  sampled sources of the mean of d_j over the source's units. Interval: percentile over a
  source-clustered bootstrap (stats.ClusterBootstrap, per="cluster"). Per language the
  same over that language's units; two-sided bootstrap p-values of ΔH = 0, Holm-adjusted
  across languages.
- Preservation: a unit-version is preserved when EVERY reviewer who rated both versions
  said yes (conservative: one "no" is a loss). Per flag, matched pairs over units:
  McNemar's exact test (b = preserved → lost, c = lost → preserved), the rates and their
  paired difference new − old = (c − b) / units with a source-clustered bootstrap interval
  (unit-weighted, like the test). Per language the same, McNemar p Holm-adjusted across
  languages.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ...analysis import stats
from ...engine.scan import ScanResult
from ...errors import InputError
from ...io.tables import iter_jsonl_objects
from ...reports.compare import VIEW_OF_ROW
from ...sql.connection import connect
from .. import agreement, inputs, routing, sampling
from ..batches import ReviewBatch
from ..inputs import Spec, scanned
from ..schemas import ITEM_SCHEMA
from ..workspace import Workspace, batch_dir, batches
from . import translation
from .base import ReviewKind

PAIRED_UNITS = ("question", "answer", "paragraph")
VERSIONS = ("old", "new")
SLOTS = ("x", "y")
# Flag name in the evidence -> the translation_review criterion.
FLAGS = {"answer": "answer_preserved", "entities": "entities_preserved",
         "language": "assigned_language"}
ADEQUACY = "adequacy"
KEY_FIELDS = ("item_id", "pair_id", "version", "source_id", "view", "unit", "paragraph",
              "language", "release_item_id")
EXCLUSIONS = ("no_source_id", "source_not_in_new", "unit_not_in_new", "language_unknown",
              "language_changed")

SCORES_SCHEMA = pa.schema(
    [("pair_id", pa.string()), ("source_id", pa.string()), ("unit", pa.string()),
     ("language", pa.string()), ("reviewer", pa.string()),
     ("h_old", pa.int64()), ("h_new", pa.int64())]
    + [(f"{flag}_{version}", pa.bool_()) for flag in FLAGS for version in VERSIONS])


# ------------------------------------------------------------------------- the batch

def paired_batch(old: ScanResult, new: ScanResult,
                 design: sampling.Design = sampling.PAPER_PRESET,
                 batch_id: str | None = None, where: sampling.Where = None,
                 seed: int | None = None) -> ReviewBatch:
    """Both versions of the OLD sample's matched units as one blind translation batch
    (module docstring). `seed` draws the pair ids and the x/y order (default: the design's
    seed); the batch id defaults to a hash of the sample, both releases and the seed."""
    seed = design.seed if seed is None else seed
    sample = sampling.sample_design(_translation_units(old), design, where=where,
                                    release_fingerprint=old.identity)
    new_units = _translation_units(new)
    matched, excluded = _match(_keyed(sample.units, old), _keyed(new_units, new))
    batch_id = batch_id or "paired-" + hashlib.sha256(
        f"{sample.batch_id}:{new.identity}:{seed}".encode("utf-8")).hexdigest()[:12]
    old_texts = sampling.unit_texts(old.release, _rows(sample.units, matched["old_item"]))
    new_texts = sampling.unit_texts(new.release, _rows(new_units, matched["new_item"]))
    tasks, items, key = [], [], []
    for unit, old_text, new_text in zip(matched.to_pylist(), old_texts, new_texts):
        pair_id = "pair-" + _digest(seed, "pair", _unit_key(unit))[:16]
        versions = {"old": (old_text, unit["old_item"]), "new": (new_text, unit["new_item"])}
        shown = ("new", "old") if _old_is_y(seed, pair_id) else ("old", "new")
        for slot, version in zip(SLOTS, shown):
            item_id = f"{pair_id}:{slot}"
            text, release_item = versions[version]
            tasks.append(translation.payload(text | {"item_id": item_id}, batch_id))
            items.append({"item_id": item_id, "cluster_id": unit["source_id"],
                          "kind": KIND.annotation, "language": unit["language"],
                          "unit": unit["unit"], "setting": None, "source_a": None,
                          "source_b": None, "group": routing.group_of(unit["languages"])})
            key.append({"item_id": item_id, "pair_id": pair_id, "version": version,
                        "source_id": unit["source_id"], "view": unit["view"],
                        "unit": unit["unit"], "paragraph": unit["part"],
                        "language": unit["language"], "release_item_id": release_item})
    manifest = sample.manifest | {KIND.name: {
        "seed": seed, "old": _release_note(old), "new": _release_note(new),
        "sampled": sample.units.num_rows, "pairs": matched.num_rows,
        "excluded": {reason: sum(1 for e in excluded if e["reason"] == reason)
                     for reason in EXCLUSIONS},
        "excluded_units": excluded}}
    return ReviewBatch(batch_id, KIND.config,
                       pa.Table.from_pylist(items, schema=ITEM_SCHEMA), tasks,
                       manifest=manifest, pairs=key)


def build(spec: Spec) -> ReviewBatch:
    """The spec's OLD release (`release`) sampled with its design, paired with NEW
    (`new_release`)."""
    old = scanned(spec, spec.release, spec.sources)
    new = scanned(spec, spec.new_release, spec.new_sources)
    try:
        return paired_batch(old, new, inputs.design(spec), spec.batch, where={
            "language": list(sampling.NON_ENGLISH)}, seed=spec.seed)
    except ValueError as error:
        raise InputError(spec.path, str(error), where="design") from None


def _translation_units(result: ScanResult) -> pa.Table:
    units = sampling.build_units(result)
    return units.filter(pc.is_in(units["unit"], pa.array(PAIRED_UNITS)))


_VIEWS_QUERY = f"SELECT rid, source_id, {VIEW_OF_ROW} AS view FROM views"


def _keyed(units: pa.Table, result: ScanResult) -> pa.Table:
    """The units with their match key: source_id, view, and `part` (the paragraph key of
    the item id, '-' for a question or answer)."""
    rows = result.cursor().sql(_VIEWS_QUERY).to_arrow_table()
    con = connect()
    con.register("units", units.append_column(
        "position", pa.array(range(units.num_rows), pa.int64())))
    con.register("views", rows)
    return con.sql("""
        SELECT u.item_id, u.unit, u.language, u.languages, v.source_id, v.view,
               substr(u.item_id, length(u.row_id) + length(u.unit) + 3) AS part, u.position
        FROM units u JOIN views v USING (rid)""").to_arrow_table()


def _match(old: pa.Table, new: pa.Table) -> tuple[pa.Table, list[dict]]:
    """(matched units in OLD's order, excluded units with their reason)."""
    con = connect()
    con.register("old", old)
    con.register("new", new)
    table = con.sql("""
        SELECT o.item_id AS old_item, n.item_id AS new_item, o.source_id, o.view, o.unit,
               o.part, o.language, n.language AS new_language, o.languages,
               CASE WHEN o.source_id IS NULL THEN 'no_source_id'
                    WHEN NOT EXISTS (SELECT 1 FROM new r WHERE r.source_id = o.source_id
                                     AND r.view = o.view) THEN 'source_not_in_new'
                    WHEN n.item_id IS NULL THEN 'unit_not_in_new'
                    WHEN o.language IS NULL OR o.language = 'und' THEN 'language_unknown'
                    WHEN n.language IS DISTINCT FROM o.language THEN 'language_changed'
               END AS reason
        FROM old o
        LEFT JOIN new n ON n.source_id = o.source_id AND n.view = o.view
                       AND n.unit = o.unit AND n.part = o.part
        ORDER BY o.position""").to_arrow_table()
    keep = pc.is_null(table["reason"])
    excluded = [{"item_id": r["old_item"], "source_id": r["source_id"], "unit": r["unit"],
                 "language": r["language"], "new_language": r["new_language"],
                 "reason": r["reason"]}
                for r in table.filter(pc.invert(keep)).to_pylist()]
    return table.filter(keep), excluded


def _rows(units: pa.Table, item_ids: pa.ChunkedArray) -> pa.Table:
    """The rows of `units` with these item ids, in that order."""
    position = pc.index_in(item_ids, value_set=units["item_id"])
    return units.take(position)


def _unit_key(unit: Mapping) -> str:
    return json.dumps([unit["source_id"], unit["view"], unit["unit"], unit["part"]],
                      ensure_ascii=False)


def _digest(seed: int | str, purpose: str, text: str) -> str:
    # Separate purposes, so the public pair id says nothing about the order.
    return hashlib.sha256(f"{seed}:{purpose}:{text}".encode("utf-8")).hexdigest()


def _old_is_y(seed: int | str, pair_id: str) -> bool:
    return int(_digest(seed, "order", pair_id), 16) % 2 == 1


def _release_note(result: ScanResult) -> dict:
    return {"name": result.release.name, "layout": result.release.layout.name,
            "identity": result.identity, "content": result.release.content}


# ------------------------------------------------------------------------- the key

def paired_batches(workspace: Path | None = None) -> list[str]:
    """The paired batches of a workspace (those with a version key)."""
    return [b for b in batches(workspace)
            if (batch_dir(b, workspace) / "pairs.jsonl").is_file()]


def read_pairs(batch_id: str, workspace: Path | None = None) -> list[dict]:
    """The version key of a paired batch (pairs.jsonl), validated: every pair has one OLD
    and one NEW item."""
    path = batch_dir(batch_id, workspace) / "pairs.jsonl"
    if not path.exists():
        raise InputError(path, "no such file: the batch is not a paired batch",
                         expected="a batch built by paired.paired_batch")
    key, versions = [], {}
    for where, record in iter_jsonl_objects(path):
        missing = [f for f in KEY_FIELDS if f not in record]
        if missing:
            raise InputError(path, f"no {', '.join(missing)}", where=where,
                             expected=f"fields {', '.join(KEY_FIELDS)}")
        if record["version"] not in VERSIONS:
            raise InputError(path, f"version {record['version']!r}", where=where,
                             expected="old or new")
        versions.setdefault(record["pair_id"], []).append(record["version"])
        key.append(record)
    for pair_id, seen in versions.items():
        if sorted(seen) != sorted(VERSIONS):
            raise InputError(path, f"pair {pair_id} has versions {sorted(seen)}",
                             expected="one old and one new item per pair")
    return key


# ------------------------------------------------------------------------- scores

def paired_scores(table: pa.Table | pl.DataFrame, key: Sequence[Mapping] | pa.Table
                  ) -> pa.Table:
    """SCORES_SCHEMA: per (pair, reviewer) who rated both versions, adequacy and the flags
    old and new (module docstring). `table`: pulled annotations (the initial annotators'
    latest answers count) or final labels (one reviewer, "final")."""
    frame = _answers(table)
    key_frame = (pl.from_arrow(key) if isinstance(key, pa.Table)
                 else pl.DataFrame(list(key))).select(
        "item_id", "pair_id", "version", "source_id", "unit", "language")
    unknown = frame.join(key_frame, on="item_id", how="anti")
    if unknown.height:
        raise InputError("pairs.jsonl", f"item {unknown['item_id'][0]!r} is annotated but "
                         "not in the version key", expected="the key of the same batch")
    criteria = {ADEQUACY: "h", **{criterion: flag for flag, criterion in FLAGS.items()}}
    long = (frame.filter(pl.col("criterion").is_in(list(criteria)))
            .join(key_frame, on="item_id")
            .group_by("pair_id", "source_id", "unit", "language", "reviewer", "criterion")
            .agg(*(pl.col("value").filter(pl.col("version") == v).first().alias(v)
                   for v in VERSIONS))
            .drop_nulls(list(VERSIONS)))
    index = ["pair_id", "source_id", "unit", "language", "reviewer"]
    wide = long.select(index).unique()
    for criterion, name in criteria.items():
        part = long.filter(pl.col("criterion") == criterion)
        if criterion == ADEQUACY:
            values = [pl.col(v).cast(pl.Int64).alias(f"h_{v}") for v in VERSIONS]
        else:
            values = [(pl.col(v) == "yes").alias(f"{name}_{v}") for v in VERSIONS]
        wide = wide.join(part.select(*index, *values), on=index, how="left")
    return wide.sort(index).to_arrow().cast(SCORES_SCHEMA)


def _answers(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """item_id, reviewer, criterion, value: the initial annotators' latest answers, or the
    final labels as one reviewer."""
    frame = pl.from_arrow(table) if isinstance(table, pa.Table) else table
    if "annotator" in frame.columns:
        try:
            prepared = agreement.prepare(frame)
        except ValueError as error:
            raise InputError("annotations", str(error)) from None
        return (prepared.filter(pl.col("role") == "initial")
                .select("item_id", pl.col("annotator").alias("reviewer"), "criterion",
                        "value"))
    if {"item_id", "criterion", "value", "origin"} <= set(frame.columns):
        return frame.filter(pl.col("value").is_not_null()).select(
            "item_id", pl.lit("final").alias("reviewer"), "criterion", "value")
    raise InputError("annotations", f"columns {sorted(frame.columns)}",
                     expected="pulled annotations (annotator, role, criterion, value) or "
                              "final labels (criterion, value, origin)")


# ------------------------------------------------------------------------- ΔH (Eq. 37)

def delta_h(scores: pa.Table, n_boot: int = 2000, seed: int = stats.SEED) -> dict:
    """Eq. 37 overall and per language, with source-clustered bootstrap intervals:
    {"overall": {...}, "by_language": [{..., "p_value", "p_holm"}]}."""
    units = (pl.from_arrow(scores).drop_nulls(["h_old", "h_new"])
             .group_by("pair_id")
             .agg(pl.col("source_id").first(), pl.col("language").first(),
                  (pl.col("h_new") - pl.col("h_old")).mean().alias("d"),
                  pl.len().alias("reviewers"))
             .sort("pair_id"))
    languages = sorted(units["language"].unique().to_list())
    if units.height == 0:
        return {"overall": _delta_row(float("nan"), np.full(n_boot, np.nan), units),
                "by_language": []}
    codes = units["language"].replace_strict(languages, list(range(len(languages))),
                                             return_dtype=pl.Int64).to_numpy()
    boot = stats.ClusterBootstrap(units["source_id"].to_numpy(), n_boot, seed, "delta_h")
    estimate, replicates = boot.means(
        units["d"].to_numpy(), [(np.zeros(units.height, np.int64), 1),
                                (codes, len(languages))], per="cluster")
    overall = _delta_row(estimate[0, 0], replicates[:, 0, 0], units)
    rows = [_delta_row(estimate[g + 1, 0], replicates[:, g + 1, 0],
                       units.filter(pl.col("language") == language))
            | {"language": language}
            for g, language in enumerate(languages)]
    _holm(rows, [stats.bootstrap_p_value(replicates[:, g + 1, 0])
                 for g in range(len(languages))])
    return {"overall": overall, "by_language": rows}


def _delta_row(estimate: float, replicates: np.ndarray, units: pl.DataFrame) -> dict:
    low, high, defined = stats.percentile_interval(replicates)
    return {"estimate": _number(estimate), "ci": [_number(low), _number(high)],
            "replicates": int(defined), "units": units.height,
            "sources": units["source_id"].n_unique(),
            "ratings": int(units["reviewers"].sum()) if units.height else 0}


# ------------------------------------------------------------------------- preservation

def preservation(scores: pa.Table, n_boot: int = 2000, seed: int = stats.SEED) -> dict:
    """Per flag, matched unit pairs old → new (module docstring):
    {"overall": {flag: {...}}, "by_language": [{"flag", "language", ..., "p_holm"}]}."""
    frame = pl.from_arrow(scores)
    overall, by_language = {}, []
    for flag in FLAGS:
        units = (frame.drop_nulls([f"{flag}_old", f"{flag}_new"])
                 .group_by("pair_id")
                 .agg(pl.col("source_id").first(), pl.col("language").first(),
                      pl.col(f"{flag}_old").all().alias("old"),
                      pl.col(f"{flag}_new").all().alias("new"))
                 .sort("pair_id"))
        languages = sorted(units["language"].unique().to_list())
        if units.height == 0:
            overall[flag] = _flag_row(units, None)
            continue
        codes = units["language"].replace_strict(languages, list(range(len(languages))),
                                                 return_dtype=pl.Int64).to_numpy()
        old, new = units["old"].to_numpy(), units["new"].to_numpy()
        boot = stats.ClusterBootstrap(units["source_id"].to_numpy(), n_boot, seed,
                                      "preservation", flag)
        _, replicates = boot.means(np.stack([old, new, new.astype(float) - old], axis=1),
                                   [(np.zeros(units.height, np.int64), 1),
                                    (codes, len(languages))], per="item")
        overall[flag] = _flag_row(units, replicates[:, 0, 2])
        rows = [_flag_row(units.filter(pl.col("language") == language),
                          replicates[:, g + 1, 2]) | {"flag": flag, "language": language}
                for g, language in enumerate(languages)]
        _holm(rows, [row["p_value"] for row in rows])
        by_language += rows
    return {"overall": overall, "by_language": by_language}


def _flag_row(units: pl.DataFrame, replicates: np.ndarray | None) -> dict:
    n = units.height
    if n == 0:
        return {"units": 0, "sources": 0, "old_rate": None, "new_rate": None,
                "difference": None, "ci": [None, None], "replicates": 0, "b": 0, "c": 0,
                "p_value": None}
    old, new = units["old"].to_numpy(), units["new"].to_numpy()
    b, c, p = stats.mcnemar_exact(old, new)
    low, high, defined = stats.percentile_interval(replicates)
    return {"units": n, "sources": units["source_id"].n_unique(),
            "old_rate": float(old.mean()), "new_rate": float(new.mean()),
            "difference": (c - b) / n, "ci": [_number(low), _number(high)],
            "replicates": int(defined), "b": b, "c": c, "p_value": p}


def _holm(rows: list[dict], p_values: list[float | None]) -> None:
    """Set each row's p_value and its Holm-adjusted p_holm (the rows are one family)."""
    raw = np.array([np.nan if p is None else p for p in p_values], dtype=float)
    for row, p, adjusted in zip(rows, raw, stats.holm(raw)):
        row["p_value"], row["p_holm"] = _number(p), _number(adjusted)


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


# ------------------------------------------------------------------------- evidence

def evidence(batch_id: str, workspace: Path | None = None, n_boot: int = 2000,
             seed: int = stats.SEED) -> dict:
    """Everything the acceptance gate reads about a pulled paired batch, JSON-able.
    `sufficient` is False, with `insufficient` saying why, when no pair was rated on both
    versions by one reviewer (nothing pulled yet, or only half of the pairs done)."""
    key = read_pairs(batch_id, workspace)
    table = Workspace(batch_id, workspace).annotations()
    scores = (paired_scores(table, key) if table is not None and table.num_rows
              else SCORES_SCHEMA.empty_table())
    frame = pl.from_arrow(scores).drop_nulls(["h_old", "h_new"])
    per_pair = (frame.group_by("pair_id").agg(pl.len().alias("reviewers"))
                .group_by("reviewers").agg(pl.len().alias("pairs")).sort("reviewers"))
    insufficient = []
    if table is None or table.num_rows == 0:
        insufficient.append("no annotations pulled")
    elif frame.height == 0:
        insufficient.append("no pair rated on both versions by the same reviewer")
    h = delta_h(scores, n_boot, seed)
    kept = preservation(scores, n_boot, seed)
    manifest = _read_manifest(batch_id, workspace).get(KIND.name, {})
    return {
        "batch_id": batch_id, "n_boot": n_boot, "seed": seed, "ci_level": stats.CI_LEVEL,
        "pairs": len({k["pair_id"] for k in key}),
        "complete_pairs": frame["pair_id"].n_unique(),
        "sources": frame["source_id"].n_unique(),
        "reviewers": {"distinct": frame["reviewer"].n_unique(), "ratings": frame.height,
                      "per_pair": {str(n): int(count) for n, count in per_pair.iter_rows()}},
        "excluded": manifest.get("excluded", {}),
        "releases": {version: manifest.get(version) for version in VERSIONS},
        "sufficient": not insufficient, "insufficient": insufficient,
        "delta_h": h["overall"], "delta_h_by_language": h["by_language"],
        "preservation": kept["overall"], "preservation_by_language": kept["by_language"],
    }


def _read_manifest(batch_id: str, workspace: Path) -> dict:
    path = batch_dir(batch_id, workspace) / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


_OLD_NEW = "the OLD (release) and the NEW (new_release) release"
# A translation batch of OLD and NEW versions: translation's config, annotation and reports.
KIND = ReviewKind("paired", translation.FORM, translation.KIND.annotation,
                  "paired OLD/NEW units", build, adjudication_form=translation.ADJUDICATION,
                  needs=(("release", _OLD_NEW), ("new_release", _OLD_NEW)),
                  accepts=frozenset({"new_release"}), reports=translation.reports,
                  charts=translation.CHARTS)
