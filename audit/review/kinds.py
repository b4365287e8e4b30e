"""The kinds of review batch, one ReviewKind each: the one place that says what a kind is.

Three vocabularies meet here. A kind's `name` is what a spec (`kind = "…"`), the CLI and the
pages call it (translation | paired | realism | relevance | post-edit); its `config` is its
Label Studio labeling config (label_configs/<config>.xml, validated by configs.py, with
its adjudication twin configs.ADJUDICATION_CONFIGS when it is adjudicated); its `annotation`
is the `kind` column of its items and pulled annotations (agreement.CRITERIA, reports.py).
A paired batch is a translation batch of OLD and NEW versions: same config, same
annotation. Each kind also carries how a spec becomes its batch (`build`), what a spec of
it must or may hold, how many annotators read an item, its reports, and what a pull makes
of its submissions besides the annotation table (post-edit: correction records).

A new kind: its config and payload in configs.py (its criteria in agreement.CRITERIA when two
annotators read an item), a batch factory, and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import InputError
from . import configs

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from .batches import ReviewBatch
    from .spec import Spec


@dataclass(frozen=True)
class ReviewKind:
    name: str
    config: str
    annotation: str
    label: str                                   # how the Review page offers it
    build: Callable[[Spec], ReviewBatch]         # the batch a spec of this kind describes
    needs: tuple[tuple[str, str], ...] = ()      # spec keys it requires: (key, expected)
    accepts: frozenset[str] = frozenset()        # spec keys only some kinds take
    per_item: int = 2                            # annotators per item (post-edit: 1 editor)
    pairs: Callable[..., ReviewBatch] | None = None   # MAPLE: (pairs file, seed, batch id)
    reports: Callable[..., dict[str, pa.Table]] | None = None
    corrections: Callable[[str, Path, pa.Table], object] | None = None
    shown_order: bool = False    # answers are letters of the blind A/B order (realism)

    @property
    def adjudication(self) -> str | None:
        """The adjudication twin's config; None when the kind is not adjudicated."""
        return configs.ADJUDICATION_CONFIGS.get(self.config)

    @property
    def config_path(self) -> Path:
        return configs.config_path(self.config)

    @property
    def agreement(self) -> bool:
        """Two annotators an item: agreement, final labels and adjudication apply."""
        return self.per_item > 1

    @property
    def demo_pairs(self) -> Path | None:
        from . import maple
        return {"realism": maple.DEMO_QUERY_PAIRS,
                "relevance": maple.DEMO_RELEVANCE_PAIRS}.get(self.annotation)


# ------------------------------------------------------------------------- batch factories

def _release(spec: Spec):
    from .spec import scanned
    return scanned(spec, spec.release, spec.sources)


def _translation(spec: Spec) -> ReviewBatch:
    from . import batches, sampling
    from .spec import design
    result = _release(spec)
    units = sampling.build_units(result)
    try:
        sample = sampling.sample_design(units, design(spec), where={
            "language": list(sampling.NON_ENGLISH)})
    except ValueError as error:
        raise InputError(spec.path, str(error), where="design") from None
    return batches.translation_batch(sample, result.release, spec.batch)


def _paired(spec: Spec) -> ReviewBatch:
    from . import paired, sampling
    from .spec import design, scanned
    result = _release(spec)
    new = scanned(spec, spec.new_release, spec.new_sources)
    try:
        return paired.paired_batch(result, new, design(spec), spec.batch, where={
            "language": list(sampling.NON_ENGLISH)}, seed=spec.seed)
    except ValueError as error:
        raise InputError(spec.path, str(error), where="design") from None


def _realism_pairs(path: Path, seed: int, batch_id: str | None = None) -> ReviewBatch:
    from . import batches, maple
    return batches.realism_batch(maple.assign_order(maple.read_query_pairs(path), seed),
                                 batch_id)


def _relevance_pairs(path: Path, seed: int, batch_id: str | None = None) -> ReviewBatch:
    from . import batches, maple
    return batches.relevance_batch(maple.read_relevance_pairs(path), batch_id)


