"""The one error type that means "the input is wrong", so the CLI can exit 2 and the app can
show a message instead of a traceback."""

from __future__ import annotations

from enum import IntEnum


class InputError(Exception):
    """Bad input: says which file, where in it, and what was expected."""

    def __init__(self, path: object, problem: str, *, where: str | None = None,
                 expected: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.where = where
        self.expected = expected
        parts = [f"{self.path}"]
        if where:
            parts.append(where)
        message = ": ".join(parts) + f": {problem}"
        if expected:
            message += f" (expected {expected})"
        super().__init__(message)


class ExitCode(IntEnum):
    """Every exit code of the CLI, and the acceptance gate's verdict as one."""

    OK = 0
    FAILED = 1          # a gate failed; `judge --strict` found an error
    BAD_INPUT = 2       # an InputError: one line on stderr, nothing written
    INSUFFICIENT = 3    # the gate lacks evidence
