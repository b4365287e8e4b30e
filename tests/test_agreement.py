"""Agreement over pulled review annotations (audit/review/agreement.py): κ, weighted κ and α
against hand computations, the pairs split, the adjudication queue, final labels, the
cluster bootstrap and the degenerate cases."""

from __future__ import annotations

import datetime as dt
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from sklearn.metrics import cohen_kappa_score

from audit.review import agreement as ag

STAMP = dt.datetime(2026, 11, 30, 9, 0)


def annotations(records: list[dict]) -> pa.Table:
    """Rows with defaults for every schema column; `id` is the annotation id."""
    rows = []
    for r in records:
        rows.append({
            "item_id": r["item"], "cluster_id": r.get("cluster", r["item"]),
            "kind": r.get("kind", "translation"), "language": r.get("language", "de"),
            "unit": r.get("unit", "paragraph"), "setting": r.get("setting"),
            "annotator": r["who"], "role": r.get("role", "initial"),
            "criterion": r["criterion"], "value": r["value"],
            "annotation_id": r.get("id", 0),
            "updated_at": STAMP + dt.timedelta(minutes=r.get("minute", 0)),
            "source_a": r.get("source_a"), "source_b": r.get("source_b"),
        })
    return pa.Table.from_pylist(rows)


def paired(criterion: str, first: list, second: list, **extra) -> list[dict]:
    """Item i rated first[i] by 'ann' and second[i] by 'bob' (None = not answered)."""
    records = []
    for i, (a, b) in enumerate(zip(first, second)):
        for who, value in (("ann", a), ("bob", b)):
            if value is not None:
                records.append({"item": f"i{i:02d}", "who": who, "criterion": criterion,
                                "value": str(value), **extra})
    return records


def stat(result: pa.Table, criterion: str, name: str) -> dict:
    rows = [r for r in result.to_pylist()
            if r["criterion"] == criterion and r["statistic"] == name]
    assert len(rows) == 1, (criterion, name)
    return rows[0]


# Ten items, two annotators, answer_preserved:
#   yes/yes x6, no/no x2, yes/no x1 (ann yes, bob no), no/yes x1
ANN = ["yes"] * 6 + ["no"] * 2 + ["yes", "no"]
BOB = ["yes"] * 6 + ["no"] * 2 + ["no", "yes"]


def test_unweighted_kappa_raw_agreement_and_nominal_alpha_by_hand():
    result = ag.agreement(annotations(paired("answer_preserved", ANN, BOB)), n_boot=200)
    # p_o = 8/10 = 0.8; ann: yes 7/10, no 3/10; bob: yes 7/10, no 3/10
    # p_e = 0.7*0.7 + 0.3*0.3 = 0.58
    # κ = (p_o - p_e) / (1 - p_e) = 0.22 / 0.42 = 11/21
    assert stat(result, "answer_preserved", "cohen_kappa")["estimate"] == \
        pytest.approx(11 / 21, abs=1e-9)
    assert stat(result, "answer_preserved", "raw_agreement")["estimate"] == \
        pytest.approx(0.8, abs=1e-9)
    # α (nominal): coincidences o[yes,yes] = 12, o[no,no] = 4, o[yes,no] = o[no,yes] = 2;
    # n_yes = 14, n_no = 6, n = 20.
    # α = 1 - (n-1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k = 1 - 19*4 / (2*14*6) = 1 - 76/168 = 23/42
    alpha = stat(result, "answer_preserved", "krippendorff_alpha")
    assert alpha["estimate"] == pytest.approx(23 / 42, abs=1e-9)
    assert alpha["level"] == "nominal"
    assert alpha["n_items"] == 10 and alpha["n_clusters"] == 10
    # a nominal criterion has no weighted κ
    assert {r["statistic"] for r in result.to_pylist()} == {
        "raw_agreement", "cohen_kappa", "krippendorff_alpha"}


