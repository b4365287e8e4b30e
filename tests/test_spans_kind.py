"""The error-span kind (audit/review/kinds/spans.py) without a server: its spec keys, where a
finding is pre-filled, its configs, and what the pull accepts of an annotation."""

from __future__ import annotations

import json

import pytest

from audit.errors import InputError
from audit.review import spec
from audit.review.kinds import spans as kind

PARAGRAPH = "Titel\n[0] Erster Satz.\n[1] Er kam 1954 nach Berlin."


def _spec(tmp_path, **keys):
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"annotators": ["ana@example.org:de", "bo@example.org:de"],
                                **keys}), encoding="utf-8")
    return spec.load(path)


def test_a_spans_spec_reads_its_keys_with_their_defaults(tmp_path):
    assert _spec(tmp_path, kind="spans").options == {
        "protocol": "esa", "prefill": "findings", "typology": list(kind.TYPOLOGY),
        "mqm_weights": {"minor": 1.0, "major": 5.0, "critical": 25.0}}
    mqm = _spec(tmp_path, kind="spans", protocol="mqm", prefill="none",
                typology=["accuracy", "fluency"], mqm_weights={"minor": 1, "major": 10,
                                                               "critical": 25})
    assert mqm.options == {"protocol": "mqm", "prefill": "none",
                           "typology": ["accuracy", "fluency"],
                           "mqm_weights": {"minor": 1.0, "major": 10.0, "critical": 25.0}}


@pytest.mark.parametrize("keys, message", [
    ({"protocol": "dqf"}, "batch.json: protocol: 'dqf' (expected 'esa' or 'mqm')"),
    ({"prefill": "all"}, "batch.json: prefill: 'all' (expected 'none' or 'findings')"),
    ({"typology": ["a"]}, "batch.json: typology: ['a'] (expected a typology only with "
                          "protocol = \"mqm\")"),
    ({"protocol": "mqm", "typology": ["a", "a"]},
     "batch.json: typology: ['a', 'a'] (expected a list of distinct category names (at "
     "most 80 characters each))"),
    ({"mqm_weights": {"minor": 1, "major": 5}},
     "batch.json: mqm_weights: {'minor': 1, 'major': 5} (expected a table of "
     "non-negative weights for minor, major and critical)"),
])
def test_a_bad_spans_key_names_the_key_and_what_it_takes(tmp_path, keys, message):
    with pytest.raises(InputError) as caught:
        _spec(tmp_path, kind="spans", **keys)
    assert str(caught.value).endswith(message)


def test_a_spans_key_on_another_kind_is_refused(tmp_path):
    with pytest.raises(InputError) as caught:
        _spec(tmp_path, kind="translation", protocol="esa")
    assert str(caught.value).endswith(
        "batch.json: protocol: given for a translation batch (expected protocol only "
        "with kind = \"spans\")")


# ------------------------------------------------------------------------- pre-filling

def _finding(unit, sentence=None, evidence=None):
    return {"unit": unit, "sentence_index": sentence, "evidence": evidence}


@pytest.mark.parametrize("unit, finding, region", [
    # evidence inside its sentence, not the same word elsewhere
    ("paragraph", _finding("sentence", 1, "1954"), (34, 38)),
    # no evidence: the sentence after its marker
    ("paragraph", _finding("sentence", 0), (10, 22)),
    # evidence not in its sentence: the sentence
    ("paragraph", _finding("sentence", 0, "Berlin"), (10, 22)),
    ("paragraph", _finding("title"), (0, 5)),
    ("paragraph", _finding("sentence", 7), None),          # no such sentence
    ("question", _finding("question", None, "Satz"), (17, 21)),
    ("question", _finding("question"), (0, len(PARAGRAPH))),
])
def test_a_finding_is_pre_filled_where_it_points(unit, finding, region):
    assert kind.locate(PARAGRAPH, unit, finding) == region


def test_the_demo_batch_pre_fills_the_checks_findings_at_their_text(tmp_path):
    batch = spec.build_batch(_spec(tmp_path, kind="spans", batch="demo-spans", design={
        "by": ["language", "unit"], "per_stratum": {"paragraph": 3, "question": 1,
                                                    "answer": 1}}))
    prefill = batch.tables[kind.PREFILL_FILE].to_pylist()
    tasks = {t["item_id"]: t for t in batch.tasks}
    assert len(batch.tasks) == 115 and batch.config == "translation_esa"
    assert [(r["language"], r["origin"], r["start"], r["end"]) for r in prefill] == [
        ("ko", "exact_source_copy", 13, 83), ("ko", "script_mismatch", 13, 83),
        ("zh", "script_mismatch", 9, 31), ("zh", "script_mismatch", 36, 62),
        ("zh", "script_mismatch", 67, 90), ("zh", "script_mismatch", 0, 4)]
    for row in prefill:
        assert tasks[row["item_id"]]["translation_text"][row["start"]:row["end"]] == row["text"]
        assert tasks[row["item_id"]]["translation_text"].endswith(" [missing]")
    regions = batch.predictions[prefill[0]["item_id"]][0]
    assert regions["model_version"] == "checks"
    assert regions["result"][0] == {
        "id": prefill[0]["region_id"], "from_name": "severity", "to_name": "translation",
        "type": "labels", "value": {"start": 13, "end": 83, "text": prefill[0]["text"],
                                    "labels": ["major"]}}


def test_an_mqm_batch_offers_its_own_typology_escaped():
    review, twin = kind.forms_for({"protocol": "mqm", "typology": ["wrong <term>", "other"]})
    text = review.load()
    assert '<Choice value="wrong &lt;term&gt;" />' in text and "accuracy/omission" not in text
    assert [c.tag for c in review.controls.values()] == ["Labels", "Number", "Choices"]
    assert review.controls["severity"].choices == ("minor", "major", "critical")
    assert twin.name == "translation_mqm_adjudication"
    assert kind.forms_for({})[0].name == "translation_esa"


