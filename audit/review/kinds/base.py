"""What a review kind is (ReviewKind); each kind module of this package declares one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from ..configs import LabelConfig
from ..inputs import Spec, relative
from ..sampling import PAPER_SEED

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from ..batches import ReviewBatch
    from ..charts import Chart
    from ..workspace import Workspace


@dataclass(frozen=True)
class Adjudication:
    """What a kind's adjudication push sends: the queue (state open | resolved), and per
    open item its task data and pre-filled regions."""
    queue: pl.DataFrame
    payloads: Mapping[str, dict]
    predictions: Mapping[str, list[dict]]


@dataclass(frozen=True)
class ReviewKind:
    name: str
    form: LabelConfig                            # the labeling config annotators see
    annotation: str
    label: str                                   # how the Review page offers it
    build: Callable[[Spec], ReviewBatch]         # the batch a spec of this kind describes
    adjudication_form: LabelConfig | None = None  # the adjudicator's twin, if adjudicated
    needs: tuple[tuple[str, str], ...] = ()      # spec keys it requires: (key, expected)
    accepts: frozenset[str] = frozenset()        # spec keys only some kinds take
    per_item: int = 2                            # annotators per item (post-edit: 1 editor)
    pairs: Callable[..., ReviewBatch] | None = None   # MAPLE: (pairs file, seed, batch id)
    reports: Callable[..., dict[str, pa.Table]] | None = None
    charts: Mapping[str, Chart] = field(default_factory=dict)   # report name -> chart
    corrections: Callable[[str, Path | None, pa.Table], object] | None = None
    shown_order: bool = False    # answers are letters of the blind A/B order (realism)
    demo_pairs: Path | None = None               # MAPLE: the demo's pairs file
    # A kind whose annotations are not one categorical label per control (error spans)
    # supplies these; the others use the agreement machinery (agreement.py).
    options: Callable[[Mapping, Path], dict] | None = None   # its spec keys -> settings
    variants: tuple[LabelConfig, ...] = ()       # other configs a batch may be pushed with
    forms_for: Callable[[Mapping], tuple[LabelConfig, LabelConfig | None]] | None = None
    # (config, result, task data) -> ({criterion: value}, problem)
    parse: Callable[[LabelConfig, list[dict], Mapping], tuple[dict[str, str], str | None]] \
        | None = None
    final: Callable[[pa.Table, Workspace], pa.Table] | None = None   # of a pulled table
    adjudicate: Callable[..., Adjudication] | None = None
    tables: Callable[..., dict[str, pa.Table]] | None = None   # every report of a batch

    def forms(self, settings: Mapping | None) -> tuple[LabelConfig, LabelConfig | None]:
        """The configs a batch with these settings (its ledger's) is pushed with: the
        review's and the adjudicator's."""
        if self.forms_for is not None:
            return self.forms_for(settings or {})
        return self.form, self.adjudication_form

    @property
    def configs(self) -> tuple[LabelConfig, ...]:
        """Every config this kind may push."""
        return tuple(f for f in (self.form, self.adjudication_form, *self.variants) if f)

    @property
    def config(self) -> str:
        return self.form.name

    @property
    def adjudication(self) -> str | None:
        """The adjudication twin's config; None when the kind is not adjudicated."""
        return self.adjudication_form.name if self.adjudication_form else None

    @property
    def config_path(self) -> Path:
        return self.form.path

    @property
    def agreement(self) -> bool:
        """Two annotators an item: agreement, final labels and adjudication apply."""
        return self.per_item > 1


def from_pairs(make: Callable[[Path, int, str | None], ReviewBatch]
               ) -> Callable[[Spec], ReviewBatch]:
    """A MAPLE kind's build: the spec's pairs file made into a batch with the spec's seed
    (the paper's when none is given)."""
    def build(spec: Spec) -> ReviewBatch:
        seed = spec.seed if spec.seed is not None else PAPER_SEED
        return make(relative(spec, spec.pairs), seed, spec.batch)
    return build
