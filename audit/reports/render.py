"""The one boundary between untrusted text and what a page shows.

Release fields, file names, URL parameters, policy keys and Label Studio exports only ever
reach a page through this module. No Streamlit here: it returns strings, and
`workbench/shell.py` is the only caller of `st.html` (and of `st.markdown(...,
unsafe_allow_html=True)`, for the stylesheet alone).

Two kinds of output:

- HTML (`block` of `text` / `paragraph` / `badge` fragments). The block is one HTML
  element with no raw newline in it, so Markdown never parses its inside: no emphasis,
  links, images, math or autolinked URLs, and no blank line can end the block early. Every
  character HTML or Markdown could interpret is a numeric entity.
- Markdown for Streamlit's own boxes (`message`): our fixed wording, with every outside value
  in a code span, which Markdown shows verbatim and never autolinks.

In both, characters that reorder or hide text (bidi controls, zero-width characters, other
format and control characters; `audit.controls`) but not the orthographic ones (ZWNJ, ZWJ,
LRM, RLM, ALM, which Persian, Urdu and Indic spelling and right-to-left text need) become
visible tokens such as ⟨U+202E⟩ with
the character's name as a tooltip: an audit view never lets text rearrange itself.
"""

from __future__ import annotations

import functools
import html
import math
import re
import sys
import unicodedata
from typing import Mapping, Sequence

from .. import controls
from ..languages import RTL_CODES

# The look of dataset text, markers, evidence and tables: the app's pages and every HTML
# view outside it (the post-edit task in Label Studio, audit.review.configs) share it.
TEXT_CSS = """
.xt { white-space: pre-wrap; unicode-bidi: plaintext; }
.xt-title { font-weight: 600; }
.xt-rtl { direction: rtl; text-align: right; }
.missing { color: #a33; font-style: italic; }
.cc { font-family: monospace; font-size: .75em; padding: 0 .15em; border-radius: .2em;
      unicode-bidi: isolate; direction: ltr; }
.cc-review, .cc-other { background: #f7b1ab; color: #700; }
.cc-info { background: #d7e8fb; color: #124; }
.ev { background: #fff2a8; }
.xtable { border-collapse: collapse; width: 100%; font-size: .9em; }
.xtable th { text-align: left; border-bottom: 2px solid #ccc; padding: .2em .4em; }
.xtable td { border-bottom: 1px solid #eee; padding: .2em .4em; vertical-align: top; }
"""
CSS = "<style>" + TEXT_CSS + """
.badge { display: inline-block; padding: 0 .45em; margin-right: .3em; border-radius: .4em;
         font-size: .8em; background: #e8eaf0; }
.badge-gold { background: #ffe08a; } .badge-blocking { background: #f7b1ab; }
.badge-review { background: #fde2a7; } .badge-info { background: #d7e8fb; }
.badge-accepted { background: #cdebd3; }
a.jump { color: inherit; text-decoration: none; } a.jump:hover { text-decoration: underline; }
.anchor { display: block; position: relative; top: -4em; visibility: hidden; }
.sp { padding: 0 .05em; border-radius: .15em; color: inherit; background: none; }
.sp-minor { background: #ffd98a; } .sp-major { background: #f4a09a; }
.sp-critical { background: #cfa8f0; } .sp-prefill { border-bottom: 2px dashed #333; }
.sp-legend { font-size: .85em; color: #444; margin: .3em 0; }
.d-del { background: #f7c6c2; text-decoration: line-through; }
.d-ins { background: #c9ecd0; text-decoration: none; }
.bar-track { background: #f0f2f6; height: .8em; border-radius: .2em; }
.bar-fill { display: block; background: #8fa9d9; height: 100%; border-radius: .2em; }
.bar-n { text-align: right; font-variant-numeric: tabular-nums; }
/* A facet value: a link that toggles it, its count, and a bar under both (always visible,
   however narrow the column); names break only after "_", never mid-word. */
a.fv { display: grid; grid-template-columns: 1fr auto; column-gap: .4em; font-size: .85em;
       color: inherit; text-decoration: none; padding: .1em .25em; border-radius: .25em; }
a.fv:hover { background: #eef2fa; } a.fv:hover .fv-label { text-decoration: underline; }
.fv-label { line-height: 1.25; overflow-wrap: normal; }
.fv-n { text-align: right; font-variant-numeric: tabular-nums; }
.fv-bar { grid-column: 1 / span 2; height: 4px; background: #eef0f4; border-radius: 2px; }
.fv-bar > span { display: block; height: 100%; background: #8fa9d9; border-radius: 2px; }
a.fv-on { font-weight: 700; background: #e3ebfa; } a.fv-on .fv-bar > span { background: #2f5fb3; }
.fv-blocking .fv-bar > span { background: #c0392b; } .fv-review .fv-bar > span { background: #e69b22; }
.fv-accepted .fv-bar > span { background: #3c9a57; }
.fv-more > summary { font-size: .85em; color: #555; cursor: pointer; padding: .1em .25em; }
a.chip { display: inline-block; padding: .05em .6em; margin: .15em .3em .15em 0;
         border-radius: 1em; background: #e3ebfa; color: inherit; text-decoration: none;
         font-size: .85em; }
a.chip:hover { background: #cddbf6; } a.chip-clear { background: #f0f2f6; }
.meter { display: grid; grid-template-columns: minmax(6em, 1fr) 5em; gap: .4em;
         align-items: center; min-width: 14em; }
.meter-blocking .bar-fill { background: #c0392b; } .meter-review .bar-fill { background: #e69b22; }
.meter-info .bar-fill { background: #8fb3de; }
.scope { font-size: .9em; color: #444; margin-bottom: .5em; }
/* `message` sets each outside value in a code span (verbatim, never a link); it reads as
   part of the sentence, not as monospace code. */
[data-testid="stMarkdownContainer"] :not(pre) > code,
[data-testid="stCaptionContainer"] :not(pre) > code { font-family: inherit;
    font-size: inherit; color: inherit; background: none; padding: 0; }
</style>
"""
BADGE_KINDS = ("", "gold", "blocking", "review", "info", "accepted")
# HTML's specials plus every character Markdown or Streamlit's math could interpret.
_PUNCTUATION = "&<>\"'\\`*_{}[]()#+-.!|~$:@/=%^;,?"


