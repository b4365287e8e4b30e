"""Error-span annotation (ESA / MQM) of translation units (issue 46): agreement on spans and
scores, MQM and ESA scores, the final spans and the adjudication queue, and the checks
measured against people. Pure functions over pulled tables: no Streamlit, no Label Studio,
no files.

Three input tables (pyarrow.Table or polars.DataFrame; extra columns are ignored):

SPAN_SCHEMA, one row per span a person marked (a Label Studio region):

    item_id      str        the reviewed unit (one task)
    cluster_id   str        the source row; the bootstrap resamples these
    language     str
    annotator    str
    role         str        "initial" | "adjudication"
    region_id    str|null   Label Studio's region id (a kept pre-filled region keeps its id)
    start, end   int32      character offsets into the shown translation text, end exclusive
    severity     str        "minor" | "major" | "critical" (critical: the MQM protocol)
    category     str|null   MQM typology (accuracy/mistranslation, omission, ...)
    origin       str|null   the check that proposed the span when it was pre-filled, else null
    text         str|null   the spanned text

SCORE_SCHEMA, one row per submitted annotation (item, annotator, role), spans or none:

    item_id, cluster_id, language, annotator, role   as above
    esa_score    float      the 0-100 ESA score
    n_words      int        words of the English source: the MQM denominator
    text_length  int        characters of the shown translation text, including the
                            " [missing]" token the task appends; an omission is a span on it

PREFILL_SCHEMA, the spans the push pre-filled from the scan's findings:

    item_id, language, region_id (null when unknown), start, end, severity, origin (the check)

Conventions:
- The score rows say who annotated an item: an annotator with a score row and no span rows
  marked no error. A span without a score row for its (item, annotator, role) is an error.
- Malformed input (missing column, null where a value is required, unknown role or
  severity, negative or reversed or empty offsets, an end beyond text_length, an item whose
  rows disagree on its cluster, language, n_words or text_length, two score rows of one
  person and role, two adjudicators of one item) raises InputError naming the table, the
  item and the field. No row is dropped.
- Pairs: the statistics between annotators use the items with exactly two initial
  annotators; annotator_1 is the name that sorts first. Other items are irregular: counted
  (n_irregular) in "all" and in their language's row, not in a pair's (as agreement.py).
- Slices: every pairwise table has a row per slice: by = "all" (every pair), "language",
  "pair" (annotator_1 & annotator_2, with the languages it annotated).
- Intervals: 95% percentile intervals of a source-clustered bootstrap (cluster_ids drawn
  with replacement, each carrying its items). Each slice's generator is seeded from the
  seed, the statistic and the slice's sorted item ids, never its name, so two slices with
  the same items (a language annotated by one pair) get the same interval.
- Character κ: each character of the shown text is none (0), minor (1) or major (2) for
  each annotator; critical counts as major and overlapping spans take the most severe.
  Cohen's κ of the contingency table pooled over the slice's items' characters (one table,
  so long texts weigh more). Undefined (both annotators used one category only) is NaN
  with a note, never 0.
- Span F1 = 2·matched / (claims_1 + claims_2) over the slice's pooled counts, matched one to
  one greedily (the pairs sharing the most characters first): "exact" matching needs the
  same start and end, "overlap" one shared character; the *_severity variants also need the
  same severity. An annotator who marked nothing on an item makes one "no error" claim, and
  two such claims match: two empty sets agree (F1 1 on that item), an empty set against two
  spans does not (0 matched of 1 + 2 claims).
- MQM penalty of one annotation: Σ weight(severity) / n_words × 100, weights minor 1,
  major 5, critical 25 by default. Scores of a unit: the adjudicator's where an adjudication
  exists, else the mean of the initial annotators' (at least two; else incomplete, null).
- Final spans: the adjudicator's where an adjudication exists (whether or not the item was
  disputed), else the initial annotators' when all agree on the multiset of (start, end,
  severity) (annotator_1's rows, so their categories), else the item is disputed. The
  queue lists items whose initial annotators differ in extents ("spans"), in severities only
  ("severity"), or in ESA scores by more than the tolerance ("score"); an adjudicated one is
  "resolved", the rest "open". A score-only dispute leaves the agreed spans final.
- Pre-filled spans: see prefill_fates and checks_vs_people.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence, TypeAlias

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ..analysis import stats
from ..errors import InputError
from . import agreement as ag

FloatArray = npt.NDArray[np.float64]

SEVERITIES = ("minor", "major", "critical")
# The κ scale: critical counts as major (ESA has no critical; MQM's is rare).
CHAR_SCALE = ag.Scale(("none", "minor", "major"))
CHAR_LEVEL = {"minor": 1, "major": 2, "critical": 2}
MQM_WEIGHTS: Mapping[str, float] = {"minor": 1.0, "major": 5.0, "critical": 25.0}
ESA_TOLERANCE = 25.0
MATCHINGS = ("exact", "overlap")
# (statistic, matching, same severity required)
F1_VARIANTS = (("f1_exact", "exact", False), ("f1_exact_severity", "exact", True),
               ("f1_overlap", "overlap", False), ("f1_overlap_severity", "overlap", True))
SERIOUS = ("major", "critical")   # the spans recall counts
ANY_CHECK = "any check"
ALL = "all"

SPAN_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("annotator", pa.string()), ("role", pa.string()), ("region_id", pa.string()),
    ("start", pa.int32()), ("end", pa.int32()), ("severity", pa.string()),
    ("category", pa.string()), ("origin", pa.string()), ("text", pa.string()),
])
SCORE_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("annotator", pa.string()), ("role", pa.string()), ("esa_score", pa.float64()),
    ("n_words", pa.int64()), ("text_length", pa.int64()),
])
PREFILL_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("language", pa.string()), ("region_id", pa.string()),
    ("start", pa.int32()), ("end", pa.int32()), ("severity", pa.string()),
    ("origin", pa.string()),
])
SPAN_NULLABLE = frozenset({"region_id", "category", "origin", "text"})
KEY = ["item_id", "annotator", "role"]


# ---------------------------------------------------------------- validation and preparation

class Annotations(NamedTuple):
    spans: pl.DataFrame
    scores: pl.DataFrame


Table: TypeAlias = "pa.Table | pl.DataFrame"


def prepare(spans: Table, scores: Table) -> Annotations:
    """Validated span and score tables (module docstring); raises InputError naming the
    table, item and field of the first malformed row."""
    score_frame = read_table(scores, "scores table", SCORE_SCHEMA, frozenset())
    _check_scores(score_frame)
    span_frame = read_table(spans, "spans table", SPAN_SCHEMA, SPAN_NULLABLE)
    _check_spans(span_frame, score_frame)
    return Annotations(span_frame.sort(*KEY, "start", "end", "severity"),
                       score_frame.sort("item_id", "role", "annotator"))


_POLARS_TYPES = {pa.string(): pl.String, pa.int32(): pl.Int64, pa.int64(): pl.Int64,
                 pa.float64(): pl.Float64}


def read_table(table: object, name: str, schema: pa.Schema,
               nullable: frozenset[str]) -> pl.DataFrame:
    """The schema's columns of a pyarrow or polars table, cast to its types (integers as
    Int64, for arithmetic); a value that does not cast or a null outside `nullable` is an
    InputError."""
    if isinstance(table, pa.Table):
        frame = pl.DataFrame(table)
    elif isinstance(table, pl.DataFrame):
        frame = table
    else:
        raise InputError(name, f"is a {type(table).__name__}",
                         expected="a pyarrow.Table or polars.DataFrame")
    missing = [column for column in schema.names if column not in frame.columns]
    if missing:
        raise InputError(name, f"missing column(s) {', '.join(missing)}",
                         expected="columns " + ", ".join(schema.names))
    frame = frame.select(schema.names)
    for field in schema:
        cast = frame[field.name].cast(_POLARS_TYPES[field.type], strict=False)
        _reject(frame, name, cast.is_null() & frame[field.name].is_not_null(), field.name,
                f"{{{field.name}!r}} is not a {field.type}")
        frame = frame.with_columns(cast)
    for column in schema.names:
        if column not in nullable:
            _reject(frame, name, pl.col(column).is_null(), column, "is null")
    return frame


def _reject(frame: pl.DataFrame, name: str, bad: pl.Expr | pl.Series, field: str,
            problem: str, expected: str | None = None) -> None:
    """InputError for the first row where `bad` holds; `problem` may name the row's fields
    ({start})."""
    hit = frame.filter(bad)
    if hit.height:
        row = hit.row(0, named=True)
        where = f"item {row.get('item_id')!r}"
        if row.get("annotator") is not None:
            where += f", annotator {row['annotator']!r}"
        raise InputError(name, problem.format(**row), where=f"{where}, field {field!r}",
                         expected=expected)


def _check_scores(scores: pl.DataFrame) -> None:
    name = "scores table"
    _reject(scores, name, ~pl.col("role").is_in(ag.ROLES), "role", "unknown role {role!r}",
            " or ".join(ag.ROLES))
    esa = pl.col("esa_score")
    _reject(scores, name, esa.is_nan() | ~esa.is_between(0, 100), "esa_score",
            "ESA score {esa_score} is outside 0-100")
    _reject(scores, name, pl.col("n_words") < 1, "n_words",
            "n_words {n_words} is not positive", "the English source's word count, at least 1")
    _reject(scores, name, pl.col("text_length") < 0, "text_length",
            "text_length {text_length} is negative")
    _reject(scores, name, pl.len().over(KEY) > 1, "annotator",
            "more than one score row for this item, annotator and role {role!r}")
    for column in ("cluster_id", "language", "n_words", "text_length"):
        _reject(scores, name, pl.col(column).n_unique().over("item_id") > 1, column,
                "differs between the item's rows")
    # Without timestamps there is no "latest": the pull keeps one adjudication per item.
    _reject(scores, name, (pl.col("role") == "adjudication")
            & (pl.col("annotator").n_unique().over("item_id", "role") > 1), "annotator",
            "the item has more than one adjudication")


def _check_spans(spans: pl.DataFrame, scores: pl.DataFrame) -> None:
    name = "spans table"
    _reject(spans, name, ~pl.col("role").is_in(ag.ROLES), "role", "unknown role {role!r}",
            " or ".join(ag.ROLES))
    _check_extents(spans, name)
    known = scores.select(*KEY, pl.col("cluster_id").alias("score_cluster"),
                          pl.col("language").alias("score_language"), "text_length")
    joined = spans.join(known, on=KEY, how="left")
    _reject(joined, name, pl.col("text_length").is_null(), "annotator",
            "a span with no score row for this item, annotator and role {role!r}")
    _reject(joined, name, pl.col("end") > pl.col("text_length"), "end",
            "end {end} is beyond the text's {text_length} characters")
    _reject(joined, name, pl.col("cluster_id") != pl.col("score_cluster"), "cluster_id",
            "cluster_id {cluster_id!r} differs from the score row's {score_cluster!r}")
    _reject(joined, name, pl.col("language") != pl.col("score_language"), "language",
            "language {language!r} differs from the score row's {score_language!r}")


def _check_extents(frame: pl.DataFrame, name: str) -> None:
    _reject(frame, name, ~pl.col("severity").is_in(SEVERITIES), "severity",
            "unknown severity {severity!r}", " or ".join(SEVERITIES))
    _reject(frame, name, pl.col("start") < 0, "start", "start {start} is negative")
    # An empty span marks nothing: no character for the κ, no extent to match.
    _reject(frame, name, pl.col("end") <= pl.col("start"), "end",
            "end {end} is not after start {start}")


# --------------------------------------------------------------------- one annotation

class Span(NamedTuple):
    """Characters [start, end) of the shown translation text, with a severity."""
    start: int
    end: int
    severity: str


def _check_span(start: int, end: int, severity: str, length: int) -> None:
    where = f"span [{start}, {end})"
    if severity not in CHAR_LEVEL:
        raise InputError("span", f"unknown severity {severity!r}", where=where,
                         expected=" or ".join(SEVERITIES))
    if not 0 <= start < end <= length:
        raise InputError("span", f"outside a text of {length} characters or empty",
                         where=where, expected="0 <= start < end <= length")


def char_labels(spans: Iterable[tuple[int, int, str]], length: int) -> npt.NDArray[np.int8]:
    """Per character of a text of `length` characters: 0 none, 1 minor, 2 major (critical
    counts as major). Where spans overlap, the most severe wins. InputError for an empty
    span, one outside the text or an unknown severity."""
    labels = np.zeros(length, dtype=np.int8)
    for start, end, severity in spans:
        _check_span(start, end, severity, length)
        np.maximum(labels[start:end], CHAR_LEVEL[severity], out=labels[start:end])
    return labels


def matched_spans(first: Sequence[tuple[int, int, str]], second: Sequence[tuple[int, int, str]],
                  matching: str = "exact", same_severity: bool = False) -> int:
    """How many spans of `first` match one of `second`, one to one: "exact" needs the same
    (start, end), "overlap" at least one shared character; same_severity also the same
    severity. Greedy: the candidate pairs sharing the most characters are taken first (ties
    in list order), each span at most once."""
    if matching not in MATCHINGS:
        raise ValueError(f"matching {matching!r} is not one of {MATCHINGS}")
    candidates = []
    for i, (start_1, end_1, severity_1) in enumerate(first):
        for j, (start_2, end_2, severity_2) in enumerate(second):
            shared = min(end_1, end_2) - max(start_1, start_2)
            extent = ((start_1, end_1) == (start_2, end_2) if matching == "exact"
                      else shared > 0)
            if extent and (severity_1 == severity_2 or not same_severity):
                candidates.append((-shared, i, j))
    used_first: set[int] = set()
    used_second: set[int] = set()
    for _, i, j in sorted(candidates):
        if i not in used_first and j not in used_second:
            used_first.add(i)
            used_second.add(j)
    return len(used_first)


def mqm_penalty(spans: Iterable[tuple[int, int, str]], n_words: int,
                weights: Mapping[str, float] = MQM_WEIGHTS) -> float:
    """MQM penalty of one annotation: Σ weight(severity) / n_words × 100 (errors per 100
    source words, weighted). Every span counts, overlapping or not."""
    missing = [severity for severity in SEVERITIES if severity not in weights]
    if missing:
        raise InputError("MQM weights", f"no weight for {', '.join(missing)}",
                         expected="a weight for each of " + ", ".join(SEVERITIES))
    if n_words < 1:
        raise InputError("MQM penalty", f"n_words {n_words} is not positive",
                         expected="the English source's word count, at least 1")
    return sum(weights[severity] for _, _, severity in spans) / n_words * 100


@dataclass(frozen=True)
class _Submission:
    """One (item, annotator, role) score row with its spans, sorted."""
    item_id: str
    cluster_id: str
    language: str
    annotator: str
    role: str
    esa_score: float
    n_words: int
    text_length: int
    spans: tuple[Span, ...]


def _submissions(data: Annotations) -> dict[str, list[_Submission]]:
    """Per item (sorted), its submissions: adjudication first, then initial by annotator."""
    marked: dict[tuple[str, str, str], list[Span]] = {}
    for row in data.spans.iter_rows(named=True):
        marked.setdefault((row["item_id"], row["annotator"], row["role"]), []).append(
            Span(row["start"], row["end"], row["severity"]))
    items: dict[str, list[_Submission]] = {}
    for row in data.scores.iter_rows(named=True):
        spans = tuple(marked.get((row["item_id"], row["annotator"], row["role"]), ()))
        items.setdefault(row["item_id"], []).append(_Submission(**row, spans=spans))
    return items


def _initial(submissions: list[_Submission]) -> list[_Submission]:
    return [s for s in submissions if s.role == "initial"]


def _adjudication(submissions: list[_Submission]) -> _Submission | None:
    return next((s for s in submissions if s.role == "adjudication"), None)


# -------------------------------------------------------------------------------- slices

@dataclass(frozen=True)
class _Pair:
    first: _Submission    # annotator_1, the name that sorts first
    second: _Submission


@dataclass(frozen=True)
class _Slice:
    by: str
    group: str
    language: str | None
    annotator_1: str | None
    annotator_2: str | None
    pairs: list[_Pair]
    n_irregular: int

    def labels(self) -> dict[str, object]:
        """The columns every pairwise table starts with."""
        return {"by": self.by, "group": self.group, "language": self.language,
                "annotator_1": self.annotator_1, "annotator_2": self.annotator_2,
                "n_items": len(self.pairs),
                "n_clusters": len({p.first.cluster_id for p in self.pairs}),
                "n_irregular": self.n_irregular}

    def draws(self, n_boot: int, seed: int, statistic: str) -> FloatArray:
        """(n_boot, n_items): how often each item is drawn when the slice's clusters are
        resampled. Seeded by the sorted item ids, so the same items draw the same."""
        rng = stats.rng_for(seed, statistic, *sorted(p.first.item_id for p in self.pairs))
        _, index = np.unique([p.first.cluster_id for p in self.pairs], return_inverse=True)
        n_clusters = int(index.max()) + 1 if len(index) else 0
        weights = stats.cluster_weights(n_clusters, n_boot, rng)
        return weights[:, index.ravel().astype(np.int64)].astype(np.float64)


def _slices(data: Annotations) -> list[_Slice]:
    """The "all" slice, one per language (also a language with irregular items only) and
    one per annotator pair."""
    pairs, irregular = [], []
    for submissions in _submissions(data).values():
        initial = _initial(submissions)
        if len(initial) == 2:
            pairs.append(_Pair(*initial))
        else:
            irregular.append(submissions[0].language)
    slices = [_Slice("all", ALL, None, None, None, pairs, len(irregular))]
    for language in sorted({p.first.language for p in pairs} | set(irregular)):
        slices.append(_Slice("language", language, language, None, None,
                             [p for p in pairs if p.first.language == language],
                             irregular.count(language)))
    for first, second in sorted({(p.first.annotator, p.second.annotator) for p in pairs}):
        mine = [p for p in pairs if (p.first.annotator, p.second.annotator) == (first, second)]
        slices.append(_Slice("pair", f"{first} & {second}",
                             ", ".join(sorted({p.first.language for p in mine})),
                             first, second, mine, 0))
    return slices


def _estimate(estimate: float, replicates: FloatArray, n_boot: int,
              undefined: Callable[[], str]) -> dict[str, object]:
    """Estimate, percentile interval and note; an undefined estimate has no interval."""
    if np.isnan(estimate):
        return {"estimate": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                "n_boot": n_boot, "n_boot_defined": 0, "note": undefined()}
    low, high, defined = stats.percentile_interval(replicates)
    note = (f"{n_boot - defined} of {n_boot} bootstrap replicates undefined, excluded"
            if defined < n_boot else "")
    return {"estimate": estimate, "ci_low": low, "ci_high": high, "n_boot": n_boot,
            "n_boot_defined": defined, "note": note}


_SLICE_FIELDS = [
    ("by", pa.string()), ("group", pa.string()), ("language", pa.string()),
    ("annotator_1", pa.string()), ("annotator_2", pa.string()),
]
_COUNT_FIELDS = [("n_items", pa.int64()), ("n_clusters", pa.int64()),
                 ("n_irregular", pa.int64())]
_ESTIMATE_FIELDS = [
    ("estimate", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_boot", pa.int64()), ("n_boot_defined", pa.int64()), ("note", pa.string()),
]
NO_PAIRS = "no item has two initial annotations"


# ------------------------------------------------------------------------- character κ

KAPPA_SCHEMA = pa.schema([*_SLICE_FIELDS, ("statistic", pa.string()), *_COUNT_FIELDS,
                          ("n_characters", pa.int64()), *_ESTIMATE_FIELDS])


def _char_cells(pair: _Pair) -> npt.NDArray[np.int64]:
    """The 3×3 character contingency table of a pair (first × second), flattened."""
    length = pair.first.text_length
    first = char_labels(pair.first.spans, length).astype(np.int64)
    second = char_labels(pair.second.spans, length).astype(np.int64)
    return np.bincount(first * 3 + second, minlength=9)


def _kappa_note(table: FloatArray) -> str:
    if table.sum() == 0:
        return NO_PAIRS
    used = np.flatnonzero(table.sum(axis=0) + table.sum(axis=1))
    if len(used) == 1:
        return (f"every character is {CHAR_SCALE.labels[used[0]]!r} for both annotators: "
                f"chance agreement is 1, so κ is undefined (not 0)")
    return "undefined"


def char_kappa(spans: Table, scores: Table, n_boot: int = 2000, seed: int = stats.SEED
               ) -> pa.Table:
    """Character-level raw agreement and Cohen's κ over none / minor / major between the two
    initial annotators of each item, pooled over the slice's items (all, per language, per
    pair), with n (items, clusters, characters) and a cluster bootstrap interval. Two rows
    per slice: statistic "raw_agreement" and "cohen_kappa"."""
    rows = []
    for part in _slices(prepare(spans, scores)):
        cells = np.array([_char_cells(p) for p in part.pairs], dtype=np.float64).reshape(-1, 9)
        point = cells.sum(axis=0).reshape(1, 3, 3)
        tables = (part.draws(n_boot, seed, "character-kappa") @ cells).reshape(n_boot, 3, 3)
        for name, of_tables, note in (
                ("raw_agreement", ag.raw_of_tables, lambda: NO_PAIRS),
                ("cohen_kappa", ag.kappa_of_tables, lambda: _kappa_note(point[0]))):
            rows.append({**part.labels(), "statistic": name, "n_characters": int(point.sum()),
                         **_estimate(float(of_tables(point)[0]), of_tables(tables), n_boot,
                                     note)})
    return pa.Table.from_pylist(rows, schema=KAPPA_SCHEMA)


# ------------------------------------------------------------------------------ span F1

F1_SCHEMA = pa.schema([
    *_SLICE_FIELDS, ("statistic", pa.string()), ("matching", pa.string()),
    ("same_severity", pa.bool_()), *_COUNT_FIELDS, ("n_spans_1", pa.int64()),
    ("n_spans_2", pa.int64()), ("n_empty_1", pa.int64()), ("n_empty_2", pa.int64()),
    ("n_both_empty", pa.int64()), ("n_matched", pa.int64()), *_ESTIMATE_FIELDS,
])


def _f1_counts(pair: _Pair) -> list[int]:
    """[matched per F1_VARIANTS (empty-set agreement included)..., claims of both]."""
    first, second = pair.first.spans, pair.second.spans
    both_empty = int(not first and not second)
    claims = max(len(first), 1) + max(len(second), 1)
    return [matched_spans(first, second, matching, severity) + both_empty
            for _, matching, severity in F1_VARIANTS] + [claims]


def span_f1(spans: Table, scores: Table, n_boot: int = 2000, seed: int = stats.SEED) -> pa.Table:
    """Span F1 between the two initial annotators per slice (all, language, pair), four
    statistics: f1_exact and f1_overlap match on extent only, f1_exact_severity and
    f1_overlap_severity also need the same severity. F1 = 2·matched / claims over the
    slice's pooled counts, an empty set being one "no error" claim (module docstring).
    n_matched counts matched spans without the empty-set agreements (n_both_empty)."""
    rows = []
    for part in _slices(prepare(spans, scores)):
        counts = np.array([_f1_counts(p) for p in part.pairs],
                          dtype=np.float64).reshape(-1, len(F1_VARIANTS) + 1)
        replicates = part.draws(n_boot, seed, "span-f1") @ counts
        n_spans = [sum(len(getattr(p, side).spans) for p in part.pairs)
                   for side in ("first", "second")]
        n_empty = [sum(not getattr(p, side).spans for p in part.pairs)
                   for side in ("first", "second")]
        both_empty = sum(not p.first.spans and not p.second.spans for p in part.pairs)
        claims = counts[:, -1].sum()
        for column, (name, matching, severity) in enumerate(F1_VARIANTS):
            with np.errstate(all="ignore"):
                estimate = 2 * counts[:, column].sum() / claims
                of_replicates = 2 * replicates[:, column] / replicates[:, -1]
            rows.append({**part.labels(), "statistic": name, "matching": matching,
                         "same_severity": severity, "n_spans_1": n_spans[0],
                         "n_spans_2": n_spans[1], "n_empty_1": n_empty[0],
                         "n_empty_2": n_empty[1], "n_both_empty": both_empty,
                         "n_matched": int(counts[:, column].sum()) - both_empty,
                         **_estimate(float(estimate), of_replicates, n_boot,
                                     lambda: NO_PAIRS)})
    return pa.Table.from_pylist(rows, schema=F1_SCHEMA)


# ------------------------------------------------------------------- score agreement

_CHUNK = 256   # replicates per matrix product of the weighted Kendall τ-b


def _varies(values: FloatArray, multiplicities: FloatArray) -> npt.NDArray[np.bool_]:
    """Per row of multiplicities: do the drawn values take more than one value?"""
    drawn = multiplicities > 0
    low = np.where(drawn, values, np.inf).min(axis=1, initial=np.inf)
    high = np.where(drawn, values, -np.inf).max(axis=1, initial=-np.inf)
    return np.asarray(high > low)


def weighted_pearson(x: FloatArray, y: FloatArray, multiplicities: FloatArray) -> FloatArray:
    """Pearson's r of (x, y) with item i counted multiplicities[b, i] times, per row b (a
    row of ones: the plain r). NaN where x or y is constant among the drawn items."""
    m = np.atleast_2d(np.asarray(multiplicities, dtype=np.float64))
    if len(x) == 0:
        return np.full(len(m), np.nan)
    # Centring first keeps the moment differences from cancelling digits away.
    x, y = x - x.mean(), y - y.mean()
    n = m.sum(axis=1)
    with np.errstate(all="ignore"):
        sx, sy = m @ x, m @ y
        sxy = m @ (x * y) - sx * sy / n
        sxx = m @ (x * x) - sx * sx / n
        syy = m @ (y * y) - sy * sy / n
        r = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    return np.where(_varies(x, m) & _varies(y, m), r, np.nan)


def _untied_pairs(values: FloatArray, m: FloatArray) -> FloatArray:
    """Σ_{i<j} m_i·m_j·[values_i ≠ values_j] per row of m, in n_boot × n: all pairs of drawn
    copies, less those within one value, ((Σ m)² − Σ_v (Σ_{values_i = v} m_i)²) / 2."""
    if len(values) == 0:
        return np.zeros(len(m))
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    by_value = np.add.reduceat(m[:, order], starts, axis=1)
    return (m.sum(axis=1) ** 2 - (by_value ** 2).sum(axis=1)) / 2


def _pair_sums(matrix: FloatArray, m: FloatArray) -> FloatArray:
    """Σ_{i<j} m_i·m_j·matrix[i, j] per row of m (matrix symmetric, zero diagonal)."""
    out = np.empty(len(m))
    for start in range(0, len(m), _CHUNK):
        chunk = m[start:start + _CHUNK]
        out[start:start + _CHUNK] = ((chunk @ matrix) * chunk).sum(axis=1) / 2
    return out


def weighted_kendall_tau_b(x: FloatArray, y: FloatArray, multiplicities: FloatArray
                           ) -> FloatArray:
    """Kendall's τ-b of (x, y) with item i counted multiplicities[b, i] times, per row b:
    (concordant − discordant) / √(pairs untied in x · pairs untied in y), over pairs of
    drawn copies (two copies of one item tie in both). NaN where x or y has no untied pair.
    Exact and vectorised: quadratic forms of the pair-sign matrices."""
    m = np.atleast_2d(np.asarray(multiplicities, dtype=np.float64))
    score = _pair_sums(np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :]), m)
    untied_x, untied_y = _untied_pairs(x, m), _untied_pairs(y, m)
    with np.errstate(all="ignore"):
        tau = score / np.sqrt(untied_x * untied_y)
    return np.where((untied_x > 0) & (untied_y > 0), tau, np.nan)


SCORE_AGREEMENT_SCHEMA = pa.schema([
    *_SLICE_FIELDS, ("score", pa.string()), ("statistic", pa.string()), *_COUNT_FIELDS,
    *_ESTIMATE_FIELDS,
])
CORRELATIONS: tuple[tuple[str, Callable[[FloatArray, FloatArray, FloatArray], FloatArray]], ...] \
    = (("pearson", weighted_pearson), ("kendall_tau_b", weighted_kendall_tau_b))


def _correlation_note(x: FloatArray, y: FloatArray, part: _Slice, score: str) -> str:
    if len(x) < 2:
        return f"{len(x)} item(s) with two initial annotations: a correlation needs two"
    constant = [name for name, values in ((part.annotator_1 or "annotator 1", x),
                                          (part.annotator_2 or "annotator 2", y))
                if np.all(values == values[0])]
    return (f"every {score} score of {' and '.join(constant)} is the same: the correlation "
            f"is undefined" if constant else "undefined")


def score_agreement(spans: Table, scores: Table, n_boot: int = 2000, seed: int = stats.SEED,
                    weights: Mapping[str, float] = MQM_WEIGHTS) -> pa.Table:
    """Pearson's r and Kendall's τ-b between the two initial annotators' ESA scores (score
    "esa") and MQM penalties (score "mqm") per slice (all, language, pair), with n and a
    cluster bootstrap interval (one draw per slice, shared by the four statistics). In "all"
    and language rows annotator 1 and 2 are each item's first and second name."""
    rows = []
    # Slices with the same items (one pair annotating everything, a language one pair
    # read) draw the same and give the same correlations: computed once. Kendall's τ-b
    # costs n_boot × n² per slice.
    computed: dict[tuple, tuple[float, FloatArray]] = {}
    for part in _slices(prepare(spans, scores)):
        items = tuple(sorted(p.first.item_id for p in part.pairs))
        draws = part.draws(n_boot, seed, "score-agreement")
        ones = np.ones((1, len(part.pairs)))
        for score, values in (
                ("esa", [(p.first.esa_score, p.second.esa_score) for p in part.pairs]),
                ("mqm", [(_penalty(p.first, weights), _penalty(p.second, weights))
                         for p in part.pairs])):
            pairs = np.array(values, dtype=np.float64).reshape(-1, 2)
            x, y = pairs[:, 0], pairs[:, 1]
            for name, correlation in CORRELATIONS:
                if (items, score, name) not in computed:
                    computed[items, score, name] = (float(correlation(x, y, ones)[0]),
                                                    correlation(x, y, draws))
                estimate, replicates = computed[items, score, name]
                rows.append({**part.labels(), "score": score, "statistic": name,
                             **_estimate(estimate, replicates, n_boot,
                                         lambda: _correlation_note(x, y, part, score))})
    return pa.Table.from_pylist(rows, schema=SCORE_AGREEMENT_SCHEMA)


