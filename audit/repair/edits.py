"""From located corrections to edits of units, and from edits to changed rows.

An edit is one new text for one unit, with every correction that proposes exactly that
text (the same fix filed twice, or on two views of one context, agrees with itself). Two
edits of one unit disagree; so do a paragraph's edit and an edit of one of its sentences
unless the paragraph's new sentence is that very text. Disagreeing edits are held until one
is chosen.

Applied edits change contexts (titles, sentences; every view holding the context) and rows
(questions, answers). `patched_contexts` rewrites the affected contexts in the release's own
layout (V1.1 facts get `in_bounds` again by the reference rule when a sentence count
changed); `patched_rows` lists the new questions and answers by row.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from ..io.model import Release
from . import units
from .corrections import Located


@dataclass
class Edit:
    """One new text of one unit and the corrections proposing it."""

    members: list[Located]
    conflicts: set[int] = field(default_factory=set)     # indexes of disagreeing edits

    @property
    def first(self) -> Located:
        return self.members[0]

    @property
    def unit(self) -> str:
        return self.first.correction.unit

    @property
    def key(self) -> tuple:
        return self.first.unit_key

    @property
    def text(self) -> str:
        return self.first.correction.new_text

    @property
    def sentences(self) -> tuple[str, ...] | None:
        return self.first.correction.sentences

    @property
    def ids(self) -> list[str]:
        return sorted({m.correction.correction_id for m in self.members})


def group(located: list[Located]) -> list[Edit]:
    """Edits in order of first appearance, each with the indexes of the edits it disagrees
    with."""
    by_text: dict[tuple, Edit] = {}
    for item in located:
        by_text.setdefault((item.unit_key, item.correction.new_text),
                           Edit([])).members.append(item)
    edits = list(by_text.values())
    by_unit: dict[tuple, list[int]] = defaultdict(list)
    by_paragraph: dict[tuple, list[int]] = defaultdict(list)
    for i, edit in enumerate(edits):
        by_unit[edit.key].append(i)
        if edit.unit in ("sentence", "paragraph"):
            by_paragraph[(edit.first.ctx, edit.first.correction.paragraph_id)].append(i)
    for members in by_unit.values():
        for i in members:
            edits[i].conflicts |= set(members) - {i}
    for members in by_paragraph.values():
        whole = [i for i in members if edits[i].unit == "paragraph"]
        for i in members:
            if edits[i].unit != "sentence":
                continue
            k = edits[i].first.correction.sentence_index
            for j in whole:
                if k >= len(edits[j].sentences) or edits[j].sentences[k] != edits[i].text:
                    edits[i].conflicts.add(j)
                    edits[j].conflicts.add(i)
    return edits


# ----------------------------------------------------------------------- changed rows

def _patched(candidate: dict, edits: list[Edit], id_key: str) -> dict:
    candidate = dict(candidate)
    mine = [e for e in edits if e.first.correction.paragraph_id == candidate[id_key]]
    for edit in sorted(mine, key=lambda e: e.unit != "paragraph"):   # whole paragraph first
        if edit.unit == "title":
            candidate["title"] = edit.text
        elif edit.unit == "paragraph":
            candidate["sentences"] = list(edit.sentences)
        else:
            sentences = list(candidate["sentences"])
            sentences[edit.first.correction.sentence_index] = edit.text
            candidate["sentences"] = sentences
    return candidate


def patch_candidates(candidates: list[dict], edits: list[Edit],
                     id_key: str = "paragraph_id") -> list[dict]:
    return [_patched(c, edits, id_key) for c in candidates]


def v11_in_bounds(candidates: list[dict], facts: list[dict]) -> list[dict]:
    """The V1.1 reference rule: a fact is in bounds when its paragraph resolved to a kept
    candidate and its index is below that candidate's translated sentence count."""
    lengths = {c["candidate_index"]: len(c["sentences"]) for c in candidates}
    return [{**f, "in_bounds": f["candidate_index"] is not None
             and f["candidate_index"] in lengths
             and f["sentence_index"] < lengths[f["candidate_index"]]} for f in facts]


def context_edits(edits: list[Edit]) -> dict[int, list[Edit]]:
    out: dict[int, list[Edit]] = defaultdict(list)
    for edit in edits:
        if edit.unit in units.CONTEXT_UNITS:
            out[edit.first.ctx].append(edit)
    return dict(out)


def patched_contexts(release: Release, edits: list[Edit]) -> pa.Table:
    """(ctx, candidates, supporting_facts) of every context an edit changes, in the
    release's raw layout (the columns of its files)."""
    con = release.con.cursor()
    shape = con.sql("SELECT ctx, candidates, supporting_facts FROM raw_contexts LIMIT 0"
                    ).to_arrow_table().schema
    by_ctx = context_edits(edits)
    rows = con.sql(f"SELECT ctx, candidates, supporting_facts FROM raw_contexts WHERE ctx IN "
                   f"{units.among(con, by_ctx, pa.int32())} ORDER BY ctx"
                   ).to_arrow_table().to_pylist()
    con.close()
    for row in rows:
        mine = by_ctx[row["ctx"]]
        row["candidates"] = patch_candidates(row["candidates"], mine)
        if release.layout == "v1.1" and any(e.unit == "paragraph" for e in mine):
            row["supporting_facts"] = v11_in_bounds(row["candidates"], row["supporting_facts"])
    return pa.Table.from_pylist(rows, schema=shape)


ROW_SHAPE = pa.schema([("rid", pa.int64()), ("question", pa.string()),
                       ("answer", pa.string())])


def patched_rows(edits: list[Edit]) -> pa.Table:
    """(rid, question, answer) of every row a question or answer edit changes; a column the
    row keeps is NULL."""
    rows: dict[int, dict] = {}
    for edit in edits:
        if edit.unit in units.ROW_UNITS:
            row = rows.setdefault(edit.first.rid, {"rid": edit.first.rid, "question": None,
                                                   "answer": None})
            row[edit.unit] = edit.text
    return pa.Table.from_pylist(sorted(rows.values(), key=lambda r: r["rid"]),
                                schema=ROW_SHAPE)