def test_weighted_kappa_on_ratings_by_hand_with_fixed_labels():
    # Four items rated 1-5: (2,2) (4,5) (5,5) (4,2); categories 1 and 3 unused.
    table = annotations(paired("adequacy", [2, 4, 5, 4], [2, 5, 5, 2]))
    result = ag.agreement(table, n_boot=200)
    # Marginals: ann 2: .25, 4: .50, 5: .25; bob 2: .50, 5: .50.
    # Linear disagreement weight |i-j|:
    #   observed  (0 + 1 + 0 + 2) / 4 = 0.75
    #   expected  .25*.5*3 + .5*.5*2 + .5*.5*1 + .25*.5*3 = 1.5
    #   κ_linear = 1 - 0.75 / 1.5 = 0.5
    assert stat(result, "adequacy", "cohen_kappa_linear")["estimate"] == \
        pytest.approx(0.5, abs=1e-9)
    # Quadratic weight (i-j)^2:
    #   observed  (0 + 1 + 0 + 4) / 4 = 1.25
    #   expected  .25*.5*9 + .5*.5*4 + .5*.5*1 + .25*.5*9 = 3.5
    #   κ_quadratic = 1 - 1.25 / 3.5 = 9/14
    assert stat(result, "adequacy", "cohen_kappa_quadratic")["estimate"] == \
        pytest.approx(9 / 14, abs=1e-9)
    # Without fixed labels sklearn would squeeze 2,4,5 onto positions 0,1,2 and give 2/3.
    assert cohen_kappa_score([2, 4, 5, 4], [2, 5, 5, 2], weights="quadratic") == \
        pytest.approx(2 / 3)
    assert stat(result, "adequacy", "raw_agreement")["estimate"] == pytest.approx(0.5)
    # Unweighted κ on ratings as well: p_o = 2/4; p_e = .25*.5 (2) + .25*.5 (5) = .25;
    #   κ = (.5 - .25) / (1 - .25) = 1/3
    assert stat(result, "adequacy", "cohen_kappa")["estimate"] == pytest.approx(1 / 3, abs=1e-9)


def test_ordinal_alpha_by_hand():
    table = annotations(paired("fluency", [2, 4, 5, 4], [2, 5, 5, 2]))
    alpha = stat(ag.agreement(table, n_boot=200), "fluency", "krippendorff_alpha")
    # Pairable values: n_2 = 3, n_4 = 2, n_5 = 3 (n_1 = n_3 = 0), n = 8.
    # Ordinal δ²(c,k) = (Σ_{g=c..k} n_g - (n_c + n_k)/2)²:
    #   δ²(2,4) = (3+0+2 - 2.5)² = 6.25; δ²(4,5) = (5 - 2.5)² = 6.25; δ²(2,5) = (8 - 3)² = 25
    # Coincidences off the diagonal: o[4,5] = o[5,4] = 1, o[2,4] = o[4,2] = 1.
    #   Σ o δ² = 2*6.25 + 2*6.25 = 25
    #   Σ n_c n_k δ² = 2 * (3*2*6.25 + 2*3*6.25 + 3*3*25) = 600
    # α = 1 - (n-1) * 25 / 600 = 1 - 175/600 = 17/24
    assert alpha["estimate"] == pytest.approx(17 / 24, abs=1e-9)
    assert alpha["level"] == "ordinal"


def test_bootstrap_is_deterministic_for_a_seed_and_contains_the_estimate():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 5, 60)
    first = np.clip(truth + rng.choice([-1, 0, 1], 60, p=[.2, .6, .2]), 0, 4) + 1
    second = np.clip(truth + rng.choice([-1, 0, 1], 60, p=[.2, .6, .2]), 0, 4) + 1
    records = paired("adequacy", first.tolist(), second.tolist())
    for r in records:                        # 20 source instances, three items each
        r["cluster"] = f"s{int(r['item'][1:]) // 3}"
    table = annotations(records)
    once, again = ag.agreement(table, seed=11), ag.agreement(table, seed=11)
    assert once.equals(again)
    assert not once.equals(ag.agreement(table, seed=12))
    for row in once.to_pylist():
        assert row["n_clusters"] == 20 and row["n_boot"] == 2000
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"], row
        assert row["ci_low"] < row["ci_high"]


