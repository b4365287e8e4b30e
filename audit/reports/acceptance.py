"""The release-acceptance gate (paper Supplement C.4): may a corrected release claim to be
better than the one before? Four criteria, each pass, fail or insufficient evidence:

1. Key equality: no source only in OLD or only in NEW, no source whose question / answer /
   paragraph units differ, no matched unit whose target language changed (each within its
   tolerated count; default none).
2. Structure: no source of NEW with a release-blocking defect (a quarantined row).
3. Adequacy (Eq. 37): ΔH's source-clustered interval lies above `delta_h_lower_bound`
   (pass), or at or below it (fail); an interval that contains it, or fewer than
   `min_review_sources` reviewed sources, is insufficient evidence.
4. Preservation (answer, entities, language; matched pairs): each flag's drop new − old is
   within the tolerated regression: pass when every interval's lower end is ≥ −tolerance;
   fail when a flag's estimated drop exceeds it, or a language shows one with a
   Holm-adjusted McNemar p below `alpha`; otherwise (or with too few sources)
   insufficient.

The verdict is fail when any criterion fails, else insufficient when any is, else pass
(exit codes 1, 3, 0). The thresholds come from the policy's [acceptance] table
(policy.ACCEPTANCE holds the defaults) and are written beside the numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..errors import ExitCode
from . import render

PASS, FAIL, INSUFFICIENT = "pass", "fail", "insufficient"
EXIT_CODES = {PASS: int(ExitCode.OK), FAIL: int(ExitCode.FAILED),
              INSUFFICIENT: int(ExitCode.INSUFFICIENT)}
FLAGS = ("answer", "entities", "language")
DESCRIPTIVE_NOTE = ("Unpaired comparisons (e.g. V2 − V1 judge scores on independently drawn "
                    "samples, Figure 6 panel B) are descriptive only: they are not evidence "
                    "for criteria 3 and 4, which need the same units reviewed in both versions.")


@dataclass(frozen=True)
class Criterion:
    """One criterion's verdict, why, and the numbers and thresholds it was decided on."""

    criterion: int
    name: str
    verdict: str
    reason: str
    numbers: dict[str, Any]
    thresholds: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """The gate's decision: the overall verdict and its exit code, each criterion, the
    thresholds in force, the two versions and the paired review batch it rests on.
    `as_json()` is acceptance.json (without the evidence, which the CLI adds)."""

    verdict: str
    exit_code: int
    criteria: tuple[Criterion, ...]
    thresholds: dict[str, Any]
    old: dict[str, Any]
    new: dict[str, Any]
    reviews: str | None
    note: str

    def as_json(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        record["criteria"] = list(record["criteria"])
        return record


def _criterion(number: int, name: str, verdict: str, reason: str, numbers: dict[str, Any],
               thresholds: dict[str, Any]) -> Criterion:
    return Criterion(number, name, verdict, reason, numbers, thresholds)


# What each key-equality count counts, in words: (noun, what is true of it).
KEY_WORDS = {"only_old": ("source", "only in OLD"),
             "only_new": ("source", "only in NEW"),
             "unit_set_differs": ("source", "whose question, answer or paragraph units "
                                            "differ between OLD and NEW"),
             "language_changed": ("matched unit", "whose target language changed")}
NO_REVIEWS = "no paired review batch was given (the same units rated in OLD and NEW)"


def key_equality(comparison: dict[str, Any], limits: dict[str, Any]) -> Criterion:
    """Criterion 1. Its reason says each count over its tolerance in words, the count's
    name (the policy's `max_<name>` key) in brackets after it."""
    keys = comparison["key_equality"]
    numbers = {**keys, "language_changed": comparison["changes"]["language_changed"]}
    thresholds = {f"max_{name}": limits[f"max_{name}"] for name in numbers}
    over = [f"{render.plural(value, KEY_WORDS[name][0])} {KEY_WORDS[name][1]}, "
            f"{thresholds['max_' + name]:,} tolerated ({name})"
            for name, value in numbers.items() if value > thresholds[f"max_{name}"]]
    if over:
        return _criterion(1, "key_equality", FAIL, "; ".join(over), numbers, thresholds)
    return _criterion(1, "key_equality", PASS, "every source and unit matched, every target "
                      "language kept", numbers, thresholds)


def structure(comparison: dict[str, Any], limits: dict[str, Any]) -> Criterion:
    new = comparison["quarantined"]["new"]
    numbers = {"blocking_sources_new": new["sources"], "quarantined_rows_new": new["rows"],
               "r_struct_old": comparison["r_struct"]["old"],
               "r_struct_new": comparison["r_struct"]["new"],
               "delta_r": comparison["delta_r"], "delta_r_ci": comparison["delta_r_ci"]}
    thresholds = {"max_blocking_sources": limits["max_blocking_sources"]}
    if new["sources"] > limits["max_blocking_sources"]:
        return _criterion(2, "structure", FAIL, f"{new['sources']} source(s) of NEW hold a "
                          f"release-blocking defect ({new['rows']} quarantined row(s))",
                          numbers, thresholds)
    return _criterion(2, "structure", PASS, "no release-blocking defect in NEW beyond the "
                      "tolerated count", numbers, thresholds)


def adequacy(evidence: dict[str, Any] | None, limits: dict[str, Any]) -> Criterion:
    thresholds = {"delta_h_lower_bound": limits["delta_h_lower_bound"],
                  "min_review_sources": limits["min_review_sources"]}
    if evidence is None:
        return _criterion(3, "adequacy", INSUFFICIENT, NO_REVIEWS, {}, thresholds)
    h = evidence["delta_h"]
    numbers = {"delta_h": h["estimate"], "delta_h_ci": h["ci"], "sources": h["sources"],
               "units": h["units"], "ratings": h["ratings"]}
    bound = limits["delta_h_lower_bound"]
    low, high = h["ci"]
    if not evidence["sufficient"] or h["estimate"] is None or low is None:
        why = "; ".join(evidence.get("insufficient") or ["no complete pair"])
        return _criterion(3, "adequacy", INSUFFICIENT, why, numbers, thresholds)
    if h["sources"] < limits["min_review_sources"]:
        return _criterion(3, "adequacy", INSUFFICIENT, f"{h['sources']} reviewed source(s), "
                          f"fewer than {limits['min_review_sources']}", numbers, thresholds)
    if low > bound:
        return _criterion(3, "adequacy", PASS, f"ΔH interval [{low:.3f}, {high:.3f}] lies "
                          f"above {bound}", numbers, thresholds)
    if high <= bound:
        return _criterion(3, "adequacy", FAIL, f"ΔH interval [{low:.3f}, {high:.3f}] lies at "
                          f"or below {bound}: no adequacy gain", numbers, thresholds)
    return _criterion(3, "adequacy", INSUFFICIENT, f"ΔH interval [{low:.3f}, {high:.3f}] "
                      f"contains {bound}", numbers, thresholds)


def preservation(evidence: dict[str, Any] | None, limits: dict[str, Any]) -> Criterion:
    tolerance = limits["max_preservation_regression"]
    thresholds = {"max_preservation_regression": tolerance, "alpha": limits["alpha"],
                  "min_review_sources": limits["min_review_sources"]}
    if evidence is None:
        return _criterion(4, "preservation", INSUFFICIENT, NO_REVIEWS, {}, thresholds)
    flags = {flag: evidence["preservation"][flag] for flag in FLAGS}
    languages = [row for row in evidence["preservation_by_language"]
                 if row.get("p_holm") is not None and row["difference"] is not None
                 and row["difference"] < -tolerance and row["p_holm"] < limits["alpha"]]
    numbers = {"flags": {flag: {k: row[k] for k in ("units", "old_rate", "new_rate",
                                                       "difference", "ci", "b", "c", "p_value")}
                         for flag, row in flags.items()},
               "regressing_languages": [{k: row[k] for k in ("flag", "language", "difference",
                                                           "b", "c", "p_value", "p_holm")}
                                        for row in languages]}
    dropped = [f"{flag} {row['difference']:+.3f} (McNemar p {row['p_value']:.3g})"
               for flag, row in flags.items()
               if row["difference"] is not None and row["difference"] < -tolerance]
    if dropped or languages:
        named = dropped + [f"{row['flag']} in {row['language']} {row['difference']:+.3f} "
                           f"(Holm p {row['p_holm']:.3g})" for row in languages]
        return _criterion(4, "preservation", FAIL, "regression beyond "
                          f"{tolerance}: " + "; ".join(named), numbers, thresholds)
    sources = min((row["sources"] for row in flags.values()), default=0)
    if not evidence["sufficient"] or sources < limits["min_review_sources"]:
        return _criterion(4, "preservation", INSUFFICIENT, f"{sources} reviewed source(s) "
                          f"per flag at least, fewer than {limits['min_review_sources']}",
                          numbers, thresholds)
    wide = [flag for flag, row in flags.items()
            if row["ci"][0] is None or row["ci"][0] < -tolerance]
    if wide:
        return _criterion(4, "preservation", INSUFFICIENT, "the interval of " +
                          ", ".join(wide) + f" reaches below −{tolerance}", numbers, thresholds)
    return _criterion(4, "preservation", PASS, f"every flag's drop is within {tolerance}",
                      numbers, thresholds)


def decide(comparison: dict[str, Any], evidence: dict[str, Any] | None,
           limits: dict[str, Any]) -> Decision:
    """acceptance.json: each criterion's verdict with its numbers and thresholds, and the
    overall verdict and exit code."""
    criteria = [key_equality(comparison, limits), structure(comparison, limits),
                adequacy(evidence, limits), preservation(evidence, limits)]
    verdicts = {c.verdict for c in criteria}
    overall = FAIL if FAIL in verdicts else INSUFFICIENT if INSUFFICIENT in verdicts else PASS
    return Decision(overall, EXIT_CODES[overall], tuple(criteria), dict(limits),
                    comparison["old"], comparison["new"],
                    evidence["batch_id"] if evidence else None, DESCRIPTIVE_NOTE)