# ------------------------------------------------------------------- MQM and ESA scores

def _penalty(submission: _Submission, weights: Mapping[str, float]) -> float:
    return mqm_penalty(submission.spans, submission.n_words, weights)


ANNOTATOR_SCORE_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("annotator", pa.string()), ("role", pa.string()), ("esa_score", pa.float64()),
    ("n_words", pa.int64()), ("n_spans", pa.int64()), ("n_minor", pa.int64()),
    ("n_major", pa.int64()), ("n_critical", pa.int64()), ("mqm_penalty", pa.float64()),
])


def annotator_scores(spans: Table, scores: Table,
                     weights: Mapping[str, float] = MQM_WEIGHTS) -> pa.Table:
    """One row per annotation (item, annotator, role): its ESA score, span counts by
    severity and MQM penalty."""
    rows = []
    for submissions in _submissions(prepare(spans, scores)).values():
        for s in submissions:
            severities = [span.severity for span in s.spans]
            rows.append({"item_id": s.item_id, "cluster_id": s.cluster_id,
                         "language": s.language, "annotator": s.annotator, "role": s.role,
                         "esa_score": s.esa_score, "n_words": s.n_words,
                         "n_spans": len(s.spans), "n_minor": severities.count("minor"),
                         "n_major": severities.count("major"),
                         "n_critical": severities.count("critical"),
                         "mqm_penalty": _penalty(s, weights)})
    return pa.Table.from_pylist(rows, schema=ANNOTATOR_SCORE_SCHEMA)


