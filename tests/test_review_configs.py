"""Label Studio labeling configs (audit/review/label_configs/*.xml) and their task payloads
(audit/review/configs.py): the controls are there, the XML is static, and hostile dataset text
travels as JSON data without touching it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from audit.errors import InputError
from audit.reports import render
from audit.review import configs, kinds
from audit.review.kinds import realism, relevance, translation
from audit.review.maple import QueryPair, RelevancePair, assign_order

HOSTILE = "</View><script>alert('x')</script> $question \"quoted\" 'single' < & > ]]> &amp;"


def controls(kind: str) -> dict[str, ET.Element]:
    root = ET.fromstring(kinds.config(kind).load())
    return {e.get("name"): e for e in root.iter() if e.tag in {"Choices", "Rating", "TextArea"}}


def choices(element: ET.Element) -> list[str]:
    return [c.get("value") for c in element if c.tag == "Choice"]


@pytest.mark.parametrize("kind", list(kinds.CONFIGS))
def test_bundled_configs_validate(kind):
    text = kinds.config(kind).load()
    assert configs.data_fields(text) == set(kinds.config(kind).fields)
    assert kinds.config(kind).path.name == f"{kind}.xml"


def test_translation_review_controls():
    found = controls("translation_review")
    assert set(found) == {"adequacy", "fluency", "answer_preserved", "entities_preserved",
                          "alignment_preserved", "assigned_language", "consequence",
                          "comment"}
    for name in ("adequacy", "fluency"):
        assert found[name].tag == "Rating" and found[name].get("maxRating") == "5"
    for name in ("answer_preserved", "entities_preserved", "alignment_preserved",
                 "assigned_language"):
        assert choices(found[name]) == ["yes", "no"]
    assert choices(found["consequence"]) == [
        "cosmetic", "metric-sensitive", "reasoning-changing", "label-invalidating"]
    assert found["comment"].tag == "TextArea"
    text = kinds.config("translation_review").load()
    # Source and translation side by side, with the instance context.
    for field in ("source_text", "translation_text", "question", "answer", "title"):
        assert f'value="${field}"' in text


def test_maple_realism_is_blind_with_a_tie():
    found = controls("maple_realism")
    assert set(found) == {"preference"}
    assert choices(found["preference"]) == ["A", "Tie", "B"]
    text = kinds.config("maple_realism").load()
    assert "Pairwise" not in {e.tag for e in ET.fromstring(text).iter()}
    assert configs.data_fields(text) == {"query_a", "query_b"}  # no source, no setting


def test_maple_relevance_controls():
    found = controls("maple_relevance")
    assert choices(found["relevance"]) == ["relevant", "irrelevant"]
    assert configs.data_fields(kinds.config("maple_relevance").load()) == {
        "query", "aspect", "title", "abstract", "text"}


# ------------------------------------------------------------------------- hostile text

def hostile_payloads() -> list[tuple[str, dict]]:
    texts = {f: HOSTILE for f in kinds.config("translation_review").fields}
    unit = translation.payload(texts, batch_id=HOSTILE)
    pair = QueryPair("p<1>", "MAPLE vs LLM", HOSTILE + " A", "MAPLE", HOSTILE + " B", "LLM")
    blind = realism.payload(assign_order([pair], seed=1)[0], batch_id="b1")
    paper = relevance.payload(
        RelevancePair(HOSTILE, "q", HOSTILE, "method", "paper", HOSTILE, HOSTILE, HOSTILE),
        batch_id="b1")
    return [("translation_review", unit), ("maple_realism", blind), ("maple_relevance", paper)]


@pytest.mark.parametrize("kind, payload", hostile_payloads())
def test_hostile_text_round_trips_as_json_data(kind, payload):
    before = kinds.config(kind).load()
    wire = json.dumps({"data": payload})
    assert json.loads(wire)["data"] == payload
    # Values are passed through as given: no escaping, no truncation.
    assert any(HOSTILE in value for value in payload.values())
    # The config is static: it stays well-formed and unchanged, and never holds data.
    after = kinds.config(kind).load()
    assert after == before
    ET.fromstring(after)
    assert HOSTILE not in after and "<script>" not in after


def test_translation_payload_keeps_text_verbatim():
    texts = {f: f"{f} {HOSTILE}" for f in kinds.config("translation_review").fields}
    payload = translation.payload(texts, batch_id="b7")
    assert payload == {**texts, "batch_id": "b7"}
    assert list(payload)[:2] == ["item_id", "batch_id"]


def test_realism_payload_holds_only_the_two_texts():
    pair = QueryPair("qp-1", "MAPLE vs human-written", "first query", "MAPLE",
                     "second query", "human-written")
    item = assign_order([pair], seed=3)[0]
    payload = realism.payload(item, batch_id="b2")
    assert set(payload) == {"item_id", "batch_id", "query_a", "query_b"}
    assert {payload["query_a"], payload["query_b"]} == {"first query", "second query"}
    flat = json.dumps(payload)
    for secret in ("MAPLE", "human-written", "qp-1", "swapped"):
        assert secret not in flat


@pytest.mark.parametrize("texts, error, message", [
    ({"query_a": "x"}, ValueError, "expected ['query_a', 'query_b']"),
    ({"query_a": "x", "query_b": "y", "source_a": "MAPLE"}, ValueError, "payload fields"),
    ({"query_a": "x", "query_b": None}, TypeError, "'query_b' is NoneType"),
])
def test_task_payload_rejects_wrong_fields(texts, error, message):
    with pytest.raises(error) as raised:
        realism.FORM.payload(item_id="i", batch_id="b", **texts)
    assert message in str(raised.value)


# ------------------------------------------------------------------------- validation

def realism_text(**replace: str) -> str:
    text = kinds.config("maple_realism").load()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("text, message", [
    ("<View><Text name='a' value='$query_a'>", "not well-formed XML"),
    ("<Config/>", "the root element is <Config> (expected <View>)"),
    (realism_text(**{'<Text name="query_b"': '<HyperText name="query_b"'}),
     "tag <HyperText> is not allowed"),
    (realism_text(**{'value="Query B"': 'value="$query_b"'}),
     "<Header value='$query_b'> reads task data"),
    (realism_text(**{'value="$query_b"': 'value="$source_b"'}),
     "task fields differ from the payload: not shown: query_b; unknown: source_b"),
    (realism_text(**{'name="preference"': 'name="choice"'}),
     "controls differ: missing preference; unexpected choice"),
    (realism_text(**{'<Choice value="Tie" hint="The two are equally realistic"/>': ""}),
     "control 'preference' offers ['A', 'B'], expected ['A', 'Tie', 'B']"),
    (realism_text(**{'toName="query_a"': 'toName="query_c"'}),
     "control 'preference' points at 'query_c'"),
    (realism_text(**{'<Text name="query_b"': '<Text name="query_a"'}),
     "names used twice: query_a"),
])
def test_invalid_configs_are_rejected(text, message):
    with pytest.raises(InputError) as error:
        kinds.config("maple_realism").validate(text, "custom.xml")
    assert message in str(error.value)
    assert str(error.value).startswith("custom.xml: ")


def test_rating_scale_is_checked():
    text = kinds.config("translation_review").load().replace(
        '<Rating name="fluency" toName="translation" maxRating="5"',
        '<Rating name="fluency" toName="translation" maxRating="10"')
    with pytest.raises(InputError, match="maxRating='10', expected 5"):
        kinds.config("translation_review").validate(text)


def test_missing_config_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        kinds.config("maple_realism").load(tmp_path / "absent.xml")
    with pytest.raises(ValueError, match="unknown config kind"):
        kinds.config("pairwise").path


@pytest.mark.parametrize("kind", [k for k in kinds.CONFIGS if k != "post_edit"
                                  and kinds.of_config(k).parse is None])
def test_control_names_are_the_agreement_criteria(kind):
    """Label Studio results carry the control name (from_name); the agreement module reads
    it as the criterion, so the two lists must match."""
    agreement = pytest.importorskip("audit.review.agreement")
    criteria = set(agreement.CRITERIA[kinds.of_config(kind).annotation])
    assert set(kinds.config(kind).controls) - {agreement.COMMENT} == criteria


# ------------------------------------------------------------------------- direction

@pytest.mark.parametrize("languages, direction", [
    (["ar"], "rtl"), (["ar", "fa", "ur"], "rtl"), (["ar", "ru"], "auto"), (["de"], "ltr"),
    ([], "ltr"), (["en", "fa"], "rtl")])
def test_direction_follows_the_languages(languages, direction):
    assert configs.direction_of(languages) == direction


def test_right_to_left_applies_to_the_target_views_only():
    plain = kinds.config("translation_review").laid_out()
    assert plain == kinds.config("translation_review").load() and "<Style" not in plain
    rtl = ET.fromstring(kinds.config("translation_review").laid_out("rtl"))
    style = rtl.find("Style")
    assert style.text == ".xr-target { direction: rtl; text-align: right; }"
    targets = [e for e in rtl.iter("View") if e.get("className") == "xr-target"]
    held = {t.get("value") for view in targets for t in view.iter("Text")}
    assert held == {"$question", "$answer", "$title", "$translation_text"}   # not the English
    auto = ET.fromstring(kinds.config("translation_adjudication").laid_out("auto"))
    assert "unicode-bidi: plaintext" in auto.find("Style").text
    with pytest.raises(ValueError, match="direction 'up'"):
        kinds.config("translation_review").laid_out("up")


def test_the_post_edit_task_carries_the_workbench_text_style_and_no_add_button():
    """The findings table and marks of $findings_html look as on the workbench's pages
    (render.TEXT_CSS); the editor edits the box and submits, with no "Add" step."""
    root = ET.fromstring(kinds.config("post_edit").laid_out("rtl"))
    assert [s.text for s in root.findall("Style")] == [
        render.TEXT_CSS, ".xr-target { direction: rtl; text-align: right; }"]
    (area,) = root.iter("TextArea")
    assert area.get("showSubmitButton") == "false" and area.get("editable") == "true"
    text = kinds.config("maple_realism").load().replace(
        "<View>", f"<View><Style>{render.TEXT_CSS}</Style>", 1)
    with pytest.raises(InputError, match="a <Style> other than the rules of label_config"):
        kinds.config("maple_realism").validate(text)


def test_a_style_other_than_ours_is_refused():
    text = kinds.config("maple_realism").load().replace(
        "<View>", "<View><Style>body { display: none }</Style>", 1)
    with pytest.raises(InputError, match="a <Style> other than the rules of label_config"):
        kinds.config("maple_realism").validate(text)


# ------------------------------------------------------------------------- adjudication

def test_adjudication_configs_show_the_dispute_and_allow_none():
    found = {e.get("name"): e for e in ET.fromstring(kinds.config(
        "translation_adjudication").load()).iter() if e.tag in {"Choices", "Rating"}}
    assert choices(found["consequence"])[-1] == "none"
    assert not any(e.get("required") for e in found.values())   # only disputed ones answered
    assert kinds.config("translation_adjudication").fields[-7:] == tuple(
        f"dispute_{c}" for c in kinds.config("translation_review").criteria)


def test_adjudication_payload_names_no_annotator_and_keeps_agreed_values():
    task = realism.payload(assign_order([QueryPair(
        "qp-1", "MAPLE vs LLM", "first query", "MAPLE", "second query", "LLM")], 1)[0], "b1")
    data = configs.adjudication_payload(realism.FORM, realism.ADJUDICATION, task, {"preference": ["B", "A"]}, {})
    assert data["dispute_preference"] == ("DISPUTED. One annotator: A — the other: B. "
                                          "Choose the final answer below.")
    assert set(data) == {"item_id", "batch_id", "query_a", "query_b", "dispute_preference"}
    texts = {f: "x" for f in kinds.config("translation_review").fields}
    review = translation.payload(texts, "b1")
    data = configs.adjudication_payload(translation.FORM, translation.ADJUDICATION, review,
                                        {"consequence": ["cosmetic", None]},
                                        {"adequacy": "4", "fluency": "5"})
    assert data["dispute_consequence"].startswith(
        "DISPUTED. One annotator: cosmetic — the other: none (no error).")
    assert data["dispute_adequacy"] == "Agreed: 4. Kept as it is; leave this criterion empty."
