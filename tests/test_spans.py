"""Error-span annotation (audit/review/spans.py): character κ, span F1, score agreement, MQM
and ESA scores, final spans and the queue, pre-filled span fates and the checks measured
against people, each against a hand computation written out beside it."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats as scipy_stats

from audit.errors import InputError
from audit.review import spans as sp

# z of a two-sided 95% interval: Φ⁻¹(0.975).
Z = 1.959963984540054


def score(item: str, who: str, esa: float, *, role: str = "initial", language: str = "de",
          length: int = 20, words: int = 10, cluster: str | None = None) -> dict:
    return {"item_id": item, "cluster_id": cluster or item, "language": language,
            "annotator": who, "role": role, "esa_score": esa, "n_words": words,
            "text_length": length}


def span(item: str, who: str, start: int, end: int, severity: str, *, role: str = "initial",
         language: str = "de", region: str | None = None, origin: str | None = None,
         cluster: str | None = None) -> dict:
    return {"item_id": item, "cluster_id": cluster or item, "language": language,
            "annotator": who, "role": role, "region_id": region, "start": start, "end": end,
            "severity": severity, "category": None, "origin": origin, "text": None}


def filled(item: str, start: int, end: int, severity: str, check: str, *,
           region: str | None = None, language: str = "de") -> dict:
    return {"item_id": item, "language": language, "region_id": region, "start": start,
            "end": end, "severity": severity, "origin": check}


def table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def spans_table(rows: list[dict]) -> pa.Table:
    return table(rows, sp.SPAN_SCHEMA)


def scores_table(rows: list[dict]) -> pa.Table:
    return table(rows, sp.SCORE_SCHEMA)


def row(result: pa.Table, **match: object) -> dict:
    rows = [r for r in result.to_pylist() if all(r[k] == v for k, v in match.items())]
    assert len(rows) == 1, (match, len(rows))
    return rows[0]


# Item u1, a 20-character text. ann marks [2,6) minor and [10,15) major; bob marks [4,8)
# minor, [10,14) minor and [10,12) critical (overlapping: 10-11 take the critical, as major).
#   char:  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15-19
#   ann:   . . m m m m . . . . M  M  M  M  M  .
#   bob:   . . . . m m m m . . M  M  m  m  .  .
U1_SPANS = [span("u1", "ann", 2, 6, "minor"), span("u1", "ann", 10, 15, "major"),
            span("u1", "bob", 4, 8, "minor"), span("u1", "bob", 10, 14, "minor"),
            span("u1", "bob", 10, 12, "critical")]
U1_SCORES = [score("u1", "ann", 70), score("u1", "bob", 60)]
# Item u2, 10 characters, neither marks anything.
U2_SCORES = [score("u2", "ann", 90, length=10), score("u2", "bob", 95, length=10)]


# ---------------------------------------------------------------------- character labels

def test_char_labels_take_the_most_severe_and_count_critical_as_major():
    labels = sp.char_labels([(4, 8, "minor"), (10, 14, "minor"), (10, 12, "critical"),
                             (0, 2, "major"), (1, 3, "minor")], 16)
    assert labels.tolist() == [2, 2, 1, 0, 1, 1, 1, 1, 0, 0, 2, 2, 1, 1, 0, 0]


def test_char_labels_reject_a_span_beyond_the_text():
    with pytest.raises(InputError, match="outside a text of 5 characters"):
        sp.char_labels([(3, 6, "minor")], 5)


# ------------------------------------------------------------------------- character κ

def test_character_kappa_of_one_item_by_hand():
    # Contingency table, ann (rows) × bob (columns), none / minor / major:
    #   none : 9 (0,1,8,9,15-19)  2 (6,7)   0         row 11
    #   minor: 2 (2,3)            2 (4,5)   0         row 4
    #   major: 1 (14)             2 (12,13) 2 (10,11) row 5
    #   columns 12, 6, 2
    # observed p_o = (9 + 2 + 2) / 20 = 13/20
    # expected p_e = (11·12 + 4·6 + 5·2) / 400 = 166/400
    # κ = (260 − 166) / (400 − 166) = 94/234 = 47/117
    result = sp.char_kappa(spans_table(U1_SPANS), scores_table(U1_SCORES), n_boot=50)
    kappa = row(result, by="pair", statistic="cohen_kappa")
    assert abs(kappa["estimate"] - 47 / 117) < 1e-12
    assert (kappa["n_items"], kappa["n_characters"]) == (1, 20)
    assert (kappa["annotator_1"], kappa["annotator_2"]) == ("ann", "bob")
    assert abs(row(result, by="pair", statistic="raw_agreement")["estimate"] - 13 / 20) < 1e-12


def test_character_kappa_pools_the_characters_of_the_items():
    # u2 adds 10 none/none characters: p_o = 23/30; rows 21, 4, 5; columns 22, 6, 2;
    # p_e = (21·22 + 4·6 + 5·2) / 900 = 496/900; κ = (690 − 496) / (900 − 496) = 97/202.
    result = sp.char_kappa(spans_table(U1_SPANS), scores_table(U1_SCORES + U2_SCORES),
                           n_boot=200)
    kappa = row(result, by="language", group="de", statistic="cohen_kappa")
    assert abs(kappa["estimate"] - 97 / 202) < 1e-12
    assert (kappa["n_items"], kappa["n_clusters"], kappa["n_characters"]) == (2, 2, 30)
    # Resamples with u2 twice are all none: undefined, counted and excluded.
    assert 0 < kappa["n_boot_defined"] < 200
    assert kappa["note"] == f"{200 - kappa['n_boot_defined']} of 200 bootstrap replicates " \
                            f"undefined, excluded"


def test_undefined_kappa_is_nan_with_a_note_and_flagged_undefined_not_below_floor():
    result = sp.char_kappa(spans_table([]), scores_table(U2_SCORES), n_boot=50)
    kappa = row(result, by="all", statistic="cohen_kappa")
    assert math.isnan(kappa["estimate"]) and math.isnan(kappa["ci_low"])
    assert "'none' for both annotators" in kappa["note"] and "undefined" in kappa["note"]
    assert row(result, by="all", statistic="raw_agreement")["estimate"] == 1.0
    flags = sp.floor_flags(result)
    flag = row(flags, by="language", group="de")
    assert (flag["state"], flag["flagged"]) == ("undefined", False)
    assert flag["note"].startswith("character κ is undefined for language de "
                                   "(raw agreement 1.000, 1 items, 10 characters)")


def test_a_kappa_below_the_floor_is_flagged_with_criterion_slice_and_raw_agreement():
    result = sp.char_kappa(spans_table(U1_SPANS), scores_table(U1_SCORES), n_boot=50)
    flag = row(sp.floor_flags(result), by="pair")
    assert (flag["state"], flag["flagged"], flag["kappa_floor"]) == ("below floor", True, 0.6)
    assert flag["note"] == ("character κ 0.402 is below the floor 0.6 for pair ann & bob "
                            "(raw agreement 0.650, 1 items, 20 characters)")
    # The rule is the estimate's (agreement_by's): a floor under 47/117 flags nothing.
    assert row(sp.floor_flags(result, kappa_floor=0.4), by="pair")["state"] == "ok"


def varied_items(language: str, first: str, second: str, offset: int) -> tuple[list, list]:
    """Eight items in four clusters with spans that differ between the two annotators."""
    spans, scores = [], []
    for i in range(8):
        item, cluster = f"{language}{i}", f"{language}-c{i // 2}"
        scores += [score(item, who, 50 + i, language=language, cluster=cluster)
                   for who in (first, second)]
        spans.append(span(item, first, i, i + 4, "minor", language=language, cluster=cluster))
        spans.append(span(item, second, i + (i + offset) % 3, i + 5, "major" if i % 2 else
                          "minor", language=language, cluster=cluster))
    return spans, scores


def test_identical_slices_get_identical_intervals_whatever_their_name():
    de_spans, de_scores = varied_items("de", "ann", "bob", 0)
    fr_spans, fr_scores = varied_items("fr", "cat", "dan", 1)
    result = sp.char_kappa(spans_table(de_spans + fr_spans),
                           scores_table(de_scores + fr_scores), n_boot=300)
    language = row(result, by="language", group="de", statistic="cohen_kappa")
    pair = row(result, by="pair", group="ann & bob", statistic="cohen_kappa")
    assert language["ci_low"] < language["ci_high"]
    assert (language["ci_low"], language["ci_high"]) == (pair["ci_low"], pair["ci_high"])
    # The other language's items draw differently.
    other = row(result, by="language", group="fr", statistic="cohen_kappa")
    assert (other["ci_low"], other["ci_high"]) != (language["ci_low"], language["ci_high"])
    # Renaming the language and the annotators changes nothing: the items seed the draw.
    renamed = sp.char_kappa(
        spans_table([{**s, "language": "xx", "annotator": s["annotator"].upper()}
                     for s in de_spans]),
        scores_table([{**s, "language": "xx", "annotator": s["annotator"].upper()}
                      for s in de_scores]), n_boot=300)
    again = row(renamed, by="language", group="xx", statistic="cohen_kappa")
    assert (again["ci_low"], again["ci_high"]) == (language["ci_low"], language["ci_high"])


def test_items_without_two_initial_annotators_are_counted_irregular():
    scores = U1_SCORES + [score("u3", "ann", 50)]
    result = sp.char_kappa(spans_table(U1_SPANS), scores_table(scores), n_boot=20)
    assert row(result, by="all", statistic="cohen_kappa")["n_irregular"] == 1
    assert row(result, by="language", statistic="cohen_kappa")["n_irregular"] == 1
    assert row(result, by="pair", statistic="cohen_kappa")["n_irregular"] == 0


# ------------------------------------------------------------------------------ span F1

def test_span_f1_exact_and_overlap_with_and_without_severity():
    # ann (2,6,minor) (10,15,major); bob (4,8,minor) (10,12,critical) (10,14,minor).
    # exact: no extent shared -> 0 of 2 + 3 claims.
    # overlap: (10,15)~(10,14) share 4, taken first; (2,6)~(4,8) share 2 -> 2 matched;
    #   F1 = 2·2 / 5 = 0.8. With severity only (2,6)~(4,8), minor/minor: 2·1 / 5 = 0.4.
    result = sp.span_f1(spans_table(U1_SPANS), scores_table(U1_SCORES), n_boot=20)
    expected = {"f1_exact": 0.0, "f1_exact_severity": 0.0, "f1_overlap": 0.8,
                "f1_overlap_severity": 0.4}
    for statistic, value in expected.items():
        got = row(result, by="all", statistic=statistic)
        assert abs(got["estimate"] - value) < 1e-12, statistic
        assert (got["n_spans_1"], got["n_spans_2"]) == (2, 3)
    assert row(result, by="all", statistic="f1_overlap")["n_matched"] == 2


def test_two_empty_span_sets_count_as_one_agreeing_claim():
    # u2: both mark nothing -> one matched "no error" claim each: numerator +1, claims +2.
    # exact: 2·(0 + 1) / (5 + 2) = 2/7; overlap: 2·(2 + 1) / 7 = 6/7.
    result = sp.span_f1(spans_table(U1_SPANS), scores_table(U1_SCORES + U2_SCORES), n_boot=20)
    exact = row(result, by="language", statistic="f1_exact")
    assert abs(exact["estimate"] - 2 / 7) < 1e-12
    assert (exact["n_both_empty"], exact["n_empty_1"], exact["n_matched"]) == (1, 1, 0)
    assert abs(row(result, by="language", statistic="f1_overlap")["estimate"] - 6 / 7) < 1e-12


def test_an_empty_set_against_spans_is_a_disagreement():
    # ann marks nothing, bob two spans: 0 matched of 1 ("no error") + 2 claims.
    scores = [score("e1", "ann", 90), score("e1", "bob", 50)]
    spans = [span("e1", "bob", 0, 3, "minor"), span("e1", "bob", 5, 9, "major")]
    result = sp.span_f1(spans_table(spans), scores_table(scores), n_boot=20)
    assert row(result, by="all", statistic="f1_overlap")["estimate"] == 0.0


def test_exact_matching_differs_from_overlap_and_severity():
    # (0,5,major) vs (0,5,minor): an exact extent, not an exact severity.
    # (7,12,minor) vs (8,12,minor): overlapping, not exact.
    assert sp.matched_spans([(0, 5, "major"), (7, 12, "minor")],
                            [(0, 5, "minor"), (8, 12, "minor")], "exact") == 1
    assert sp.matched_spans([(0, 5, "major"), (7, 12, "minor")],
                            [(0, 5, "minor"), (8, 12, "minor")], "exact", True) == 0
    assert sp.matched_spans([(0, 5, "major"), (7, 12, "minor")],
                            [(0, 5, "minor"), (8, 12, "minor")], "overlap", True) == 1
    # One to one: one long span overlapping two cannot match both.
    assert sp.matched_spans([(0, 10, "minor")], [(0, 3, "minor"), (5, 9, "minor")],
                            "overlap") == 1


# ------------------------------------------------------------------- MQM and ESA scores

def test_mqm_penalty_per_hundred_source_words():
    # minor 1 + major 5 + critical 25 + minor 1 = 32 over 40 words -> 80 per 100 words.
    marks = [(0, 2, "minor"), (3, 5, "major"), (6, 9, "critical"), (10, 11, "minor")]
    assert sp.mqm_penalty(marks, 40) == 80.0
    # Configurable weights: 0.5 + 2 + 10 + 0.5 = 13 over 40 -> 32.5.
    assert sp.mqm_penalty(marks, 40, {"minor": 0.5, "major": 2, "critical": 10}) == 32.5
    assert sp.mqm_penalty([], 40) == 0.0
    with pytest.raises(InputError, match="no weight for critical"):
        sp.mqm_penalty(marks, 40, {"minor": 1, "major": 5})


PAIRED_ESA = [(80, 75), (65, 60), (40, 50), (90, 85), (55, 55), (70, 40)]
# The number of major spans each gives, over 10 words: penalty 50 per major span.
PAIRED_MAJORS = [(0, 1), (1, 1), (2, 1), (0, 0), (1, 2), (3, 1)]


def paired_items() -> tuple[pa.Table, pa.Table]:
    spans, scores = [], []
    for i, ((esa_1, esa_2), (majors_1, majors_2)) in enumerate(zip(PAIRED_ESA, PAIRED_MAJORS)):
        item = f"s{i}"
        scores += [score(item, "ann", esa_1), score(item, "bob", esa_2)]
        spans += [span(item, "ann", 2 * k, 2 * k + 1, "major") for k in range(majors_1)]
        spans += [span(item, "bob", 2 * k, 2 * k + 1, "major") for k in range(majors_2)]
    return spans_table(spans), scores_table(scores)


def test_score_agreement_equals_scipy():
    result = sp.score_agreement(*paired_items(), n_boot=100)
    esa_1, esa_2 = np.array(PAIRED_ESA, dtype=float).T
    mqm_1, mqm_2 = np.array(PAIRED_MAJORS, dtype=float).T * 50
    for score_name, x, y in (("esa", esa_1, esa_2), ("mqm", mqm_1, mqm_2)):
        pearson = row(result, by="pair", score=score_name, statistic="pearson")
        kendall = row(result, by="pair", score=score_name, statistic="kendall_tau_b")
        assert abs(pearson["estimate"] - scipy_stats.pearsonr(x, y)[0]) < 1e-12
        assert abs(kendall["estimate"] - scipy_stats.kendalltau(x, y)[0]) < 1e-12
        assert pearson["n_items"] == 6
        assert pearson["ci_low"] <= pearson["estimate"] <= pearson["ci_high"]


def test_weighted_correlations_equal_scipy_on_the_repeated_sample():
    # A bootstrap replicate counts item i m_i times: the same as repeating it.
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    y = np.array([2.0, 7.0, 1.0, 8.0, 2.0, 8.0, 1.0])
    m = np.array([[2, 0, 1, 3, 1, 0, 1], [1, 1, 1, 1, 1, 1, 1], [0, 4, 0, 0, 2, 1, 0]],
                 dtype=float)
    pearson = sp.weighted_pearson(x, y, m)
    kendall = sp.weighted_kendall_tau_b(x, y, m)
    for b, counts in enumerate(m.astype(int)):
        xs, ys = np.repeat(x, counts), np.repeat(y, counts)
        assert abs(pearson[b] - scipy_stats.pearsonr(xs, ys)[0]) < 1e-12
        assert abs(kendall[b] - scipy_stats.kendalltau(xs, ys)[0]) < 1e-12
    # A replicate drawing one item only has no correlation.
    single = np.array([[0, 0, 3, 0, 0, 0, 0]], dtype=float)
    assert math.isnan(sp.weighted_pearson(x, y, single)[0])
    assert math.isnan(sp.weighted_kendall_tau_b(x, y, single)[0])


def test_a_constant_score_has_an_undefined_correlation_with_a_note():
    scores = [score("a", "ann", 50), score("a", "bob", 70),
              score("b", "ann", 50), score("b", "bob", 20)]
    result = sp.score_agreement(spans_table([]), scores_table(scores), n_boot=20)
    pearson = row(result, by="pair", score="esa", statistic="pearson")
    assert math.isnan(pearson["estimate"])
    assert pearson["note"] == "every esa score of ann is the same: the correlation is undefined"


def final_items() -> tuple[pa.Table, pa.Table]:
    """q1 agreed; q2 extents differ; q3 severities differ, adjudicated by cat; q4 same spans,
    ESA 60 apart; q5 one initial annotator only."""
    spans = [span("q1", "ann", 0, 3, "minor"), span("q1", "bob", 0, 3, "minor"),
             span("q2", "ann", 0, 3, "minor"), span("q2", "bob", 0, 4, "minor"),
             span("q3", "ann", 0, 3, "minor"), span("q3", "bob", 0, 3, "major"),
             span("q3", "cat", 0, 3, "major", role="adjudication"),
             span("q3", "cat", 5, 8, "critical", role="adjudication"),
             span("q4", "ann", 6, 9, "major"), span("q4", "bob", 6, 9, "major")]
    scores = [score("q1", "ann", 80), score("q1", "bob", 90),
              score("q2", "ann", 70), score("q2", "bob", 60),
              score("q3", "ann", 40, words=20), score("q3", "bob", 50, words=20),
              score("q3", "cat", 45, role="adjudication", words=20),
              score("q4", "ann", 30, language="fr"), score("q4", "bob", 90, language="fr"),
              score("q5", "ann", 100, language="fr")]
    spans[-2]["language"] = spans[-1]["language"] = "fr"
    return spans_table(spans), scores_table(scores)


def test_unit_scores_take_the_adjudication_else_the_mean_of_the_initial():
    units = sp.unit_scores(*final_items())
    # q1: ESA (80 + 90) / 2 = 85; MQM 1 minor / 10 words × 100 = 10 for both.
    assert (row(units, item_id="q1")["esa_score"], row(units, item_id="q1")["mqm_penalty"],
            row(units, item_id="q1")["origin"]) == (85.0, 10.0, "initial mean")
    # q3: cat's 45, major 5 + critical 25 over 20 words × 100 = 150.
    q3 = row(units, item_id="q3")
    assert (q3["esa_score"], q3["mqm_penalty"], q3["origin"]) == (45.0, 150.0, "adjudicated")
    q5 = row(units, item_id="q5")
    assert (q5["esa_score"], q5["origin"], q5["n_initial"]) == (None, "incomplete", 1)


def test_language_scores_are_means_of_the_unit_scores():
    result = sp.language_scores(*final_items(), n_boot=200)
    # de: q1 85, q2 65, q3 45 -> 65; MQM: q1 10, q2 (10 + 10)/2 = 10, q3 150 -> 170/3.
    esa = row(result, by="language", group="de", score="esa")
    assert (esa["mean"], esa["n_items"], esa["n_adjudicated"]) == (65.0, 3, 1)
    assert 45 <= esa["ci_low"] <= 65 <= esa["ci_high"] <= 85
    assert abs(row(result, by="language", group="de", score="mqm")["mean"] - 170 / 3) < 1e-12
    # fr: q4 (30 + 90)/2 = 60; q5 incomplete, counted apart.
    fr = row(result, by="language", group="fr", score="esa")
    assert (fr["mean"], fr["n_items"], fr["n_incomplete"]) == (60.0, 1, 1)
    assert row(result, by="all", score="esa")["mean"] == (85 + 65 + 45 + 60) / 4


# ------------------------------------------------------------- final spans and the queue

def test_final_spans_adjudicated_agreed_and_disputed():
    final = sp.final_spans(*final_items())
    status = {r["item_id"]: r["status"] for r in final.items.to_pylist()}
    assert status == {"q1": "agreed", "q2": "disputed", "q3": "adjudicated", "q4": "agreed",
                      "q5": "incomplete"}
    marks = [(r["item_id"], r["start"], r["end"], r["severity"], r["decided"], r["annotator"])
             for r in final.spans.to_pylist()]
    assert marks == [("q1", 0, 3, "minor", "agreed", "ann"),
                     ("q3", 0, 3, "major", "adjudicated", "cat"),
                     ("q3", 5, 8, "critical", "adjudicated", "cat"),
                     ("q4", 6, 9, "major", "agreed", "ann")]


def test_span_queue_names_the_disagreements_and_the_tolerance():
    queue = sp.span_queue(*final_items())
    listed = {r["item_id"]: (r["reasons"], r["state"]) for r in queue.to_pylist()}
    assert listed == {"q2": (["spans"], "open"), "q3": (["severity"], "resolved"),
                      "q4": (["score"], "open")}
    assert row(queue, item_id="q4")["esa_gap"] == 60.0
    relaxed = sp.span_queue(*final_items(), tolerance=60)
    assert [r["item_id"] for r in relaxed.to_pylist()] == ["q2", "q3"]


# ------------------------------------------------------------------- pre-filled spans

def prefill_case() -> tuple[pa.Table, pa.Table, pa.Table]:
    """p1 (de, 30 chars): regions r1 (0,5 major, untranslated), r2 (10,15 minor, numbers),
    r3 (20,25 major, untranslated). ann keeps r1, stretches r2 to 17, deletes r3 and adds
    26-30 major (the omission token); bob deletes r1, keeps r2 and r3, adds 6-9 major.
    p2 (fr): one region-less pre-fill (0,4 minor, numbers) that ann draws exactly and bob
    as 2-6. p3 (de): pre-filled, not yet annotated."""
    prefill = [filled("p1", 0, 5, "major", "untranslated", region="r1"),
               filled("p1", 10, 15, "minor", "numbers", region="r2"),
               filled("p1", 20, 25, "major", "untranslated", region="r3"),
               filled("p2", 0, 4, "minor", "numbers", language="fr"),
               filled("p3", 0, 3, "major", "untranslated")]
    spans = [span("p1", "ann", 0, 5, "major", region="r1", origin="untranslated"),
             span("p1", "ann", 10, 17, "minor", region="r2", origin="numbers"),
             span("p1", "ann", 26, 30, "major", region="n1"),
             span("p1", "bob", 10, 15, "minor", region="r2", origin="numbers"),
             span("p1", "bob", 20, 25, "major", region="r3", origin="untranslated"),
             span("p1", "bob", 6, 9, "major", region="n2"),
             span("p2", "ann", 0, 4, "minor", language="fr"),
             span("p2", "bob", 2, 6, "minor", language="fr")]
    scores = [score("p1", "ann", 40, length=30), score("p1", "bob", 50, length=30),
              score("p2", "ann", 80, language="fr"), score("p2", "bob", 85, language="fr")]
    return table(prefill, sp.PREFILL_SCHEMA), spans_table(spans), scores_table(scores)


def test_prefill_fates_kept_changed_deleted():
    fates = sp.prefill_fates(*prefill_case())
    got = {(r["item_id"], r["start"], r["annotator"]): (r["fate"], r["matched_by"])
           for r in fates.to_pylist()}
    assert got == {("p1", 0, "ann"): ("kept", "region"), ("p1", 0, "bob"): ("deleted", None),
                   ("p1", 10, "ann"): ("changed", "region"),
                   ("p1", 10, "bob"): ("kept", "region"),
                   ("p1", 20, "ann"): ("deleted", None), ("p1", 20, "bob"): ("kept", "region"),
                   ("p2", 0, "ann"): ("kept", "extent"), ("p2", 0, "bob"): ("changed", "extent"),
                   ("p3", 0, None): ("not annotated", None)}
    stretched = row(fates, item_id="p1", start=10, annotator="ann")
    assert (stretched["new_start"], stretched["new_end"]) == (10, 17)


def test_added_spans_are_those_no_check_proposed():
    added = sp.added_spans(*prefill_case())
    assert [(r["annotator"], r["start"], r["end"]) for r in added.to_pylist()] == [
        ("ann", 26, 30), ("bob", 6, 9)]


def wilson(k: int, n: int) -> tuple[float, float]:
    """(p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = (p + Z ** 2 / (2 * n)) / (1 + Z ** 2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z ** 2 / (4 * n ** 2)) / (1 + Z ** 2 / n)
    return centre - half, centre + half


def test_checks_against_people_with_wilson_intervals():
    result = sp.checks_vs_people(*prefill_case())
    # untranslated in de: r1 (ann kept, bob deleted), r3 (ann deleted, bob kept): 2 of 4
    # kept, 2 unchanged; p3 unjudged. People's major spans in de: ann 0-5, 26-30; bob
    # 20-25, 6-9; those under an untranslated pre-fill: 0-5 and 20-25 -> recall 2/4.
    untranslated = row(result, check="untranslated", language="de")
    assert (untranslated["n_prefilled"], untranslated["n_unjudged"],
            untranslated["n_judgments"], untranslated["n_kept"],
            untranslated["n_unchanged"], untranslated["n_deleted"]) == (3, 1, 4, 2, 2, 2)
    assert untranslated["share_kept"] == 0.5
    low, high = wilson(2, 4)
    assert abs(untranslated["kept_low"] - low) < 1e-12
    assert abs(untranslated["kept_high"] - high) < 1e-12
    assert (untranslated["n_serious"], untranslated["n_serious_proposed"]) == (4, 2)
    assert abs(untranslated["recall_low"] - low) < 1e-12
    # numbers in de: r2 changed by ann, kept by bob: 2/2 kept (changed counts), 1/2 unchanged;
    # no major span under it: recall 0/4.
    numbers = row(result, check="numbers", language="de")
    assert (numbers["n_kept"], numbers["n_judgments"], numbers["n_unchanged"]) == (2, 2, 1)
    low, high = wilson(1, 2)
    assert (abs(numbers["unchanged_low"] - low) < 1e-12
            and abs(numbers["unchanged_high"] - high) < 1e-12)
    assert (numbers["recall"], numbers["n_serious"]) == (0.0, 4)
    assert abs(numbers["recall_high"] - wilson(0, 4)[1]) < 1e-12
    # Any check in de: 6 judgments, 4 kept; recall 2/4. fr has no major span: recall NaN.
    anything = row(result, check="any check", language="de")
    assert (anything["n_judgments"], anything["n_kept"], anything["recall"]) == (6, 4, 0.5)
    fr = row(result, check="numbers", language="fr")
    assert (fr["n_kept"], fr["n_unchanged"], fr["n_serious"]) == (2, 1, 0)
    assert math.isnan(fr["recall"]) and math.isnan(fr["recall_low"])
    everywhere = row(result, check="numbers", language="all")
    assert (everywhere["n_judgments"], everywhere["n_kept"]) == (4, 4)


# --------------------------------------------------------------------------- bad input

def bad(field: str, value: object) -> pa.Table:
    return pa.Table.from_pylist([{**U1_SPANS[0], field: value}, *U1_SPANS[1:]])


@pytest.mark.parametrize("field, value, problem", [
    ("end", 1, "end 1 is not after start 2"),
    ("start", -1, "start -1 is negative"),
    ("end", 21, "end 21 is beyond the text's 20 characters"),
    ("severity", "severe", "unknown severity 'severe'"),
    ("role", "reviewer", "unknown role 'reviewer'"),
    ("annotator", "eve", "a span with no score row"),
])
def test_malformed_spans_name_the_item_and_the_field(field, value, problem):
    with pytest.raises(InputError) as raised:
        sp.char_kappa(bad(field, value), scores_table(U1_SCORES), n_boot=10)
    message = str(raised.value)
    assert "spans table" in message and "item 'u1'" in message
    assert f"field {field!r}" in message and problem in message


def test_missing_columns_and_malformed_scores_are_input_errors():
    without = spans_table(U1_SPANS).drop_columns(["severity", "end"])
    with pytest.raises(InputError, match="missing column\\(s\\) end, severity"):
        sp.span_f1(without, scores_table(U1_SCORES))
    scores = [score("u1", "ann", 70), score("u1", "bob", 60, length=25)]
    with pytest.raises(InputError, match="item 'u1'.*field 'text_length': differs"):
        sp.span_f1(spans_table(U1_SPANS), scores_table(scores))
    with pytest.raises(InputError, match="item 'u1'.*field 'n_words'"):
        sp.unit_scores(spans_table([]), scores_table([score("u1", "ann", 70, words=0)]))
    with pytest.raises(InputError, match="item 'u1'.*field 'esa_score'"):
        sp.unit_scores(spans_table([]), scores_table([score("u1", "ann", 101)]))


def test_a_prefill_beyond_its_text_is_an_input_error():
    prefill, spans, scores = prefill_case()
    wrong = pa.Table.from_pylist([filled("p2", 0, 25, "minor", "numbers", language="fr")],
                                 schema=sp.PREFILL_SCHEMA)
    with pytest.raises(InputError, match="prefill table: item 'p2', field 'end'"):
        sp.prefill_fates(wrong, spans, scores)