@functools.cache
def _tables() -> tuple[dict[int, str], dict[int, str]]:
    """str.translate tables: for HTML (entities and marker spans) and for plain text
    (markers as tokens only)."""
    # Orthographic joiners and marks (ZWNJ, ZWJ, LRM, RLM, ALM) are part of the writing
    # and render as it expects; only characters that hide or reorder text are marked.
    marked = {cp: ch for cp in range(sys.maxunicode + 1)
              if controls.kind(ch := chr(cp)) not in (None, "orthographic")}
    as_html: dict[int, str] = {ord(ch): f"&#{ord(ch)};" for ch in _PUNCTUATION}
    as_html[ord("\n")] = "&#10;"
    as_html[ord("\t")] = "&#9;"
    as_text: dict[int, str] = {}
    for cp, ch in marked.items():
        title = html.escape(controls.name(ch), quote=True)
        as_html[cp] = (f'<span class="cc cc-{controls.kind(ch)}" title="{title}">'
                       f"{html.escape(controls.token(ch))}</span>")
        as_text[cp] = controls.token(ch)
    return as_html, as_text


def text(value: object) -> str:
    """Escaped inline HTML for one outside string (None → '')."""
    if value is None:
        return ""
    return str(value).translate(_tables()[0])


def visible(value: object) -> str:
    """Plain text with every hiding or reordering character replaced by its token (for
    chart labels, file names, widget options)."""
    return "" if value is None else str(value).translate(_tables()[1])


def _wordish(ch: str) -> bool:
    """A character inside a word: a letter, mark or digit, or a joiner (ZWNJ and ZWJ hold
    Persian and Indic words together)."""
    return ch in "\u200c\u200d" or unicodedata.category(ch)[0] in "LMN"


def _occurrences(value: str, evidence: str) -> list[tuple[int, int]]:
    """Every place `evidence` stands in `value`: those that do not start or end inside a
    word (where its own edge is a word character) first, then the others (scripts written
    without spaces), each group in text order."""
    whole, inside = [], []
    start = value.find(evidence) if evidence else -1
    while start >= 0:
        end = start + len(evidence)
        cut = (start and _wordish(evidence[0]) and _wordish(value[start - 1])) or \
            (end < len(value) and _wordish(evidence[-1]) and _wordish(value[end]))
        (inside if cut else whole).append((start, end))
        start = value.find(evidence, start + 1)
    return whole + inside