UNIT_SCORE_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("n_initial", pa.int64()), ("origin", pa.string()), ("esa_score", pa.float64()),
    ("mqm_penalty", pa.float64()),
])


def _unit_score(submissions: list[_Submission], weights: Mapping[str, float]
                ) -> dict[str, object]:
    initial, adjudication = _initial(submissions), _adjudication(submissions)
    if adjudication is not None:
        origin, esa, mqm = ("adjudicated", adjudication.esa_score,
                            _penalty(adjudication, weights))
    elif len(initial) >= 2:
        origin = "initial mean"
        esa = float(np.mean([s.esa_score for s in initial]))
        mqm = float(np.mean([_penalty(s, weights) for s in initial]))
    else:
        return {"n_initial": len(initial), "origin": "incomplete", "esa_score": None,
                "mqm_penalty": None}
    return {"n_initial": len(initial), "origin": origin, "esa_score": esa, "mqm_penalty": mqm}


def unit_scores(spans: Table, scores: Table,
                weights: Mapping[str, float] = MQM_WEIGHTS) -> pa.Table:
    """Per item the final ESA score and MQM penalty: the adjudicator's where an adjudication
    exists (origin "adjudicated"), else the mean of two or more initial annotators' ("initial
    mean"), else null ("incomplete")."""
    rows = [{"item_id": item, "cluster_id": submissions[0].cluster_id,
             "language": submissions[0].language, **_unit_score(submissions, weights)}
            for item, submissions in _submissions(prepare(spans, scores)).items()]
    return pa.Table.from_pylist(rows, schema=UNIT_SCORE_SCHEMA)


