"""The record checksums of SPEC §1 (sha256 of canonical JSON), reproduced in DuckDB SQL."""

from __future__ import annotations

import pyarrow as pa


def canonical_json_sql(schema: pa.Schema, layout: str) -> str:
    """SQL reproducing the canonical JSON of a raw row `raw` (the text its checksum hashes):
    keys sorted at every depth; V1.1 drops record_sha256, V2 sets release_record_sha256
    to ''."""
    def value(expr: str, type_: pa.DataType) -> str:
        if pa.types.is_struct(type_):
            fields = sorted(type_, key=lambda f: f.name)
            return "struct_pack(" + ", ".join(
                f'"{f.name}" := {value(f"{expr}.{chr(34)}{f.name}{chr(34)}", f.type)}'
                for f in fields) + ")"
        if pa.types.is_list(type_) and pa.types.is_struct(type_.value_type):
            return f"list_transform({expr}, lambda x: {value('x', type_.value_type)})"
        return expr

    parts = []
    for field in sorted(schema, key=lambda f: f.name):
        if layout == "v1.1" and field.name == "record_sha256":
            continue
        expr = "''" if field.name == "release_record_sha256" else value(
            f'raw."{field.name}"', field.type)
        parts.append(f'"{field.name}" := {expr}')
    return f"to_json(struct_pack({', '.join(parts)}))"


def sha256_of_json(column: str) -> str:
    """sha256 of a to_json() text, as Python's json.dumps would have produced it."""
    fixed = column
    # DuckDB escapes control characters with upper-case hex (\u001B), Python with lower
    # case; only rows holding such a character pay for the rewrite.
    for code in ("0B", "0E", "0F", "1A", "1B", "1C", "1D", "1E", "1F"):
        fixed = f"replace({fixed}, '\\u00{code}', '\\u00{code.lower()}')"
    return (f"sha256(CASE WHEN regexp_matches({column}, '\\\\u00[01][A-F]') THEN {fixed} "
            f"ELSE {column} END)")


def verify_query(con, layout: str) -> str:
    """Findings for rows whose shipped checksum does not reproduce. The hashes go to a
    narrow table first: joining them back onto whole rows would hold the nested columns
    in a hash table."""
    schema = con.sql("SELECT * EXCLUDE (rid) FROM raw_release LIMIT 0").to_arrow_table().schema
    con.execute(f"""CREATE OR REPLACE TABLE hashes AS
        SELECT rid, {sha256_of_json('j')} AS computed
        FROM (SELECT rid, {canonical_json_sql(schema, layout)} AS j FROM raw_release raw)""")
    return """SELECT r.rid, r.id, r.source_split, 'record_hash_mismatch', NULL, NULL,
        'shipped ' || coalesce(r.shipped_hash, 'none') || ', computed ' || h.computed, NULL
        FROM (SELECT rid, id, source_split, shipped_hash FROM release) r
        JOIN hashes h USING (rid) WHERE h.computed IS DISTINCT FROM r.shipped_hash"""
