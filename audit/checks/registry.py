"""The one list of checks. Pages, exports, the policy and the manifest read it."""

from __future__ import annotations

import hashlib
import inspect
import json

from ..io.layouts.base import Layout
from ..io.layouts.registry import LAYOUTS
from ..sql import macros
from .aligned import ALIGNED_CHECKS
from .hiding import HIDING_CHECKS
from .language import LANGUAGE_CHECKS
from .layers import SignalLayer
from .model import SEVERITIES, Check
from .preservation import PRESERVATION_CHECKS
from .release import CONSISTENCY_CHECKS, RELEASE_CHECKS
from .structural import BEYOND_CHECKS, V11_CHECKS
from .texts import TEXT_CHECKS
from .translation import HEURISTIC_CHECKS
from .v2 import V2_CHECKS

REGISTRY: tuple[Check, ...] = (V11_CHECKS + TEXT_CHECKS + BEYOND_CHECKS + HIDING_CHECKS
                               + LANGUAGE_CHECKS
                               + HEURISTIC_CHECKS + PRESERVATION_CHECKS + V2_CHECKS
                               + RELEASE_CHECKS + ALIGNED_CHECKS)
BY_NAME: dict[str, Check] = {check.name: check for check in REGISTRY}
assert len(BY_NAME) == len(REGISTRY), "check names must be unique"
# Every slow signal layer a check names, in the registry's order.
LAYERS: tuple[SignalLayer, ...] = tuple(dict.fromkeys(
    layer for check in REGISTRY for layer in check.layers))

__all__ = ["BY_NAME", "CONSISTENCY_CHECKS", "FINGERPRINT", "LAYERS", "REGISTRY", "SEVERITIES",
           "declaration", "fingerprint", "for_layout", "layouts_of"]


def for_layout(layout: Layout) -> tuple[Check, ...]:
    """The checks a layout runs: those whose required capabilities it has."""
    return tuple(check for check in REGISTRY if check.applies(layout.capabilities))


def layouts_of(check: Check) -> list[str]:
    """The names of the layouts that run a check."""
    return [layout.name for layout in LAYOUTS if check.applies(layout.capabilities)]


def declaration(check: Check) -> dict[str, object]:
    """Everything that decides what a check finds and how it counts, as plain data."""
    return {"name": check.name, "units": list(check.units), "severity": check.severity,
            "origin": check.origin, "requires": sorted(check.requires),
            "unless": sorted(check.unless), "sql": check.sql,
            "context_sql": check.context_sql, "unit_sql": check.unit_sql, "fix": check.fix,
            "needs": sorted(check.needs), "witness": check.witness,
            "reference": check.reference, "categories": list(check.categories),
            "category_severity": [list(pair) for pair in check.category_severity],
            "query": inspect.getsource(check.query) if check.query else None,
            "version": check.version, "thresholds": [list(t) for t in check.thresholds],
            "layers": [f"{layer.NAME}:{layer.VERSION}" for layer in check.layers]}


def fingerprint(checks: tuple[Check, ...]) -> str:
    """A digest of the declarations and the SQL macros they call, never hand-edited:
    adding or changing a check changes every manifest fingerprint."""
    return hashlib.sha256(json.dumps(
        {"checks": [declaration(c) for c in checks], "macros": macros.MACROS},
        sort_keys=True).encode("utf-8")).hexdigest()


FINGERPRINT = fingerprint(REGISTRY)
