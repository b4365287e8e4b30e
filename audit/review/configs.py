"""The Label Studio labeling configs (label_configs/*.xml, package data) and the task data they read.

A config is static XML. Dataset text never goes into it: it reaches the page only through
`<Text name=… value="$field">`, which Label Studio renders as plain text, from the task's
`data` dict built here. So a question holding `</View><script>` cannot break the config or
run in the annotator's browser. `LabelConfig.validate()` holds the configs to that contract:

- well-formed XML with a <View> root, tags from a small allow-list (no HyperText/HTML
  objects, which would render data as markup);
- `$field` references only in the `value` of <Text>, and exactly the fields FIELDS names;
- the expected controls (name, tag, target, choice values, rating scale) and no others,
  each pointing at an object that exists, so exported results parse by name.

A config is a LabelConfig, declared by the review kind that uses it (audit/review/kinds/):
its name (label_configs/<name>.xml), its controls and the task fields it shows. Payloads:
`config.payload(item_id=…, batch_id=…, **texts)` → {"item_id", "batch_id", <the config's
text fields>}; all values are strings and are passed through unchanged.

Adjudication: a review config has an adjudication twin (`LabelConfig.adjudication`) showing
the same fields plus, per criterion, `dispute_<criterion>`: the two initial answers,
unnamed, or "agreed" (adjudication_payload). Its controls are the review's, none required
(a kind may widen a control's choices, as translation's consequence offers "none").

Direction: views of class `xr-target` hold target-language text. LabelConfig.laid_out(
direction) lays them out right to left ("rtl": ar, fa, ur; the sentence markers [n] then
stand on the reading side and final punctuation at the line's end) or lets each line find
its own direction ("auto": a unit mixing right-to-left and left-to-right languages), with a
static <Style> rule; direction_of(languages) picks it.

Post-editing (`post_edit`, kinds/post_edit.py) is the one config that also shows HTML and
repeats (what it may hold beyond the rules above is declared on its LabelConfig):
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import InputError
from ..languages import RTL_CODES

CONFIG_DIR = Path(__file__).resolve().parent / "label_configs"
DIRECTIONS = ("ltr", "rtl", "auto")
_DIRECTION_CSS = {"rtl": ".xr-target { direction: rtl; text-align: right; }",
                  "auto": ".xr-target * { unicode-bidi: plaintext; text-align: start; }"}
NO_CONSEQUENCE = "none"   # an adjudicator's explicit "no error" (agreement.NO_CONSEQUENCE)
REPEATED = "{{idx}}"     # the Repeater's index flag in a control's name
COMMENT = "comment"      # a note, never a criterion

_REPEATED_NAME = re.compile(r"(?P<stem>[a-z_]+_)\d+")
_ALLOWED_TAGS = {"View", "Header", "Text", "Choices", "Choice", "Rating", "TextArea", "Style"}
# Error spans (kinds/spans.py) also use these, declared as its configs' extra tags.
SPAN_TAGS = frozenset({"Labels", "Label", "Number"})
_CONTROL_TAGS = {"Choices", "Rating", "TextArea", "Labels", "Number"}
_OPTION_TAGS = ("Choice", "Label")      # a control's offered values
_OBJECT_TAGS = {"Text", "HyperText"}
_FIELD = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Control:
    """What a control must look like: its tag, target object, and choices or scale."""

    tag: str
    to_name: str
    choices: tuple[str, ...] = ()
    max_rating: int | None = None
    bounds: tuple[int, int] | None = None     # a Number's min and max
    per_region: bool = False                  # answered once per span (region), not per task


@dataclass(frozen=True)
class LabelConfig:
    """One labeling config: its file's name, its controls (named as the criteria a result's
    `from_name` answers) and the task-data fields it shows. What a config may hold beyond
    <Text value="$field"> (post-editing's HTML and repeated areas) is declared here too."""

    name: str
    controls: Mapping[str, Control]
    fields: tuple[str, ...]
    extra_tags: frozenset[str] = frozenset()       # allowed in this config only
    data_attributes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    css: tuple[str, ...] = ()                      # static rules every layout carries
    repeats_on: str | None = None                  # the task field a Repeater walks
    unanswered: Mapping[str, str] = field(default_factory=dict)   # adjudication wording
    # Controls whose offered values a batch chose (an MQM typology): the file's options of
    # that control are replaced by these when the config is loaded.
    rechoiced: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def path(self) -> Path:
        return CONFIG_DIR / f"{self.name}.xml"

    @property
    def criteria(self) -> tuple[str, ...]:
        """The criteria an adjudicator settles (comments are notes, not labels)."""
        return tuple(name for name in self.controls if name != COMMENT)

    def with_choices(self, control: str, values: Sequence[str]) -> LabelConfig:
        """This config with `control` offering `values` (each non-empty text, once)."""
        values = tuple(values)
        if not values or len(set(values)) != len(values) or not all(
                isinstance(v, str) and v.strip() for v in values):
            raise InputError(self.name, f"choices {list(values)!r} for {control!r}",
                             expected="distinct non-empty texts")
        return replace(self, controls={**self.controls, control: replace(
            self.controls[control], choices=values)},
            rechoiced=(*self.rechoiced, (control, values)))

    def adjudication(self, name: str, **widened: Control) -> LabelConfig:
        """The adjudication twin: the same controls (some `widened`) and fields, plus a
        `dispute_<criterion>` text per criterion."""
        return replace(self, name=name, controls={**self.controls, **widened},
                       fields=self.fields + tuple(f"dispute_{c}" for c in self.criteria))

    def load(self, path: Path | None = None) -> str:
        """The XML text of the config (the bundled file unless `path`), validated."""
        path = Path(path) if path is not None else self.path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(path, "no such file",
                             expected=f"the {self.name} labeling config") from None
        if self.rechoiced:
            text = self._rechoose(text, path)
        self.validate(text, path)
        return text

    def _rechoose(self, text: str, path: object) -> str:
        """The XML with each rechoiced control's options replaced (values escaped by
        ElementTree: a value is an attribute, never markup)."""
        root = _parse(text, path)
        for name, values in self.rechoiced:
            for element in root.iter():
                if element.tag in _CONTROL_TAGS and element.get("name") == name:
                    tag = next((c.tag for c in element if c.tag in _OPTION_TAGS), "Choice")
                    for child in [c for c in element if c.tag in _OPTION_TAGS]:
                        element.remove(child)
                    for value in values:
                        ET.SubElement(element, tag, value=value)
        return ET.tostring(root, encoding="unicode")

    def validate(self, text: str, path: object = "<config>") -> None:
        """Raise InputError unless `text` is a well-formed config of this kind (module
        docstring)."""
        root = _parse(text, path)
        elements = list(root.iter())
        for problem in (_tag_problem(elements, self), _style_problem(elements, self),
                        _field_problem(elements, self), _control_problem(elements, self)):
            if problem:
                raise InputError(path, problem, where=f"{self.name} config")

    def laid_out(self, direction: str = "ltr") -> str:
        """The config laid out for a direction (module docstring), validated."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction {direction!r} (expected one of "
                             f"{', '.join(DIRECTIONS)})")
        text = self.load()
        rules = [*self.css] + ([_DIRECTION_CSS[direction]] if direction != "ltr" else [])
        if not rules:
            return text
        root = _parse(text, self.path)
        for css in reversed(rules):
            style = ET.Element("Style")
            style.text = css
            root.insert(0, style)
        directed = ET.tostring(root, encoding="unicode")
        self.validate(directed, f"{self.path} ({direction})")
        return directed

    def control_of(self, name: str) -> Control | None:
        """The control a result's `from_name` answers: a repeated one (`text_3`) by its
        template (`text_{{idx}}`)."""
        if name in self.controls:
            return self.controls[name]
        repeated = _REPEATED_NAME.fullmatch(name or "")
        return self.controls.get(f"{repeated['stem']}{REPEATED}") if repeated else None

    def criteria_of(self, data: Mapping) -> list[str]:
        """The criteria one task's annotation answers: the controls, a repeated one once
        per repeated item of the task (post_edit: a text area per sentence)."""
        count = len(data.get(self.repeats_on) or ()) if self.repeats_on else 0
        return [expanded for name in self.controls for expanded in (
            [name.replace(REPEATED, str(k)) for k in range(count)] if REPEATED in name
            else [name])]

    def payload(self, *, item_id: str, batch_id: str, **texts: str) -> dict:
        """The task `data` dict of one item: our ids and exactly the config's text fields,
        as given (no escaping: the <Text> tag shows them as plain text)."""
        wanted = [f for f in self.fields if f != "item_id"]
        if set(texts) != set(wanted):
            raise ValueError(f"{self.name} payload fields {sorted(texts)} "
                             f"(expected {sorted(wanted)})")
        data = {"item_id": item_id, "batch_id": batch_id, **{f: texts[f] for f in wanted}}
        for key, value in data.items():
            if not isinstance(value, str):
                raise TypeError(f"payload field {key!r} is {type(value).__name__}, not str")
        return data


def adjudication_payload(review: LabelConfig, twin: LabelConfig, task: Mapping[str, str],
                         answers: Mapping[str, Sequence[str | None]],
                         agreed: Mapping[str, str | None]) -> dict:
    """The adjudication task (config `twin`) of one item: its review task data (`task`, as
    pushed) plus a `dispute_<criterion>` text per criterion: the two initial answers of a
    disputed one, unnamed and in sorted order, else the agreed value that is kept."""
    data = {key: task[key] for key in ("item_id", "batch_id", *review.fields)}
    for criterion in review.criteria:
        if criterion in answers:
            shown = " — the other: ".join(sorted(_answer(review, v, criterion)
                                                 for v in answers[criterion]))
            text = f"DISPUTED. One annotator: {shown}. Choose the final answer below."
        else:
            text = (f"Agreed: {_answer(review, agreed.get(criterion), criterion)}. "
                    "Kept as it is; leave this criterion empty.")
        data[f"dispute_{criterion}"] = text
    return twin.payload(**data)


def _answer(review: LabelConfig, value: str | None, criterion: str) -> str:
    if value is None or value == NO_CONSEQUENCE:
        return review.unanswered.get(criterion, "(no answer)")
    return value


def direction_of(languages) -> str:
    """"rtl" when every language is written right to left, "auto" when some are, else
    "ltr"."""
    codes = [code for code in languages if code != "en"]
    rtl = [code in RTL_CODES for code in codes]
    return "rtl" if rtl and all(rtl) else "auto" if any(rtl) else "ltr"


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


def _tag_problem(elements: list[ET.Element], config: LabelConfig) -> str | None:
    allowed = _ALLOWED_TAGS | config.extra_tags
    for element in elements:
        if element.tag not in allowed:
            return (f"tag <{element.tag}> is not allowed (allowed: "
                    f"{', '.join(sorted(allowed))})")
    names = [e.get("name") for e in elements if e.tag in _CONTROL_TAGS | _OBJECT_TAGS]
    if None in names:
        return "a control or object tag has no name"
    repeated = sorted({n for n in names if names.count(n) > 1})
    return f"names used twice: {', '.join(repeated)}" if repeated else None


def _style_problem(elements: list[ET.Element], config: LabelConfig) -> str | None:
    """A <Style> holds one of our static rules and nothing else."""
    allowed = {*_DIRECTION_CSS.values(), *config.css}
    for element in elements:
        if element.tag == "Style" and (element.attrib or len(element) or
                                       (element.text or "") not in allowed):
            return "a <Style> other than the rules of label_config()"
    return None


def _field_problem(elements: list[ET.Element], config: LabelConfig) -> str | None:
    """Data may enter only as a whole `$field` in a <Text value>: anywhere else (a Header,
    a dynamic Choices list) it would shape the page rather than be shown on it."""
    used = set()
    for element in elements:
        for attribute, value in element.attrib.items():
            if "$" not in value:
                continue
            whole = element.tag == "Text" and attribute == "value" and _FIELD.fullmatch(value)
            if not whole and config.data_attributes.get((element.tag, attribute)) != value:
                return f"<{element.tag} {attribute}={value!r}> reads task data"
            used.add(_FIELD.match(value).group(1))
    expected = set(config.fields)
    if used != expected:
        missing, extra = sorted(expected - used), sorted(used - expected)
        return ("task fields differ from the payload: "
                + "; ".join(filter(None, [missing and f"not shown: {', '.join(missing)}",
                                          extra and f"unknown: {', '.join(extra)}"])))
    return None


def _control_problem(elements: list[ET.Element], config: LabelConfig) -> str | None:
    objects = {e.get("name") for e in elements if e.tag in _OBJECT_TAGS}
    found = {e.get("name"): e for e in elements if e.tag in _CONTROL_TAGS}
    expected = config.controls
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
    choices = tuple(c.get("value") for c in element if c.tag in _OPTION_TAGS)
    if choices != want.choices:
        return f"control {name!r} offers {list(choices)}, expected {list(want.choices)}"
    if want.max_rating is not None and element.get("maxRating") != str(want.max_rating):
        return (f"control {name!r} has maxRating={element.get('maxRating')!r}, "
                f"expected {want.max_rating}")
    if want.bounds is not None and (element.get("min"), element.get("max")) != tuple(
            map(str, want.bounds)):
        return (f"control {name!r} has min={element.get('min')!r} max={element.get('max')!r},"
                f" expected {want.bounds[0]} and {want.bounds[1]}")
    if (element.get("perRegion") == "true") != want.per_region:
        return (f"control {name!r} is {'not ' if want.per_region else ''}answered per "
                f"region, expected {'per region' if want.per_region else 'per task'}")
    return None