def _from_pairs(spec: Spec) -> ReviewBatch:
    from . import sampling
    from .spec import relative
    seed = spec.seed if spec.seed is not None else sampling.PAPER_SEED
    return get(spec.kind).pairs(relative(spec, spec.pairs), seed, spec.batch)


def _post_edit(spec: Spec) -> ReviewBatch:
    from .spec import post_edit_batch
    return post_edit_batch(spec)


# ------------------------------------------------------------------------- reports, pull

def _translation_reports(final: pl.DataFrame, complete: pl.DataFrame, n_boot: int,
                         seed: int) -> dict[str, pa.Table]:
    from . import reports
    return {"rating_means": reports._rating_means(final, n_boot, seed),
            "preservation_rates": reports._preservation_rates(final, n_boot, seed),
            "consequences": reports._consequence_distribution(final)}


def _realism_reports(final, complete, n_boot: int, seed: int) -> dict[str, pa.Table]:
    from . import reports
    return {"realism": reports._realism_table(final, complete)}


def _relevance_reports(final, complete, n_boot: int, seed: int) -> dict[str, pa.Table]:
    from . import reports
    return {"relevance": reports._relevance_summary(final, complete)}


def _record_corrections(batch_id: str, workspace: Path, table: pa.Table) -> object:
    from . import postedit
    return postedit.record_corrections(batch_id, workspace, table)


# ------------------------------------------------------------------------- the registry

_PAIRS = "the {} pairs file (JSONL or Parquet)"
_OLD_NEW = "the OLD (release) and the NEW (new_release) release"
KINDS: dict[str, ReviewKind] = {kind.name: kind for kind in (
    ReviewKind("translation", "translation_review", "translation", "translation units",
               _translation, reports=_translation_reports),
    ReviewKind("paired", "translation_review", "translation", "paired OLD/NEW units",
               _paired, needs=(("release", _OLD_NEW), ("new_release", _OLD_NEW)),
               accepts=frozenset({"new_release"}),
               reports=_translation_reports),
    ReviewKind("realism", "maple_realism", "realism", "MAPLE realism pairs", _from_pairs,
               needs=(("pairs", _PAIRS.format("realism")),), pairs=_realism_pairs,
               reports=_realism_reports, shown_order=True),
    ReviewKind("relevance", "maple_relevance", "relevance", "MAPLE relevance pairs",
               _from_pairs, needs=(("pairs", _PAIRS.format("relevance")),),
               pairs=_relevance_pairs, reports=_relevance_reports),
    ReviewKind("post-edit", configs.POST_EDIT, "post-edit", "post-edit units", _post_edit,
               needs=(("release", "the release whose units are post-edited"),),
               accepts=frozenset({"plan"}), per_item=1, corrections=_record_corrections),
)}
DEFAULT = "translation"     # a spec that names no kind
# The Review page builds translation and MAPLE batches; paired and post-edit come from specs.
ON_PAGE = tuple(KINDS[name] for name in ("translation", "realism", "relevance"))


def get(name: object) -> ReviewKind:
    """The kind of this name; an unknown one is an InputError naming the kinds there are."""
    if not isinstance(name, str) or name not in KINDS:
        raise InputError("kind", repr(name), expected=f"one of {', '.join(KINDS)}")
    return KINDS[name]


def of_config(config: object) -> ReviewKind:
    """The kind a batch's config (or its adjudication twin) belongs to (translation, not
    paired, for translation_review: a paired batch's ledger records the same config)."""
    for kind in KINDS.values():
        if config in (kind.config, kind.adjudication):
            return kind
    raise InputError("config", repr(config), expected="one of " + ", ".join(
        dict.fromkeys(c for k in KINDS.values() for c in (k.config, k.adjudication) if c)))


def of_annotations(annotations: set[str] | list[str]) -> list[ReviewKind]:
    """One kind per annotation kind that occurs (in registry order): its reports."""
    seen = {kind.annotation: kind for kind in reversed(list(KINDS.values()))}
    return [seen[a] for a in dict.fromkeys(k.annotation for k in KINDS.values())
            if a in annotations]
