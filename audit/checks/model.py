"""The check model: what a check declares (`Check`), the vocabularies it declares with, and
the layouts it runs on. One module per family declares checks (structural, v2, hiding,
release, language, translation, record_hash); `registry` assembles them.

A check's SQL is an expression that evaluates to a list of findings
`STRUCT(p paragraph_id, s sentence_index, d detail, c category, e evidence)`, either over one
release row `r` (its own fields: question, answer, languages…) or over one distinct context
`r` (its candidates, supporting facts and title keys, and the HotpotQA source row `s` when one
is attached). All row checks run in one pass over the views and all context
checks in one pass over the contexts, with DuckDB list lambdas instead of unnesting the
nested columns; a context's findings then reach each of its views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..io.layouts.base import CAPABILITIES
from ..io.units import FINDING_UNITS

if TYPE_CHECKING:
    from .layers import SignalLayer

# in_context: a mapped release's answer copied as it stands in its translated text (the
# span an extractive answer must be; the text's own checks judge its language).
COPY_CATEGORIES = ("number_or_date", "punctuation", "name_like", "sentence", "in_context")
SEVERITIES = ("blocking", "review", "info")
ORIGINS = ("source", "translation", "release")
# What a text correction can do about a check's finding: correcting the unit it sits on may
# resolve it ("unit"), only a correction of its whole paragraph can (a sentence count is
# wrong: "paragraph"), or none can (a language assignment, the context's shape, an
# inherited or release-level defect: "none").
FIXES = ("unit", "paragraph", "none")
FINDING = "STRUCT(u VARCHAR, p VARCHAR, s INTEGER, d VARCHAR, c VARCHAR, e VARCHAR)"
NONE = f"[]::{FINDING}[]"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    # The units its findings sit on (audit/io/units.FINDING_UNITS).
    units: tuple[str, ...]
    severity: str
    origin: str
    description: str
    # The layout capabilities (audit/io/layouts/base.CAPABILITIES) it reads: on a layout
    # without them it is not planned at all; nor on one with a capability of `unless`
    # (whose own flags report the same defect).
    requires: frozenset[str]
    # Its SQL at the level it reads (see module doc), None when the layout never carries
    # what it needs: `sql` over a row's own fields, once per view; `context_sql` over a
    # context (candidates, supporting facts, title keys, the source row `s`), once per
    # distinct context; `unit_sql` over a translated unit `u`, once per unit of `units`. A
    # check that reads several declares each part.
    sql: str | None = None
    context_sql: str | None = None
    unit_sql: str | None = None
    # Capabilities its SQL needs ("source", "record_hash"); without them `witness` (a
    # context expression) runs instead.
    needs: frozenset[str] = frozenset()
    # What the layout shows without those capabilities (may miss cases), or None.
    witness: str | None = None
    # Part of the release's own status rule (SPEC §2, §1.2): compared with shipped flags.
    reference: bool = False
    # The categories its findings can carry, and the default severity of those whose
    # severity differs from the check's.
    categories: tuple[str, ...] = ()
    category_severity: tuple[tuple[str, str], ...] = ()
    # A whole-release check instead of a row expression: prepares what it needs (it may
    # compute slow signals once per distinct text) and returns a SELECT of findings rows
    # (rid, id, source_split, check, unit, paragraph_id, sentence_index, detail, category)
    # and optionally a tenth column, evidence (the substring a view highlights), and an
    # eleventh, source_evidence. A check with thresholds is called with the ones in force
    # as a second argument, {name: value}.
    query: Callable[..., str] | None = None
    # The slow signal layers its query reads (`audit.checks.layers`).
    layers: tuple[SignalLayer, ...] = ()
    # What else decides a query check's findings (its rule's constants): part of the
    # registry fingerprint.
    version: str = ""
    # Tunable thresholds (name, default): a policy file may override them per check.
    thresholds: tuple[tuple[str, bool | int | float], ...] = ()
    unless: frozenset[str] = frozenset()
    # What a text correction can do about its findings (FIXES); by default "unit" for a
    # check of translation origin, "none" for the others.
    fix: str = ""

    def __post_init__(self) -> None:
        if not self.fix:
            object.__setattr__(self, "fix", "unit" if self.origin == "translation" else "none")
        unknown = [u for u in self.units if u not in FINDING_UNITS]
        assert self.units and not unknown, f"{self.name}: units {unknown or 'missing'}"
        capabilities = (self.requires | self.unless | self.needs) - {"source"}
        assert capabilities <= CAPABILITIES.keys(), f"{self.name}: {sorted(capabilities)}"
        assert self.fix in FIXES and self.severity in SEVERITIES and self.origin in ORIGINS

    def applies(self, capabilities: frozenset[str]) -> bool:
        """Whether a layout with these capabilities runs it."""
        return self.requires <= capabilities and not self.unless & capabilities

    def plan(self, capabilities: frozenset[str]
             ) -> tuple[str | None, str | None, str | None, bool]:
        """(row SQL, context SQL, unit SQL, whether they see every case); when they do not,
        a flag the release shipped is carried over as a finding rather than silently
        contradicted."""
        if (self.sql or self.context_sql or self.unit_sql) and self.needs <= capabilities:
            return self.sql, self.context_sql, self.unit_sql, True
        return None, self.witness, None, False


# What the checks of multi-hop releases read: questions, contexts, supporting facts.
MULTIHOP = frozenset({"questions", "contexts", "supporting_facts"})
V1 = MULTIHOP | {"flags:v1.1"}      # the V1.1 reference flags and their kin
V2 = MULTIHOP | {"flags:v2"}        # the V2 RC1 builder's flags
UNITS_ONLY: frozenset[str] = frozenset()   # read only `units`: every layout
