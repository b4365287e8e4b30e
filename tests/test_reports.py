"""Review reports (audit/review/reports.py): MAPLE Table 4 and relevance against hand
computations, translation means / rates / consequences from final labels, the CSV writer."""

from __future__ import annotations

import csv
import json
import math

import pyarrow as pa
import pytest
from test_agreement import annotations

from audit.io import tables
from audit.review import agreement as ag
from audit.review import reports
from audit.review.kinds import realism, relevance, translation


def realism_records(setting: str, first: str, second: str, adjudicated: dict[int, str],
                    stored_flipped: set[int] = frozenset()) -> list[dict]:
    """Ten pairs rated by ann and bob (setting-relative A/Tie/B), adjudications by cid.
    Items in stored_flipped are stored with the sources in the other order, so their
    A and B are swapped in storage, as the pull would write them."""
    a_source, b_source = setting.split(" vs ")
    records = []

    def add(i: int, who: str, value: str, role: str = "initial") -> None:
        flipped = i in stored_flipped
        stored = {"A": "B", "B": "A"}.get(value, value) if flipped else value
        records.append({
            "item": f"{setting}/{i}", "cluster": f"{setting}/{i}", "kind": "realism",
            "language": None, "unit": None, "setting": setting, "who": who, "role": role,
            "criterion": "preference", "value": stored,
            "source_a": b_source if flipped else a_source,
            "source_b": a_source if flipped else b_source})

    for i, (a, b) in enumerate(zip(first.split(), second.split())):
        add(i, "ann", a)
        add(i, "bob", b)
    for i, value in adjudicated.items():
        add(i, "cid", value, "adjudication")
    return records


def test_table4_shares_and_kappa_on_a_planted_realism_set():
    # MAPLE vs Human, pairs (ann, bob):
    #   (A,A) (A,Tie) (Tie,Tie)x5 (Tie,B) (B,B) (B,A)
    #   p_o = 7/10; ann A .2 Tie .6 B .2; bob A .2 Tie .6 B .2
    #   p_e = .04 + .36 + .04 = .44; κ = (.7 - .44)/(1 - .44) = .26/.56 = 13/28
    # Adjudicated: item 1 -> A, item 7 -> Tie, item 9 -> B.
    # Final: A items 0,1; Tie 2..7; B 8,9 -> 20 / 60 / 20.
    human = realism_records("MAPLE vs Human",
                            "A A Tie Tie Tie Tie Tie Tie B B",
                            "A Tie Tie Tie Tie Tie Tie B B A",
                            {1: "A", 7: "Tie", 9: "B"}, stored_flipped={8, 9})
    # MAPLE vs LLM: (A,A)x8 (Tie,Tie) (B,Tie), the last never adjudicated.
    #   p_o = .9; ann A .8 Tie .1 B .1; bob A .8 Tie .2 B 0
    #   p_e = .64 + .02 + 0 = .66; κ = .24/.34 = 12/17
    # Final: 8 A, 1 Tie of 9 resolved -> 800/9, 100/9, 0; one unresolved.
    llm = realism_records("MAPLE vs LLM",
                          "A A A A A A A A Tie B", "A A A A A A A A Tie Tie", {})
    table = realism.realism_table(annotations(human + llm))
    rows = {r["setting"]: r for r in table.to_pylist()}
    assert table.column_names[:5] == ["setting", "prefer_a", "tie", "prefer_b", "n"]
    h = rows["MAPLE vs Human"]
    assert (h["prefer_a"], h["tie"], h["prefer_b"], h["n"]) == (20.0, 60.0, 20.0, 10)
    assert h["kappa"] == pytest.approx(13 / 28, abs=1e-9)
    assert h["n_pairs"] == 10 and h["n_unresolved"] == 0
    m = rows["MAPLE vs LLM"]
    assert m["prefer_a"] == pytest.approx(800 / 9, abs=1e-9)
    assert m["tie"] == pytest.approx(100 / 9, abs=1e-9)
    assert m["prefer_b"] == 0.0
    assert (m["n"], m["n_unresolved"]) == (9, 1)
    assert m["kappa"] == pytest.approx(12 / 17, abs=1e-9)
    # the floor rule of every agreement table: 13/28 = 0.464 is below 0.6, 12/17 = 0.706
    # is not, and under a floor of 0.75 neither passes
    assert [(r["kappa_floor"], r["flagged"]) for r in (h, m)] == [(0.6, True), (0.6, False)]
    strict = realism.realism_table(annotations(human + llm), kappa_floor=0.75)
    assert strict.column("flagged").to_pylist() == [True, True]