def locate(value: str, evidence: str) -> tuple[int, int] | None:
    """Where `evidence` stands in `value`: its first whole-word occurrence, else its first
    occurrence; None when it does not occur."""
    found = _occurrences(value, evidence)
    return found[0] if found else None


# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, CJK): a word
# edge cannot be told from the characters, so a mark there is left as found.
_UNSPACED = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x2E80, 0x9FFF),
             (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3FFFF))


def _spaced_word(ch: str) -> bool:
    return _wordish(ch) and not any(low <= ord(ch) <= high for low, high in _UNSPACED)


def _whole_words(value: str, start: int, end: int) -> tuple[int, int]:
    """The span widened to the edges of the words it starts and ends in, so a mark never
    starts or ends mid-word ("n|a prezydenta" → "na prezydenta")."""
    while start > 0 and _spaced_word(value[start - 1]) and _spaced_word(value[start]):
        start -= 1
    while end < len(value) and _spaced_word(value[end]) and _spaced_word(value[end - 1]):
        end += 1
    return start, end


def _spans(value: str, marks: tuple[str, ...]) -> list[tuple[int, int]]:
    """One place per evidence string, widened to whole words, never overlapping an earlier
    string's, in text order."""
    spans: list[tuple[int, int]] = []
    for mark in marks:
        for found in _occurrences(value, mark):
            start, end = _whole_words(value, *found)
            if all(end <= a or start >= b for a, b in spans):
                spans.append((start, end))
                break
    return sorted(spans)


def paragraph(value: str | None, language: str | None = None, css: str = "xt",
              evidence: str | tuple[str, ...] | None = None) -> str:
    """One dataset string as a block, right-to-left where the language is; `evidence`, a
    substring to highlight (a repeated unit, a number), or several, each where `locate`
    finds it, widened to whole words. The raw text is cut there and each piece escaped, so a mark never lands
    inside an entity or inside another mark."""
    if value is None:
        return '<div class="missing">(no sentence)</div>'
    if is_blank(str(value)):
        return missing(blank_note(str(value)))
    value = str(value)
    marks = (evidence,) if isinstance(evidence, str) else tuple(evidence or ())
    return _text_block(_marked(value, [(start, end, '<mark class="ev">') for start, end in
                                       _spans(value, tuple(m for m in marks if m))]),
                       language, css)


def _text_block(body: str, language: str | None, css: str = "xt") -> str:
    """Escaped dataset text as a block, right-to-left where the language is."""
    rtl = " xt-rtl" if language in RTL_CODES else ""
    lang = f' lang="{text(language)}"' if language else ""
    return f'<div class="{text(css)}{rtl}"{lang} dir="auto">{body}</div>'


def _marked(value: str, marks: list[tuple[int, int, str]]) -> str:
    """`value` escaped, each mark's characters [start, end) wrapped in its opening <mark>
    tag. The raw text is cut at the marks (in text order, not overlapping) and each piece
    escaped, so a mark never lands inside an entity or inside another mark."""
    pieces, cursor = [], 0
    for start, end, tag in marks:
        pieces.append(f"{text(value[cursor:start])}{tag}{text(value[start:end])}</mark>")
        cursor = end
    return "".join(pieces) + text(value[cursor:])


# Error spans (review/kinds/spans.py): a piece of text several spans cover shows the most
# severe; an unknown severity shows as minor (its title still names it).
SPAN_SEVERITIES = ("minor", "major", "critical")


def _attribute(value: object) -> str:
    """An outside string inside an attribute: markers as tokens (their HTML would break
    the attribute), every special character an entity."""
    return text(visible(value))


def _span_title(span: Mapping) -> str:
    parts = [span["severity"], span.get("category"),
             span.get("origin") and f"pre-filled by the check {span['origin']}"]
    return " · ".join(str(p) for p in parts if p)


def _span_rank(span: Mapping) -> int:
    severity = span["severity"]
    return SPAN_SEVERITIES.index(severity) if severity in SPAN_SEVERITIES else 0


def _span_tag(covering: list[Mapping]) -> str:
    """The mark of a piece: coloured by its most severe span, dashed when a check pre-filled
    one of them; its title names every span on it, most severe first."""
    ordered = sorted(covering, key=_span_rank, reverse=True)
    css = f"sp sp-{SPAN_SEVERITIES[_span_rank(ordered[0])]}"
    if any(span.get("origin") for span in covering):
        css += " sp-prefill"
    title = "; ".join(_span_title(span) for span in ordered)
    return f'<mark class="{css}" title="{_attribute(title)}">'


