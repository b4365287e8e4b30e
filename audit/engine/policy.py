"""Status policy: the severity of each check and the thresholds of the tunable ones. The
default reproduces the release's own rule (reference flags keep their reference severity),
makes every other check review-level and keeps every threshold at its registry default; a
policy file can promote or demote any check and tune any threshold:

    [severity]
    near_source_copy = "info"
    [thresholds.near_source_copy]
    similarity = 0.92
    [acceptance]                  # the release-acceptance gate (`python -m audit accept`)
    max_preservation_regression = 0.01
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks.model import Check
from ..checks.registry import BY_NAME, SEVERITIES
from ..errors import InputError
from ..translation.layer import MIN_KEPT_SIMILARITY


@dataclass(frozen=True)
class Policy:
    name: str
    overrides: dict[str, str]
    sha256: str | None = None
    # {check: {threshold: value}}: only what the file sets.
    threshold_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The acceptance gate's thresholds the file sets (ACCEPTANCE holds the defaults).
    acceptance_overrides: dict[str, float] = field(default_factory=dict)

    def severity(self, check: str, category: str | None = None) -> str:
        """Most specific first: `check:category` in the policy, then `check`, then the
        registry's default for the category, then for the check."""
        if category is not None and f"{check}:{category}" in self.overrides:
            return self.overrides[f"{check}:{category}"]
        if check in self.overrides:
            return self.overrides[check]
        declared = BY_NAME[check]
        if category is None:
            return declared.severity
        return dict(declared.category_severity).get(category, declared.severity)

    def category_rules(self, check: str) -> dict[str, str]:
        """Severities that differ by category for one check."""
        categories = {c for c, _ in BY_NAME[check].category_severity} | {
            key.split(":", 1)[1] for key in self.overrides if key.startswith(check + ":")}
        return {c: self.severity(check, c) for c in sorted(categories)}

    def thresholds(self, check: str) -> dict[str, Any]:
        """The thresholds in force for one check: its registry defaults, then the file's."""
        return {**dict(BY_NAME[check].thresholds), **self.threshold_overrides.get(check, {})}

    def all_thresholds(self, checks: Iterable[Check]) -> dict[str, dict[str, Any]]:
        """{check: thresholds in force} for the checks that have any."""
        return {c.name: self.thresholds(c.name) for c in checks if c.thresholds}

    def acceptance(self) -> dict[str, float]:
        """The acceptance gate's thresholds in force: the defaults, then the file's."""
        return {**ACCEPTANCE, **self.acceptance_overrides}

    def as_record(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "overrides": dict(self.overrides),
                "thresholds": {k: dict(v) for k, v in self.threshold_overrides.items()}}

    def identity(self) -> tuple[str, str] | None:
        """What of the policy decides a scan's results (audit/engine/identity.py): its
        file's name and SHA-256, an in-memory policy's content; None for the default."""
        if self.sha256 is not None:
            return self.name, self.sha256
        if not (self.overrides or self.threshold_overrides):
            return None
        return self.name, hashlib.sha256(json.dumps(
            self.as_record(), sort_keys=True).encode("utf-8")).hexdigest()


DEFAULT = Policy("default", {})

# The acceptance gate (audit.acceptance; paper C.4): criterion 1 tolerates this many key
# differences, criterion 2 this many sources with a release-blocking defect in NEW,
# criterion 3 needs ΔH's interval above `delta_h_lower_bound` from at least
# `min_review_sources` sources, criterion 4 tolerates a preservation drop of at most
# `max_preservation_regression` (a share) and tests languages at `alpha` (Holm).
ACCEPTANCE: dict[str, float] = {
    "max_only_old": 0, "max_only_new": 0, "max_unit_set_differs": 0,
    "max_language_changed": 0, "max_blocking_sources": 0,
    "delta_h_lower_bound": 0.0, "min_review_sources": 20,
    "max_preservation_regression": 0.02, "alpha": 0.05,
}
_ACCEPTANCE_RANGES = {"delta_h_lower_bound": (-4.0, 4.0), "max_preservation_regression": (0.0, 1.0),
                      "alpha": (0.0, 1.0)}

_TABLES = ("severity", "thresholds", "acceptance")
_FORM = ('{"severity": {"check": "blocking|review|info"}, '
         '"thresholds": {"check": {"name": value}}, "acceptance": {"name": value}}')