LANGUAGE_SCORE_SCHEMA = pa.schema([
    ("by", pa.string()), ("group", pa.string()), ("score", pa.string()),
    ("n_items", pa.int64()), ("n_clusters", pa.int64()), ("n_adjudicated", pa.int64()),
    ("n_incomplete", pa.int64()), ("mean", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("n_boot", pa.int64()),
])


def language_scores(spans: Table, scores: Table, n_boot: int = 2000, seed: int = stats.SEED,
                    weights: Mapping[str, float] = MQM_WEIGHTS) -> pa.Table:
    """Mean final ESA score ("esa") and MQM penalty ("mqm") over all items and per language,
    with n (scored items; incomplete ones counted apart) and a cluster bootstrap interval
    seeded by the group's scored item ids."""
    units = pl.DataFrame(unit_scores(spans, scores, weights)).with_columns(
        pl.lit(ALL).alias(ALL))
    rows = []
    for by, column in ((ALL, ALL), ("language", "language")):
        for (group,), part in units.sort(column).group_by(column, maintain_order=True):
            scored = part.filter(pl.col("origin") != "incomplete")
            ids = sorted(scored["item_id"].to_list())
            for score, values in (("esa", "esa_score"), ("mqm", "mqm_penalty")):
                mean, low, high = stats.cluster_mean(
                    scored[values].to_numpy(), scored["cluster_id"].to_numpy(), n_boot,
                    stats.rng_for(seed, f"{score}-mean", *ids))
                rows.append({"by": by, "group": group, "score": score,
                             "n_items": scored.height,
                             "n_clusters": scored["cluster_id"].n_unique(),
                             "n_adjudicated": int((scored["origin"] == "adjudicated").sum()),
                             "n_incomplete": part.height - scored.height, "mean": mean,
                             "ci_low": low, "ci_high": high, "n_boot": n_boot})
    return pa.Table.from_pylist(rows, schema=LANGUAGE_SCORE_SCHEMA)


# ------------------------------------------------------------- final spans and the queue

def _disagreements(initial: list[_Submission], tolerance: float
                   ) -> tuple[list[str], float | None]:
    """Why the initial annotators of an item disagree ("spans": extents differ; "severity":
    same extents, other severities; "score": ESA scores further apart than the tolerance)
    and the ESA gap; nothing with fewer than two."""
    if len(initial) < 2:
        return [], None
    reasons = []
    if len({tuple((s.start, s.end) for s in sub.spans) for sub in initial}) > 1:
        reasons.append("spans")
    elif len({sub.spans for sub in initial}) > 1:
        reasons.append("severity")
    gap = max(s.esa_score for s in initial) - min(s.esa_score for s in initial)
    if gap > tolerance:
        reasons.append("score")
    return reasons, gap


class FinalSpans(NamedTuple):
    spans: pa.Table   # FINAL_SPAN_SCHEMA: the final spans of agreed and adjudicated items
    items: pa.Table   # FINAL_ITEM_SCHEMA: every item's status, so none goes missing


FINAL_SPAN_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("decided", pa.string()), ("annotator", pa.string()), ("role", pa.string()),
    ("region_id", pa.string()), ("start", pa.int32()), ("end", pa.int32()),
    ("severity", pa.string()), ("category", pa.string()), ("origin", pa.string()),
    ("text", pa.string()),
])
FINAL_ITEM_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("n_initial", pa.int64()), ("status", pa.string()), ("annotator", pa.string()),
    ("n_spans", pa.int64()),
])


