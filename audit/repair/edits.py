"""From located corrections to edits of units.

An edit is one new text for one unit, with every correction that proposes exactly that
text (the same fix filed twice, or on two views of one context, agrees with itself). Two
edits of one unit disagree; so do a paragraph's edit and an edit of one of its sentences
unless the paragraph's new sentence is that very text. Disagreeing edits are held until one
is chosen.

An applied edit is a patch of its unit (`Edit.patch`): a context's title, sentence or
paragraph (every view holding the context) or a row's question or answer; the release's
layout writes the patched rows (audit/io/layouts/).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..io.units import Patch
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

    @property
    def patch(self) -> Patch:
        """The edit as a patch of its unit: a row's, or its context's."""
        c = self.first.correction
        row = c.in_row
        return Patch(self.unit, self.first.rid if row else None,
                     None if row else self.first.ctx, c.paragraph_id, c.sentence_index,
                     self.text, self.sentences)


def patches(edits: list[Edit]) -> list[Patch]:
    return [edit.patch for edit in edits]


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
        if edit.unit in ("sentence", "paragraph") and not edit.first.correction.in_row:
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
