"""The V2 RC1 Parquet layout (SPEC §1.2, 35 fields): candidate `language` is the code, facts
name their sentence by `sentence_id`, and the checksum field is blanked, not left out."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ...sql.safe import strings
from .base import Checksum
from .multihop import COMMON, TEXT
from .parquet import ParquetMultiHop

S, I16, I32, I64, B = pa.string(), pa.int16(), pa.int32(), pa.int64(), pa.bool_()
STRINGS = pa.list_(S)

CANDIDATE = pa.struct([
    ("paragraph_id", S), ("candidate_index", I16), ("source_title", S),
    ("source_sentences", STRINGS), ("title", S), ("sentences", STRINGS), ("language", S),
    ("language_name", S), ("source_match", B),
])
FACT = pa.struct([("paragraph_id", S), ("sentence_id", I32), ("source_title", S),
                  ("in_bounds", B)])
SCHEMA = pa.schema(COMMON + TEXT + [
    ("candidates", pa.list_(CANDIDATE)), ("supporting_facts", pa.list_(FACT)),
    ("status", S), ("structural_flags", STRINGS), ("quality_flags", STRINGS),
    ("source_record_sha256", S), ("input_record_checksum_sha256", S),
    ("input_checksum_valid", B), ("release_record_sha256", S), ("translation_model", S),
    ("translation_revision", S), ("prompt_version", S), ("prompt_sha256", S),
    ("assignment_version", S), ("assignment_manifest_sha256", S), ("generation_seed", I64),
    ("decoding_json", S), ("created_at", S), ("recorded_retry_count_unreliable", I32),
    ("recorded_validation_status", S), ("input_schema_version", S),
])

_VIEWS = """
SELECT rid, ctx, 'v2' AS layout, id, source_id, source_split, source_position,
       NULL::INTEGER AS release_position, question, answer, question_language,
       question_language_name, answer_language, answer_language_name, source_question,
       source_answer, question_type, difficulty, status, structural_flags, quality_flags,
       release_record_sha256 AS shipped_hash, input_checksum_valid, assignment_manifest_sha256
FROM raw_views
"""

# Candidates with V1.1's names (`language` the name, `language_code` the code), facts with
# `sentence_index` and the candidate they name.
_CONTEXTS = """
SELECT ctx, source_id, source_split,
       list_transform(candidates, lambda c: struct_pack(
           paragraph_id := c.paragraph_id, candidate_index := c.candidate_index,
           source_title := c.source_title, source_sentences := c.source_sentences,
           title := c.title, sentences := c.sentences, language := c.language_name,
           language_code := c.language)) AS candidates,
       list_transform(supporting_facts, lambda f: struct_pack(
           source_title := f.source_title, paragraph_id := f.paragraph_id,
           candidate_index := list_position(list_transform(candidates, lambda c: c.paragraph_id),
                                            f.paragraph_id)::SMALLINT - 1,
           sentence_index := f.sentence_id, in_bounds := f.in_bounds)) AS supporting_facts
FROM raw_contexts
"""


class V2(ParquetMultiHop):
    name = "v2"
    description = "V2 RC1 (35 fields)"
    capabilities = frozenset({"questions", "contexts", "supporting_facts", "shipped_status",
                              "record_hash", "flags:v2"})
    schema = SCHEMA
    signature = frozenset({"quality_flags", "release_record_sha256"})
    provenance = (None, "translation_revision")
    checksum = Checksum("release_record_sha256", blanked=True)
    views_sql = _VIEWS
    contexts_sql = _CONTEXTS
    contexts_table = True

    def status_rule(self, found: str, kept: Callable[[str], str], review: list[str]) -> str:
        """Review-level reference flags are its quality flags, the others structural;
        quarantined for any structural flag, review_required for a quality one (SPEC §1.2)."""
        def split(keep: bool) -> str:
            return (f"list_filter({found}, lambda x: {'' if keep else 'NOT '}"
                    f"list_contains({strings(review)}, x))")
        structural = (f"list_sort(list_distinct(list_concat({kept('structural_flags')}, "
                      f"{split(False)})))")
        quality = (f"list_sort(list_distinct(list_concat({kept('quality_flags')}, "
                   f"{split(True)})))")
        return f"""SELECT * REPLACE (CASE WHEN len(structural_flags) > 0 THEN 'quarantined'
                                 WHEN len(quality_flags) > 0 THEN 'review_required'
                                 ELSE 'accepted' END AS status)
            FROM (SELECT v.* REPLACE ({structural} AS structural_flags,
                                      {quality} AS quality_flags)
                  FROM raw_views v LEFT JOIN derived_flags d USING (rid))"""