def _final_source(submissions: list[_Submission]) -> tuple[str, _Submission | None]:
    """(status, the submission whose spans are final): adjudicated, agreed (annotator_1),
    disputed or incomplete (fewer than two initial annotators)."""
    initial, adjudication = _initial(submissions), _adjudication(submissions)
    if adjudication is not None:
        return "adjudicated", adjudication
    if len(initial) < 2:
        return "incomplete", None
    if len({sub.spans for sub in initial}) == 1:
        return "agreed", initial[0]
    return "disputed", None


def final_spans(spans: Table, scores: Table) -> FinalSpans:
    """The final span set of each item (module docstring): the adjudicator's, else the
    initial annotators' agreed set, else none yet (status "disputed" or "incomplete"). An
    agreed or adjudicated item with no final span row has no error."""
    data = prepare(spans, scores)
    items, chosen = [], []
    for item, submissions in _submissions(data).items():
        status, source = _final_source(submissions)
        items.append({"item_id": item, "cluster_id": submissions[0].cluster_id,
                      "language": submissions[0].language,
                      "n_initial": len(_initial(submissions)), "status": status,
                      "annotator": source.annotator if source else None,
                      "n_spans": len(source.spans) if source else None})
        if source is not None:
            chosen.append({"item_id": item, "annotator": source.annotator,
                           "role": source.role, "decided": status})
    picked = pl.DataFrame(chosen, schema={"item_id": pl.String, "annotator": pl.String,
                                          "role": pl.String, "decided": pl.String})
    final = data.spans.join(picked, on=KEY, how="inner", maintain_order="left")
    return FinalSpans(final.select(FINAL_SPAN_SCHEMA.names).to_arrow().cast(FINAL_SPAN_SCHEMA),
                      pa.Table.from_pylist(items, schema=FINAL_ITEM_SCHEMA))


