"""The one place that turns a Python value or a name into SQL text.

Everything else passes values to DuckDB as parameters (`?`) or through a registered table,
and builds any remaining literal or identifier here: a file name, a check name, a category
from a policy file, a language code from a release. Nothing else formats a quote.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


class UnsafeValue(ValueError):
    """A value that has no safe SQL literal (a NUL character, a non-finite number)."""


def literal(value: object) -> str:
    """A SQL literal for None, a bool, an int, a finite float, a str, or a list/tuple of
    those (a DuckDB list)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsafeValue(f"no SQL literal for {value!r}")
        return repr(value)
    if isinstance(value, str):
        if "\x00" in value:
            raise UnsafeValue("a string holding a NUL character")
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise UnsafeValue(f"no SQL literal for a {type(value).__name__}")


def strings(values: Iterable[str]) -> str:
    """A typed VARCHAR[] literal (an empty list stays typed)."""
    return literal(list(values)) + "::VARCHAR[]"


def identifier(name: str) -> str:
    """A quoted identifier (a column named after a check, say)."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise UnsafeValue(f"no SQL identifier for {name!r}")
    return '"' + name.replace('"', '""') + '"'


def case(expression: str, mapping: Mapping[Any, object], default: object = None) -> str:
    """`CASE expression WHEN k THEN v … ELSE default END` with every key and value a
    literal (the language → script lookups, say)."""
    whens = " ".join(f"WHEN {literal(k)} THEN {literal(v)}" for k, v in mapping.items())
    return f"(CASE {expression} {whens} ELSE {literal(default)} END)"
