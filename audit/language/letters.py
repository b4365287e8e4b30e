"""The letter rule: an Arabic-script text written with letters that only one of Arabic,
Persian and Urdu uses is that language, without a detector's reading (`settle`).

Urdu alone writes ٹ ڈ ڑ ں ھ ہ ے ۓ; Persian and Urdu write پ چ ژ گ ک ی, which Arabic does
not; Arabic alone writes ي ك ة ى (Persian and Urdu write ی and ک for its yeh and kaf). A
text is settled as
  Urdu     with at least MIN_LETTERS Urdu letters and no Arabic one,
  Persian  with at least MIN_LETTERS Persian-and-Urdu letters, no Urdu and no Arabic one,
  Arabic   with at least MIN_LETTERS Arabic letters, no Persian-and-Urdu and no Urdu one,
and only when each half of the text holds one of those letters too (a paragraph whose first
sentence is Persian is not settled as Urdu by its Urdu rest). Anything else (a Persian text
typed with Arabic yeh and kaf, mixed text, a short one) goes to the detector. The rule reads
what the detector would read (`LanguageIdentifier.prepare_texts`).

Measured on NTREX-128 (1,997 human-translated lines each): 95 % of Arabic, 97 % of Persian
and 98 % of Urdu lines are settled, none as another language. lingua reads an Arabic-script
text in ~0.12 ms of one core, this rule in ~0.005 ms.
"""

from __future__ import annotations

import re
from typing import Sequence

MIN_LETTERS = 3
VERSION = f"letters1-{MIN_LETTERS}"

_URDU = re.compile("[\u0679\u0688\u0691\u06ba\u06be\u06c1\u06d2\u06d3]")
_PERSIAN_URDU = re.compile("[\u067e\u0686\u0698\u06af\u06a9\u06cc]")
_ARABIC = re.compile("[\u064a\u0643\u0629\u0649]")


def _counts(text: str) -> tuple[int, int, int]:
    """Urdu, Persian-and-Urdu and Arabic letters of a text."""
    return (len(_URDU.findall(text)), len(_PERSIAN_URDU.findall(text)),
            len(_ARABIC.findall(text)))


def _language(urdu: int, persian: int, arabic: int) -> tuple[str, int] | None:
    """The language the letters name and which count (index) carried it, or None."""
    if urdu >= MIN_LETTERS and not arabic:
        return "ur", 0
    if persian >= MIN_LETTERS and not urdu and not arabic:
        return "fa", 1
    if arabic >= MIN_LETTERS and not urdu and not persian:
        return "ar", 2
    return None


def settle(texts: Sequence[str]) -> list[str | None]:
    """Per Arabic-script text: the language its letters settle (see the module doc), or
    None."""
    out: list[str | None] = []
    for text in texts:
        found = _language(*_counts(text))
        if found is not None:
            half = len(text) // 2
            first, second = _counts(text[:half]), _counts(text[half:])
            if not (first[found[1]] and second[found[1]]):
                found = None
        out.append(None if found is None else found[0])
    return out
