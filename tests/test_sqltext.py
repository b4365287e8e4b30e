"""The SQL building blocks reproduce Python's string semantics exactly."""

from __future__ import annotations

import sys

import duckdb
import pyarrow as pa

from audit.sql import macros


def test_the_whitespace_class_is_exactly_str_isspace():
    assert set(macros.PY_WHITESPACE) == {cp for cp in range(sys.maxunicode + 1)
                                          if chr(cp).isspace()}


def test_create_table_takes_python_columns_without_arrow():
    con = duckdb.connect()
    schema = pa.schema([("rid", pa.int64()), ("name", pa.string()),
                        ("parts", pa.list_(pa.struct([("k", pa.int8()), ("ok", pa.bool_())])))])
    macros.create_table(con, "t", schema, {"rid": [1, 2], "name": ["é", None],
                                            "parts": [[{"k": 3, "ok": True}], []]})
    assert con.sql("SELECT * FROM t ORDER BY rid").fetchall() == [
        (1, "é", [{"k": 3, "ok": True}]), (2, None, [])]
    assert [t for _, t, *_ in con.sql("DESCRIBE t").fetchall()] == [
        "BIGINT", "VARCHAR", "STRUCT(k TINYINT, ok BOOLEAN)[]"]
    macros.create_table(con, "empty", schema, temp=True)
    assert con.sql("SELECT count(*) FROM empty").fetchall() == [(0,)]
    assert [t for _, t, *_ in con.sql("DESCRIBE empty").fetchall()] == [
        "BIGINT", "VARCHAR", "STRUCT(k TINYINT, ok BOOLEAN)[]"]