def load(path: str | Path | None) -> Policy:
    """Read a JSON or TOML file of the form {"severity": {"check_name": "blocking", …},
    "thresholds": {"check_name": {"threshold": value, …}}} (either table may be absent)."""
    if path is None:
        return DEFAULT
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such policy file")
    data = path.read_bytes()
    try:
        parsed = (tomllib.loads(data.decode("utf-8")) if path.suffix == ".toml"
                  else json.loads(data))
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(path, f"cannot parse the policy ({error})", expected=_FORM) from None
    if not isinstance(parsed, dict) or not (set(_TABLES) & set(parsed)):
        raise InputError(path, "no 'severity', 'thresholds' or 'acceptance' table",
                         expected=_FORM)
    unknown = sorted(set(parsed) - set(_TABLES))
    if unknown:
        raise InputError(path, f"unknown table '{unknown[0]}'", expected=_FORM)
    severities = parsed.get("severity", {})
    if not isinstance(severities, dict):
        raise InputError(path, "'severity' is not a table", where="severity", expected=_FORM)
    for check, severity in severities.items():
        name, _, category = check.partition(":")
        if name not in BY_NAME:
            raise InputError(path, f"unknown check {check!r}", where="severity",
                             expected="a name from `python -m audit checks`, optionally "
                                      "with :category")
        if category and category not in BY_NAME[name].categories:
            raise InputError(path, f"unknown category {category!r} of {name}", where="severity",
                             expected=" / ".join(BY_NAME[name].categories) or
                             f"no category: {name} has none")
        if severity not in SEVERITIES:
            raise InputError(path, f"severity {severity!r} for {check!r}", where="severity",
                             expected=" / ".join(SEVERITIES))
    return Policy(str(path), dict(severities), hashlib.sha256(data).hexdigest(),
                  _thresholds(path, parsed.get("thresholds", {})),
                  _acceptance(path, parsed.get("acceptance", {})))


def _acceptance(path: Path, table: object) -> dict[str, float]:
    """Validate `acceptance.<name> = value`: a known name; counts are whole numbers ≥ 0,
    shares and alpha within their range."""
    if not isinstance(table, dict):
        raise InputError(path, "'acceptance' is not a table", where="acceptance",
                         expected=_FORM)
    for name, value in table.items():
        where = f"acceptance.{name}"
        if name not in ACCEPTANCE:
            raise InputError(path, f"unknown threshold '{name}'", where=where,
                             expected=" / ".join(ACCEPTANCE))
        whole = isinstance(ACCEPTANCE[name], int)
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            kind = "whole number" if whole else "number"
            raise InputError(path, f"{value!r} is not a {kind}", where=where,
                             expected=f"a {kind} like the default {ACCEPTANCE[name]!r}")
        low, high = _ACCEPTANCE_RANGES.get(name, (0, math.inf))
        if not math.isfinite(value) or not low <= value <= high:
            raise InputError(path, f"{value!r} is out of range", where=where,
                             expected=f"a number from {low} to {high}")
    return dict(table)


def _thresholds(path: Path, table: object) -> dict[str, dict[str, Any]]:
    """Validate `thresholds.<check>.<name> = value`: a check that has thresholds, a name it
    lists, and a value of the default's type (an int where a float is expected is fine),
    finite, not negative and, for a similarity, at most 1."""
    if not isinstance(table, dict):
        raise InputError(path, "'thresholds' is not a table", where="thresholds",
                         expected=_FORM)
    out: dict[str, dict[str, Any]] = {}
    for check, values in table.items():
        where = f"thresholds.{check}"
        if check not in BY_NAME:
            raise InputError(path, f"unknown check '{check}'", where=where,
                             expected="a name from `python -m audit checks`")
        defaults = dict(BY_NAME[check].thresholds)
        if not defaults:
            raise InputError(path, f"check '{check}' has no thresholds", where=where,
                             expected="a check whose `python -m audit checks` line lists "
                                      "thresholds")
        if not isinstance(values, dict):
            raise InputError(path, f"'{check}' is not a table", where=where,
                             expected="a table of threshold = value")
        for name, value in values.items():
            if name not in defaults:
                raise InputError(path, f"unknown threshold '{name}'", where=f"{where}.{name}",
                                 expected=" / ".join(defaults))
            _check_value(path, f"{where}.{name}", name, value, defaults[name])
        out[check] = dict(values)
    return out


def _check_value(path: Path, where: str, name: str, value: object, default: object) -> None:
    kind = type(default).__name__
    if isinstance(default, bool):
        fits = isinstance(value, bool)
    elif isinstance(default, int):
        fits = isinstance(value, int) and not isinstance(value, bool)
    else:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not fits:
        raise InputError(path, f"{value!r} is not a {kind}", where=where,
                         expected=f"a {kind} like the default {default!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):   # fits: a number
        return
    low, high = _RANGES.get(name, (0, math.inf)) if not name.endswith("_score") else (0, 100)
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(path, f"{value!r} is out of range", where=where,
                         expected=f"a number from {low} to {high}" if high < math.inf
                         else "a finite number ≥ 0")


# Thresholds with a range of their own; a fuzzy-match score (`*_score`) is 0–100.
_RANGES = {"similarity": (MIN_KEPT_SIMILARITY, 1.0)}
