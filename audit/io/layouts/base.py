"""What a release layout is: the one interface every layout module implements.

A layout knows its files: which files are its own (`claims`), what they must hold
(`problems`), how they are read into DuckDB as `raw_release` (one row per release row, `rid`
its ordinal in file order), and the canonical relations it yields on the release's
connection (`open`): `views` (one row per release row, the CORE_VIEW_COLUMNS and what else
the layout carries), `units` (one row per translated text, audit/io/units.py) and, where the
layout has contexts, `contexts`, `release` and the flat `candidates`, `sentences` and `facts`.
Its `capabilities` say what it carries; checks declare the capabilities they need, never a
layout's name. A corrected release is written through it (`write`), in its own format.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Protocol

import duckdb
import pyarrow as pa

if TYPE_CHECKING:
    from ..units import Patch

Progress = Callable[[str], None]
# Starts a cache write on a thread of its own; the caller waits for its future.
Remember = Callable[[], Future[None]]

# What a layout may carry. Checks name these in `Check.requires` (to apply at all) and
# `Check.needs` (to see every case; the attached HotpotQA source adds "source").
CAPABILITIES = {
    "questions": "each row holds a translated question and answer beside their English "
                 "sources and languages",
    "contexts": "rows share contexts: candidate paragraphs (a title and sentences, each "
                "beside its English source) in one language each",
    "supporting_facts": "contexts carry supporting facts (a paragraph and a sentence index)",
    "shipped_status": "rows ship a status and the flags it follows from",
    "record_hash": "rows ship a checksum of their content that this tool reproduces",
    "flags:v1.1": "its own flags are the public V1.1 build's (SPEC §2)",
    "flags:v2": "its own flags are the V2 RC1 builder's (SPEC §1.2)",
    "aligned": "each row is one item in one language, aligned with the source language's "
               "row of its id (a mapped release: README, Mapping a benchmark)",
    "row_order": "rows are aligned by their order in the files, not by an id",
}

# The columns of `views` in every layout (NULL, or an empty list, where a layout has none),
# so the scan, status and summaries read any layout alike.
CORE_VIEW_COLUMNS = ("rid", "ctx", "layout", "id", "source_id", "source_split", "status",
                     "structural_flags", "quality_flags", "shipped_hash")


class Opened(Protocol):
    """What a layout reads of an opened release (audit/io/model.Release): its files and
    the connection holding its relations."""

    paths: list[Path]

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...


@dataclass(frozen=True)
class Checksum:
    """A layout's record checksum: the field that holds it, and whether its canonical JSON
    leaves that field out (V1.1) or sets it to "" (V2)."""

    field: str
    blanked: bool


@dataclass
class Corrected:
    """What a corrected release is written from: the patches of the applied edits, the rows
    they reach (`rids`, in order), the correction record's digest their provenance points
    at, and `derived`: a probe of those rows whose flags and status were re-derived by the
    release's own rule (layouts with a shipped status)."""

    patches: list[Patch]
    rids: list[int]
    record_digest: str
    derived: Opened | None = None