def test_the_paper_first_row_is_reproduced_from_fifty_pairs():
    # MAPLE vs Human in Table 4: 12.0 / 78.0 / 10.0 over 50 adjudicated pairs.
    first = " ".join(["A"] * 6 + ["Tie"] * 39 + ["B"] * 5)
    records = realism_records("MAPLE vs Human", first, first, {})
    row = realism.realism_table(annotations(records)).to_pylist()[0]
    assert (row["prefer_a"], row["tie"], row["prefer_b"], row["n"]) == (12.0, 78.0, 10.0, 50)


def test_table4_rows_follow_the_paper_not_the_alphabet():
    settings = ["human-written vs LLM", "MAPLE vs LLM", "Other vs Else",
                "MAPLE vs human-written", "human-written vs LLM+human-edited",
                "MAPLE vs LLM+human-edited"]
    records = []
    for setting in settings:
        records += realism_records(setting, "A Tie", "A B", {})
    table = realism.realism_table(annotations(records))
    assert table.column("setting").to_pylist() == [
        "MAPLE vs human-written", "MAPLE vs LLM+human-edited",
        "human-written vs LLM+human-edited", "MAPLE vs LLM", "human-written vs LLM",
        "Other vs Else"]


def test_realism_sources_that_do_not_match_the_setting_are_refused():
    records = realism_records("MAPLE vs Human", "A", "A", {})
    records[0]["source_b"] = "LLM"
    with pytest.raises(ValueError, match="do not match setting 'MAPLE vs Human'"):
        realism.realism_table(annotations(records))


def relevance_records(values: list[tuple[str, str]]) -> list[dict]:
    records = []
    for i, pair in enumerate(values):
        for who, value in zip(("ann", "bob"), pair):
            records.append({"item": f"q{i:03d}", "kind": "relevance", "language": None,
                            "unit": None, "who": who, "criterion": "relevance",
                            "value": value})
    return records


def test_relevance_share_has_the_wilson_interval():
    # 145 of 150 pairs relevant (96.7%, MAPLE D.2), all agreed.
    values = [("relevant", "relevant")] * 145 + [("irrelevant", "irrelevant")] * 5
    row = relevance.relevance_summary(annotations(relevance_records(values))).to_pylist()[0]
    assert (row["n"], row["n_relevant"]) == (150, 145)
    assert row["share_relevant"] == pytest.approx(145 / 150, abs=1e-12)
    # Wilson: centre (p + z²/2n)/(1 + z²/n), half-width z/(1 + z²/n) sqrt(p(1-p)/n + z²/4n²)
    z, n, p = 1.959963984540054, 150, 145 / 150
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert row["ci_low"] == pytest.approx(centre - half, abs=1e-9)
    assert row["ci_high"] == pytest.approx(centre + half, abs=1e-9)
    assert (round(row["ci_low"], 4), round(row["ci_high"], 4)) == (0.9243, 0.9857)
    assert row["kappa"] == pytest.approx(1.0)     # p_o = 1, p_e < 1


def test_relevance_kappa_by_hand_and_the_degenerate_case():
    # (rel,rel)x7 (irr,irr) (rel,irr) (irr,rel): p_o = .8; both .8/.2
    # p_e = .64 + .04 = .68; κ = .12/.32 = 3/8. Final: 8 resolved, 7 relevant.
    values = ([("relevant", "relevant")] * 7 + [("irrelevant", "irrelevant")]
              + [("relevant", "irrelevant"), ("irrelevant", "relevant")])
    row = relevance.relevance_summary(annotations(relevance_records(values))).to_pylist()[0]
    assert row["kappa"] == pytest.approx(3 / 8, abs=1e-9)
    assert (row["n"], row["n_relevant"], row["n_unresolved"]) == (8, 7, 2)
    everything = relevance.relevance_summary(
        annotations(relevance_records([("relevant", "relevant")] * 4))).to_pylist()[0]
    assert math.isnan(everything["kappa"]) and "undefined" in everything["note"]
    assert everything["share_relevant"] == 1.0


