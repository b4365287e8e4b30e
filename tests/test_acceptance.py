"""The acceptance gate (issue 13): each criterion's verdict from known numbers, thresholds
from the policy file, exit codes, and the one-page report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_compare import new_rows, old_rows, write_jsonl

from audit.engine import policy
from audit.reports import acceptance, compare

REPO = Path(__file__).resolve().parent.parent
LIMITS = policy.DEFAULT.acceptance()


@pytest.fixture(scope="module")
def comparison(tmp_path_factory) -> compare.Comparison:
    folder = tmp_path_factory.mktemp("accept")
    old, new = compare.release_versions(str(write_jsonl(folder / "old.jsonl", old_rows())),
                                        str(write_jsonl(folder / "new.jsonl", new_rows())))
    return compare.compare(old, new, n_boot=500)


def test_key_equality_and_structure_from_the_comparison(comparison):
    decision = acceptance.decide(comparison.as_json(), None, LIMITS)
    keys, structure = decision.criteria[:2]
    assert keys.verdict == "fail"
    assert keys.numbers == {"only_old": 1, "only_new": 1, "unit_set_differs": 1,
                               "language_changed": 2}
    # In words, each count's policy name after it (issue 24: "unit_set_differs 1 > 0").
    assert keys.reason == (
        "1 source only in OLD, 0 tolerated (only_old); 1 source only in NEW, 0 "
        "tolerated (only_new); 1 source whose question, answer or paragraph units differ "
        "between OLD and NEW, 0 tolerated (unit_set_differs); 2 matched units whose target "
        "language changed, 0 tolerated (language_changed)")
    assert decision.criteria[2].reason == (
        "no paired review batch was given (the same units rated in OLD and NEW)")
    # NEW: q2 kept its blank question and q3 gained a blank answer.
    assert structure.verdict == "fail"
    assert (structure.numbers["blocking_sources_new"],
            structure.numbers["quarantined_rows_new"]) == (2, 2)
    assert structure.numbers["delta_r"] == pytest.approx(-1 / 9)
    tolerant = {**LIMITS, "max_only_old": 1, "max_only_new": 1, "max_unit_set_differs": 1,
                "max_language_changed": 2, "max_blocking_sources": 2}
    decision = acceptance.decide(comparison.as_json(), None, tolerant)
    assert [c.verdict for c in decision.criteria] == [
        "pass", "pass", "insufficient", "insufficient"]
    assert (decision.verdict, decision.exit_code) == ("insufficient", 3)


def flag(difference: float, ci: list, units: int = 40, sources: int = 30) -> dict:
    old = 0.9
    return {"units": units, "sources": sources, "old_rate": old, "new_rate": old + difference,
            "difference": difference, "ci": ci, "b": 4, "c": 2, "p_value": 0.69}


def evidence(estimate=0.5, ci=(0.2, 0.8), sources=30, flags=None, languages=()) -> dict:
    flags = flags or {name: flag(0.0, [-0.01, 0.01]) for name in acceptance.FLAGS}
    return {"batch_id": "b1", "sufficient": True, "insufficient": [],
            "delta_h": {"estimate": estimate, "ci": list(ci), "sources": sources,
                        "units": 2 * sources, "ratings": 4 * sources},
            "delta_h_by_language": [], "preservation": flags,
            "preservation_by_language": list(languages)}


@pytest.mark.parametrize("given, verdict", [
    (evidence(), "pass"),                                   # [0.2, 0.8] above 0
    (evidence(-0.4, (-0.7, -0.1)), "fail"),                 # wholly below 0
    (evidence(0.0, (-0.3, 0.0)), "fail"),                   # at the bound: no gain
    (evidence(0.2, (-0.1, 0.5)), "insufficient"),           # contains 0
    (evidence(0.5, (0.2, 0.8), sources=19), "insufficient"),  # fewer than 20 sources
    ({**evidence(), "sufficient": False, "insufficient": ["no annotations pulled"]},
     "insufficient"),
])
def test_adequacy_verdicts(given, verdict):
    assert acceptance.adequacy(given, LIMITS).verdict == verdict


def test_adequacy_uses_the_policy_bound():
    raised = {**LIMITS, "delta_h_lower_bound": 0.25}
    result = acceptance.adequacy(evidence(), raised)
    assert result.verdict == "insufficient"
    assert result.reason == "ΔH interval [0.200, 0.800] contains 0.25"
    assert result.thresholds == {"delta_h_lower_bound": 0.25, "min_review_sources": 20}


def test_preservation_verdicts():
    ok = acceptance.preservation(evidence(), LIMITS)
    assert ok.verdict == "pass"
    # The entity rate drops by 5 points: beyond the tolerated 2.
    dropped = {**{n: flag(0.0, [-0.01, 0.01]) for n in acceptance.FLAGS},
               "entities": flag(-0.05, [-0.1, 0.0])}
    result = acceptance.preservation(evidence(flags=dropped), LIMITS)
    assert result.verdict == "fail"
    assert result.reason == "regression beyond 0.02: entities -0.050 (McNemar p 0.69)"
    # Within tolerance on the estimate, but the interval reaches −0.04: not shown.
    wide = {**{n: flag(0.0, [-0.01, 0.01]) for n in acceptance.FLAGS},
            "answer": flag(-0.01, [-0.04, 0.02])}
    result = acceptance.preservation(evidence(flags=wide), LIMITS)
    assert (result.verdict, result.reason) == (
        "insufficient", "the interval of answer reaches below −0.02")
    # One language loses answers significantly after Holm's correction.
    regressing = {"flag": "answer", "language": "th", "difference": -0.3, "b": 9, "c": 0,
                  "p_value": 0.0039, "p_holm": 0.04}
    result = acceptance.preservation(evidence(languages=[regressing]), LIMITS)
    assert result.verdict == "fail"
    assert result.reason == "regression beyond 0.02: answer in th -0.300 (Holm p 0.04)"
    assert result.numbers["regressing_languages"] == [regressing]
    # The same drop with a Holm p above alpha claims nothing.
    result = acceptance.preservation(
        evidence(languages=[{**regressing, "p_holm": 0.2}]), LIMITS)
    assert result.verdict == "pass"


def test_overall_verdict_and_exit_code(comparison):
    tolerant = {**LIMITS, "max_only_old": 1, "max_only_new": 1, "max_unit_set_differs": 1,
                "max_language_changed": 2, "max_blocking_sources": 2}
    decision = acceptance.decide(comparison.as_json(), evidence(), tolerant)
    assert (decision.verdict, decision.exit_code) == ("pass", 0)
    decision = acceptance.decide(comparison.as_json(), evidence(0.0, (-0.3, 0.0)), tolerant)
    assert (decision.verdict, decision.exit_code) == ("fail", 1)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=REPO,
                          capture_output=True, text=True)


def test_cli_gate_writes_json_and_report_and_exits_by_verdict(tmp_path):
    hostile = '<img src=x onerror=alert(1)>'
    old = write_jsonl(tmp_path / f"{hostile}.jsonl", old_rows())
    new = write_jsonl(tmp_path / "new.jsonl", new_rows())
    out = tmp_path / "gate"
    done = cli("accept", str(old), str(new), "--out", str(out), "--n-boot", "300")
    assert done.returncode == 1, done.stderr
    assert "1. key_equality  FAIL" in done.stdout and "verdict: FAIL" in done.stdout
    assert ("3. adequacy      INSUFFICIENT  no paired review batch was given (the same units "
            "rated in OLD and NEW) (give one with --reviews)") in done.stdout
    decision = json.loads((out / "acceptance.json").read_text())
    # The typed Decision writes acceptance.json as the dict did, key for key.
    assert sorted(decision) == ["criteria", "evidence", "exit_code", "new", "note", "old",
                                "reviews", "thresholds", "verdict"]
    assert sorted(decision["criteria"][0]) == ["criterion", "name", "numbers", "reason",
                                               "thresholds", "verdict"]
    assert [c["verdict"] for c in decision["criteria"]] == [
        "fail", "fail", "insufficient", "insufficient"]
    assert decision["thresholds"] == LIMITS and decision["evidence"] is None
    assert (out / "compare.json").is_file() and (out / "units.parquet").is_file()
    page = (out / "report.html").read_text()
    assert "Release acceptance" in page and "plotly" in page.lower()
    assert hostile not in page and "&#60;img src&#61;x onerror&#61;alert&#40;1&#41;&#62;" in page
    assert "descriptive only" in page

    rules = tmp_path / "gate.toml"
    rules.write_text("[acceptance]\nmax_only_old = 1\nmax_only_new = 1\n"
                     "max_unit_set_differs = 1\nmax_language_changed = 2\n"
                     "max_blocking_sources = 2\n")
    done = cli("accept", str(old), str(new), "--policy", str(rules), "--n-boot", "300")
    assert done.returncode == 3, done.stderr
    assert "verdict: INSUFFICIENT" in done.stdout


@pytest.mark.parametrize("body, problem", [
    ("[acceptance]\nmax_only_olds = 1\n", "unknown threshold 'max_only_olds'"),
    ("[acceptance]\nmax_blocking_sources = -1\n", "-1 is out of range"),
    ("[acceptance]\nmax_blocking_sources = 0.5\n", "0.5 is not a whole number"),
    ("[acceptance]\nalpha = 2\n", "2 is out of range"),
])
def test_bad_acceptance_policy_is_refused(tmp_path, body, problem):
    rules = tmp_path / "gate.toml"
    rules.write_text(body)
    done = cli("accept", "data/demo/release", "data/demo/release", "--policy", str(rules))
    assert done.returncode == 2
    assert str(rules) in done.stderr and problem in done.stderr
    assert "Traceback" not in done.stderr
