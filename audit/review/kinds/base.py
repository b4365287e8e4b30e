"""What a review kind is (ReviewKind); each kind module of this package declares one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from ..configs import LabelConfig
from ..inputs import Spec, relative
from ..sampling import PAPER_SEED

if TYPE_CHECKING:
    import pyarrow as pa

    from ..batches import ReviewBatch
    from ..charts import Chart


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
