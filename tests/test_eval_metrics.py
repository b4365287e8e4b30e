"""Answer/support/joint metrics: the reference toolkit's own test pairs (tests/test_metrics.py,
tests/test_evaluator.py of XHotpotQA v0.4.0), the issue's examples and protocol differences."""

from __future__ import annotations

import json

import pytest

from audit.errors import InputError
from audit.evaluation import metrics, predictions


def test_reference_pair_joint_uses_products_of_precision_and_recall():
    score = metrics.score_example("the blue whale", "blue whale", "en", [("p0", 0)],
                                  [("p0", 0), ("p1", 1)])
    assert score.answer.exact_match == 1.0
    assert (score.support.precision, score.support.recall) == (1.0, 0.5)
    assert (score.joint.precision, score.joint.recall) == (1.0, 0.5)
    assert score.joint.f1 == 2 / 3


def test_reference_pair_cjk_is_tokenised_by_character():
    score = metrics.score_example("北京大学", "北京", "zh", [], [])
    assert (score.answer.precision, score.answer.recall) == (0.5, 1.0)
    # Under the legacy protocol the two are single different tokens.
    legacy = metrics.score_example("北京大学", "北京", "zh", [], [], protocol="legacy_hotpot")
    assert (legacy.answer.precision, legacy.answer.recall, legacy.answer.f1) == (0, 0, 0)
    # Both empty support sets: P = R = 1, EM 1 (the reference's empty_is_one).
    assert (score.support.exact_match, score.support.f1) == (1.0, 1.0)


def test_reference_evaluator_missing_prediction_scores_zero():
    score = metrics.score_example("", "Ada", "en", [], [("p0", 0)])
    assert score.answer.f1 == 0 and score.support.f1 == 0 and score.joint.f1 == 0


@pytest.mark.parametrize(("predicted", "gold", "expected_f1"), [
    ("yes", "no", 0.0), ("no", "no", 1.0), ("yes", "yes it is", 0.0),
    ("noanswer", "Ada", 0.0), ("Yes.", "yes", 1.0)])
def test_yes_no_noanswer_rule(predicted, gold, expected_f1):
    assert metrics.answer_score(predicted, gold, "en").f1 == expected_f1


def test_protocols_differ_where_the_paper_says_they_do():
    # Unicode punctuation (the Spanish ¿ and the ideographic full stop) is a space only
    # under the release protocol; NFKC folds full-width letters.
    assert metrics.normalize("¿Dónde?", "es") == "dónde"
    assert metrics.normalize("¿Dónde?", "es", "legacy_hotpot") == "¿dónde"
    assert metrics.normalize("ＡＢＣ。", "ja") == "abc"
    # Articles: English only under the release protocol, every language under legacy.
    assert metrics.normalize("a casa", "pt") == "a casa"
    assert metrics.normalize("a casa", "pt", "legacy_hotpot") == "casa"
    assert metrics.normalize("The Beatles", "en") == "beatles"
    thai = metrics.answer_score("กรุงเทพ", "กรุงเทพมหานคร", "th")
    assert thai.precision == 1.0 and thai.recall == pytest.approx(7 / 13)


def test_unknown_language_is_word_tokenised_not_english():
    score = metrics.answer_score("the river", "river", "und")
    assert score.exact_match == 0.0 and score.precision == 0.5


def _write(tmp_path, lines):
    path = tmp_path / "pred.jsonl"
    path.write_text("\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("bad", "message"), [
    ('{"id": "b", "answer": "x"', "invalid JSON"),
    ({"answer": "x"}, "no string id"),
    ({"id": "b", "answer": 3}, "answer is a JSON int"),
    ({"id": "b", "supporting_facts": "p0"}, "not a list"),
    ({"id": "b", "supporting_facts": ["p0"]}, "supporting fact 0 is not an object"),
    ({"id": "b", "supporting_facts": [{"paragraph_id": "", "sentence_id": 0}]}, "non-empty"),
    ({"id": "b", "supporting_facts": [{"paragraph_id": "p0", "sentence_id": True}]},
     "non-negative integer"),
    ({"id": "b", "supporting_facts": [{"paragraph_id": "p0", "sentence_id": -1}]},
     "non-negative integer"),
    ({"id": "b", "supporting_facts": [{"paragraph_id": "p0", "sentence_id": 0}] * 2},
     "repeats"),
    ({"id": "a"}, "already predicted on line 1"),
])
def test_bad_prediction_lines_name_their_line(tmp_path, bad, message):
    path = _write(tmp_path, [{"id": "a", "answer": "x"}, "", bad])
    with pytest.raises(InputError) as error:
        predictions.read_predictions(path)
    assert "line 3" in str(error.value) and message in str(error.value)


def test_prediction_defaults(tmp_path):
    read = predictions.read_predictions(_write(tmp_path, [{"id": "a"}]))
    assert read.table.to_pylist() == [{"id": "a", "answer": "", "facts": [], "line": 1}]
