"""Checks of one translated text beside its English source, declared over a unit `u` of
`units` (audit/io/units.py), so they run on every layout: exact copies of the source,
placeholders standing in for a sentence, invalid characters (SPEC §3)."""

from __future__ import annotations

from ..io.units import LEAF_UNITS, SENTENCE_LIKE_UNITS, kinds_sql
from .dsl import per_unit
from .model import COPY_CATEGORIES, UNITS_ONLY, Check

TEXT_CHECKS = (
    Check("exact_source_copy", LEAF_UNITS, "review", "translation",
          "A non-English sentence, title, question or answer is byte-equal to its English "
          "source; the category separates likely invariants from ordinary sentences.",
          UNITS_ONLY,
          # Numbers, punctuation and names legitimately stay as they are (SPEC §3).
          categories=COPY_CATEGORIES,
          category_severity=(("number_or_date", "info"), ("punctuation", "info"),
                             ("name_like", "info"), ("in_context", "info")),
          unit_sql=per_unit(f"u.lang <> 'en' AND u.tgt = u.src AND (u.unit NOT IN "
                            f"{kinds_sql(SENTENCE_LIKE_UNITS)} OR NOT is_blank(u.src))",
                            "u.unit || ' equals the English source'", "copy_category(u.tgt)",
                            units=LEAF_UNITS)),
    Check("placeholder_sentence", SENTENCE_LIKE_UNITS, "review", "translation",
          "A translated sentence is a stand-in (em dash, ellipsis, N/A) where the source "
          "sentence has content.", UNITS_ONLY,
          unit_sql=per_unit("is_placeholder(u.tgt) AND NOT is_blank(u.src) AND "
                            "length(py_strip(u.src)) > 1",
                            "'placeholder ' || py_strip(u.tgt) || ' for a non-blank source'",
                            units=SENTENCE_LIKE_UNITS)),
    Check("invalid_unicode", LEAF_UNITS, "review", "translation",
          "Text contains U+FFFD or a C0/C1 control character.", UNITS_ONLY,
          unit_sql=per_unit("has_invalid_chars(u.tgt)", "u.unit", units=LEAF_UNITS)),
)
