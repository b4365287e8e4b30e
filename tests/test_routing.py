"""Language routing (audit/review/routing.py): annotator specs, pairs per language group,
load balance, sides, the shortfall per language, adjudicators; and the unit languages and
context the sampler gives routing (audit/review/sampling.py)."""

from __future__ import annotations

import pytest

from audit.engine import scan
from audit.errors import InputError
from audit.review import routing, sampling
from audit.review.routing import Annotator, parse_annotator, parse_annotators, route

ANA, BO, CY, DI = "ana@example.org", "bo@example.org", "cy@example.org", "di@example.org"


def test_an_annotator_spec_is_email_and_language_codes():
    ana = parse_annotator(" Ana@Example.org:ar, fa ,en ")
    assert ana == Annotator("ana@example.org", frozenset({"ar", "fa"}))
    assert ana.reads("ar") and ana.reads("ar+fa") and ana.reads("en") and ana.reads("")
    assert not ana.reads("ar+ru")
    assert parse_annotator("bo@example.org").languages == frozenset()


@pytest.mark.parametrize("spec, message", [
    ("ana.example.org:ar", "is not an email address"),
    ("ana@example.org:ar,xx", "unknown language code(s) xx"),
    ("ana@example.org:und", "unknown language code(s) und"),
    (42, "is not text"),
])
def test_bad_annotator_specs_are_named(spec, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_annotator(spec)


def test_an_annotator_listed_twice_or_on_both_sides_is_refused():
    with pytest.raises(InputError, match="ana@example.org listed more than once"):
        parse_annotators([f"{ANA}:ar", f"{ANA.upper()}:fa"])
    with pytest.raises(InputError, match="listed more than once"):
        parse_annotators({"annotator 1": [f"{ANA}:ar"], "annotator 2": [f"{ANA}:ar"]})
    with pytest.raises(InputError, match="exactly the sides"):
        parse_annotators({"annotator 1": [f"{ANA}:ar"]})


def test_groups_are_the_sorted_non_english_languages():
    assert routing.group_of(["ur", "ar", "en", "ar"]) == "ar+ur"
    assert routing.group_of([]) == routing.group_of(["en"]) == "en"
    assert routing.group_languages("ar+ur") == ["ar", "ur"]
    assert routing.group_languages("en") == routing.group_languages("") == []


def test_each_group_goes_to_two_readers_least_loaded_first():
    people = parse_annotators([f"{ANA}:ar,fa", f"{BO}:ar,fa,de", f"{CY}:fa,de", f"{DI}:de"])
    items = [f"ar{i}" for i in range(3)] + [f"fa{i}" for i in range(4)] + \
        [f"de{i}" for i in range(2)] + ["mix"]
    groups = ["ar"] * 3 + ["fa"] * 4 + ["de"] * 2 + ["ar+de"]
    plan = route(items, groups, people)
    # Scarcest first: ar+de (1 reader: bo) is left out; ar (ana, bo) takes 3 each;
    # de (bo, cy, di): cy and di are unloaded -> (cy, di); fa (ana 3, bo 3, cy 2):
    # cy (2) then ana (3, declared before bo).
    assert plan.pairs == {"ar": (ANA, BO), "de": (CY, DI), "fa": (CY, ANA)}
    assert plan.left_out == {"mix": ("ar+de", f"only one annotator reads ar+de ({BO}); two "
                                              "are needed")}
    assert plan.annotators_of("fa2") == (CY, ANA)
    assert "mix" not in plan.items and len(plan.items) == 9
    shortfall = {r["language"]: r for r in plan.shortfall}
    assert shortfall["ar"] == {"language": "ar", "units": 4, "routed": 3, "left_out": 1,
                               "readers": 2, "reason": plan.left_out["mix"][1]}
    assert shortfall["de"]["left_out"] == 1 and shortfall["fa"]["left_out"] == 0


def test_unknown_and_unread_languages_are_left_out_with_a_reason():
    plan = route(["u1", "s1", "e1"], ["und", "sw", "en"], parse_annotators([ANA, BO]))
    assert plan.left_out["u1"][1].startswith("its language is unknown (und)")
    assert plan.left_out["s1"][1] == "no annotator reads sw"
    assert plan.pairs == {"en": (ANA, BO)}   # everyone reads English


def test_sides_take_annotator_1_from_side_1_and_2_from_side_2():
    people = parse_annotators({"annotator 1": [f"{CY}:ar", f"{ANA}:ar"],
                               "annotator 2": [f"{BO}:ar"]})
    plan = route(["a", "b"], ["ar", "ar"], people)
    assert plan.pairs == {"ar": (CY, BO)}
    lonely = route(["a"], ["ar"], parse_annotators({"annotator 1": [f"{ANA}:ar"],
                                                    "annotator 2": [f"{BO}:fa"]}))
    assert lonely.left_out["a"][1] == "no annotator on side 'annotator 2' reads ar"


def test_recorded_pairs_stay_when_annotators_are_added():
    first = route(["a", "b"], ["ar", "fa"], parse_annotators([f"{ANA}:ar,fa", f"{BO}:ar,fa"]))
    later = route(["a", "b"], ["ar", "fa"],
                  parse_annotators([f"{CY}:ar,fa", f"{DI}:ar,fa", f"{ANA}:ar,fa",
                                    f"{BO}:ar,fa"]), fixed=first.pairs)
    assert later.pairs == first.pairs


def test_adjudicators_read_the_group_and_are_neither_annotator():
    pairs = {"ar": (ANA, BO), "fa": (ANA, CY), "de": (BO, CY)}
    chosen, missing = routing.route_adjudicators(
        ["ar", "fa", "de"], parse_annotators([f"{CY}:ar,fa", f"{DI}:ar,fa"]), pairs)
    assert chosen == {"ar": CY, "fa": DI}
    assert missing == {"de": "no adjudicator reads de and is neither of its two annotators"}


# ------------------------------------------------------------------------- sampler side

@pytest.fixture(scope="module")
def scanned():
    return scan.scan_release()


@pytest.fixture(scope="module")
def units(scanned):
    return sampling.build_units(scanned)


def test_unit_languages_are_what_the_unit_shows(units, scanned):
    rows = {r["item_id"]: r for r in units.select(
        ["item_id", "unit", "language", "languages", "rid"]).to_pylist()}
    release = {r["rid"]: r for r in scanned.release.con.sql(
        "SELECT rid, question_language, answer_language, candidates, supporting_facts "
        "FROM release").to_arrow_table().to_pylist()}
    for row in rows.values():
        source = release[row["rid"]]
        if row["unit"] == "instance":
            gold = {f["paragraph_id"] for f in source["supporting_facts"]}
            shown = {source["question_language"], source["answer_language"]} | {
                c["language_code"] for c in source["candidates"] if c["paragraph_id"] in gold}
        else:
            shown = {row["language"]}
        assert row["languages"] == sorted(shown - {"en"})
    instance = [r for r in rows.values() if r["unit"] == "instance"]
    assert sum(len(r["languages"]) > 1 for r in instance) == 232   # mostly mixed


def test_the_default_scope_samples_target_languages_only(units):
    batch = sampling.sample_design(units, sampling.DEFAULT_PRESET,
                                   **{"where": sampling.target_languages_only(
                                       ["language"])["where"]})
    languages = set(batch.units.column("language").to_pylist())
    assert languages <= set(sampling.NON_ENGLISH) and "en" not in languages
    assert batch.manifest["totals"]["target"] == 23 * 6


def test_context_in_other_languages_is_not_shown(scanned, units):
    batch = sampling.sample(units, ["unit"], seed=4, per_stratum=1)
    texts = {t["unit"]: t for t in sampling.unit_texts(scanned.release, batch.units)}
    paragraph = texts["paragraph"]
    # this paragraph is English; the row's question and answer are Bengali
    assert paragraph["language"] == "English (en)"
    assert paragraph["question"] == "(in Bengali (bn): not part of this unit)"
    assert paragraph["source_question"] and paragraph["answer"].startswith("(in Bengali")
    assert texts["answer"]["question"].startswith("『七人の侍』")   # the answer's language
