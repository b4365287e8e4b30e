"""A corrected release in the input's own Parquet layout (V1.1 or V2 RC1): the same shard
names, schema (metadata included), compression and row groups; a row without an applied
correction is copied value for value, a corrected one replaced whole.

A corrected row's provenance points at the correction record: V1.1's
`provenance.build_version` and V2's `translation_revision` get `+repair.<record digest>`
appended. Its checksum (V1.1 `record_sha256`, V2 `release_record_sha256`) is recomputed by
`audit.checks.record_hash`, the layout's own rule, after its flags, status and provenance are final.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ..checks import record_hash as hashing
from ..io.model import Release
from ..sql.safe import identifier, literal

Progress = Callable[[str], None]
PROVENANCE = {"v1.1": ("provenance", "build_version"), "v2": (None, "translation_revision"),
              "jsonl": ("provenance", "translation_revision")}
CHECKSUM = {"v1.1": "record_sha256", "v2": "release_record_sha256", "jsonl": "checksum"}
_CODECS = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}
CHUNK = 20_000


def relative_names(paths: list[Path]) -> list[str]:
    """Each file's name relative to the folder holding them all (a single file: its name)."""
    if len(paths) == 1:
        return [paths[0].name]
    root = Path(os.path.commonpath([str(p.resolve().parent) for p in paths]))
    return [str(p.resolve().relative_to(root)) for p in paths]


def provenance_field(layout: str) -> str:
    struct, name = PROVENANCE[layout]
    return f"{struct}.{name}" if struct else name


def finish(corrected: Release, rids: list[int], record_digest: str) -> None:
    """Table `final_rows` on the probe of corrected rows (`probe.derive`): each row with its
    original `rid`, its provenance pointing at the record and its checksum recomputed."""
    con = corrected.con
    layout = corrected.layout
    suffix = literal(f"+repair.{record_digest}")
    struct, name = PROVENANCE[layout]
    if struct:
        pointer = (f"struct_update({identifier(struct)}, {identifier(name)} := "
                   f"{identifier(struct)}.{identifier(name)} || {suffix}) AS {identifier(struct)}")
    else:
        pointer = f"{identifier(name)} || {suffix} AS {identifier(name)}"
    checksum = identifier(CHECKSUM[layout])
    con.execute(f"CREATE OR REPLACE TABLE raw_views AS SELECT * REPLACE ({pointer}, "
                f"'' AS {checksum}) FROM raw_views")
    hashing.mismatches(con, layout)       # every row: its shipped checksum is blank now
    con.register("final_rid", pa.table({"rid": pa.array(range(len(rids)), pa.int64()),
                                        "original": pa.array(rids, pa.int64())}))
    columns = con.sql("SELECT * EXCLUDE (rid) FROM raw_release LIMIT 0").columns
    picked = ", ".join(
        f"h.computed AS {identifier(c)}" if c == CHECKSUM[layout] else
        f"x.{identifier(c)}" if c in ("candidates", "supporting_facts") else f"v.{identifier(c)}"
        for c in columns)
    rows = f"""SELECT m.original AS rid, {picked}
        FROM raw_views v JOIN raw_contexts x USING (ctx) JOIN hash_mismatches h USING (rid)
        JOIN final_rid m USING (rid)"""
    # Filled in rid order a chunk at a time: stored sorted (each row group's read prunes by
    # rid), and no sort ever holds more than a chunk of rows.
    con.execute(f"CREATE OR REPLACE TABLE final_rows AS {rows} LIMIT 0")
    for start in range(0, len(rids), CHUNK):
        con.execute(f"INSERT INTO final_rows {rows} WHERE v.rid >= ? AND v.rid < ? "
                    "ORDER BY v.rid", [start, start + CHUNK])
    con.unregister("final_rid")


def _codec(meta: pq.FileMetaData) -> str:
    if meta.num_row_groups == 0 or meta.num_columns == 0:
        return "zstd"
    name = meta.row_group(0).column(0).compression
    return _CODECS.get(name, name.lower())


class _InOrder:
    """`final_rows` read once in rid order (its insertion order, which DuckDB keeps), handed
    out a row group's rid range at a time."""

    def __init__(self, cursor) -> None:
        self.reader = cursor.sql("SELECT * FROM final_rows").to_arrow_reader(CHUNK)
        self.pending = None
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


def write_parquet(release: Release, corrected: Release | None, staging: Path,
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
    index = list(range(table.num_rows))
    for j, position in enumerate(positions):
        index[position] = table.num_rows + j
    return pa.concat_tables([table.cast(schema), replacement]).take(pa.array(index, pa.int64()))