def test_cluster_weights_draw_n_clusters_with_replacement():
    weights = ag.cluster_weights(7, 500, np.random.default_rng(0))
    assert weights.shape == (500, 7)
    assert (weights.sum(axis=1) == 7).all()
    assert weights.min() >= 0 and 0 < (weights == 0).mean() < 1


def test_replicate_estimators_equal_the_point_estimators():
    """The bootstrap computes κ and α from contingency tables; on any table they must equal
    sklearn's κ and the krippendorff package's α over the raw pairs."""
    rng = np.random.default_rng(3)
    for trial in range(200):
        n_labels, n = int(rng.integers(2, 6)), int(rng.integers(1, 40))
        first = rng.integers(0, n_labels, n)
        second = np.where(rng.random(n) < .6, first, rng.integers(0, n_labels, n))
        table = np.zeros((n_labels, n_labels))
        np.add.at(table, (first, second), 1)
        for level in ("nominal", "ordinal"):
            expected = ag.krippendorff_alpha(first, second, n_labels, level)
            got = float(ag.alpha_of_tables(table[None], level)[0])
            assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(
                expected, abs=1e-12)
        for weights in (None, "linear", "quadratic"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # sklearn warns before returning NaN
                expected = float(cohen_kappa_score(first, second, weights=weights,
                                                   labels=list(range(n_labels))))
            got = ag.cohen_kappa(first, second, n_labels, weights)
            of_table = float(ag.kappa_of_tables(table[None], weights)[0])
            assert (math.isnan(of_table) and math.isnan(got)) or of_table == got
            assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(
                expected, abs=1e-12)


def test_one_category_only_gives_nan_with_a_note_not_an_exception():
    table = annotations(paired("assigned_language", ["yes"] * 5, ["yes"] * 5))
    result = ag.agreement(table, n_boot=100)
    raw = stat(result, "assigned_language", "raw_agreement")
    assert raw["estimate"] == 1.0
    for name in ("cohen_kappa", "krippendorff_alpha"):
        row = stat(result, "assigned_language", name)
        assert math.isnan(row["estimate"]) and math.isnan(row["ci_low"])
        assert "undefined" in row["note"] and "'yes'" in row["note"]


def test_undefined_bootstrap_replicates_are_excluded_and_counted():
    # One disagreeing item among agreeing ones: resamples without it have one category.
    table = annotations(paired("answer_preserved", ["yes"] * 4 + ["no"], ["yes"] * 5))
    row = stat(ag.agreement(table, n_boot=400, seed=1), "answer_preserved", "cohen_kappa")
    assert row["estimate"] == 0.0        # p_o = .8, p_e = .8 * 1 = .8 -> κ = 0
    assert 0 < row["n_boot_defined"] < 400
    assert f"{400 - row['n_boot_defined']} of 400" in row["note"]


def test_pairs_reports_items_with_one_or_three_annotators():
    records = paired("fluency", [4, 5, 3], [4, 4, 3])
    records.append({"item": "i02", "who": "cay", "criterion": "fluency", "value": "3"})
    records.append({"item": "i03", "who": "ann", "criterion": "fluency", "value": "5"})
    result = ag.pairs(annotations(records))
    complete = result.complete.to_pylist()
    assert [(r["item_id"], r["annotator_1"], r["annotator_2"], r["value_1"], r["value_2"])
            for r in complete] == [("i00", "ann", "bob", "4", "4"), ("i01", "ann", "bob", "5", "4")]
    irregular = {r["item_id"]: r for r in result.irregular.to_pylist()}
    assert set(irregular) == {"i02", "i03"}
    assert irregular["i02"]["annotators"] == ["ann", "bob", "cay"]
    assert irregular["i03"]["n_annotators"] == 1
    row = stat(ag.agreement(annotations(records), n_boot=50), "fluency", "raw_agreement")
    assert (row["n_items"], row["n_irregular"]) == (2, 2)


def planted_review() -> list[dict]:
    """Ten items x (adequacy, answer_preserved, consequence, comment). Planted:
    i03 adequacy 4/5; i07 answer_preserved and consequence; i09 consequence answered by
    one annotator only; i05 differs only in its comment; i10 has one annotator."""
    records = []
    for i in range(10):
        item = f"i{i:02d}"
        for who in ("ann", "bob"):
            values = {"adequacy": "5", "answer_preserved": "yes", "consequence": "cosmetic",
                      "comment": f"{who} was here"}
            if item == "i03" and who == "bob":
                values["adequacy"] = "4"
            if item == "i07" and who == "bob":
                values.update(answer_preserved="no", consequence="label-invalidating")
            if item == "i09" and who == "bob":
                del values["consequence"]
            for criterion, value in values.items():
                records.append({"item": item, "cluster": f"s{i // 2}", "who": who,
                                "criterion": criterion, "value": value})
    records.append({"item": "i10", "who": "ann", "criterion": "adequacy", "value": "2"})
    return records


def test_adjudication_queue_holds_exactly_the_planted_disagreements():
    queue = ag.adjudication_queue(annotations(planted_review())).to_pylist()
    assert [(r["item_id"], r["criteria"]) for r in queue] == [
        ("i03", ["adequacy"]),
        ("i07", ["answer_preserved", "consequence"]),
        ("i09", ["consequence"]),
    ]
    assert [r["n_criteria"] for r in queue] == [1, 2, 1]
    assert [r["state"] for r in queue] == ["open"] * 3
    assert all(r["resolved"] == [] and r["open"] == r["criteria"] for r in queue)
    assert queue[1]["cluster_id"] == "s3"


ADJUDICATION = {"item": "i07", "cluster": "s3", "who": "cid", "role": "adjudication", "id": 5}


def test_final_labels_prefer_adjudication_then_agreement_else_null():
    records = planted_review() + [
        {**ADJUDICATION, "criterion": "answer_preserved", "value": "no", "minute": 1},
        # the adjudicator revised the consequence: the later row counts
        {**ADJUDICATION, "criterion": "consequence", "value": "reasoning-changing", "minute": 1},
        {**ADJUDICATION, "criterion": "consequence", "value": "metric-sensitive", "minute": 2},
    ]
    final = {(r["item_id"], r["criterion"]): r
             for r in ag.final_labels(annotations(records)).to_pylist()}
    assert set(ag.final_labels(annotations(records)).column_names) == set(ag.FINAL_COLUMNS)
    i07 = final["i07", "answer_preserved"]
    assert (i07["value"], i07["origin"], i07["status"]) == ("no", "adjudicated", "adjudicated")
    assert final["i07", "consequence"]["value"] == "metric-sensitive"
    i00 = final["i00", "adequacy"]
    assert (i00["value"], i00["origin"], i00["status"]) == ("5", "agreed", "agreed")
    i03 = final["i03", "adequacy"]
    assert (i03["value"], i03["origin"], i03["status"]) == (None, None, "disagreement")
    assert i03["initial_values"] == ["5", "4"]
    assert final["i09", "consequence"]["status"] == "disagreement"
    assert (final["i10", "adequacy"]["value"], final["i10", "adequacy"]["status"]) == \
        (None, "incomplete")
    assert not any(criterion == "comment" for _, criterion in final)
    assert len(final) == 10 * 3 + 1
    queue = {r["item_id"]: r for r in ag.adjudication_queue(annotations(records)).to_pylist()}
    assert (queue["i07"]["state"], queue["i07"]["open"]) == ("resolved", [])
    assert queue["i07"]["resolved"] == ["answer_preserved", "consequence"]
    assert queue["i03"]["state"] == "open" and queue["i03"]["resolved"] == []


def test_adjudication_never_overwrites_an_agreed_criterion():
    # i07's adequacy is agreed (5/5): the adjudicator's 1 there is ignored; half the
    # dispute settled leaves the item open.
    records = planted_review() + [
        {**ADJUDICATION, "criterion": "adequacy", "value": "1"},
        {**ADJUDICATION, "criterion": "answer_preserved", "value": "yes"}]
    final = {(r["item_id"], r["criterion"]): r
             for r in ag.final_labels(annotations(records)).to_pylist()}
    assert (final["i07", "adequacy"]["value"], final["i07", "adequacy"]["origin"]) == \
        ("5", "agreed")
    assert (final["i07", "answer_preserved"]["value"],
            final["i07", "answer_preserved"]["origin"]) == ("yes", "adjudicated")
    queue = {r["item_id"]: r for r in ag.adjudication_queue(annotations(records)).to_pylist()}
    assert (queue["i07"]["state"], queue["i07"]["open"], queue["i07"]["resolved"]) == \
        ("open", ["consequence"], ["answer_preserved"])


def test_none_resolves_a_consequence_dispute_and_silence_agrees_on_none():
    # i09: ann says cosmetic, bob gives no consequence; the adjudicator says "none".
    records = planted_review() + [
        {"item": "i09", "cluster": "s4", "who": "cid", "role": "adjudication",
         "criterion": "consequence", "value": ag.NO_CONSEQUENCE}]
    for record in records:   # i01: neither initial annotator gives a consequence
        if record["item"] == "i01" and record["criterion"] == "consequence":
            record["criterion"] = "comment"
    final = {(r["item_id"], r["criterion"]): r
             for r in ag.final_labels(annotations(records)).to_pylist()}
    assert (final["i09", "consequence"]["value"], final["i09", "consequence"]["origin"]) == \
        ("none", "adjudicated")
    assert (final["i01", "consequence"]["value"], final["i01", "consequence"]["origin"],
            final["i01", "consequence"]["n_initial"]) == ("none", "agreed", 0)
    with pytest.raises(ValueError, match="value 'none' is not one of"):
        ag.final_labels(annotations(paired("consequence", ["none"], ["cosmetic"])))


def test_a_resubmission_replaces_the_earlier_annotation():
    records = paired("fluency", [3], [5]) + [
        {"item": "i00", "who": "bob", "criterion": "fluency", "value": "3", "minute": 9}]
    final = ag.final_labels(annotations(records)).to_pylist()
    assert [(r["criterion"], r["value"], r["status"]) for r in final] == [
        ("consequence", "none", "agreed"), ("fluency", "3", "agreed")]


def test_polars_input_gives_the_same_result():
    table = annotations(paired("answer_preserved", ANN, BOB))
    assert ag.agreement(pl.from_arrow(table), n_boot=100).equals(
        ag.agreement(table, n_boot=100))


def test_missing_column_is_named():
    table = annotations(paired("fluency", [3], [3])).drop_columns(["cluster_id", "updated_at"])
    with pytest.raises(ValueError, match="'cluster_id', 'updated_at'"):
        ag.agreement(table)


@pytest.mark.parametrize("change, message", [
    ({"value": "6"}, "value '6' is not one of"),
    ({"criterion": "accuracy"}, "unknown translation criterion 'accuracy'"),
    ({"role": "review"}, "unknown role"),
    ({"kind": "summary"}, "unknown kind 'summary'"),
])
def test_values_outside_the_schema_are_refused(change, message):
    records = paired("fluency", [3], [3])
    records[0].update(change)
    with pytest.raises(ValueError, match=message):
        ag.final_labels(annotations(records))


def test_an_item_in_two_clusters_is_refused():
    records = paired("fluency", [3], [3])
    records[1]["cluster"] = "elsewhere"
    with pytest.raises(ValueError, match="more than one cluster_id"):
        ag.pairs(annotations(records))


def test_the_benchmark_table_is_well_formed():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import review as bench
    table = bench.synthesise(n_sources=12)
    assert table.num_rows >= 12 * 6 * 2 * 7
    result = ag.agreement(table, n_boot=100)
    assert set(result["criterion"].to_pylist()) == set(ag.CRITERIA["translation"])
    for row in result.to_pylist():
        assert row["n_items"] == 72 and row["n_clusters"] == 12
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]


