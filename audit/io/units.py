"""The translation unit: the one vocabulary of what is translated, and where a finding sits.

A unit is one text in a language beside its English source. Every layout yields the relation
`units` on a release's connection, one row per unit:

    rid             the row that holds it (question, answer, a parallel dataset's text);
                    NULL for a unit of a shared context
    ctx             the context that holds it (title, sentence, paragraph: the views of an
                    XHotpotQA+ source share one, so a context unit is one text however many
                    views hold it); NULL for a row's unit
    unit            its kind (UNITS)
    paragraph_id    the candidate paragraph it belongs to, where it has one
    sentence_index  a sentence's 0-based position in its paragraph
    position        a context unit's candidate's 0-based place in its context (a
                    paragraph id may repeat or be missing; the place never does)
    lang            its assigned language (a code)
    src, tgt        the English source text and the translation (NULL where absent)
    key             the unit's stable name within the release (its kind, owner, position)

A paragraph's text is its sentences joined with SEPARATOR (U+001F), which no sentence
holds: one text per paragraph that still shows each sentence.

A finding sits on one unit of FINDING_UNITS: a translated unit, a supporting fact, the
instance (the row as a whole) or the release; the scan writes it in the `unit` column of
every finding, and repair, compare and review read that column.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from ..sql.safe import literal

# Translated units, and what each is.
UNITS = {
    "question": "a row's translated question",
    "answer": "a row's translated answer",
    "title": "a candidate paragraph's translated title",
    "sentence": "one translated sentence of a candidate paragraph",
    "paragraph": "a candidate paragraph's translated sentences, as one text",
    "text": "a row's one translated text (a parallel dataset's segment)",
}
ROW_UNITS = ("question", "answer", "text")
CONTEXT_UNITS = ("title", "sentence", "paragraph")
# Units that are one text each (a paragraph is its sentences): what the text signals read.
LEAF_UNITS = ("question", "answer", "title", "sentence", "text")
# What the language layer reads whole: the script rule all of them, language
# identification all but titles (names); a paragraph's sentences are read in their paragraph.
LANGUAGE_UNITS = ("title", "paragraph", "question", "answer", "text")
IDENTIFIED_UNITS = ("paragraph", "question", "answer", "text")
# Units that end as a sentence or a question ends (terminal punctuation), and those whose
# length the sentence prior calibrates.
TERMINAL_UNITS = ("sentence", "question", "text")
SENTENCE_LIKE_UNITS = ("sentence", "text")
# Units a correction can replace (audit/repair).
CORRECTABLE_UNITS = ("question", "answer", "title", "sentence", "paragraph")

# Where a finding can sit: a translated unit, a supporting fact (at its paragraph and
# sentence), the instance as a whole (its row), or the release (no row).
FINDING_UNITS = (*UNITS, "fact", "instance", "release")

# The columns of `units`, in every layout.
COLUMNS = ("rid", "ctx", "unit", "paragraph_id", "sentence_index", "position", "lang", "src",
           "tgt", "key")
SEPARATOR = "\x1f"   # between a paragraph's sentences in its text


def kinds_sql(kinds: Iterable[str]) -> str:
    """A set of unit kinds as an SQL list for `unit IN …`."""
    return "(" + ", ".join(literal(kind) for kind in kinds) + ")"


def paragraph_text(sentences: list[str]) -> str:
    """A paragraph as a correction's guard sees it: its sentences as compact JSON,
    non-ASCII kept (the digest of this text guards a paragraph correction)."""
    return json.dumps(list(sentences), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Patch:
    """A new text for one unit: a row's (`rid`) question or answer, or a context's (`ctx`)
    title, sentence or paragraph (`sentences`, one text per sentence)."""

    unit: str
    rid: int | None
    ctx: int | None
    paragraph_id: str | None
    sentence_index: int | None
    text: str
    sentences: tuple[str, ...] | None = None
