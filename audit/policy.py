"""Status policy: the severity of each check. The default reproduces the release's own rule
(reference flags keep their reference severity) and makes every other check review-level; a
policy file can promote or demote any check."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .registry import BY_NAME, SEVERITIES
from .errors import InputError


@dataclass(frozen=True)
class Policy:
    name: str
    overrides: dict[str, str]
    sha256: str | None = None

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

    def as_record(self) -> dict:
        return {"name": self.name, "sha256": self.sha256, "overrides": dict(self.overrides)}


DEFAULT = Policy("default", {})


def load(path: str | Path | None) -> Policy:
    """Read a JSON or TOML file of the form {"severity": {"check_name": "blocking", …}}."""
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
        raise InputError(path, f"cannot parse the policy ({error})",
                         expected='{"severity": {"check": "blocking|review|info"}}') from None
    severities = parsed.get("severity") if isinstance(parsed, dict) else None
    if not isinstance(severities, dict):
        raise InputError(path, "no 'severity' table",
                         expected='{"severity": {"check": "blocking|review|info"}}')
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
    return Policy(str(path), dict(severities), hashlib.sha256(data).hexdigest())