def three_language_batch() -> list[dict]:
    """Adequacy on 18 items. ar: amal & badr, (2,2) (2,2) (3,3) (3,4) (4,5) (5,5); de: dirk &
    erna agree on 1 2 3 4 5 5; ur: umar & yara agree on 1 3 5, umar & zaid on 2 4 4."""
    groups = [("ar", "amal", "badr", [2, 2, 3, 3, 4, 5], [2, 2, 3, 4, 5, 5]),
              ("de", "dirk", "erna", [1, 2, 3, 4, 5, 5], [1, 2, 3, 4, 5, 5]),
              ("ur", "umar", "yara", [1, 3, 5], [1, 3, 5]),
              ("ur", "umar", "zaid", [2, 4, 4], [2, 4, 4])]
    records = []
    for language, first, second, ones, twos in groups:
        for i, (one, two) in enumerate(zip(ones, twos)):
            item = f"{language}-{second}-{i}"
            records += [{"item": item, "who": first, "criterion": "adequacy", "value": str(one),
                         "language": language},
                        {"item": item, "who": second, "criterion": "adequacy",
                         "value": str(two), "language": language}]
    return records


def by_group(result: pa.Table, group: str, name: str) -> dict:
    rows = [r for r in result.to_pylist() if r["group"] == group and r["statistic"] == name]
    assert len(rows) == 1, (group, name)
    return rows[0]


