"""The layouts there are, and which one a release's files are (`detect`). A new layout is a
module in this folder and a line in LAYOUTS."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from ..mapping import is_mapping, load
from .base import Layout
from .jsonl import Jsonl
from .mapped import Mapped
from .parallel import Parallel
from .v2 import V2
from .v11 import V11

# In the order they are asked: the first that claims a file reads it.
LAYOUTS: tuple[Layout, ...] = (V2(), V11(), Jsonl(), Parallel())
BY_NAME = {layout.name: layout for layout in LAYOUTS}


def detect(paths: list[Path]) -> Layout:
    """The one layout every file is of (a mapping file's own, first); an InputError names the file that is of none, of
    another, or that does not hold what its layout needs."""
    if paths and is_mapping(paths[0]):
        return Mapped(load(paths[0]))
    found: dict[str, Path] = {}
    for path in paths:
        layout = _layout_of(path)
        found.setdefault(layout.name, path)
        if len(found) > 1:
            raise InputError(path, "files of different layouts in one release: "
                             + " and ".join(f"{name} ({where.name})"
                                            for name, where in found.items()))
    return BY_NAME[next(iter(found))]


def _layout_of(path: Path) -> Layout:
    by_name = [layout for layout in LAYOUTS if layout.claims(path, None)]
    if by_name:
        return by_name[0]
    schema = _schema(path)
    for layout in LAYOUTS:
        if layout.claims(path, schema):
            problems = layout.problems(schema)
            if problems:
                raise InputError(path, "; ".join(problems), where=f"{layout.name} layout")
            return layout
    raise InputError(path, "not a release of a known layout: its columns match none of "
                     + ", ".join(layout.description for layout in LAYOUTS),
                     expected="the columns of one of them (README: Input formats)")


def _schema(path: Path) -> pa.Schema:
    if path.stat().st_size == 0:
        raise InputError(path, "the file is empty", expected="a Parquet file")
    try:
        return pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(path, f"not a readable Parquet file ({error})",
                         expected="a complete Parquet file") from None
