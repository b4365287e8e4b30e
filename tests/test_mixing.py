"""Mixing statistics (SPEC §4): closed forms, Wilson and t intervals, the paper's validation
figures, Table 11 counts, facet counts, the ℓq × gold matrix, and the CLI."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest
from test_descriptors import bridge, instance
from test_inputs import cli

from audit.analysis import mixing
from audit.io import release
from audit.language import descriptors
from devkit import synth


def test_closed_forms_for_24_languages_and_two_gold_paragraphs():
    assert round(100 * mixing.expected_interface(24, 2), 3) == 99.826
    assert round(100 * mixing.expected_composition(24, 2), 3) == 95.833
    assert mixing.expected_interface(24, 2) == pytest.approx(1 - 1 / 576, abs=1e-15)
    assert mixing.expected_composition(24, 1) == 0.0       # one gold paragraph never mixes
    assert mixing.expected_interface(24, 1) == pytest.approx(23 / 24)
    assert mixing.expected_absence(24, 0) == 1.0
    assert mixing.expected_k_c(24, 1) == pytest.approx(1.0, abs=1e-12)
    assert mixing.expected_k_c(24, 2) == pytest.approx(1 + 23 / 24)


def test_spec_validation_figures_are_consistent_with_the_closed_forms():
    """SPEC §4: absence 65.490% and E[K_C] 8.282 expected on validation, m ≈ 10."""
    at_ten = mixing.expected_absence(24, 10)
    assert round(100 * at_ten, 3) == 65.338
    assert round(mixing.expected_k_c(24, 10), 3) == 8.319
    # The published pair is one average: E[K_C] = L(1 − mean absence).
    assert round(24 * (1 - 0.65490), 3) == 8.282
    # …of items with m a little under 10 on average (7,405 rows, 73,700 candidates):
    assert mixing.expected_absence(24, 10) < 0.65490 < mixing.expected_absence(24, 9.9)
    assert 9.9 < 73_700 / 7_405 < 10


def test_wilson_and_t_intervals_against_known_values():
    low, high = mixing.wilson(5, 10)
    assert (round(float(low), 4), round(float(high), 4)) == (0.2366, 0.7634)
    z = 1.959963984540054
    p, n = 7391 / 7405, 7405
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = mixing.wilson(7391, 7405)
    assert (float(low), float(high)) == pytest.approx((centre - half, centre + half), abs=1e-12)
    low, high = mixing.t_interval(9.0, 1.0, 3)                 # t(0.975, 2) = 4.302653
    assert (low, high) == pytest.approx((9 - 4.302653 / math.sqrt(3),
                                         9 + 4.302653 / math.sqrt(3)), abs=1e-6)
    assert mixing.t_interval(5.0, 0.0, 4) == (5.0, 5.0)
    assert mixing.t_interval(5.0, None, 1) == (None, None)


def _paper_validation() -> pa.Table:
    """7,405 two-gold items with the published stratum counts S0–S4 = 0/14/564/312/6,515."""
    strata = ["S1"] * 14 + ["S2"] * 564 + ["S3"] * 312 + ["S4"] * 6515
    n = len(strata)
    return pa.table({
        "source_split": ["validation"] * n, "question_language": ["en"] * n,
        "gold_count": [2] * n, "candidate_count": [10] * n, "k_c": [8] * n,
        "interface_crossing": [s != "S1" for s in strata],
        "composition_crossing": [s in ("S2", "S4") for s in strata],
        "question_language_absent": [i % 3 != 0 for i in range(n)],
        "stratum": strata, "script_relation": ["same-script"] * n,
        "family_relation": ["same-family"] * n, "pair_relation": ["same-script"] * n,
        "role_condition": ["undetermined"] * n,
        "gold_languages": [["en", "fr"]] * n, "support_languages": [["en", "fr"]] * n,
        "candidate_languages": [["en"] * 10] * n,
    })


def test_paper_validation_realised_rates():
    result = mixing.mixing(_paper_validation())
    rates = {(r["group"], r["measure"]): r for r in result["rates"].to_pylist()}
    i, c = rates[("all", "I")], rates[("all", "C")]
    assert (i["n"], i["count"], round(100 * i["realised"], 3)) == (7405, 7391, 99.811)
    assert (c["count"], round(100 * c["realised"], 3)) == (7079, 95.598)
    assert round(100 * i["expected"], 3) == 99.826 and round(100 * c["expected"], 3) == 95.833
    assert i["ci_low"] < i["realised"] < i["ci_high"] <= 1
    k = rates[("all", "K_C")]
    assert (k["realised"], k["ci_low"], k["ci_high"]) == (8.0, 8.0, 8.0)
    assert k["expected"] == pytest.approx(mixing.expected_k_c(24, 10))
    assert rates[("split", "I")]["value"] == "validation"
    counts = {(r["facet"], r["value"], r["split"]): r["n"] for r in result["counts"].to_pylist()}
    assert [counts.get(("stratum", s, "all"), 0) for s in ("S0", "S1", "S2", "S3", "S4")] == [
        0, 14, 564, 312, 6515]


def _release(tmp_path) -> pa.Table:
    records = [
        instance("a", "de", ["de", "fr", "es"], ["p0", "p1"], split="train"),
        instance("b", "de", ["fr", "fr", "ja"], ["p0", "p1"], split="train"),
        instance("c", "ja", ["ja", "ja"], ["p0", "p1"], facts=[["T0", 0], ["T0", 1],
                                                                 ["T1", 0]]),
        bridge("d", "fr", "de", "de"),
        instance("e", "fr", ["de", "es"], facts=[["Nowhere", 0]]),
    ]
    for position, record in enumerate(records):
        record["release_position"] = position
        record["record_sha256"] = synth.record_sha256(record)
    synth.write_release(records, tmp_path / "release")
    return descriptors.descriptors(release.open_release(tmp_path / "release"))


def test_rates_per_group_use_each_items_own_m_and_g(tmp_path):
    result = mixing.mixing(_release(tmp_path))
    rates = {(r["group"], r["value"], r["measure"]): r for r in result["rates"].to_pylist()}
    e = mixing
    # I and C over the four items with gold; absence and K_C over all five
    i = rates[("all", "all", "I")]
    assert (i["n"], i["count"]) == (4, 3)                     # a, b, d cross; c (ja/ja) not
    assert i["expected"] == pytest.approx(e.expected_interface(24, 2))
    absent = rates[("all", "all", "question_language_absent")]
    assert (absent["n"], absent["count"]) == (5, 3)           # b, d, e
    assert absent["expected"] == pytest.approx(
        (3 * e.expected_absence(24, 3) + 2 * e.expected_absence(24, 2)) / 5)
    k = rates[("all", "all", "K_C")]
    assert k["realised"] == pytest.approx((3 + 2 + 1 + 2 + 2) / 5)
    assert k["expected"] == pytest.approx(
        (3 * e.expected_k_c(24, 3) + 2 * e.expected_k_c(24, 2)) / 5)
    train = rates[("split", "train", "C")]
    assert (train["n"], train["count"], train["realised"]) == (2, 1, 0.5)   # a mixes, b not
    low, high = e.wilson(1, 2)
    assert (train["ci_low"], train["ci_high"]) == pytest.approx((float(low), float(high)))
    ja = rates[("question_language", "ja", "C")]
    assert (ja["n"], ja["count"], ja["expected"]) == (1, 0, pytest.approx(23 / 24))
    fr_i = rates[("question_language", "fr", "I")]
    assert (fr_i["n"], fr_i["count"]) == (1, 1)               # e has no gold


def test_distribution_counts_matrix(tmp_path):
    result = mixing.mixing(_release(tmp_path))
    dist = {(r["language"], r["split"]): (r["questions"], r["support"], r["docs"])
            for r in result["distribution"].to_pylist()}
    assert dist[("de", "train")] == (2, 1, 1)
    assert dist[("fr", "train")] == (0, 3, 3)
    assert dist[("ja", "validation")] == (1, 3, 2)            # support = fact occurrences
    assert dist[("de", "validation")] == (0, 2, 3)
    assert dist[("fr", "validation")] == (2, 0, 0)
    assert dist[("sv", "train")] == (0, 0, 0)                 # every language is listed
    assert len(result["distribution"]) == 24 * 2
    counts = {(r["facet"], r["value"], r["split"]): r["n"] for r in result["counts"].to_pylist()}
    assert counts[("stratum", "S2", "all")] == 1 and counts[("stratum", "S3", "train")] == 1
    assert counts[("stratum", "S3", "all")] == 2                    # b and d
    assert counts[("stratum", "NA", "validation")] == 1             # c: no distractor
    assert counts[("stratum", "none", "validation")] == 1           # e: no gold
    assert ("stratum", "S4", "all") not in counts
    assert counts[("pair_relation", "same-language", "all")] == 3   # b, c, d
    assert counts[("role_condition", "query mismatch", "all")] == 1
    matrix = {(r["question_language"], r["gold_language"], r["split"]): r["n"]
              for r in result["matrix"].to_pylist()}
    assert matrix[("de", "fr", "all")] == 2 and matrix[("de", "de", "train")] == 1
    assert matrix[("ja", "ja", "validation")] == 1            # once per item, not per paragraph
    assert matrix[("fr", "de", "all")] == 1 and ("fr", "es", "all") not in matrix


def test_cli_mixing_on_the_demo_release():
    done = cli("mixing", "data/demo/release")
    assert done.returncode == 0, done.stderr
    assert "Expected vs realised" in done.stdout and "Table 11" in done.stdout
    assert "Question language × gold language" in done.stdout
    done = cli("mixing", "data/demo/release", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["rows"] == 240 and data["L"] == 24
    first = data["rates"][0]
    assert (first["group"], first["measure"], first["n"]) == ("all", "I", 236)
    assert sum(r["questions"] for r in data["distribution"]) == 240
    assert sum(r["n"] for r in data["counts"]
               if r["facet"] == "stratum" and r["split"] == "all") == 240


def test_cli_mixing_on_the_v2_sample_and_a_scan_directory(tmp_path, realdata):
    sample = realdata / "xhotpotqa_v2_sample" / "xhotpotqa_v2_sample.parquet"
    done = cli("mixing", str(sample), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["rows"] == 197
    assert sum(r["docs"] for r in data["distribution"]) == sum(
        len(r) for r in release.open_release(sample).con.sql(
            "SELECT candidates FROM release").fetchnumpy()["candidates"])
    done = cli("scan", str(sample), "--out", str(tmp_path / "scan"))
    assert done.returncode == 0, done.stderr
    again = cli("mixing", str(tmp_path / "scan"), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == data


def test_cli_mixing_bad_input_exits_2(tmp_path):
    done = cli("mixing", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "no such file" in done.stderr
