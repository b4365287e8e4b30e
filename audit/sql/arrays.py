"""Arrow arrays built from their buffers.

pyarrow imports pandas (0.15–0.2 s) the first time it converts Python or numpy values
(`pa.array`, `pa.table`, `Table.from_pylist`, even `Schema.empty_table`). The scan needs no
pandas, so the arrays it builds from computed values (signal caches, UDF results) are
assembled here from raw buffers instead.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa

_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
          pa.int64(): np.int64, pa.float64(): np.float64}


def _validity(valid: np.ndarray[Any, Any] | None) -> pa.Buffer | None:
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def strings(values: list[str | None]) -> pa.StringArray:
    """A string array of Python strings (None: null)."""
    data = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, data)))
    valid = np.array([v is not None for v in values], bool) if None in values else None
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets),
                                       pa.py_buffer(b"".join(data)), _validity(valid))


def numbers(values: Sequence[Any] | np.ndarray[Any, Any], arrow_type: pa.DataType,
            valid: np.ndarray[Any, Any] | None = None) -> pa.Array:
    """An integer, float or boolean array of a numpy array or a list of numbers;
    `valid` (booleans) marks the non-null entries."""
    n = len(values)
    if arrow_type == pa.bool_():
        data = np.packbits(np.asarray(values, bool), bitorder="little")
    else:
        data = np.ascontiguousarray(np.asarray(values, _NUMPY[arrow_type]))
    return pa.Array.from_buffers(arrow_type, n, [_validity(valid), pa.py_buffer(data)])


def column(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """An array of a Python list of strings or numbers, None as null."""
    if arrow_type == pa.string():
        return strings(values)
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    return numbers([0 if v is None else v for v in values], arrow_type, valid)


def table(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table of the schema's columns: each an Arrow array already, or a Python list."""
    return pa.Table.from_arrays(
        [c if isinstance(c := columns[f.name], pa.Array) else column(c, f.type)
         for f in schema], schema=schema)


def _nulls(values: list[Any]) -> pa.Array | None:
    """The null mask of a nested column (True: null), None when nothing is null."""
    if None not in values:
        return None
    return numbers([v is None for v in values], pa.bool_())


def nested(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """An array of Python values (None: null) of strings, numbers and booleans, in lists
    and structs at any depth (struct values as dicts)."""
    if pa.types.is_list(arrow_type):
        offsets = array("i", [0])
        offsets.extend(accumulate(0 if v is None else len(v) for v in values))
        child = nested([x for v in values if v is not None for x in v], arrow_type.value_type)
        return pa.ListArray.from_arrays(numbers(offsets, pa.int32()), child, type=arrow_type,
                                        mask=_nulls(values))
    if pa.types.is_struct(arrow_type):
        children = [nested([None if v is None else v.get(f.name) for v in values], f.type)
                    for f in arrow_type]
        return pa.StructArray.from_arrays(children, fields=list(arrow_type),
                                          mask=_nulls(values))
    return column(values, arrow_type)


def values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """A column's values as Python values (None: null). Strings, binaries and booleans are
    read from their buffers: `to_pylist` makes an Arrow scalar per value first, 1.5-2x
    slower for strings and ~12x for booleans (the signal children read millions)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [v for chunk in chunks for v in _chunk_values(chunk)]


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray[Any, Any]:
    return np.unpackbits(np.frombuffer(buffer, np.uint8), count=offset + n,
                         bitorder="little")[offset:].astype(bool)


def _chunk_values(chunk: pa.Array) -> list[Any]:
    kind, n = chunk.type, len(chunk)
    if kind == pa.bool_():
        out: list[Any] = _bits(chunk.buffers()[1], chunk.offset, n).tolist()
    elif kind in (pa.string(), pa.binary()):
        _, offsets, data = chunk.buffers()
        ends = np.frombuffer(offsets, np.int32, n + 1, chunk.offset * 4).tolist()
        raw = data.to_pybytes() if data is not None else b""
        out = ([raw[a:b].decode("utf-8") for a, b in zip(ends, ends[1:])]
               if kind == pa.string() else [raw[a:b] for a, b in zip(ends, ends[1:])])
    else:
        return list(chunk.to_pylist())
    if chunk.null_count:
        out = [v if ok else None
               for v, ok in zip(out, _bits(chunk.buffers()[0], chunk.offset, n).tolist())]
    return out
