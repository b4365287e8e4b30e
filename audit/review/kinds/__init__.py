"""The kinds of review batch: one module each, and the registry that names them.

A kind's module (translation, paired, realism, relevance, post_edit) owns everything that
kind is: its labeling configs (LabelConfig: controls and task fields; the XML files in
label_configs/), its task payload, its batch factory (from a spec, and for MAPLE from a
pairs file), its criteria, its reports and charts, and what a pull makes of its
submissions besides the annotation table (post-edit: correction records). It ends in one
ReviewKind (base.py), `KIND`. The loop (push, pull, status, reports, the pages) reads kinds
only through this registry; the shared machinery (configs, batches, workspace, agreement,
labelstudio) never imports a kind.

Three vocabularies meet in a ReviewKind. Its `name` is what a spec (`kind = "…"`), the CLI
and the pages call it; its `config` names its Label Studio labeling config, with its
adjudication twin when it is adjudicated; its `annotation` is the `kind` column of its items
and pulled annotations (agreement.CRITERIA). A paired batch is a translation batch of OLD
and NEW versions: same config, same annotation.

A new kind: a module here ending in `KIND = ReviewKind(...)`, its XML file(s) in
label_configs/, its criteria in agreement.CRITERIA when two annotators read an item, and
its module in REGISTERED below.
"""

from __future__ import annotations

from ...errors import InputError
from ..charts import Chart
from ..configs import LabelConfig
from . import paired, post_edit, realism, relevance, spans, translation
from .base import ReviewKind

REGISTERED = (translation, paired, realism, relevance, post_edit, spans)
KINDS: dict[str, ReviewKind] = {module.KIND.name: module.KIND for module in REGISTERED}
DEFAULT = "translation"     # a spec that names no kind
# The Review page builds translation, error-span and MAPLE batches; paired and post-edit
# come from specs.
ON_PAGE = tuple(KINDS[name] for name in ("translation", "spans", "realism", "relevance"))
# Every labeling config by name (a kind's and its adjudication twin).
CONFIGS: dict[str, LabelConfig] = {form.name: form for kind in KINDS.values()
                                   for form in kind.configs}
# Every kind's chart by report name.
CHARTS: dict[str, Chart] = {name: chart for kind in KINDS.values()
                            for name, chart in kind.charts.items()}


def get(name: object) -> ReviewKind:
    """The kind of this name; an unknown one is an InputError naming the kinds there are."""
    if not isinstance(name, str) or name not in KINDS:
        raise InputError("kind", repr(name), expected=f"one of {', '.join(KINDS)}")
    return KINDS[name]


def config(name: str) -> LabelConfig:
    """The labeling config of this name (a ValueError names the configs there are)."""
    if name not in CONFIGS:
        raise ValueError(f"unknown config kind {name!r} (expected one of "
                         f"{', '.join(CONFIGS)})")
    return CONFIGS[name]


def of_config(config: object) -> ReviewKind:
    """The kind a batch's config (or its adjudication twin) belongs to (translation, not
    paired, for translation_review: a paired batch's ledger records the same config)."""
    for kind in KINDS.values():
        if config in (form.name for form in kind.configs):
            return kind
    raise InputError("config", repr(config), expected="one of " + ", ".join(CONFIGS))


def of_annotations(annotations: set[str] | list[str]) -> list[ReviewKind]:
    """One kind per annotation kind that occurs (in registry order): its reports."""
    seen = {kind.annotation: kind for kind in reversed(list(KINDS.values()))}
    return [seen[a] for a in dict.fromkeys(k.annotation for k in KINDS.values())
            if a in annotations]
