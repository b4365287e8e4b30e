"""Status policy: the severity of each check and the thresholds of the tunable ones. The
default reproduces the release's own rule (reference flags keep their reference severity),
makes every other check review-level and keeps every threshold at its registry default; a
policy file can promote or demote any check and tune any threshold:

    [severity]
    near_source_copy = "info"
    [thresholds.near_source_copy]
    similarity = 0.92
"""

from __future__ import annotations

import hashlib
import json
import tomllib
import math
from dataclasses import dataclass, field
from pathlib import Path

from .heuristics import MIN_KEPT_SIMILARITY
from .registry import BY_NAME, SEVERITIES
from .errors import InputError


@dataclass(frozen=True)
class Policy:
    name: str
    overrides: dict[str, str]
    sha256: str | None = None
    # {check: {threshold: value}}: only what the file sets.
    threshold_overrides: dict[str, dict] = field(default_factory=dict)

    def severity(self, check: str, category: str | None = None) -> str:
        """Most specific first: `check:category` in the policy, then `check`, then the
        registry's default for the category, then for the check."""
        if category is not None and f"{check}:{category}" in self.overrides:
            return self.overrides[f"{check}:{category}"]
        if check in self.overrides:
            return self.overrides[check]
        return dict(BY_NAME[check].category_severity).get(category, BY_NAME[check].severity)

    def category_rules(self, check: str) -> dict[str, str]:
        """Severities that differ by category for one check."""
        categories = {c for c, _ in BY_NAME[check].category_severity} | {
            key.split(":", 1)[1] for key in self.overrides if key.startswith(check + ":")}
        return {c: self.severity(check, c) for c in sorted(categories)}

    def thresholds(self, check: str) -> dict:
        """The thresholds in force for one check: its registry defaults, then the file's."""
        return {**dict(BY_NAME[check].thresholds), **self.threshold_overrides.get(check, {})}

    def all_thresholds(self, checks) -> dict[str, dict]:
        """{check: thresholds in force} for the checks that have any."""
        return {c.name: self.thresholds(c.name) for c in checks if c.thresholds}

    def as_record(self) -> dict:
        return {"name": self.name, "sha256": self.sha256, "overrides": dict(self.overrides),
                "thresholds": {k: dict(v) for k, v in self.threshold_overrides.items()}}


DEFAULT = Policy("default", {})


_FORM = ('{"severity": {"check": "blocking|review|info"}, '
         '"thresholds": {"check": {"name": value}}}')


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
    if not isinstance(parsed, dict) or not ({"severity", "thresholds"} & set(parsed)):
        raise InputError(path, "no 'severity' or 'thresholds' table", expected=_FORM)
    unknown = sorted(set(parsed) - {"severity", "thresholds"})
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
                  _thresholds(path, parsed.get("thresholds", {})))


def _thresholds(path: Path, table: object) -> dict[str, dict]:
    """Validate `thresholds.<check>.<name> = value`: a check that has thresholds, a name it
    lists, and a value of the default's type (an int where a float is expected is fine),
    finite, not negative and, for a similarity, at most 1."""
    if not isinstance(table, dict):
        raise InputError(path, "'thresholds' is not a table", where="thresholds",
                         expected=_FORM)
    out: dict[str, dict] = {}
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
    if isinstance(value, bool):
        return
    low, high = (MIN_KEPT_SIMILARITY, 1.0) if name == "similarity" else (0, math.inf)
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(path, f"{value!r} is out of range", where=where,
                         expected=f"a number from {low} to {high}" if name == "similarity"
                         else "a finite number ≥ 0")
