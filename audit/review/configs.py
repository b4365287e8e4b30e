"""The Label Studio labeling configs (label_configs/*.xml, package data) and the task data they read.

A config is static XML. Dataset text never goes into it: it reaches the page only through
`<Text name=… value="$field">`, which Label Studio renders as plain text, from the task's
`data` dict built here. So a question holding `</View><script>` cannot break the config or
run in the annotator's browser. `validate_config()` holds the configs to that contract:

- well-formed XML with a <View> root, tags from a small allow-list (no HyperText/HTML
  objects, which would render data as markup);
- `$field` references only in the `value` of <Text>, and exactly the fields FIELDS names;
- the expected controls (name, tag, target, choice values, rating scale) and no others,
  each pointing at an object that exists, so exported results parse by name.

Payloads: `task_payload(kind, item_id=…, batch_id=…, **texts)` → {"item_id", "batch_id",
<the kind's text fields>}; all values are strings and are passed through unchanged. The
realism payload carries only the two query texts: sources stay in our assignment key.

Adjudication: each review config has an adjudication twin (ADJUDICATION_CONFIGS) showing
the same fields plus, per criterion, `dispute_<criterion>`: the two initial answers,
unnamed, or "agreed" (adjudication_payload). Its controls are the review's, none required,
and the consequence also offers "none" (no error).

Direction: views of class `xr-target` hold target-language text. label_config(config,
direction) lays them out right to left ("rtl": ar, fa, ur; the sentence markers [n] then
stand on the reading side and final punctuation at the line's end) or lets each line find
its own direction ("auto": a unit mixing right-to-left and left-to-right languages), with a
static <Style> rule; direction_of(languages) picks it.

Post-editing (`post_edit`, postedit.py) is the one config that also shows HTML and repeats:
its `<HyperText value="$findings_html">` shows the findings table and the current text with
the evidence marked, built through audit/render.py (every outside character escaped), and
`<Repeater on="$sentences">` holds one English sentence (`$sentences[{{idx}}].english`, a
<Text>) and one pre-filled, editable TextArea (`text_{{idx}}`, value
`$sentences[{{idx}}].text`) per source sentence. Results come back as `text_0`, `text_1`, …
(control_of maps them to the repeated control).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from ..errors import InputError
from ..languages import RTL_CODES
from ..reports import render

if TYPE_CHECKING:
    from .maple import RealismItem, RelevancePair

CONFIG_DIR = Path(__file__).resolve().parent / "label_configs"
REVIEW_KINDS = ("translation_review", "maple_realism", "maple_relevance")
ADJUDICATION_CONFIGS = {kind: kind.replace("_review", "") + "_adjudication"
                        for kind in REVIEW_KINDS}
POST_EDIT = "post_edit"
KINDS = (*REVIEW_KINDS, *ADJUDICATION_CONFIGS.values(), POST_EDIT)
# Which kind of batch (and annotation) a config serves, and how many read an item: kinds.py.
# Control names are the criterion names agreement.py uses (a result's from_name).
DIRECTIONS = ("ltr", "rtl", "auto")
_DIRECTION_CSS = {"rtl": ".xr-target { direction: rtl; text-align: right; }",
                  "auto": ".xr-target * { unicode-bidi: plaintext; text-align: start; }"}

YES_NO = ("yes", "no")
ERROR_CONSEQUENCES = ("cosmetic", "metric-sensitive", "reasoning-changing",
                      "label-invalidating")
NO_CONSEQUENCE = "none"
REALISM_CHOICES = ("A", "Tie", "B")
RELEVANCE_CHOICES = ("relevant", "irrelevant")
FINE = "fine as it is"
POST_EDIT_REASONS = ("mistranslation", "untranslated", "truncated", "number", "placeholder",
                     "wrong language", "other", FINE)
REPEATED = "{{idx}}"     # the Repeater's index flag in a control's name


@dataclass(frozen=True)
class Control:
    """What a control must look like: its tag, target object, and choices or scale."""

    tag: str
    to_name: str
    choices: tuple[str, ...] = ()
    max_rating: int | None = None


CONTROLS: dict[str, dict[str, Control]] = {
    "translation_review": {
        "adequacy": Control("Rating", "translation", max_rating=5),
        "fluency": Control("Rating", "translation", max_rating=5),
        "answer_preserved": Control("Choices", "translation", YES_NO),
        "entities_preserved": Control("Choices", "translation", YES_NO),
        "alignment_preserved": Control("Choices", "translation", YES_NO),
        "assigned_language": Control("Choices", "translation", YES_NO),
        "consequence": Control("Choices", "translation", ERROR_CONSEQUENCES),
        "comment": Control("TextArea", "translation"),
    },
    "maple_realism": {
        "preference": Control("Choices", "query_a", REALISM_CHOICES),
    },
    "maple_relevance": {
        "relevance": Control("Choices", "text", RELEVANCE_CHOICES),
        "comment": Control("TextArea", "text"),
    },
}

for _kind, _controls in list(CONTROLS.items()):
    CONTROLS[ADJUDICATION_CONFIGS[_kind]] = dict(_controls)
CONTROLS["translation_adjudication"]["consequence"] = Control(
    "Choices", "translation", (*ERROR_CONSEQUENCES, NO_CONSEQUENCE))
# The criteria an adjudicator settles (comments are notes, not labels).
CRITERIA = {kind: tuple(name for name in CONTROLS[kind] if name != "comment")
            for kind in REVIEW_KINDS}
CONTROLS[POST_EDIT] = {
    "reason": Control("Choices", "where", POST_EDIT_REASONS),
    f"text_{REPEATED}": Control("TextArea", f"english_{REPEATED}"),
}

# The task-data fields each config shows; a payload holds these plus item_id and batch_id.
FIELDS: dict[str, tuple[str, ...]] = {
    "translation_review": ("item_id", "unit", "language", "question", "source_question",
                           "answer", "source_answer", "title", "source_title", "source_text",
                           "translation_text"),
    "maple_realism": ("query_a", "query_b"),
    "maple_relevance": ("query", "aspect", "title", "abstract", "text"),
}
for _kind in REVIEW_KINDS:
    FIELDS[ADJUDICATION_CONFIGS[_kind]] = FIELDS[_kind] + tuple(
        f"dispute_{name}" for name in CRITERIA[_kind])
FIELDS[POST_EDIT] = ("item_id", "where", "findings_html", "sentences")
# Where post-editing's data may enter besides a whole `$field` in a <Text value>:
# (tag, attribute) -> the one value allowed there.
_POST_EDIT_DATA = {("HyperText", "value"): "$findings_html",
                   ("Repeater", "on"): "$sentences",
                   ("Text", "value"): f"$sentences[{REPEATED}].english",
                   ("TextArea", "value"): f"$sentences[{REPEATED}].text"}
_REPEATED_NAME = re.compile(r"(?P<stem>[a-z_]+_)\d+")

_ALLOWED_TAGS = {"View", "Header", "Text", "Choices", "Choice", "Rating", "TextArea", "Style"}
_CONTROL_TAGS = {"Choices", "Rating", "TextArea"}
_OBJECT_TAGS = {"Text", "HyperText"}
_POST_EDIT_TAGS = {"HyperText", "Repeater"}   # allowed in the post_edit config only
_FIELD = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


# ------------------------------------------------------------------------- configs

def config_path(kind: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown config kind {kind!r} (expected one of {', '.join(KINDS)})")
    return CONFIG_DIR / f"{kind}.xml"


def load_config(kind: str, path: Path | None = None) -> str:
    """The XML text of a kind's config (the bundled file unless `path`), validated."""
    path = Path(path) if path is not None else config_path(kind)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "no such file", expected=f"the {kind} labeling config") from None
    validate_config(text, kind, path)
    return text