def test_agreement_per_language_and_pair_shows_the_pair_the_pooled_kappa_hides():
    table = annotations(three_language_batch())
    # Pooled, 18 items, 2 disagreements: p_o = 16/18. Marginals (annotator 1 / annotator 2)
    # over ratings 1..5: 2 4 4 4 4 / 2 4 3 4 5, p_e = (4+16+12+16+20)/324 = 17/81;
    # κ = (72/81 - 17/81) / (64/81) = 55/64
    pooled = stat(ag.agreement(table, n_boot=200), "adequacy", "cohen_kappa")
    assert pooled["estimate"] == pytest.approx(55 / 64, abs=1e-9)
    languages = ag.agreement_by(table, "language", n_boot=200)
    # ar: p_o = 4/6; marginals amal 2 2 1 1, badr 2 1 1 2 (ratings 2..5), p_e = 9/36;
    #   κ = (2/3 - 1/4) / (3/4) = 5/9 = 0.556
    # linear: observed mean |i-j| = 2/6; expected Σ a_i b_j |i-j| / 36 = 48/36;
    #   κ_linear = 1 - (1/3) / (4/3) = 3/4
    arabic = by_group(languages, "ar", "cohen_kappa")
    assert arabic["estimate"] == pytest.approx(5 / 9, abs=1e-9)
    assert (arabic["n_items"], arabic["n_clusters"], arabic["flagged"]) == (6, 6, True)
    assert arabic["ci_low"] <= arabic["estimate"] <= arabic["ci_high"]
    linear = by_group(languages, "ar", "cohen_kappa_linear")
    assert linear["estimate"] == pytest.approx(3 / 4, abs=1e-9)
    assert linear["flagged"] is False          # 0.75 is above the 0.6 floor
    assert by_group(languages, "ar", "raw_agreement")["estimate"] == pytest.approx(2 / 3)
    assert [(r["group"], r["n_items"], r["estimate"]) for r in languages.to_pylist()
            if r["statistic"] == "cohen_kappa"] == [("ar", 6, pytest.approx(5 / 9)),
                                                     ("de", 6, 1.0), ("ur", 6, 1.0)]
    pairs = ag.agreement_by(table, "pair", n_boot=200)
    assert [(r["group"], r["language"], r["n_items"], r["estimate"], r["flagged"])
            for r in pairs.to_pylist() if r["statistic"] == "cohen_kappa"] == [
        ("amal & badr", "ar", 6, pytest.approx(5 / 9), True),
        ("dirk & erna", "de", 6, 1.0, False),
        ("umar & yara", "ur", 3, 1.0, False),
        ("umar & zaid", "ur", 3, 1.0, False)]
    # a stricter policy flags the linear κ too; a lenient one flags nothing
    strict = ag.agreement_by(table, "pair", n_boot=50, kappa_floor=0.8)
    assert by_group(strict, "amal & badr", "cohen_kappa_linear")["flagged"] is True
    lenient = ag.agreement_by(table, "pair", n_boot=50, kappa_floor=0.5)
    assert not any(lenient.column("flagged").to_pylist())
    with pytest.raises(ValueError, match="'annotator' is not one of"):
        ag.agreement_by(table, "annotator")