SPAN_QUEUE_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("cluster_id", pa.string()), ("language", pa.string()),
    ("annotators", pa.list_(pa.string())), ("reasons", pa.list_(pa.string())),
    ("esa_gap", pa.float64()), ("state", pa.string()),
])


def span_queue(spans: Table, scores: Table, tolerance: float = ESA_TOLERANCE) -> pa.Table:
    """The items whose initial annotators disagree: reasons "spans" (extents differ),
    "severity" (same extents, a severity differs), "score" (ESA scores more than `tolerance`
    apart); state "resolved" once adjudicated, else "open" (what the adjudication push
    sends). Resolved items stay listed, as in agreement.adjudication_queue."""
    rows = []
    for item, submissions in _submissions(prepare(spans, scores)).items():
        initial = _initial(submissions)
        reasons, gap = _disagreements(initial, tolerance)
        if reasons:
            rows.append({"item_id": item, "cluster_id": submissions[0].cluster_id,
                         "language": submissions[0].language,
                         "annotators": [s.annotator for s in initial], "reasons": reasons,
                         "esa_gap": gap,
                         "state": "resolved" if _adjudication(submissions) else "open"})
    return pa.Table.from_pylist(rows, schema=SPAN_QUEUE_SCHEMA)


# ------------------------------------------------------------------- pre-filled spans

