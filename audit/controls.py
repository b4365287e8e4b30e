"""Characters that change or hide what a reader sees: one classification for the
`invisible_control` check and for the markers the views draw in their place.

- review: bidi embeddings, overrides and isolates (U+202A–202E, U+2066–2069), which reorder
  what follows them ("abc\u202etxt.exe" reads "abc exe.txt"), and U+FEFF after the first
  character (a byte-order mark inside text is a concatenation accident);
- info: U+200B ZERO WIDTH SPACE and U+2060 WORD JOINER, invisible but harmless;
- orthographic: ZWNJ and ZWJ (U+200C/D), part of Persian, Urdu, Hindi and Bengali spelling,
  and the marks LRM, RLM and ALM (U+200E/F, U+061C), ordinary in right-to-left text. Never a
  finding, and the views render them as the writing system expects (no marker).

Every other format (Cf) or control (Cc) character but tab and newline is shown as a marker; C0/C1 controls are `invalid_unicode` findings already.
"""

from __future__ import annotations

import unicodedata

BIDI = tuple(range(0x202A, 0x202F)) + tuple(range(0x2066, 0x206A))
BOM = 0xFEFF
INFO = (0x200B, 0x2060)
ORTHOGRAPHIC = (0x200C, 0x200D, 0x200E, 0x200F, 0x061C)
_SHOWN_AS_IS = {0x09, 0x0A}


def kind(char: str) -> str | None:
    """'review' | 'info' | 'orthographic' | 'other' for a character a view must mark,
    None for an ordinary one."""
    cp = ord(char)
    if cp in BIDI or cp == BOM:
        return "review"
    if cp in INFO:
        return "info"
    if cp in ORTHOGRAPHIC:
        return "orthographic"
    if cp in _SHOWN_AS_IS:
        return None
    if unicodedata.category(char) in ("Cf", "Cc", "Zl", "Zp"):
        return "other"
    return None


def name(char: str) -> str:
    """'U+202E RIGHT-TO-LEFT OVERRIDE'."""
    label = unicodedata.name(char, "") or {0x0D: "CARRIAGE RETURN", 0x00: "NULL"}.get(
        ord(char), "CONTROL")
    return f"U+{ord(char):04X} {label}"


def token(char: str) -> str:
    """The visible stand-in: ⟨U+202E⟩."""
    return f"⟨U+{ord(char):04X}⟩"


def regex_class(code_points) -> str:
    """An RE2 character class of the given code points (for the check's SQL)."""
    return "[" + "".join(f"\\x{{{cp:x}}}" for cp in code_points) + "]"
