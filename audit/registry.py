"""The one list of checks. Pages, exports, the policy and the manifest read it."""

from __future__ import annotations

from .checks import (BEYOND_CHECKS, CONSISTENCY_CHECKS, RELEASE_CHECKS, SEVERITIES,
                     V11_CHECKS, V2_CHECKS, Check)
from .heuristics import HEURISTIC_CHECKS
from .language_checks import LANGUAGE_CHECKS

REGISTRY_VERSION = "2026.12.1"
REGISTRY: tuple[Check, ...] = (V11_CHECKS + BEYOND_CHECKS + LANGUAGE_CHECKS + HEURISTIC_CHECKS
                               + V2_CHECKS + RELEASE_CHECKS)
BY_NAME: dict[str, Check] = {check.name: check for check in REGISTRY}
assert len(BY_NAME) == len(REGISTRY), "check names must be unique"

__all__ = ["BY_NAME", "CONSISTENCY_CHECKS", "REGISTRY", "REGISTRY_VERSION", "SEVERITIES",
           "for_layout"]


def for_layout(layout: str) -> tuple[Check, ...]:
    return tuple(check for check in REGISTRY if layout in check.layouts)