def validate_config(text: str, kind: str, path: object = "<config>") -> None:
    """Raise InputError unless `text` is a well-formed config of `kind` (module docstring)."""
    root = _parse(text, path)
    elements = list(root.iter())
    for problem in (_tag_problem(elements, kind), _style_problem(elements, kind),
                    _field_problem(elements, kind), _control_problem(elements, kind)):
        if problem:
            raise InputError(path, problem, where=f"{kind} config")


def direction_of(languages) -> str:
    """"rtl" when every language is written right to left, "auto" when some are, else
    "ltr"."""
    codes = [code for code in languages if code != "en"]
    rtl = [code in RTL_CODES for code in codes]
    return "rtl" if rtl and all(rtl) else "auto" if any(rtl) else "ltr"


def label_config(kind: str, direction: str = "ltr") -> str:
    """The kind's config laid out for a direction (module docstring), validated."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r} (expected one of {', '.join(DIRECTIONS)})")
    text = load_config(kind)
    rules = ([render.TEXT_CSS] if kind == POST_EDIT else []) + (
        [_DIRECTION_CSS[direction]] if direction != "ltr" else [])
    if not rules:
        return text
    root = _parse(text, config_path(kind))
    for css in reversed(rules):
        style = ET.Element("Style")
        style.text = css
        root.insert(0, style)
    directed = ET.tostring(root, encoding="unicode")
    validate_config(directed, kind, f"{config_path(kind)} ({direction})")
    return directed


def data_fields(text: str) -> set[str]:
    """The `$field` names a config reads from task data."""
    return {match for element in _parse(text, "<config>").iter()
            for value in element.attrib.values() for match in _FIELD.findall(value)}


def _parse(text: str, path: object) -> ET.Element:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        raise InputError(path, f"not well-formed XML ({error})",
                         expected="a Label Studio labeling config") from None
    if root.tag != "View":
        raise InputError(path, f"the root element is <{root.tag}>", expected="<View>")
    return root


def _tag_problem(elements: list[ET.Element], kind: str) -> str | None:
    allowed = _ALLOWED_TAGS | (_POST_EDIT_TAGS if kind == POST_EDIT else set())
    for element in elements:
        if element.tag not in allowed:
            return (f"tag <{element.tag}> is not allowed (allowed: "
                    f"{', '.join(sorted(allowed))})")
    names = [e.get("name") for e in elements if e.tag in _CONTROL_TAGS | _OBJECT_TAGS]
    if None in names:
        return "a control or object tag has no name"
    repeated = sorted({n for n in names if names.count(n) > 1})
    return f"names used twice: {', '.join(repeated)}" if repeated else None


def _style_problem(elements: list[ET.Element], kind: str) -> str | None:
    """A <Style> holds one of our static rules and nothing else."""
    allowed = {*_DIRECTION_CSS.values(), *([render.TEXT_CSS] if kind == POST_EDIT else [])}
    for element in elements:
        if element.tag == "Style" and (element.attrib or len(element) or
                                       (element.text or "") not in allowed):
            return "a <Style> other than the rules of label_config()"
    return None


def _field_problem(elements: list[ET.Element], kind: str) -> str | None:
    """Data may enter only as a whole `$field` in a <Text value>: anywhere else (a Header,
    a dynamic Choices list) it would shape the page rather than be shown on it."""
    used = set()
    for element in elements:
        for attribute, value in element.attrib.items():
            if "$" not in value:
                continue
            whole = element.tag == "Text" and attribute == "value" and _FIELD.fullmatch(value)
            if not whole and not (kind == POST_EDIT and
                                  _POST_EDIT_DATA.get((element.tag, attribute)) == value):
                return f"<{element.tag} {attribute}={value!r}> reads task data"
            used.add(_FIELD.match(value).group(1))
    expected = set(FIELDS[kind])
    if used != expected:
        missing, extra = sorted(expected - used), sorted(used - expected)
        return ("task fields differ from the payload: "
                + "; ".join(filter(None, [missing and f"not shown: {', '.join(missing)}",
                                          extra and f"unknown: {', '.join(extra)}"])))
    return None


def _control_problem(elements: list[ET.Element], kind: str) -> str | None:
    objects = {e.get("name") for e in elements if e.tag in _OBJECT_TAGS}
    found = {e.get("name"): e for e in elements if e.tag in _CONTROL_TAGS}
    expected = CONTROLS[kind]
    missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or extra:
        return "controls differ: " + "; ".join(filter(None, [
            missing and f"missing {', '.join(missing)}",
            extra and f"unexpected {', '.join(extra)}"]))
    for name, want in expected.items():
        problem = _one_control(found[name], name, want, objects)
        if problem:
            return problem
    return None


def _one_control(element: ET.Element, name: str, want: Control, objects: set) -> str | None:
    if element.tag != want.tag:
        return f"control {name!r} is <{element.tag}>, expected <{want.tag}>"
    target = element.get("toName")
    if target != want.to_name or target not in objects:
        return f"control {name!r} points at {target!r}, expected the object {want.to_name!r}"
    choices = tuple(c.get("value") for c in element if c.tag == "Choice")
    if choices != want.choices:
        return f"control {name!r} offers {list(choices)}, expected {list(want.choices)}"
    if want.max_rating is not None and element.get("maxRating") != str(want.max_rating):
        return (f"control {name!r} has maxRating={element.get('maxRating')!r}, "
                f"expected {want.max_rating}")
    return None


def control_of(config: str, name: str) -> Control | None:
    """The control a result's `from_name` answers: a repeated one (`text_3`) by its
    template (`text_{{idx}}`)."""
    controls = CONTROLS[config]
    if name in controls:
        return controls[name]
    repeated = _REPEATED_NAME.fullmatch(name or "")
    return controls.get(f"{repeated['stem']}{REPEATED}") if repeated else None


def criteria_of(config: str, data: Mapping) -> list[str]:
    """The criteria one task's annotation answers: the config's controls, a repeated one
    once per repeated item of the task (post_edit: a text area per sentence)."""
    if config != POST_EDIT:
        return list(CONTROLS[config])
    return ["reason", *(f"text_{k}" for k in range(len(data.get("sentences") or ())))]


# ------------------------------------------------------------------------- payloads

def task_payload(kind: str, *, item_id: str, batch_id: str, **texts: str) -> dict:
    """The task `data` dict of one item: our ids and exactly the kind's text fields, as
    given (no escaping: the <Text> tag shows them as plain text)."""
    if kind not in FIELDS:
        raise ValueError(f"unknown config kind {kind!r} (expected one of {', '.join(KINDS)})")
    wanted = [f for f in FIELDS[kind] if f != "item_id"]
    if set(texts) != set(wanted):
        raise ValueError(f"{kind} payload fields {sorted(texts)} (expected {sorted(wanted)})")
    data = {"item_id": item_id, "batch_id": batch_id, **{f: texts[f] for f in wanted}}
    for key, value in data.items():
        if not isinstance(value, str):
            raise TypeError(f"payload field {key!r} is {type(value).__name__}, not str")
    return data


def translation_payload(texts: Mapping[str, str], batch_id: str) -> dict:
    """From one entry of sampling.unit_texts()."""
    fields = {f: texts[f] for f in FIELDS["translation_review"] if f != "item_id"}
    return task_payload("translation_review", item_id=texts["item_id"], batch_id=batch_id,
                        **fields)


def realism_payload(item: RealismItem, batch_id: str) -> dict:
    """Only the two texts in shown order: the sources stay in the assignment key."""
    return task_payload("maple_realism", item_id=item.item_id, batch_id=batch_id,
                        query_a=item.shown_a, query_b=item.shown_b)


def adjudication_payload(config: str, task: Mapping[str, str],
                         answers: Mapping[str, Sequence[str | None]],
                         agreed: Mapping[str, str | None]) -> dict:
    """The adjudication task of one item: its review task data (`task`, as pushed) plus a
    `dispute_<criterion>` text per criterion: the two initial answers of a disputed one,
    unnamed and in sorted order, else the agreed value that is kept."""
    base = ADJUDICATION_CONFIGS[config]
    data = {key: task[key] for key in ("item_id", "batch_id", *FIELDS[config])}
    for criterion in CRITERIA[config]:
        if criterion in answers:
            shown = " — the other: ".join(sorted(_answer(v, criterion)
                                                 for v in answers[criterion]))
            text = f"DISPUTED. One annotator: {shown}. Choose the final answer below."
        else:
            text = (f"Agreed: {_answer(agreed.get(criterion), criterion)}. "
                    "Kept as it is; leave this criterion empty.")
        data[f"dispute_{criterion}"] = text
    return task_payload(base, **data)


def _answer(value: str | None, criterion: str) -> str:
    if value is None or value == NO_CONSEQUENCE:
        return "none (no error)" if criterion == "consequence" else "(no answer)"
    return value


def relevance_payload(pair: RelevancePair, batch_id: str) -> dict:
    return task_payload("maple_relevance", item_id=f"relevance:{pair.pair_id}",
                        batch_id=batch_id, query=pair.query, aspect=pair.aspect,
                        title=pair.title, abstract=pair.abstract, text=pair.text)