def test_empty_consequence_is_scored_none_so_empty_against_named_is_a_disagreement():
    first = ["cosmetic", "cosmetic", "reasoning-changing", None, None, None]
    second = ["cosmetic", None, "reasoning-changing", None, None, "label-invalidating"]
    records = paired("consequence", first, second) + paired("adequacy", [5] * 6, [5] * 6)
    result = ag.agreement(annotations(records), n_boot=200)
    # Empty = none: (cos,cos) (cos,none) (rc,rc) (none,none) (none,none) (none,li)
    # p_o = 4/6; ann: cos 2, rc 1, none 3; bob: cos 1, rc 1, none 3, li 1;
    # p_e = (2*1 + 1*1 + 3*3) / 36 = 1/3; κ = (2/3 - 1/3) / (2/3) = 1/2
    kappa = stat(result, "consequence", "cohen_kappa")
    assert kappa["estimate"] == pytest.approx(0.5, abs=1e-9)
    assert (kappa["n_items"], kappa["n_irregular"]) == (6, 0)
    assert stat(result, "consequence", "raw_agreement")["estimate"] == pytest.approx(4 / 6)
    # the final labels read the same items the same way
    final = {r["item_id"]: (r["value"], r["status"]) for r in
             ag.final_labels(annotations(records)).to_pylist() if r["criterion"] == "consequence"}
    assert final == {"i00": ("cosmetic", "agreed"), "i01": (None, "disagreement"),
                     "i02": ("reasoning-changing", "agreed"), "i03": ("none", "agreed"),
                     "i04": ("none", "agreed"), "i05": (None, "disagreement")}


