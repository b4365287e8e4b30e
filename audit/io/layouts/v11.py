"""The public audited V1.1 Parquet layout (SPEC §1.1, 22 fields): the primary input."""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from ...sql.safe import strings
from .base import Checksum
from .multihop import CANDIDATE, COMMON, FACT, TEXT
from .parquet import ParquetMultiHop

S, I16, I32 = pa.string(), pa.int16(), pa.int32()
STRINGS = pa.list_(S)

PROVENANCE = pa.struct([
    ("source_dataset", S), ("source_file", S), ("source_record_sha256", S), ("legacy_shard", S),
    ("legacy_shard_row", I32), ("legacy_raw_sha256", S), ("translation_model", S),
    ("prompt_version", S), ("assignment_version", S), ("release_selection", S),
    ("build_version", S),
])
SCHEMA = pa.schema(COMMON + [("release_position", I32), ("legacy_view_index", I16)] + TEXT + [
    ("candidates", pa.list_(CANDIDATE)), ("supporting_facts", pa.list_(FACT)),
    ("status", S), ("structural_flags", STRINGS), ("provenance", PROVENANCE),
    ("record_sha256", S),
])

_VIEWS = """
SELECT rid, ctx, 'v1.1' AS layout, id, source_id, source_split, source_position,
       release_position, question, answer, question_language, question_language_name,
       answer_language, answer_language_name, source_question, source_answer, question_type,
       difficulty, status, structural_flags, []::VARCHAR[] AS quality_flags,
       record_sha256 AS shipped_hash
FROM raw_views
"""


def in_bounds(candidates: list[dict[str, Any]], facts: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """The V1.1 reference rule: a fact is in bounds when its paragraph resolved to a kept
    candidate and its index is below that candidate's translated sentence count."""
    lengths = {c["candidate_index"]: len(c["sentences"]) for c in candidates}
    return [{**f, "in_bounds": f["candidate_index"] is not None
             and f["candidate_index"] in lengths
             and f["sentence_index"] < lengths[f["candidate_index"]]} for f in facts]


class V11(ParquetMultiHop):
    name = "v1.1"
    description = "V1.1 (22 fields)"
    capabilities = frozenset({"questions", "contexts", "supporting_facts", "shipped_status",
                              "record_hash", "flags:v1.1"})
    schema = SCHEMA
    signature = frozenset({"record_sha256", "structural_flags", "legacy_view_index"})
    provenance = ("provenance", "build_version")
    checksum = Checksum("record_sha256", blanked=False)
    views_sql = _VIEWS

    def facts_after_edit(self, candidates: list[dict[str, Any]],
                         facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return in_bounds(candidates, facts)

    def status_rule(self, found: str, kept: Callable[[str], str], review: list[str]) -> str:
        """Its flags are the kept and the found ones; quarantined for any blocking flag,
        review_required for only review ones (SPEC §2)."""
        flags = f"list_sort(list_distinct(list_concat({kept('structural_flags')}, {found})))"
        status = (f"CASE WHEN len(list_filter(structural_flags, lambda x: NOT list_contains("
                  f"{strings(review)}, x))) > 0 THEN 'quarantined' "
                  "WHEN len(structural_flags) > 0 THEN 'review_required' ELSE 'accepted' END")
        return f"""SELECT * REPLACE ({status} AS status)
            FROM (SELECT v.* REPLACE ({flags} AS structural_flags)
                  FROM raw_views v LEFT JOIN derived_flags d USING (rid))"""
