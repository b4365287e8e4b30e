"""Arrow arrays built from buffers (audit/sql/arrays.py) hold exactly the values given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

from audit.sql import arrays


def test_strings_hold_the_values_nulls_and_multibyte_text():
    values = [None, "", "a", "é漢字", None, "x" * 300, "🙂", None, "z"]
    built = arrays.strings(values)
    built.validate(full=True)
    assert built.to_pylist() == values and built.null_count == 3
    assert arrays.strings(["a", "b"]).null_count == 0
    assert arrays.strings([]).to_pylist() == []


def test_numbers_and_columns_keep_types_and_nulls():
    ints = arrays.numbers(np.array([3, -1, 7]), pa.int16(), np.array([True, False, True]))
    assert ints.type == pa.int16() and ints.to_pylist() == [3, None, 7]
    assert arrays.numbers([True, False] * 5, pa.bool_()).to_pylist() == [True, False] * 5
    assert arrays.column([0.5, None, 2.25], pa.float64()).to_pylist() == [0.5, None, 2.25]
    assert arrays.column([1, 2**40, None], pa.int64()).to_pylist() == [1, 2**40, None]
    schema = pa.schema([("k", pa.string()), ("n", pa.int32())])
    table = arrays.table({"k": ["x", None], "n": arrays.numbers([4, 5], pa.int32())}, schema)
    table.validate(full=True)
    assert table.schema == schema and table.to_pylist() == [{"k": "x", "n": 4},
                                                            {"k": None, "n": 5}]


FACT = pa.struct([("title", pa.string()), ("sentence_index", pa.int64()),
                  ("valid", pa.bool_())])
NESTED = [([["s1", "s2"], None, []], [{"title": "T", "sentence_index": 0, "valid": True},
                                      {"title": None, "sentence_index": None, "valid": False}]),
          (None, []), ([[None, "x"]], None)]


def test_nested_lists_and_structs_hold_the_values_and_nulls():
    sentences = arrays.nested([s for s, _ in NESTED], pa.list_(pa.list_(pa.string())))
    facts = arrays.nested([f for _, f in NESTED], pa.list_(FACT))
    for built, values in ((sentences, [s for s, _ in NESTED]), (facts, [f for _, f in NESTED])):
        built.validate(full=True)
        assert built.to_pylist() == values and built.equals(pa.array(values, built.type))
    assert sentences.null_count == 1 and sentences.values.null_count == 1


def test_building_arrays_never_imports_pandas():
    probe = ("import sys, numpy as np, pyarrow as pa\nfrom audit.sql import arrays\n"
             "arrays.table({'a': ['x', None], 'b': [1, None]}, pa.schema([('a', pa.string()),"
             " ('b', pa.int64())]))\narrays.numbers(np.arange(3), pa.int8())\n"
             "arrays.nested([[{'a': 'x'}], None], pa.list_(pa.struct([('a', pa.string())])))\n"
             "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "False", done.stderr


def test_values_read_from_buffers_equal_to_pylist():
    """Strings (multi-byte, empty, null), binaries and booleans (null and not) read from
    their buffers give to_pylist's values, whole, sliced at odd offsets and as chunks;
    other types are to_pylist's."""
    import duckdb
    table = duckdb.sql("""
        SELECT CASE WHEN range % 7 = 0 THEN NULL
                    ELSE repeat('xé', (range % 9)::INT) || range::VARCHAR END AS s,
               CASE WHEN range % 5 = 0 THEN NULL ELSE range % 3 = 0 END AS b,
               range % 2 = 0 AS c,
               CASE WHEN range % 4 = 0 THEN NULL ELSE encode(range::VARCHAR) END AS y,
               range AS i, '' AS e
        FROM range(10000)""").to_arrow_table()
    assert arrays.values(table.column("s"))[:3] == [None, "xé1", "xéxé2"]
    assert arrays.values(table.column("b"))[:4] == [None, False, False, True]
    for name in table.column_names:
        column = table.column(name)
        assert arrays.values(column) == column.to_pylist(), name
        for start, length in ((0, 1), (3, 17), (9000, 1000), (5, 0)):
            part = column.slice(start, length)
            assert arrays.values(part) == part.to_pylist(), (name, start, length)
            assert arrays.values(part.combine_chunks()) == part.to_pylist()