def translation_records() -> list[dict]:
    """Four items in two source instances (s1: i0, i1; s2: i2, i3), languages de/de/fr/fr.
    Adequacy: i0 5/5 agreed, i1 4/4 agreed, i2 2/4 adjudicated 3, i3 4/5 not adjudicated.
    answer_preserved: yes/yes, no/no, yes/no (unresolved), yes/yes.
    consequence: cosmetic x2 agreed, metric-sensitive agreed, label-invalidating adjudicated."""
    rows = []

    def add(item, who, criterion, value, role="initial"):
        cluster = "s1" if item in ("i0", "i1") else "s2"
        language = "de" if cluster == "s1" else "fr"
        unit = "question" if item == "i0" else "paragraph"
        rows.append({"item": item, "cluster": cluster, "language": language, "unit": unit,
                     "who": who, "criterion": criterion, "value": value, "role": role})

    for item, a, b in (("i0", "5", "5"), ("i1", "4", "4"), ("i2", "2", "4"), ("i3", "4", "5")):
        add(item, "ann", "adequacy", a)
        add(item, "bob", "adequacy", b)
    add("i2", "cid", "adequacy", "3", "adjudication")
    for item, a, b in (("i0", "yes", "yes"), ("i1", "no", "no"), ("i2", "yes", "no"),
                       ("i3", "yes", "yes")):
        add(item, "ann", "answer_preserved", a)
        add(item, "bob", "answer_preserved", b)
    for item, a, b in (("i0", "cosmetic", "cosmetic"), ("i1", "cosmetic", "cosmetic"),
                       ("i2", "metric-sensitive", "metric-sensitive"),
                       ("i3", "cosmetic", "reasoning-changing")):
        add(item, "ann", "consequence", a)
        add(item, "bob", "consequence", b)
    add("i3", "cid", "consequence", "label-invalidating", "adjudication")
    return rows


def test_rating_means_use_final_labels_and_the_mean_of_two_differing_ratings():
    table = translation.rating_means(annotations(translation_records()), seed=3)
    rows = {(r["criterion"], r["by"], r["group"]): r for r in table.to_pylist()}
    overall = rows["adequacy", "all", "all"]
    # scores 5, 4, 3 (adjudicated), 4.5 (mean of 4 and 5) -> 16.5 / 4
    assert overall["mean"] == pytest.approx(4.125, abs=1e-12)
    assert (overall["n_items"], overall["n_clusters"], overall["n_mean_of_initial"]) == (4, 2, 1)
    # Two clusters with means 4.5 (s1) and 3.75 (s2); a resample is s1+s1, s1+s2 or s2+s2,
    # each extreme with probability 1/4, so the 2.5 / 97.5 percentiles are the extremes.
    assert (overall["ci_low"], overall["ci_high"]) == (3.75, 4.5)
    assert rows["adequacy", "language", "de"]["mean"] == pytest.approx(4.5)
    assert rows["adequacy", "language", "fr"]["mean"] == pytest.approx(3.75)
    assert rows["adequacy", "unit", "paragraph"]["mean"] == pytest.approx(11.5 / 3)
    assert rows["adequacy", "unit", "question"]["n_items"] == 1
    assert not any(key[0] == "fluency" for key in rows)   # no fluency annotations
    again = translation.rating_means(annotations(translation_records()), seed=3)
    assert table.equals(again)


