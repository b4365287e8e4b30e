"""SQL building blocks that reproduce Python's string semantics inside DuckDB.

The reference toolkit decides "blank" with Python `str.strip()` and normalises titles with
NFKC + whitespace collapse + casefold; DuckDB's `trim()`/`lower()` differ (ASCII-only trim,
no casefold), so the exact rules are built here once and registered on each connection.
Also `create_table`: a DuckDB table of Python lists, with its columns typed from an Arrow
schema (`duck_type`), without building Arrow arrays.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable
from typing import Any

import duckdb
import pyarrow as pa
from duckdb.func import PythonUDFType

from . import arrays
from .safe import identifier

# Exactly the characters `str.isspace()` accepts (tests compare it with the whole code
# space): written out, since scanning 1.1M code points at import cost 0.2 s per process.
PY_WHITESPACE = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0,
                 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
# An RE2 character class of them.
WS = "".join(f"\\x{{{cp:x}}}" for cp in PY_WHITESPACE)
# Characters that must never appear in released text: C0/C1 controls (bar tab, LF, CR) and
# U+FFFD, the mark of a failed decode.
INVALID_CHARS = r"[\x{0}-\x{8}\x{b}\x{c}\x{e}-\x{1f}\x{7f}-\x{9f}\x{fffd}]"
PLACEHOLDERS = ("—", "–", "―", "-", "--", "---", "…", "...", "N/A", "n/a")
NAME_CONNECTORS = ("of", "the", "de", "la", "le", "van", "von", "du", "da", "del", "der",
                   "den", "y", "and", "bin", "al")
# A copied name may be a translated list of names: "and" in the release's languages too
# ("Lane und Vail"). Language ID keeps NAME_CONNECTORS (its cached verdicts rest on them).
COPY_CONNECTORS = (*NAME_CONNECTORS, "und", "et", "e", "en", "och", "og", "i", "ve", "và",
                   "dan", "și")

# A name's token: a capitalised word, a digit-led one ("2017", "2A", "1930s"), a symbol-led
# one ("&", "°C", "(ARTS)"), a connector, or an Arabic article bound to a name
# ("al-Biruni").
_TOKEN = (rf"(?:[\p{{Lu}}\p{{Lt}}][^{WS}]*|[^\p{{L}}\p{{N}}{WS}][^{WS}]*|\p{{Nd}}[^{WS}]*"
          rf"|(?:al|el|ad|ar|as|at|an)-[\p{{Lu}}][^{WS}]*|{'|'.join(COPY_CONNECTORS)})")
_NAME_LIKE = rf"[{WS}]*{_TOKEN}(?:[{WS}]+{_TOKEN}){{0,5}}[{WS}]*"


def normalize_title(title: str) -> str:
    """Reference title key: NFKC, whitespace collapsed, casefolded."""
    return " ".join(unicodedata.normalize("NFKC", title).split()).casefold()


def _normalize_titles(values: pa.Array) -> pa.Array:
    return arrays.strings([None if v is None else normalize_title(v)
                           for v in values.to_pylist()])


_DUCK_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER",
               pa.int16(): "SMALLINT", pa.int8(): "TINYINT", pa.float64(): "DOUBLE",
               pa.bool_(): "BOOLEAN"}


def duck_type(arrow_type: pa.DataType) -> str:
    """DuckDB's name for an Arrow type (the scalar, list and struct types used here)."""
    if arrow_type in _DUCK_TYPES:
        return _DUCK_TYPES[arrow_type]
    if pa.types.is_list(arrow_type):
        return f"{duck_type(arrow_type.value_type)}[]"
    if pa.types.is_struct(arrow_type):
        return "STRUCT(" + ", ".join(f"{identifier(f.name)} {duck_type(f.type)}"
                                     for f in arrow_type) + ")"
    raise TypeError(f"no DuckDB type for {arrow_type}")


def create_table(con: duckdb.DuckDBPyConnection, name: str, schema: pa.Schema,
                 columns: dict[str, list[Any]] | None = None, temp: bool = False) -> None:
    """`CREATE OR REPLACE [TEMP] TABLE name` with an Arrow schema's columns, filled from
    Python lists of equal length (none: no rows). The lists reach DuckDB as list parameters,
    unnested side by side: no Arrow array is built from Python values (see audit/sql/arrays.py)."""
    columns = columns or {f.name: [] for f in schema}
    select = ", ".join(f"unnest(${i}::{duck_type(f.type)}[]) AS {identifier(f.name)}"
                       for i, f in enumerate(schema, start=1))
    con.execute(f"CREATE OR REPLACE {'TEMP ' if temp else ''}TABLE {identifier(name)} AS "
                f"SELECT {select}", [columns[f.name] for f in schema])


def among(con: duckdb.DuckDBPyConnection, values: Iterable[Any],
          type_: pa.DataType = pa.int64()) -> str:
    """SQL `(SELECT k FROM …)` of the values, registered on `con` under a name of its own:
    for `x IN …`, a join, where a long list literal would be compared with every row."""
    name = f"among_{uuid.uuid4().hex}"
    con.register(name, pa.table({"k": pa.array(sorted(set(values)), type_)}))
    return f"(SELECT k FROM {name})"


_PLACEHOLDERS = "|".join(re.escape(p) for p in PLACEHOLDERS)
# The SQL the checks call: part of the registry fingerprint.
MACROS = f"""
        CREATE OR REPLACE MACRO is_blank(s) AS regexp_full_match(s, '[{WS}]*');
        -- how an answer is looked for in its text: lower case, white space runs as one
        CREATE OR REPLACE MACRO squeezed(s) AS regexp_replace(lower(trim(s)), '\\s+', ' ', 'g');
        CREATE OR REPLACE MACRO py_strip(s) AS regexp_replace(s, '^[{WS}]+|[{WS}]+$', '', 'g');
        CREATE OR REPLACE MACRO has_invalid_chars(s) AS regexp_matches(s, '{INVALID_CHARS}');
        CREATE OR REPLACE MACRO is_placeholder(s) AS
            regexp_full_match(s, '[{WS}]*(?:{_PLACEHOLDERS})[{WS}]*');
        -- NFKC is the identity on ASCII and casefold is lower(): only other titles need
        -- the Python function.
        CREATE OR REPLACE MACRO title_key(s) AS CASE
            WHEN regexp_full_match(s, '[\x00-\x7f]*')
            THEN lower(regexp_replace(py_strip(s), '[{WS}]+', ' ', 'g'))
            ELSE norm_title(s) END;
        -- a row's status is its worst finding's: blocking quarantines, review holds
        CREATE OR REPLACE MACRO severity_rank(s) AS
            CASE s WHEN 'blocking' THEN 2 WHEN 'review' THEN 1 ELSE 0 END;
        CREATE OR REPLACE MACRO rank_status(r) AS
            CASE r WHEN 2 THEN 'quarantined' WHEN 1 THEN 'review_required' ELSE 'accepted' END;
        CREATE OR REPLACE MACRO copy_category(s) AS CASE
            WHEN NOT regexp_matches(s, '[\\p{{L}}\\p{{N}}]') THEN 'punctuation'
            WHEN NOT regexp_matches(s, '\\p{{L}}') THEN 'number_or_date'
            WHEN length(s) <= 60 AND regexp_full_match(s, '{_NAME_LIKE}') THEN 'name_like'
            ELSE 'sentence' END;
    """


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Install the macros and functions the checks use on one connection."""
    con.create_function("norm_title", _normalize_titles, ["VARCHAR"], "VARCHAR",
                        type=PythonUDFType.ARROW, side_effects=False)
    con.execute(MACROS)