def test_mqm_words_leave_the_sentence_markers_out():
    assert kind.n_words("Title\n[0] One two three.\n[1] Four.") == 5


# ------------------------------------------------------------------------- the pull

TEXT = kind.shown("Er kam nach Paris.")      # 18 characters, then " [missing]"
FORM = kind.forms_for({"protocol": "mqm"})[0]


def _span(region, start, end, severity, text=None):
    return {"id": region, "from_name": "severity", "to_name": "translation", "type": "labels",
            "value": {"start": start, "end": end, "text": TEXT[start:end] if text is None
                      else text, "labels": [severity]}}


def _score(number):
    return {"id": "s", "from_name": "esa_score", "to_name": "translation", "type": "number",
            "value": {"number": number}}


def test_an_annotation_becomes_its_spans_and_its_score():
    category = {"id": "r1", "from_name": "category", "to_name": "translation",
                "type": "choices", "value": {"start": 12, "end": 17, "text": "Paris",
                                             "choices": ["accuracy/mistranslation"]}}
    values, problem = kind.parse(FORM, [_span("r1", 12, 17, "major"), category,
                                        _span("r0", 19, 28, "critical"), _score(40)],
                                 {"translation_text": TEXT})
    assert problem is None
    assert values["esa_score"] == "40.0"
    assert json.loads(values["spans"]) == [
        {"id": "r1", "start": 12, "end": 17, "severity": "major", "text": "Paris",
         "category": "accuracy/mistranslation"},
        {"id": "r0", "start": 19, "end": 28, "severity": "critical", "text": "[missing]",
         "category": None}]


@pytest.mark.parametrize("result, problem", [
    ([_span("r1", 12, 17, "major", "Rome"), _score(40)],
     "region r1: its text 'Rome' is not the shown text at 12-17"),
    ([_span("r1", 12, 40, "major", "x"), _score(40)],
     "region r1: characters 12-40 are not within the shown text of 28 characters"),
    ([_span("r1", 12, 17, "fatal"), _score(40)],
     "region r1: severity ['fatal'] (expected one of ('minor', 'major', 'critical'))"),
    ([_span("r1", 12, 17, "major")], "esa_score: [] (expected one number from 0 to 100)"),
    ([_score(40), _score(50)], "esa_score: [40, 50] (expected one number from 0 to 100)"),
    ([_score(140)], "esa_score: [140] (expected one number from 0 to 100)"),
    ([{"id": "r9", "from_name": "category", "value": {"choices": ["other"]}}, _score(9)],
     "category for regions ['r9'] that hold no span"),
    ([{"id": "x", "from_name": "adequacy", "value": {"rating": 4}}],
     "result for unknown control 'adequacy'"),
])
def test_the_pull_refuses_an_annotation_it_cannot_trust(result, problem):
    assert kind.parse(FORM, result, {"translation_text": TEXT}) == ({}, problem)


def test_a_mapped_release_pre_fills_each_columns_findings(tmp_path):
    from audit.engine import scan
    from audit.io.release import open_release
    from audit.review import sampling
    (tmp_path / "doc.en.txt").write_text("One apple.\nTwo pears cost 3 euros.\nThe cat sleeps.\n",
                                         encoding="utf-8")
    (tmp_path / "doc.de.txt").write_text("Ein Apfel.\nZwei Birnen kosten 4 Euro.\n"
                                         "The cat sleeps.\n", encoding="utf-8")
    (tmp_path / "m.toml").write_text('[release]\nsource_language = "en"\n[input]\n'
                                     'files = "doc.{lang}.txt"\n', encoding="utf-8")
    result = scan.run(open_release(tmp_path / "m.toml"))
    sample = sampling.sample(sampling.build_units(result), by=["language"], seed=1,
                             per_stratum=5, created_at="2026-12-07T00:00:00+00:00")
    batch = kind.span_batch(result, sample, "mapped", kind.DEFAULTS)
    assert sorted((r["item_id"], r["origin"], r["start"], r["end"], r["text"])
                  for r in batch.tables[kind.PREFILL_FILE].to_pylist()) == [
        ("1@de:text:-", "number_mismatch", 19, 20, "4"),
        ("2@de:text:-", "exact_source_copy", 0, 15, "The cat sleeps.")]


def test_a_spec_may_send_the_units_the_checks_cannot_verify(tmp_path):
    chosen = _spec(tmp_path, kind="spans", design="unverifiable")
    assert chosen.design == "unverifiable"
    batch = spec.build_batch(chosen)
    # the demo's paragraphs whose answer or bridge entity the checks cannot confirm
    assert sorted(batch.items.column("language").to_pylist()) == (
        ["es"] * 3 + ["fr", "ko", "pt"] + ["ru"] * 4)
    with pytest.raises(InputError) as caught:
        _spec(tmp_path, kind="spans", design={"by": ["language"], "per_stratum": 1,
                                              "levels": {"preservation": "lost"}})
    assert str(caught.value).endswith("batch.json: design.levels: {'preservation': 'lost'} "
                                      "(expected a table of value lists, e.g. "
                                      "{preservation = ['unverifiable']})")


def test_a_right_to_left_language_gets_its_translation_laid_out_right_to_left():
    laid = kind.forms_for({"protocol": "mqm"})[0].laid_out("rtl")
    assert "<Style>.xr-target { direction: rtl; text-align: right; }</Style>" in laid
    assert '<View className="xr-target">' in laid
