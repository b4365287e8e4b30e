"""What the Parquet layouts share: reading the files with each row's ordinal, checking their
columns against the layout's schema, and writing a corrected release (or a probe of a few
rows) in the input's own files: the same shard names, schema (metadata included),
compression and row groups; a row without a correction is copied value for value, a
corrected one replaced whole.

A corrected row's provenance points at the correction record (`+repair.<record digest>`
appended to the layout's provenance field) and its checksum is recomputed by the layout's
own rule (io/layouts/checksum.py) after its flags, status and provenance are final.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from ...sql.safe import identifier, literal
from . import checksum as hashing
from .base import Corrected, Layout, Opened, Progress, schema_problems
from .multihop import NESTED, MultiHopLayout, patched_rows

if TYPE_CHECKING:
    from ..units import Patch

_CODECS = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}
CHUNK = 20_000    # rows per step: probe parts, corrected rows, reads in rid order


class ParquetLayout(Layout):
    """A layout of Parquet files with a fixed schema, told apart by `signature` (columns
    no other layout has together)."""

    schema: ClassVar[pa.Schema]
    signature: ClassVar[frozenset[str]]

    def claims(self, path: Path, schema: pa.Schema | None) -> bool:
        return schema is not None and self.signature <= set(schema.names)

    def problems(self, schema: pa.Schema) -> list[str]:
        return schema_problems(schema, self.schema)

    def read(self, con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
        # The file list reaches DuckDB through its relation API, which quotes it itself; a
        # row's ordinal is its file's offset plus its row number in the file.
        offsets = literal(_row_offsets(paths))
        con.read_parquet([str(p) for p in paths], file_row_number=True).project(
            f"* EXCLUDE (file_row_number), "
            f"{offsets}[file_index::BIGINT + 1] + file_row_number AS rid"
        ).create_view("raw_release")


class ParquetMultiHop(ParquetLayout, MultiHopLayout):
    """A multi-hop layout in Parquet files (V1.1, V2 RC1): its corrected releases and
    probes are written here."""

    def write_rows(self, release: Opened, folder: Path, selection: pa.Table,
                   patches: list[Patch], contexts: pa.Table | None = None) -> Path:
        folder.mkdir()
        con = release.con.cursor()
        con.register("probe_contexts", contexts if contexts is not None
                     else self.patched_contexts(release, patches))
        con.register("probe_rows", patched_rows(patches))
        picked = []
        for name in pq.read_schema(release.paths[0]).names:
            column = identifier(name)
            if name in NESTED:
                picked.append(f"CASE WHEN s.patched AND n.ctx IS NOT NULL THEN n.{column} "
                              f"ELSE c.{column} END AS {column}")
            elif name in ("question", "answer"):
                picked.append(f"CASE WHEN s.patched AND r.{column} IS NOT NULL "
                              f"THEN r.{column} ELSE v.{column} END AS {column}")
            else:
                picked.append(f"v.{column}")
        # Parts of CHUNK rows: each part is sorted on its own, so no sort holds more.
        for part, start in enumerate(range(0, selection.num_rows, CHUNK)):
            con.register("probe_selection", selection.slice(start, CHUNK))
            target = literal(str(folder / f"part-{part:05d}.parquet"))
            con.execute(f"""COPY (SELECT {", ".join(picked)}
                FROM probe_selection s JOIN raw_views v USING (rid)
                JOIN raw_contexts c USING (ctx)
                LEFT JOIN probe_contexts n USING (ctx) LEFT JOIN probe_rows r USING (rid)
                ORDER BY s.probe_rid) TO {target} (FORMAT parquet, COMPRESSION zstd)""")
            con.unregister("probe_selection")
        con.close()
        return folder

    def write(self, release: Opened, staging: Path, names: list[str], corrected: Corrected,
              progress: Progress | None = None) -> None:
        if corrected.derived is not None:
            self._finish(corrected.derived, corrected.rids, corrected.record_digest)
        _write_files(release, corrected.derived, staging, names, progress)

    def _finish(self, derived: Opened, rids: list[int], record_digest: str) -> None:
        """Table `final_rows` on the probe of corrected rows: each row with its original
        `rid`, its provenance pointing at the record and its checksum recomputed."""
        assert self.provenance is not None and self.checksum is not None
        con = derived.con
        suffix = literal(f"+repair.{record_digest}")
        struct, name = self.provenance
        if struct:
            pointer = (f"struct_update({identifier(struct)}, {identifier(name)} := "
                       f"{identifier(struct)}.{identifier(name)} || {suffix}) "
                       f"AS {identifier(struct)}")
        else:
            pointer = f"{identifier(name)} || {suffix} AS {identifier(name)}"
        field = self.checksum.field
        con.execute(f"CREATE OR REPLACE TABLE raw_views AS SELECT * REPLACE ({pointer}, "
                    f"'' AS {identifier(field)}) FROM raw_views")
        hashing.mismatches(con, self.checksum)    # every row: its shipped checksum is blank
        con.register("final_rid", pa.table({"rid": pa.array(range(len(rids)), pa.int64()),
                                            "original": pa.array(rids, pa.int64())}))
        columns = con.sql("SELECT * EXCLUDE (rid) FROM raw_release LIMIT 0").columns
        picked = ", ".join(
            f"h.computed AS {identifier(c)}" if c == field else
            f"x.{identifier(c)}" if c in NESTED else f"v.{identifier(c)}" for c in columns)
        rows = f"""SELECT m.original AS rid, {picked}
            FROM raw_views v JOIN raw_contexts x USING (ctx) JOIN hash_mismatches h USING (rid)
            JOIN final_rid m USING (rid)"""
        # Filled in rid order a chunk at a time: stored sorted (each row group's read prunes
        # by rid), and no sort ever holds more than a chunk of rows.
        con.execute(f"CREATE OR REPLACE TABLE final_rows AS {rows} LIMIT 0")
        for start in range(0, len(rids), CHUNK):
            con.execute(f"INSERT INTO final_rows {rows} WHERE v.rid >= ? AND v.rid < ? "
                        "ORDER BY v.rid", [start, start + CHUNK])
        con.unregister("final_rid")


def _row_offsets(paths: list[Path]) -> list[int]:
    """The ordinal of each file's first row in the release."""
    offsets, total = [], 0
    for path in paths:
        offsets.append(total)
        try:
            total += pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowInvalid, OSError) as error:
            raise InputError(path, f"not a readable Parquet file ({error})") from None
    return offsets