def test_a_language_and_a_pair_of_the_same_items_get_the_same_interval():
    """ar is read by amal & badr only: the language slice, the pair slice and a pooled
    table of the ar items alone are the same items, so the same resampling and interval
    (the bootstrap is seeded by the items, not the slice's name)."""
    records = three_language_batch()
    table = annotations(records)
    language = by_group(ag.agreement_by(table, "language", n_boot=200), "ar", "cohen_kappa")
    pair = by_group(ag.agreement_by(table, "pair", n_boot=200), "amal & badr", "cohen_kappa")
    alone = stat(ag.agreement(annotations([r for r in records if r["language"] == "ar"]),
                              n_boot=200), "adequacy", "cohen_kappa")
    interval = (language["ci_low"], language["ci_high"], language["n_boot_defined"])
    assert (pair["ci_low"], pair["ci_high"], pair["n_boot_defined"]) == interval
    assert (alone["ci_low"], alone["ci_high"], alone["n_boot_defined"]) == interval
    assert language["ci_low"] < 5 / 9 < language["ci_high"]


def test_a_pooled_kappa_below_the_floor_is_flagged_and_named_like_a_groups():
    """The pooled table follows agreement_by's floor rule (any κ below the floor; raw
    agreement and α never), and floor_notes names criterion, slice, κ, raw agreement, n."""
    table = annotations(three_language_batch())
    pooled = ag.agreement(table, n_boot=50, kappa_floor=0.9)
    flagged = {r["statistic"]: r["flagged"] for r in pooled.to_pylist()}
    # κ 55/64 = 0.859 < 0.9; the weighted κ (near misses count) are above it
    assert flagged == {"raw_agreement": False, "cohen_kappa": True,
                       "cohen_kappa_linear": False, "cohen_kappa_quadratic": False,
                       "krippendorff_alpha": False}
    assert set(pooled.column("kappa_floor").to_pylist()) == {0.9}
    assert not any(ag.agreement(table, n_boot=50).column("flagged").to_pylist())
    assert ag.floor_notes(pooled.to_pylist(), 0.9) == [
        "adequacy, all items: κ 0.859, raw agreement 0.889, n = 18"]
    # the floor the notes are asked about counts, not the one the table was made with
    assert ag.floor_notes(pooled.to_pylist(), 0.6) == []
    # an undefined κ is no low κ, as NaN or as the None a CSV reads back
    undefined = [row | {"estimate": value} for row in pooled.to_pylist()
                 for value in (float("nan"), None)]
    assert ag.floor_notes(undefined, 0.9) == []
    languages = ag.agreement_by(table, "language", n_boot=50)
    assert ag.floor_notes(languages.to_pylist(), 0.6) == [
        "adequacy, language ar: κ 0.556, raw agreement 0.667, n = 6"]
    pairs = ag.agreement_by(table, "pair", n_boot=50)
    assert ag.floor_notes(pairs.to_pylist(), 0.8) == [
        "adequacy, pair amal & badr (ar): κ 0.556, raw agreement 0.667, n = 6",
        "adequacy, pair amal & badr (ar): κ linear 0.750, raw agreement 0.667, n = 6"]