def marked_spans(value: str, spans: Sequence[Mapping], language: str | None = None) -> str:
    """A text with error spans marked (mappings with start, end: code point offsets, end
    exclusive; severity; category and origin, optional). Spans may overlap: the text is
    cut at every span boundary and each piece marked as `_span_tag` says."""
    cuts = sorted({0, len(value), *(offset for span in spans
                                    for offset in (span["start"], span["end"])
                                    if 0 < offset < len(value))})
    marks = []
    for start, end in zip(cuts, cuts[1:]):
        covering = [s for s in spans if s["start"] <= start and end <= s["end"]]
        if covering:
            marks.append((start, end, _span_tag(covering)))
    return _text_block(_marked(value, marks), language)


def span_legend(severities: Sequence[str] = SPAN_SEVERITIES) -> str:
    """What the span colours mean."""
    keys = [f'<mark class="sp sp-{s}">{text(s)}</mark>' for s in severities
            if s in SPAN_SEVERITIES]
    keys.append('<mark class="sp sp-prefill">pre-filled by a check</mark>')
    return f'<div class="sp-legend">{text("Spans: ")}{" ".join(keys)}</div>'


def is_blank(value: str) -> bool:
    """Empty, or whitespace only that shows as nothing (a line separator shows as its
    ⟨U+2028⟩ token, so it is not)."""
    return not value.strip() and not any(
        controls.kind(ch) not in (None, "orthographic") for ch in value)


def blank_note(value: str) -> str:
    """What stands where a text is empty or only whitespace, its code points named: a blank
    of no-break or ideographic spaces does not look like an empty cell."""
    if not value:
        return "(blank: empty)"
    points = " ".join(f"U+{ord(ch):04X}" for ch in value[:12])
    return f"(blank: whitespace only, {points}{' …' if len(value) > 12 else ''})"


def source_sentence(value: str | None) -> str | None:
    """A HotpotQA sentence as shown: without the leading whitespace HotpotQA keeps to join
    sentences into a paragraph (" The band…"); the stored text is untouched."""
    return None if value is None else value.lstrip(" \t")


def diff(pieces: list[tuple[int, str]], side: str, language: str | None = None) -> str:
    """One side of a text change as a block: "old" shows what was kept and removed
    (struck through), "new" what was kept and added. `pieces` are (op, text) with op -1
    removed, 0 kept, 1 added (audit.repair.desk.char_diff)."""
    if side not in ("old", "new"):
        raise ValueError("side is 'old' or 'new'")
    shown, tag = (-1, "del") if side == "old" else (1, "ins")
    body = "".join(text(t) if op == 0 else f'<{tag} class="d-{tag}">{text(t)}</{tag}>'
                   for op, t in pieces if op in (0, shown))
    if not body:
        return f'<div class="missing">(empty: no {side} text)</div>'
    rtl = " xt-rtl" if language in RTL_CODES else ""
    lang = f' lang="{text(language)}"' if language else ""
    return f'<div class="xt{rtl}"{lang} dir="auto">{body}</div>'


def badge(label: object, kind: str = "") -> str:
    kind = kind if kind in BADGE_KINDS else ""
    return f'<span class="badge badge-{kind}">{text(label)}</span>'


def strong(value: object) -> str:
    return f"<b>{text(value)}</b>"


def missing(label: object) -> str:
    """A note standing where a text is absent or blank ("(blank)")."""
    return f'<div class="missing">{text(label)}</div>'


def link(label: object, href: str) -> str:
    """A same-tab link to a page of the workbench. `href` must be one of our relative
    page links (workbench.viewstate.View.href): nothing outside can become a target."""
    _page_link(href)
    return f'<a href="{html.escape(href, quote=True)}" target="_self">{text(label)}</a>'


def _page_link(href: str) -> None:
    if not re.fullmatch(r"\./[A-Za-z0-9_]+(\?[A-Za-z0-9_.~%&=+\-]*)?", href):
        raise ValueError("not a workbench page link")


def anchor(name: str) -> str:
    """A place on the page a `jump` link scrolls to; `name` is ours (letters, digits, -)."""
    if not re.fullmatch(r"[a-z0-9-]{1,40}", name):
        raise ValueError("not an anchor name")
    return f'<span id="{name}" class="anchor"></span>'