def relative_names(paths: list[Path]) -> list[str]:
    """Each file's name relative to the folder holding them all (a single file: its name)."""
    if len(paths) == 1:
        return [paths[0].name]
    root = Path(os.path.commonpath([str(p.resolve().parent) for p in paths]))
    return [str(p.resolve().relative_to(root)) for p in paths]


def _codec(meta: pq.FileMetaData) -> str:
    if meta.num_row_groups == 0 or meta.num_columns == 0:
        return "zstd"
    name = meta.row_group(0).column(0).compression
    return str(_CODECS.get(name, name.lower()))


class _InOrder:
    """`final_rows` read once in rid order (its insertion order, which DuckDB keeps), handed
    out a row group's rid range at a time."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self.reader = cursor.sql("SELECT * FROM final_rows").to_arrow_reader(CHUNK)
        self.pending: pa.Table | None = None
        self.done = False

    def take(self, end: int) -> pa.Table | None:
        """The rows with rid below `end` not handed out yet."""
        while not self.done and (self.pending is None or self.pending.num_rows == 0
                                 or self.pending.column("rid")[-1].as_py() < end):
            try:
                batch = pa.Table.from_batches([self.reader.read_next_batch()])
            except StopIteration:
                self.done = True
                break
            self.pending = batch if self.pending is None else pa.concat_tables(
                [self.pending, batch])
        if self.pending is None:
            return None
        rids = self.pending.column("rid").to_numpy()
        if (rids[1:] < rids[:-1]).any():
            raise RuntimeError("final_rows is not in rid order")
        cut = int(rids.searchsorted(end))
        taken, self.pending = self.pending.slice(0, cut), self.pending.slice(cut)
        return taken if taken.num_rows else None


def _write_files(release: Opened, corrected: Opened | None, staging: Path,
                 names: list[str], progress: Progress | None = None) -> None:
    """Every file of the release under its own name in `staging`, row group by row group;
    rows of `final_rows` (on `corrected`) replace theirs."""
    say = progress or (lambda message: None)
    cursor = corrected.con.cursor() if corrected is not None else None
    rows = _InOrder(cursor) if cursor is not None else None
    start = 0
    for number, (path, name) in enumerate(zip(release.paths, names), start=1):
        source = pq.ParquetFile(path)
        schema = source.schema_arrow
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        say(f"writing {name} ({number} of {len(names)})")
        with pq.ParquetWriter(target, schema, compression=_codec(source.metadata)) as writer:
            for group in range(source.num_row_groups):
                table = source.read_row_group(group)
                end = start + table.num_rows
                replacing = rows.take(end) if rows is not None else None
                if replacing is not None:
                    table = _replaced(table, replacing, start, schema)
                writer.write_table(table, row_group_size=max(table.num_rows, 1))
                start = end
    if cursor is not None:
        cursor.close()


def _replaced(table: pa.Table, rows: pa.Table, start: int, schema: pa.Schema) -> pa.Table:
    """The row group (its first rid `start`) with `rows` in place of theirs."""
    positions = [rid - start for rid in rows.column("rid").to_pylist()]
    replacement = rows.drop_columns(["rid"]).cast(schema)
    index: list[Any] = list(range(table.num_rows))
    for j, position in enumerate(positions):
        index[position] = table.num_rows + j
    return pa.concat_tables([table.cast(schema), replacement]).take(pa.array(index, pa.int64()))