class Layout:
    """One release layout (see the module doc). Subclasses set the class attributes and
    implement what their files need."""

    name: ClassVar[str]
    description: ClassVar[str]          # how messages and the README name it
    capabilities: ClassVar[frozenset[str]]
    # The provenance field a corrected row's pointer is appended to: (struct, field) or
    # (None, field) for a top-level one.
    provenance: ClassVar[tuple[str | None, str] | None] = None
    checksum: ClassVar[Checksum | None] = None
    # Whether `open` remembers what it derives from the files under the cache (by their
    # SHA-256s): worth it where reading is slow.
    remembers: ClassVar[bool] = True
    # Whether its units are a row's named parts (a mapped release's columns): inside a scan
    # the part's name rides in `paragraph_id`, and a finding names the part as its unit.
    part_units: ClassVar[bool] = False
    # A relation (rid, part) of units whose copy of the source is expected (a mapped
    # release's answers that stand in their translated text), or None.
    copies_in_context: ClassVar[str | None] = None

    def __str__(self) -> str:
        return self.name

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def claims(self, path: Path, schema: pa.Schema | None) -> bool:
        """Whether a file is of this layout: by its Arrow schema (a Parquet file's; None for
        a file that is not Parquet) or its name."""
        raise NotImplementedError

    def problems(self, schema: pa.Schema) -> list[str]:
        """Each way a claimed Parquet file's columns differ from what the layout needs."""
        return []

    def read(self, con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
        """View or table `raw_release`: every row of the files with `rid`, its ordinal in
        file order; bad input is an InputError naming the file and the place."""
        raise NotImplementedError

    def open(self, con: duckdb.DuckDBPyConnection, cache_key: str | None
             ) -> Remember | None:
        """The canonical relations from `raw_release` (see the module doc). `cache_key`:
        the files' content key when the derived tables may be remembered. Returns the
        cache write to start (its future the caller waits for), or None."""
        raise NotImplementedError

    @property
    def checksum_field(self) -> str | None:
        """The field a corrected row's checksum is written to."""
        return self.checksum.field if self.checksum is not None else None

    @property
    def provenance_field(self) -> str | None:
        if self.provenance is None:
            return None
        struct, name = self.provenance
        return f"{struct}.{name}" if struct else name

    # --------------------------------------------------------------- corrected releases

    def write_rows(self, release: Opened, folder: Path, selection: pa.Table,
                   patches: list[Patch], contexts: pa.Table | None = None) -> Path:
        """A probe: the selected rows (`selection`: probe_rid, rid, patched) in this
        layout's format into the new `folder`, in probe_rid order, a patched row carrying
        every patch (`contexts`: the patched contexts, when the caller has them). Returns
        what opens it (the folder, or the file that describes it)."""
        raise NotImplementedError(f"the {self.name} layout cannot write corrected rows")

    def status_rule(self, found: str, kept: Callable[[str], str], review: list[str]) -> str:
        """SQL replacing `raw_views` on a probe: its rows' flags from `found` (a list of the
        reference flags found, per row `d`) and the shipped flags no probe re-derives
        (`kept(column)`), and the status the release's own rule gives them (`review`: the
        reference flags that only require review)."""
        raise NotImplementedError(f"the {self.name} layout ships no status")

    def write(self, release: Opened, staging: Path, names: list[str], corrected: Corrected,
              progress: Progress | None = None) -> None:
        """The corrected release: every file of `release` under its name in `names`, in
        `staging`, the corrected rows replaced."""
        raise NotImplementedError(f"the {self.name} layout cannot be written")


def describe(type_: pa.DataType) -> str:
    return str(type_).replace(" not null", "")


def same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality ignoring nullability and field metadata; large/view strings accepted."""
    if pa.types.is_struct(expected):
        if not pa.types.is_struct(actual):
            return False
        names = {actual.field(i).name: actual.field(i).type for i in range(actual.num_fields)}
        return all(f.name in names and same_type(names[f.name], f.type) for f in expected)
    if pa.types.is_list(expected):
        return (pa.types.is_list(actual) or pa.types.is_large_list(actual)) and same_type(
            actual.value_type, expected.value_type)
    if pa.types.is_string(expected):
        return bool(pa.types.is_string(actual) or pa.types.is_large_string(actual) or (
            pa.types.is_string_view(actual)))
    return bool(actual.equals(expected))


def schema_problems(schema: pa.Schema, expected: pa.Schema) -> list[str]:
    """Each missing or mistyped column, named with the type the layout requires."""
    problems = []
    for column in expected:
        if column.name not in schema.names:
            problems.append(f"missing column '{column.name}' (expected {describe(column.type)})")
        elif not same_type(schema.field(column.name).type, column.type):
            problems.append(f"column '{column.name}' has type "
                            f"{describe(schema.field(column.name).type)} "
                            f"(expected {describe(column.type)})")
    return problems