def read_prefill(prefill: Table, data: Annotations) -> pl.DataFrame:
    """The validated pre-filled spans; where the item was annotated, within its text and in
    its language. A pre-filled item nobody annotated yet is kept (its spans are unjudged)."""
    name = "prefill table"
    frame = read_table(prefill, name, PREFILL_SCHEMA, frozenset({"region_id"}))
    _check_extents(frame, name)
    known = data.scores.group_by("item_id").agg(
        pl.col("language").first().alias("score_language"), pl.col("text_length").first())
    joined = frame.join(known, on="item_id", how="left")
    _reject(joined, name, pl.col("end") > pl.col("text_length"), "end",
            "end {end} is beyond the text's {text_length} characters")
    _reject(joined, name, pl.col("language") != pl.col("score_language"), "language",
            "language {language!r} differs from the score rows' {score_language!r}")
    return frame.sort("item_id", "start", "end", "origin")


FATE_SCHEMA = pa.schema([
    ("item_id", pa.string()), ("language", pa.string()), ("region_id", pa.string()),
    ("start", pa.int32()), ("end", pa.int32()), ("severity", pa.string()),
    ("origin", pa.string()), ("annotator", pa.string()), ("fate", pa.string()),
    ("matched_by", pa.string()), ("new_start", pa.int32()), ("new_end", pa.int32()),
    ("new_severity", pa.string()),
])


def _fate(filled: dict[str, object], theirs: list[dict[str, object]]
          ) -> tuple[str, dict[str, object] | None, str | None]:
    """(fate, the person's span it became, matched by "region" or "extent")."""
    extent = (filled["start"], filled["end"], filled["severity"])
    region = filled["region_id"]
    for span in theirs:
        if region is not None and span["region_id"] == region:
            same = (span["start"], span["end"], span["severity"]) == extent
            return ("kept" if same else "changed"), span, "region"
    # Without ids on either side, the extent is all there is to go by.
    if region is None or all(span["region_id"] is None for span in theirs):
        for span in theirs:
            if (span["start"], span["end"], span["severity"]) == extent:
                return "kept", span, "extent"
        for span in theirs:
            if _overlaps(span, filled):
                return "changed", span, "extent"
    return "deleted", None, None


