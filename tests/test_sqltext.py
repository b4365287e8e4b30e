"""The SQL building blocks reproduce Python's string semantics exactly."""

from __future__ import annotations

import sys

from audit import sqltext


def test_the_whitespace_class_is_exactly_str_isspace():
    assert set(sqltext.PY_WHITESPACE) == {cp for cp in range(sys.maxunicode + 1)
                                          if chr(cp).isspace()}