def test_preservation_rates_and_consequence_distribution():
    table = annotations(translation_records())
    rates = {r["criterion"]: r for r in translation.preservation_rates(table).to_pylist()}
    answer = rates["answer_preserved"]
    # resolved: yes, no, yes (i2 unresolved) -> 2/3
    assert (answer["n_items"], answer["n_unresolved"], answer["n_yes"]) == (3, 1, 2)
    assert answer["share_yes"] == pytest.approx(2 / 3, abs=1e-12)
    assert answer["ci_low"] <= answer["share_yes"] <= answer["ci_high"]
    assert rates["entities_preserved"]["n_items"] == 0
    assert math.isnan(rates["entities_preserved"]["share_yes"])
    records = translation_records() + [   # i4: no error, so nobody gives a consequence
        {"item": "i4", "cluster": "s2", "language": "fr", "unit": "answer", "who": who,
         "criterion": "adequacy", "value": "5"} for who in ("ann", "bob")]
    consequences = translation.consequence_distribution(annotations(records)).to_pylist()
    assert {(r["n_resolved"], r["n_unresolved"], r["n_no_consequence"]) for r in consequences} \
        == {(4, 0, 1)}
    assert [(r["consequence"], r["n"], r["share"]) for r in consequences] == [
        ("cosmetic", 2, 0.5), ("metric-sensitive", 1, 0.25), ("reasoning-changing", 0, 0.0),
        ("label-invalidating", 1, 0.25)]
    # An adjudicated "none" moves an error dispute out of the shares.
    records.append({"item": "i3", "cluster": "s2", "language": "fr", "unit": "paragraph",
                    "who": "cid", "role": "adjudication", "criterion": "consequence",
                    "value": "none", "minute": 5})
    consequences = translation.consequence_distribution(annotations(records)).to_pylist()
    assert {(r["n_resolved"], r["n_no_consequence"]) for r in consequences} == {(3, 2)}


def test_all_reports_returns_pyarrow_tables_for_the_kinds_present():
    records = translation_records() + relevance_records([("relevant", "relevant")] * 3)
    bundle = reports.all_reports(annotations(records), n_boot=100)
    assert set(bundle) == {"rating_means", "preservation_rates", "consequences", "relevance"}
    assert all(isinstance(t, pa.Table) for t in bundle.values())
    alone = translation.rating_means(annotations(records), n_boot=100)
    assert bundle["rating_means"].equals(alone)


def test_to_csv_is_atomic_and_writes_lists_as_json(tmp_path, monkeypatch):
    final = ag.final_labels(annotations(translation_records()))
    target = reports.to_csv(final, tmp_path / "out" / "final.csv")
    assert sorted(p.name for p in target.parent.iterdir()) == ["final.csv"]
    with target.open(encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == final.num_rows
    i2 = next(r for r in rows if r["item_id"] == "i2" and r["criterion"] == "adequacy")
    assert (i2["value"], i2["status"], json.loads(i2["initial_values"])) == \
        ("3", "adjudicated", ["2", "4"])

    def broken(*args, **kwargs):   # fails after the header: the earlier file stays, no temp
        raise OSError("disk full")

    monkeypatch.setattr(tables, "_cell", broken)
    with pytest.raises(OSError, match="disk full"):
        reports.to_csv(final, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["final.csv"]
    assert target.read_text(encoding="utf-8").count("\n") == final.num_rows + 1


def test_table4_chart_legend_runs_with_the_bars_and_names_source_a():
    table = pa.Table.from_pylist([
        {"setting": "MAPLE vs Human", "prefer_a": 50.0, "tie": 25.0, "prefer_b": 25.0, "n": 4,
         "n_unresolved": 0, "kappa": 1.0, "n_pairs": 4, "note": ""},
        {"setting": "Human vs LLM", "prefer_a": 0.0, "tie": 0.0, "prefer_b": 100.0, "n": 2,
         "n_unresolved": 0, "kappa": 1.0, "n_pairs": 2, "note": ""}],
        schema=realism.REALISM_SCHEMA)
    fig = reports.figure("realism", table)
    assert [trace.name for trace in fig.data] == ["Prefer A", "Tie", "Prefer B"]
    assert (fig.layout.legend.traceorder, fig.layout.legend.orientation) == ("normal", "h")
    assert list(fig.data[0].y) == ["MAPLE vs Human (A = MAPLE)", "Human vs LLM (A = Human)"]