def _overlaps(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    return bool(a["start"] < b["end"] and b["start"] < a["end"])  # type: ignore[operator]


def _initial_marks(data: Annotations) -> tuple[dict[str, list[str]],
                                               dict[tuple[str, str], list[dict[str, object]]]]:
    """Initial annotators per item (from the score rows) and their spans per (item, person)."""
    initial = data.scores.filter(pl.col("role") == "initial")
    annotators: dict[str, list[str]] = {}
    for item, annotator in initial.select("item_id", "annotator").iter_rows():
        annotators.setdefault(item, []).append(annotator)
    marks: dict[tuple[str, str], list[dict[str, object]]] = {}
    for row in data.spans.filter(pl.col("role") == "initial").iter_rows(named=True):
        marks.setdefault((row["item_id"], row["annotator"]), []).append(row)
    return annotators, marks


def prefill_fates(prefill: Table, spans: Table, scores: Table) -> pa.Table:
    """For each pre-filled span and each initial annotator of its item, what the person did:
    "kept" (their span with its region_id has the same extent and severity), "changed" (it
    has another extent or severity), "deleted" (no span with that region_id). Where region
    ids are absent (the pre-filled span's, or all of the person's on the item) an exact
    extent and severity match is "kept" and an overlapping span of another extent or
    severity "changed". A pre-filled span of an item no one has annotated yet: one row,
    annotator null, "not annotated". The new_* columns describe the span it became."""
    data = prepare(spans, scores)
    return _fates(read_prefill(prefill, data), data)


def _fates(prefilled: pl.DataFrame, data: Annotations) -> pa.Table:
    annotators, marks = _initial_marks(data)
    rows = []
    for filled in prefilled.iter_rows(named=True):
        people = annotators.get(filled["item_id"], [])
        if not people:
            rows.append({**filled, "annotator": None, "fate": "not annotated"})
        for person in people:
            fate, span, how = _fate(filled, marks.get((filled["item_id"], person), []))
            became = {} if span is None else {"new_start": span["start"], "new_end": span["end"],
                                              "new_severity": span["severity"]}
            rows.append({**filled, "annotator": person, "fate": fate, "matched_by": how,
                         **became})
    return pa.Table.from_pylist(rows, schema=FATE_SCHEMA)


def _proposed(people: pl.DataFrame, filled: pl.DataFrame) -> pl.DataFrame:
    """(span_index, origin) for each person's span and each check (origin) with a pre-filled
    span overlapping it on the same item."""
    return (people.join(filled.select("item_id", pl.col("start").alias("filled_start"),
                                      pl.col("end").alias("filled_end"), "origin"),
                        on="item_id", suffix="_filled")
            .filter(pl.col("start") < pl.col("filled_end"),
                    pl.col("filled_start") < pl.col("end"))
            .select("span_index", pl.col("origin_filled").alias("origin"))
            .unique())


def added_spans(prefill: Table, spans: Table, scores: Table) -> pa.Table:
    """The initial annotators' spans that overlap no pre-filled span of their item: errors
    people found that no check proposed (SPAN_SCHEMA rows)."""
    data = prepare(spans, scores)
    people = data.spans.filter(pl.col("role") == "initial").with_row_index("span_index")
    proposed = _proposed(people, read_prefill(prefill, data))
    added = people.join(proposed, on="span_index", how="anti")
    return added.select(SPAN_SCHEMA.names).to_arrow().cast(SPAN_SCHEMA)


CHECKS_SCHEMA = pa.schema([
    ("check", pa.string()), ("language", pa.string()),
    ("n_prefilled", pa.int64()), ("n_unjudged", pa.int64()), ("n_judgments", pa.int64()),
    ("n_kept", pa.int64()), ("share_kept", pa.float64()), ("kept_low", pa.float64()),
    ("kept_high", pa.float64()), ("n_unchanged", pa.int64()),
    ("share_unchanged", pa.float64()), ("unchanged_low", pa.float64()),
    ("unchanged_high", pa.float64()), ("n_deleted", pa.int64()),
    ("n_serious", pa.int64()), ("n_serious_proposed", pa.int64()), ("recall", pa.float64()),
    ("recall_low", pa.float64()), ("recall_high", pa.float64()),
])


def _proportion(successes: int, n: int) -> tuple[float, float, float]:
    low, high = stats.wilson_interval(successes, n)
    return (successes / n if n else float("nan")), low, high


def _precision(fates: pl.DataFrame) -> dict[str, object]:
    """Kept (kept or changed) and kept-unchanged shares of the judged fates."""
    judged = fates.filter(pl.col("fate") != "not annotated")
    kept = judged.filter(pl.col("fate").is_in(["kept", "changed"])).height
    unchanged = judged.filter(pl.col("fate") == "kept").height
    share_kept, kept_low, kept_high = _proportion(kept, judged.height)
    share_unchanged, unchanged_low, unchanged_high = _proportion(unchanged, judged.height)
    return {"n_unjudged": fates.height - judged.height, "n_judgments": judged.height,
            "n_kept": kept, "share_kept": share_kept, "kept_low": kept_low,
            "kept_high": kept_high, "n_unchanged": unchanged, "share_unchanged": share_unchanged,
            "unchanged_low": unchanged_low, "unchanged_high": unchanged_high,
            "n_deleted": judged.filter(pl.col("fate") == "deleted").height}


def _recall(serious: int, proposed: int) -> dict[str, object]:
    recall, low, high = _proportion(proposed, serious)
    return {"n_serious": serious, "n_serious_proposed": proposed, "recall": recall,
            "recall_low": low, "recall_high": high}


def checks_vs_people(prefill: Table, spans: Table, scores: Table) -> pa.Table:
    """Per check (and "any check") and language (and "all"), the checks measured against
    the initial annotators, each share with a Wilson 95% interval:

    - share_kept (precision as people judge it): of the judgments (pre-filled span × initial
      annotator of its item) those kept or changed: a changed span still marks a real error
      the person only re-bounded or re-graded. share_unchanged: kept exactly.
    - recall: of the people's major and critical spans (each annotator's counted: two people
      marking one error count twice) those overlapping a pre-filled span of the check.
      Every item of the language counts, findings or none: pass one pre-filled batch.

    Judgments of one span by two people are not independent; the Wilson interval treats
    them as if they were (n_prefilled says how many spans are behind them)."""
    data = prepare(spans, scores)
    filled = read_prefill(prefill, data)
    fates = pl.DataFrame(_fates(filled, data))
    people = (data.spans.filter(pl.col("role") == "initial",
                                pl.col("severity").is_in(SERIOUS))
              .with_row_index("span_index"))
    proposed = _proposed(people, filled).join(
        people.select("span_index", "language"), on="span_index")
    checks = sorted(set(filled["origin"].to_list()))
    languages = sorted(set(data.scores["language"].to_list()) | set(filled["language"].to_list()))
    rows = []
    for check in [*checks, ANY_CHECK]:
        in_check = pl.lit(True) if check == ANY_CHECK else pl.col("origin") == check
        for language in [*languages, ALL]:
            in_language = pl.lit(True) if language == ALL else pl.col("language") == language
            rows.append({"check": check, "language": language,
                         "n_prefilled": filled.filter(in_check, in_language).height,
                         **_precision(fates.filter(in_check, in_language)),
                         **_recall(people.filter(in_language).height,
                                   proposed.filter(in_check, in_language)["span_index"]
                                   .n_unique())})
    return pa.Table.from_pylist(rows, schema=CHECKS_SCHEMA)


# ---------------------------------------------------------------------------- the floor

FLOOR_SCHEMA = pa.schema([
    *_SLICE_FIELDS, ("criterion", pa.string()), ("n_items", pa.int64()),
    ("n_characters", pa.int64()), ("kappa", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("raw_agreement", pa.float64()), ("kappa_floor", pa.float64()),
    ("state", pa.string()), ("flagged", pa.bool_()), ("note", pa.string()),
])


def _slice_name(row: Mapping[str, object]) -> str:
    if row["by"] == "language":
        return f"language {row['group']}"
    if row["by"] == "pair":
        return f"pair {row['group']}"
    return "all items"


def floor_flags(kappa: pa.Table, kappa_floor: float = ag.KAPPA_FLOOR,
                criterion: str = "character κ") -> pa.Table:
    """One row per κ of a char_kappa table: state "below floor" (flagged) where the estimate
    is below the floor (agreement.agreement_by's rule: the estimate, not the interval),
    "undefined" where κ is NaN (not flagged: no κ is not a low κ, and the note says why),
    else "ok". The note names the criterion, the slice and its raw agreement."""
    rows = kappa.to_pylist()
    raw = {(r["by"], r["group"]): r["estimate"] for r in rows
           if r["statistic"] == "raw_agreement"}
    out = []
    for row in (r for r in rows if r["statistic"] == "cohen_kappa"):
        agreement = raw[(row["by"], row["group"])]
        facts = (f"raw agreement {agreement:.3f}, {row['n_items']} items, "
                 f"{row['n_characters']} characters")
        if np.isnan(row["estimate"]):
            state = "undefined"
            note = f"{criterion} is undefined for {_slice_name(row)} ({facts}): {row['note']}"
        elif row["estimate"] < kappa_floor:
            state = "below floor"
            note = (f"{criterion} {row['estimate']:.3f} is below the floor {kappa_floor:g} "
                    f"for {_slice_name(row)} ({facts})")
        else:
            state, note = "ok", ""
        out.append({**{name: row[name] for name in FLOOR_SCHEMA.names if name in row},
                    "criterion": criterion, "kappa": row["estimate"],
                    "raw_agreement": agreement, "kappa_floor": kappa_floor, "state": state,
                    "flagged": state == "below floor", "note": note})
    return pa.Table.from_pylist(out, schema=FLOOR_SCHEMA)
