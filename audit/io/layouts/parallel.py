"""A parallel dataset: one Parquet file of rows `id, language, source, translation`, each
row one translated text (a segment) beside its English source. It has no contexts,
questions or shipped flags, so the checks that read units run on it (language, script,
hidden characters, translation heuristics) and those that need more are not planned."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from .base import Remember
from .parquet import ParquetLayout

SCHEMA = pa.schema([("id", pa.string()), ("language", pa.string()), ("source", pa.string()),
                    ("translation", pa.string())])

_VIEWS = """
CREATE TABLE raw_views AS SELECT NULL::INTEGER AS ctx, * FROM raw_release;
CREATE VIEW views AS
SELECT rid, ctx, 'parallel' AS layout, id, id AS source_id, NULL::VARCHAR AS source_split,
       NULL::VARCHAR AS status, []::VARCHAR[] AS structural_flags,
       []::VARCHAR[] AS quality_flags, NULL::VARCHAR AS shipped_hash
FROM raw_views;
CREATE VIEW units AS
SELECT rid, NULL::INTEGER AS ctx, 'text' AS unit, NULL::VARCHAR AS paragraph_id,
       NULL::INTEGER AS sentence_index, NULL::INTEGER AS position, language AS lang,
       source AS src, translation AS tgt, 'text:' || rid AS key
FROM raw_views;
"""


class Parallel(ParquetLayout):
    name = "parallel"
    description = "parallel (id, language, source, translation)"
    capabilities = frozenset[str]()
    schema = SCHEMA
    signature = frozenset(SCHEMA.names)

    def open(self, con: duckdb.DuckDBPyConnection, cache_key: str | None
             ) -> Remember | None:
        con.execute(_VIEWS)
        return None

