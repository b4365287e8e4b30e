"""Language routing: which two annotators judge each review unit, and which adjudicator
settles their disagreements (SPEC §5: two bilingual annotators per item, a third
adjudicates).

Annotators declare the languages they read besides English: `ana@example.org:ar,fa`.
A unit's *group* is the set of non-English languages it shows (sampling's `languages`
column, joined by '+': "ar", "it+ko+nl"; "en" for an English unit; "" for MAPLE pairs,
which need no language). A unit goes only to annotators who read every language of its
group. Each group gets one pair of annotators for all its units (so a batch has two
bilingual annotators per language, and each annotator one queue per language):

- groups are served scarcest first (fewest readers), then by name;
- the pair is the two least-loaded readers so far (load = units already routed to them),
  ties broken by the order the annotators were declared;
- with one Label Studio per side (`side` set, blinding enforced by separate servers),
  annotator 1 comes from side "annotator 1" and annotator 2 from side "annotator 2".

A group without two readers is left out whole, each unit with the stated reason, and the
shortfall per language says how many units each language lost and why. Adjudicators are
routed the same way, one per group, never one of the group's pair. Post-editing needs one
editor per group (`size=1`): the "pair" is then that one editor, in slot annotator 1.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ..errors import InputError
from ..languages import BY_CODE, UNKNOWN_CODE, normalized

SLOTS = ("annotator 1", "annotator 2")
NO_LANGUAGE = ""          # the group of MAPLE items
ENGLISH = "en"
_EMAIL = re.compile(r"^[^@\s:,]+@[^@\s:,]+\.[^@\s:,]+$")
EXAMPLE = "EMAIL:LANG,LANG such as ana@example.org:ar,fa"
ADJUDICATION = "adjudication"
ROLES = (*SLOTS, ADJUDICATION)


@dataclass(frozen=True)
class Annotator:
    email: str                    # lower case, as Label Studio stores it
    languages: frozenset[str]     # codes read besides English
    side: str | None = None       # a SLOTS member when each side has its own server

    def reads(self, group: str) -> bool:
        return set(group_languages(group)) <= self.languages

    @property
    def spec(self) -> str:
        return f"{self.email}:{','.join(sorted(self.languages))}"


def parse_annotator(spec: str, *, side: str | None = None,
                    where: str = "annotators") -> Annotator:
    """`EMAIL[:LANG,LANG…]`; the languages are release codes (see audit/languages.py)."""
    if not isinstance(spec, str):
        raise InputError(where, f"{spec!r} is not text", expected=EXAMPLE)
    email, _, tail = spec.strip().partition(":")
    email = email.strip().lower()
    if not _EMAIL.match(email):
        raise InputError(where, f"{spec!r}: {email!r} is not an email address",
                         expected=EXAMPLE)
    codes = {code.strip() for code in tail.split(",") if code.strip()}
    unknown = sorted(c for c in codes if not _known(c))
    if unknown:
        raise InputError(where, f"{spec!r}: unknown language code(s) {', '.join(unknown)}",
                         expected="codes such as " + ", ".join(sorted(BY_CODE)[:6]) + " …")
    # "deu" reads what "de" does: a mapped release's units carry the normalized code.
    return Annotator(email, frozenset({normalized(c) for c in codes} - {ENGLISH}), side)


def _known(code: str) -> bool:
    """One of the 24, or a language ICU can name (a mapped release may have any)."""
    if code in BY_CODE:
        return True
    if code == UNKNOWN_CODE:
        return False
    from ..language.anyscript import language_info
    info = language_info(code)
    return info is not None and info.name is not None


def parse_annotators(specs: Sequence[str] | Mapping[str, Sequence[str]],
                     where: str = "annotators") -> list[Annotator]:
    """A list of specs (one shared server), or {side: [specs]} with both SLOTS as sides
    (one server per side). An email may appear once."""
    if isinstance(specs, Mapping):
        if set(specs) != set(SLOTS):
            raise InputError(where, f"sides {sorted(specs)}",
                             expected=f"exactly the sides {SLOTS[0]!r} and {SLOTS[1]!r}")
        found = [parse_annotator(s, side=side, where=f"{where}.{side}")
                 for side in SLOTS for s in _listed(specs[side], f"{where}.{side}")]
    else:
        found = [parse_annotator(s, where=where) for s in _listed(specs, where)]
    repeated = sorted(email for email, n in Counter(a.email for a in found).items() if n > 1)
    if repeated:
        raise InputError(where, f"{', '.join(repeated)} listed more than once",
                         expected="each annotator once (on one side)")
    return found


def _listed(specs: object, where: str) -> list:
    if isinstance(specs, str) or not isinstance(specs, (list, tuple)):
        raise InputError(where, f"{specs!r}", expected=f"a list of {EXAMPLE}")
    return list(specs)


def group_of(languages: Iterable[str] | None) -> str:
    """The group of a unit showing these non-English languages."""
    codes = sorted(set(languages or ()) - {ENGLISH})
    return "+".join(codes) if codes else ENGLISH


def group_languages(group: str) -> list[str]:
    return [code for code in group.split("+") if code and code != ENGLISH]


# ------------------------------------------------------------------------- routing

@dataclass(frozen=True)
class Routing:
    """pairs: group -> (annotator 1, annotator 2); items: item_id -> group (routed items
    only); left_out: item_id -> (group, reason); shortfall: one row per language."""

    pairs: dict[str, tuple[str, ...]]
    items: dict[str, str]
    left_out: dict[str, tuple[str, str]]
    shortfall: list[dict]

    def annotators_of(self, item_id: str) -> tuple[str, str]:
        return self.pairs[self.items[item_id]]

    def as_json(self) -> dict:
        return {"pairs": {g: list(p) for g, p in sorted(self.pairs.items())},
                "left_out": [{"item_id": i, "group": g, "reason": r}
                             for i, (g, r) in self.left_out.items()],
                "shortfall": self.shortfall}


def route(item_ids: Sequence[str], groups: Sequence[str],
          annotators: Sequence[Annotator],
          fixed: Mapping[str, tuple[str, ...]] | None = None, size: int = 2) -> Routing:
    """Route each item (its group) to a pair of annotators, or with size=1 to one
    (module docstring). `fixed` pairs (recorded by an earlier push) are kept as they are
    and count as load."""
    members: dict[str, list[str]] = {}
    for item_id, group in zip(item_ids, groups, strict=True):
        members.setdefault(group, []).append(item_id)
    sides = any(a.side for a in annotators)
    order = {a.email: i for i, a in enumerate(annotators)}
    load: Counter[str] = Counter()
    pairs, left_out = {}, {}

    def pick(candidates: list[Annotator], exclude: str | None = None) -> str | None:
        ranked = sorted((a for a in candidates if a.email != exclude),
                        key=lambda a: (load[a.email], order[a.email]))
        return ranked[0].email if ranked else None

    for group, pair in (fixed or {}).items():
        if group in members:
            pairs[group] = tuple(pair)
            load.update({email: len(members[group]) for email in pair})
    readers = {g: [a for a in annotators if a.reads(g)] for g in members}
    for group in sorted(set(members) - set(pairs), key=lambda g: (len(readers[g]), g)):
        pool = readers[group]
        if sides:
            first = pick([a for a in pool if a.side == SLOTS[0]])
            second = pick([a for a in pool if a.side == SLOTS[1]])
        else:
            first = pick(pool)
            second = pick(pool, exclude=first)
        chosen = (first, second)[:size]
        if None in chosen:
            reason = _shortage(group, pool, sides, size)
            left_out.update({item_id: (group, reason) for item_id in members[group]})
            continue
        pairs[group] = chosen
        load.update({email: len(members[group]) for email in chosen})
    items = {i: g for g, ids in members.items() if g in pairs for i in ids}
    return Routing(pairs, items, left_out, _shortfall(members, pairs, left_out, annotators))


def _shortage(group: str, pool: list[Annotator], sides: bool, size: int) -> str:
    languages = group_languages(group)
    what = "+".join(languages) if languages else "English"
    if UNKNOWN_CODE in languages:
        return f"its language is unknown ({UNKNOWN_CODE}): no annotator can be chosen"
    if sides:
        missing = [s for s in SLOTS[:size] if not any(a.side == s for a in pool)]
        return f"no annotator on side {' and '.join(map(repr, missing))} reads {what}"
    if not pool:
        return f"no annotator reads {what}"
    return f"only one annotator reads {what} ({pool[0].email}); two are needed"


def _shortfall(members: dict[str, list[str]], pairs: dict, left_out: dict,
               annotators: Sequence[Annotator]) -> list[dict]:
    rows: dict[str, dict] = {}
    for group, ids in members.items():
        for language in group_languages(group) or [group or "-"]:
            row = rows.setdefault(language, {
                "language": language, "units": 0, "routed": 0, "left_out": 0,
                "readers": sum(1 for a in annotators if language in a.languages
                               or language in (ENGLISH, "-")),
                "reason": ""})
            row["units"] += len(ids)
            if group in pairs:
                row["routed"] += len(ids)
            else:
                row["left_out"] += len(ids)
                row["reason"] = row["reason"] or left_out[ids[0]][1]
    return [rows[language] for language in sorted(rows)]


def route_adjudicators(groups: Iterable[str], adjudicators: Sequence[Annotator],
                       pairs: Mapping[str, tuple[str, str]]
                       ) -> tuple[dict[str, str], dict[str, str]]:
    """group -> adjudicator (reads the group, is not one of its pair; least loaded, in
    declared order), and group -> reason for groups nobody can adjudicate."""
    order = {a.email: i for i, a in enumerate(adjudicators)}
    load: Counter[str] = Counter()
    chosen, missing = {}, {}
    for group in sorted(set(groups)):
        pool = [a for a in adjudicators if a.reads(group) and a.email not in pairs[group]]
        if not pool:
            languages = "+".join(group_languages(group)) or "English"
            missing[group] = (f"no adjudicator reads {languages} and is neither of its two "
                              f"annotators")
            continue
        best = min(pool, key=lambda a: (load[a.email], order[a.email]))
        chosen[group] = best.email
        load[best.email] += 1
    return chosen, missing