def test_an_undefined_kappa_is_drawn_as_undefined_never_as_a_bar_at_zero():
    """fr: both annotators rate every item 3, so κ is undefined (chance agreement 1): its
    slot holds no κ bar but a hatched placeholder labelled "undefined" over -1..1."""
    from audit.review import reports
    records = three_language_batch() + [
        {"item": f"fr-{i}", "who": who, "criterion": "adequacy", "value": "3",
         "language": "fr"} for i in range(3) for who in ("fred", "gina")]
    grouped = ag.agreement_by(annotations(records), "language", n_boot=50)
    assert math.isnan(by_group(grouped, "fr", "cohen_kappa")["estimate"])
    fig = reports.figure("agreement_by_language", grouped)
    kappa, placeholder = [t for t in fig.data if t.legendgroup == "cohen_kappa"]
    assert list(kappa.x) == ["ar (n=6)", "de (n=6)", "fr (n=3)", "ur (n=6)"]
    assert kappa.y[2] is None and kappa.error_y.array[2] is None
    assert (list(placeholder.x), list(placeholder.text)) == (["fr (n=3)"], ["undefined"])
    assert (list(placeholder.base), list(placeholder.y)) == ([-1.0], [2.0])
    assert placeholder.offsetgroup == kappa.offsetgroup == "cohen_kappa"
    assert placeholder.marker.pattern.shape == "/" and not placeholder.showlegend
    assert "chance agreement is 1" in placeholder.hovertext[0]
    pooled = reports.figure("agreement", ag.agreement(
        annotations([r for r in records if r["language"] == "fr"]), n_boot=50))
    assert all(value is None for trace in pooled.data if trace.text is None
               for value in trace.y)
    assert {trace.name for trace in pooled.data if trace.text is not None} == {
        "cohen_kappa undefined", "cohen_kappa_quadratic undefined",
        "krippendorff_alpha undefined"}
