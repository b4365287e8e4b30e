"""Characters that hide or reorder what is read (bidi controls, zero-width characters, a
byte-order mark inside a text): one whole-release check, `invisible_control`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import controls
from ..io.units import LEAF_UNITS, kinds_sql
from ..sql.macros import create_table
from .model import UNITS_ONLY, Check

if TYPE_CHECKING:
    from ..io.model import Release

_HIDING = controls.regex_class(controls.BIDI + controls.INFO)

# Bidi controls and zero-width characters anywhere, a byte-order mark after the first
# character: the cheap filter that leaves only the rare texts to describe.
_HIDING_PATTERN = f"{_HIDING}|(?s:.){controls.regex_class([controls.BOM])}"

# The translated texts holding such a character (questions and answers per view, titles and
# sentences once per distinct context).
_HIDING_UNITS = f"""
SELECT rid, ctx, unit, paragraph_id, sentence_index, tgt AS text FROM units
WHERE unit IN {kinds_sql(LEAF_UNITS)} AND regexp_matches(tgt, $p)
"""
_HIDING_SCHEMA = pa.schema([("rid", pa.int64()), ("ctx", pa.int32()), ("unit", pa.string()),
                            ("paragraph_id", pa.string()), ("sentence_index", pa.int32()),
                            ("detail", pa.string()), ("category", pa.string()),
                            ("evidence", pa.string())])


def hiding_characters(text: str) -> list[tuple[int, str]]:
    """(position, character) of each character that hides or reorders text, in order:
    bidi controls, U+200B and U+2060 anywhere, U+FEFF after the first character."""
    return [(i, ch) for i, ch in enumerate(text)
            if controls.kind(ch) in ("review", "info") and not (i == 0 and ord(ch) == controls.BOM)]


def _invisible_control(release: "Release") -> str:
    """One finding per text unit holding such characters; its category is that of the
    worst one (bidi and BOM: review, zero-width: info), its detail names the first."""
    con = release.con
    units = con.sql(_HIDING_UNITS, params={"p": _HIDING_PATTERN}).to_arrow_table().to_pylist()
    rows: dict[str, list[Any]] = {f.name: [] for f in _HIDING_SCHEMA}
    for unit in units:
        found = hiding_characters(unit["text"] or "")
        if not found:
            continue
        kinds = {controls.kind(ch) for _, ch in found}
        position, char = found[0]
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        for key in ("rid", "ctx", "unit", "paragraph_id", "sentence_index"):
            rows[key].append(unit[key])
        rows["detail"].append(f"{unit['unit']}: {controls.name(char)} at character "
                              f"{position}{more}")
        rows["category"].append("bidi_or_bom" if "review" in kinds else "zero_width")
        rows["evidence"].append(char)
    create_table(con, "invisible_control_rows", _HIDING_SCHEMA, rows, temp=True)
    # A title's or sentence's finding reaches every view of its context.
    return """SELECT v.rid, v.id, v.source_split, 'invisible_control', f.unit, f.paragraph_id,
        f.sentence_index, f.detail, f.category, f.evidence
        FROM invisible_control_rows f JOIN views v USING (rid)
        UNION ALL
        SELECT v.rid, v.id, v.source_split, 'invisible_control', f.unit, f.paragraph_id,
        f.sentence_index, f.detail, f.category, f.evidence
        FROM invisible_control_rows f JOIN views v USING (ctx)"""


HIDING_CHECKS = (
    Check("invisible_control", LEAF_UNITS, "review", "translation",
          "A title, sentence, question or answer holds a character that reorders or hides "
          "text (bidi embeddings, overrides and isolates, U+FEFF after the first character: "
          "review; U+200B, U+2060: info). ZWNJ/ZWJ and LRM/RLM/ALM belong to the writing "
          "systems and are never flagged.", UNITS_ONLY,
          categories=("bidi_or_bom", "zero_width"),
          category_severity=(("zero_width", "info"),), query=_invisible_control),
)
