"""Expected column types of each release layout (SPEC §1), used to detect and validate input."""

from __future__ import annotations

import pyarrow as pa

S, I16, I32, I64, B = pa.string(), pa.int16(), pa.int32(), pa.int64(), pa.bool_()
STRINGS = pa.list_(S)

V11_CANDIDATE = pa.struct([
    ("paragraph_id", S), ("candidate_index", I16), ("source_title", S),
    ("source_sentences", STRINGS), ("title", S), ("sentences", STRINGS),
    ("language", S), ("language_code", S),
])
V11_FACT = pa.struct([
    ("source_title", S), ("paragraph_id", S), ("candidate_index", I16),
    ("sentence_index", I32), ("in_bounds", B),
])
V11_PROVENANCE = pa.struct([
    ("source_dataset", S), ("source_file", S), ("source_record_sha256", S), ("legacy_shard", S),
    ("legacy_shard_row", I32), ("legacy_raw_sha256", S), ("translation_model", S),
    ("prompt_version", S), ("assignment_version", S), ("release_selection", S),
    ("build_version", S),
])

_COMMON = [
    ("id", S), ("source_id", S), ("source_split", S), ("source_position", I32),
]
_TEXT = [
    ("question", S), ("answer", S), ("question_language", S), ("question_language_name", S),
    ("answer_language", S), ("answer_language_name", S), ("source_question", S),
    ("source_answer", S), ("question_type", S), ("difficulty", S),
]

V11 = pa.schema(_COMMON + [("release_position", I32), ("legacy_view_index", I16)] + _TEXT + [
    ("candidates", pa.list_(V11_CANDIDATE)), ("supporting_facts", pa.list_(V11_FACT)),
    ("status", S), ("structural_flags", STRINGS), ("provenance", V11_PROVENANCE),
    ("record_sha256", S),
])

V2_CANDIDATE = pa.struct([
    ("paragraph_id", S), ("candidate_index", I16), ("source_title", S),
    ("source_sentences", STRINGS), ("title", S), ("sentences", STRINGS), ("language", S),
    ("language_name", S), ("source_match", B),
])
V2_FACT = pa.struct([("paragraph_id", S), ("sentence_id", I32), ("source_title", S),
                     ("in_bounds", B)])

V2 = pa.schema(_COMMON + _TEXT + [
    ("candidates", pa.list_(V2_CANDIDATE)), ("supporting_facts", pa.list_(V2_FACT)),
    ("status", S), ("structural_flags", STRINGS), ("quality_flags", STRINGS),
    ("source_record_sha256", S), ("input_record_checksum_sha256", S),
    ("input_checksum_valid", B), ("release_record_sha256", S), ("translation_model", S),
    ("translation_revision", S), ("prompt_version", S), ("prompt_sha256", S),
    ("assignment_version", S), ("assignment_manifest_sha256", S), ("generation_seed", I64),
    ("decoding_json", S), ("created_at", S), ("recorded_retry_count_unreliable", I32),
    ("recorded_validation_status", S), ("input_schema_version", S),
])

PARQUET_LAYOUTS = {"v1.1": V11, "v2": V2}


def describe(type_: pa.DataType) -> str:
    return str(type_).replace(" not null", "")


def _same(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality ignoring nullability and field metadata; large/view strings accepted."""
    if pa.types.is_struct(expected):
        if not pa.types.is_struct(actual):
            return False
        names = {actual.field(i).name: actual.field(i).type for i in range(actual.num_fields)}
        return all(f.name in names and _same(names[f.name], f.type) for f in expected)
    if pa.types.is_list(expected):
        return (pa.types.is_list(actual) or pa.types.is_large_list(actual)) and _same(
            actual.value_type, expected.value_type)
    if pa.types.is_string(expected):
        return bool(pa.types.is_string(actual) or pa.types.is_large_string(actual) or (
            pa.types.is_string_view(actual)))
    return bool(actual.equals(expected))


def detect(schema: pa.Schema) -> str | None:
    names = set(schema.names)
    if {"quality_flags", "release_record_sha256"} <= names:
        return "v2"
    if {"record_sha256", "structural_flags", "legacy_view_index"} <= names:
        return "v1.1"
    return None


def mismatches(schema: pa.Schema, layout: str) -> list[str]:
    """Each missing or mistyped column, named with the type the layout requires."""
    expected = PARQUET_LAYOUTS[layout]
    problems = []
    for field in expected:
        if field.name not in schema.names:
            problems.append(f"missing column '{field.name}' (expected {describe(field.type)})")
        elif not _same(schema.field(field.name).type, field.type):
            problems.append(f"column '{field.name}' has type "
                            f"{describe(schema.field(field.name).type)} "
                            f"(expected {describe(field.type)})")
    return problems