def jump(label: object, name: str, kind: str = "") -> str:
    """A badge that links to an `anchor` of this page."""
    anchor(name)
    kind = kind if kind in BADGE_KINDS else ""
    return f'<a class="badge badge-{kind} jump" href="#{name}">{text(label)}</a>'


def table(header: list[str], rows: list[list[str]], css: str = "xtable") -> str:
    """An HTML table of fragments from this module (header cells are plain text)."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f'<table class="{text(css)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def breakable(value: object) -> str:
    """`text`, allowed to break after an underscore: a check name wraps between its words,
    never inside one."""
    return text(value).replace("&#95;", "&#95;<wbr>")


def facet_value(label: object, count: int, largest: int, href: str, selected: bool = False,
                kind: str = "") -> str:
    """One facet value as a link to the view with it toggled (`href`: a workbench page
    link, as `link` requires): its label, its count and a bar for the count, coloured by
    severity `kind`."""
    _page_link(href)
    width = 0 if largest <= 0 else max(1, round(100 * count / largest)) if count else 0
    css = "fv" + (" fv-on" if selected else "") + (f" fv-{kind}" if kind in BADGE_KINDS
                                                    and kind else "")
    return (f'<a class="{css}" href="{html.escape(href, quote=True)}" target="_self">'
            f'<span class="fv-label">{breakable(label)}</span><span class="fv-n">{count:,}'
            f'</span><span class="fv-bar"><span style="width:{width}%"></span></span></a>')


def more(summary: str, *fragments: str) -> str:
    """Fragments folded under a summary line the reader opens in place."""
    return (f'<details class="fv-more"><summary>{text(summary)}</summary>'
            f'{"".join(fragments)}</details>')


def chip(label: object, href: str, clear: bool = False) -> str:
    """An active filter value as a removable chip: a link to the view without it."""
    return pill(f"{label} ✕", href, "chip chip-clear" if clear else "chip",
                "remove this filter")


def pill(label: object, href: str, css: str = "chip chip-clear",
         title: str = "open these rows in Browse") -> str:
    """A rounded link to a workbench page (a count that opens its rows)."""
    _page_link(href)
    return (f'<a class="{text(css)}" href="{html.escape(href, quote=True)}" target="_self" '
            f'title="{text(title)}">{text(label)}</a>')


def meter(count: int, largest: int, kind: str = "") -> str:
    """A count with a bar on a log scale (counts of checks span four orders of magnitude:
    a linear bar would hide the rare ones), coloured by severity `kind`."""
    kind = kind if kind in BADGE_KINDS else ""
    width = 0 if count <= 0 or largest <= 0 else \
        max(2, round(100 * math.log1p(count) / math.log1p(largest)))
    return (f'<span class="meter meter-{kind}"><span class="bar-track"><span class="bar-fill" '
            f'style="width:{width}%"></span></span><span class="bar-n">{count:,}</span></span>')


def block(*fragments: str, css: str = "xb") -> str:
    """Fragments from this module as one HTML block (no raw line break, so even a Markdown
    renderer would not parse inside it)."""
    body = "".join(fragments)
    if "\n" in body or "\r" in body:
        raise ValueError("an HTML fragment holds a raw line break")
    return f'<div class="{text(css)}">{body}</div>'


def plural(n: int, word: str, words: str | None = None) -> str:
    """A count with its noun agreeing: "1 entry", "2 entries", "1,024 rows", "1 matched
    unit" (`words`: an irregular plural)."""
    if n == 1:
        return f"1 {word}"
    if words is None:
        words = (word[:-1] + "ies" if re.search("[^aeiou]y$", word) else
                 word + "es" if re.search("(s|x|z|ch|sh)$", word) else word + "s")
    return f"{n:,} {words}"


def literal(value: object) -> str:
    """A Markdown code span that shows `value` verbatim (markers as tokens, line breaks as
    ⏎): no link, image, emphasis or math can come out of it."""
    shown = visible(value).replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎")
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    return f"{fence} {shown} {fence}"


def message(template: str, **values: object) -> str:
    """Our own Markdown wording with each outside value as a `literal`:
    message("Cannot open {path}", path=user_path)."""
    return template.format(**{key: literal(value) for key, value in values.items()})


def chart_label(value: object) -> str:
    """A category label for Plotly, which reads a subset of HTML (<a href>, <b>) in text."""
    return html.escape(visible(value), quote=True)
