"""The script rule for ANY language code, not only the 24 of `audit.languages`.

`scripts` gives the script rule (SPEC §4) for the 24 XHotpotQA languages with hand-made
script classes. This module gives the same rule for every language ICU knows, so a release
in any of NTREX-128's languages (or any other) gets script compliance:

* `language_info(code)` reads a language code ("deu", "zho-CN", "srp-Latn", "amh") with ICU:
  its canonical tag, base language, English name and expected ISO 15924 script. The script
  is, in this order: a script subtag in the code ("aze-Latn"), the `script` argument (a
  mapping file may declare one), ICU's likely subtags ("amh" -> Ethi). None when ICU does not
  know one ("mey", "hmn"): such texts are never judged.
* `script_verdicts(texts, scripts)` applies the rule to many texts at once, in numpy.

The rule (as `scripts.script_mismatch`'s): every letter or combining mark whose ICU script is
not Common or Inherited counts, under its own script. Accepted letters are those of the
expected script's set (`accepted_scripts`: Hans/Hani -> Han, Hant -> Han + Bopomofo,
Jpan -> Han + Hiragana + Katakana, Kore -> Hangul + Han, otherwise the script itself). When
Latin is not accepted, Latin "names" are set aside: tokens that start with an upper-case
Latin letter not preceded by a Latin letter ("BBC", "在Ballyhackamore"; `scripts._names`).
A text MISMATCHES when at least MIN_FOREIGN effective letters are not accepted and the
accepted ones are fewer than MIN_SHARE of the effective letters; its finding names the
dominant foreign script (the most letters outside the accepted set, names aside; a tie
goes to Latin, then to the alphabetically first code).

Unlike `scripts`, there is no kana rule (a Chinese text with kana is not called Japanese
here: kana only count as foreign letters), and letters beyond plane 2 are not counted
(the same table limit as `scripts`).

Languages genuinely written in several scripts (`ALTERNATE_SCRIPTS`) accept each of them
when the code declares none: "srp" accepts Cyrillic and Latin, "srp-Latn" only Latin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from ..io.mapping import LANG_CODE
from .scripts import (
    _TABLE_SIZE,
    MIN_FOREIGN,
    MIN_SHARE,
    _code_points,
    _names,
    _ranges,
    _slices,
)

__all__ = ["ALTERNATE_SCRIPTS", "LanguageInfo", "MIN_FOREIGN", "MIN_SHARE",
           "accepted_scripts", "language_info", "script_name", "script_verdict_arrays",
           "script_verdicts"]

_ISO15924 = re.compile(r"^[A-Za-z]{4}$")

# Scripts a language is genuinely written in, besides ICU's likely one, keyed by base
# language (ICU's canonical subtag). They are accepted only when neither the code nor the
# caller declares a script (`LanguageInfo.scripts`). Each is a script CLDR ships a locale of
# for that language (ICU's available locales: sr_Latn, bs_Cyrl, uz_Arab, pa_Arab, sd_Deva,
# shi_Latn, ...), except shi's Arabic: Tashelhit's traditional written literature is in
# Arabic script, and NTREX-128's Shilha reference (newstest2019-ref.shi) is written in it
# entirely, while ICU's likely script is Tifinagh. Deliberately absent: CLDR's hi_Latn
# (romanised Hindi): accepting Latin for Hindi would let untranslated English pass.
ALTERNATE_SCRIPTS = {
    "sr": ("Cyrl", "Latn"),           # Serbian: digraphic, both standard
    "bs": ("Latn", "Cyrl"),           # Bosnian: both official
    "az": ("Latn", "Cyrl"),           # Azerbaijani: Cyrillic in Dagestan
    "uz": ("Latn", "Cyrl", "Arab"),   # Uzbek: Cyrillic still common, Arabic in Afghanistan
    "pa": ("Guru", "Arab"),           # Punjabi: Gurmukhi (India), Shahmukhi (Pakistan)
    "sd": ("Arab", "Deva"),           # Sindhi: Arabic (Pakistan), Devanagari (India)
    "ks": ("Arab", "Deva"),           # Kashmiri
    "ff": ("Latn", "Adlm"),           # Fula: Latin, Adlam
    "vai": ("Vaii", "Latn"),          # Vai
    "shi": ("Tfng", "Latn", "Arab"),  # Tashelhit: Tifinagh, Berber Latin, Arabic
}

# ISO 15924 codes that stand for a set of scripts (or a variant of one).
_SCRIPT_SETS = {
    "Hans": ("Hani",), "Hant": ("Hani", "Bopo"), "Hani": ("Hani",),
    "Jpan": ("Hani", "Hira", "Kana"), "Kore": ("Hang", "Hani"), "Hrkt": ("Hira", "Kana"),
    "Jamo": ("Hang",), "Latf": ("Latn",), "Latg": ("Latn",), "Cyrs": ("Cyrl",),
    "Syre": ("Syrc",), "Syrj": ("Syrc",), "Syrn": ("Syrc",), "Geok": ("Geor",),
    "Aran": ("Arab",),
}


@dataclass(frozen=True)
class LanguageInfo:
    """What ICU knows of a language code.

    code    the code as given ("zho-CN")
    tag     ICU's canonical BCP-47 tag ("zh-CN"; "prs" -> "fa-AF")
    base    its language subtag ("zh")
    name    English display name ("Chinese (China)"), None when ICU does not know the language
    script  the expected ISO 15924 script ("Hans"), None when unknown
    scripts the scripts whose letters are accepted: (script,), or the language's
            ALTERNATE_SCRIPTS when no script was declared; () when script is None
    """
    code: str
    tag: str
    base: str
    name: str | None
    script: str | None
    scripts: tuple[str, ...] = ()


def _normal_script(code: str) -> str:
    """An ISO 15924 code in its usual case ("latn" -> "Latn"); ValueError when malformed."""
    if not isinstance(code, str) or not _ISO15924.match(code):
        raise ValueError(f"not an ISO 15924 script code: {code!r}")
    return code.title()


@lru_cache(maxsize=4096)
def language_info(code: str, script: str | None = None) -> LanguageInfo | None:
    """ICU's reading of a language code ("deu", "zho-CN", "srp_Latn"), or None when the code
    is not well-formed (a 2-3 letter language, optional 4-letter script, optional 2-letter
    or 3-digit region, "-" or "_" between). The expected script: the code's script subtag,
    else `script` (ValueError when not an ISO 15924 code), else ICU's likely script; none
    for "und" (likely subtags would make it English) or a language ICU does not know."""
    import icu
    if not isinstance(code, str) or not LANG_CODE.match(code):
        return None
    declared = _normal_script(script) if script is not None else None
    locale = icu.Locale.createCanonical(code.replace("_", "-"))
    base = locale.getLanguage() or "und"   # ICU spells "und" as ""
    english = icu.Locale.getEnglish()
    known = base != "und" and locale.getDisplayLanguage(english) != base
    name = locale.getDisplayName(english) if known else None
    found = locale.getScript() or declared
    if found:
        accepted = (found,)
    elif base != "und":
        likely = icu.Locale(locale.getName())
        likely.addLikelySubtags()
        found = likely.getScript() or None
        accepted = ALTERNATE_SCRIPTS.get(base, (found,)) if found else ()
        if found and found not in accepted:
            accepted = (found,) + accepted
    else:
        accepted = ()
    return LanguageInfo(code=code, tag=locale.toLanguageTag(), base=base, name=name,
                        script=found, scripts=accepted)


@lru_cache(maxsize=512)
def script_name(iso15924: str) -> str:
    """English name of an ISO 15924 script via ICU ("Ethi" -> "Ethiopic", "Hans" ->
    "Simplified Han"); the code itself when ICU has no name for it."""
    import icu
    code = _normal_script(iso15924)
    name = icu.Locale(f"und_{code}").getDisplayScript(icu.Locale.getEnglish())
    if name and name != code:
        return name
    numbers = icu.Script.getCode(code)
    return icu.Script(numbers[0]).getName().replace("_", " ") if numbers else code


# ---------------------------------------------------------------------------------------
# The per-code-point script table.

_LATIN = 1   # the table's id of Latin (what scripts._names reads as Latin)


@lru_cache(maxsize=1)
def _script_table():
    """Per code point of planes 0-2, plus one last slot standing for every code point above:
    the id of its script when it is a counted letter (a letter or combining mark whose ICU
    script is not Common or Inherited), else 0; and the ISO 15924 code of each id (index 0:
    None). Latin is id 1."""
    import icu
    import numpy as np
    found = {}
    number = 2   # 0 and 1 are Common and Inherited
    while True:
        try:
            short = icu.Script(number).getShortName()
        except Exception:   # past the last script code
            break
        number += 1
        letters = icu.UnicodeSet(f"[[:sc={short}:]&[[:L:][:M:]]]")
        if not letters.isEmpty():
            found[short] = letters
    # Latin first, then alphabetical: a tie for the dominant foreign script goes that way.
    codes = [None, "Latn"] + sorted(set(found) - {"Latn"})
    assert len(codes) <= 256, len(codes)
    table = np.zeros(_TABLE_SIZE + 1, np.uint8)
    for index, code in enumerate(codes[1:], start=1):
        for start, end in _ranges(found[code]):
            table[start:end] = index
    return table, tuple(codes)


@lru_cache(maxsize=1)
def _ids() -> dict[str, int]:
    return {code: i for i, code in enumerate(_script_table()[1]) if code}


def accepted_scripts(script: str) -> tuple[str, ...]:
    """The scripts whose letters count for an expected ISO 15924 script ("Jpan" -> Hani,
    Hira, Kana); ValueError when ICU knows no letters of it (Zyyy, Zzzz, or no such code)."""
    code = _normal_script(script)
    found = tuple(s for s in _SCRIPT_SETS.get(code, (code,)) if s in _ids())
    if not found:
        raise ValueError(f"ICU knows no letters of script {script!r}")
    return found


@lru_cache(maxsize=1024)
def _rule(expected: tuple[str, ...]) -> tuple[frozenset[int], bool]:
    """The script ids accepted for a tuple of expected scripts, and whether Latin names are
    set aside (Latin not accepted)."""
    ids = _ids()
    accepted = frozenset(ids[s] for code in expected for s in accepted_scripts(code))
    return accepted, _LATIN not in accepted


def _expected(spec) -> tuple[str, ...] | None:
    if spec is None:
        return None
    if isinstance(spec, str):
        return (spec,)
    spec = tuple(spec)
    return spec or None


# ---------------------------------------------------------------------------------------
# The rule over many texts.

def script_verdict_arrays(texts: Sequence[str], scripts):
    """`script_verdicts` as numpy arrays: (mismatch, a bool array; foreign, an object array
    of the dominant foreign script's ISO 15924 code where the text mismatches, else None)."""
    import numpy as np
    n = len(texts)
    if isinstance(scripts, str) or scripts is None:
        scripts = [scripts] * n
    if len(scripts) != n:
        raise ValueError(f"{n} texts but {len(scripts)} scripts")
    # Each distinct expectation is one rule: a row of the accepted matrix.
    rules: dict[tuple[str, ...] | None, int] = {}
    rule_of = np.fromiter((rules.setdefault(_expected(s), len(rules)) for s in scripts),
                          np.int32, n)
    table, codes = _script_table()
    width = len(codes)
    accept = np.zeros((len(rules), width), bool)
    set_aside = np.zeros(len(rules), bool)
    judged = np.zeros(len(rules), bool)
    for expected, row in rules.items():
        if expected is not None:
            accepted, names = _rule(expected)
            accept[row, sorted(accepted)] = True
            set_aside[row], judged[row] = names, True
    mismatch = np.zeros(n, bool)
    foreign = np.zeros(n, np.int32)
    for a, b in _slices(texts):
        if judged[rule_of[a:b]].any():
            mismatch[a:b], foreign[a:b] = _verdict_slice(
                texts[a:b], rule_of[a:b], accept.ravel(), set_aside, judged, table, width)
    return mismatch, np.array(codes, dtype=object)[foreign]


def _verdict_slice(texts, rule_of, accept, set_aside, judged, table, width):
    """Mismatch and dominant foreign script id (0: none) of a slice of texts."""
    import numpy as np
    n = len(texts)
    _, cps = _code_points(texts)
    ids = table[cps]
    # Each code point's text: the running count of text ends before it.
    text = np.zeros(len(cps), np.int32)
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, n) + 1)[:-1]
    text[ends] = 1
    np.cumsum(text, out=text)
    at = np.flatnonzero(ids)                       # the counted letters
    script, owner = ids[at].astype(np.int32), text[at]
    rule = rule_of[owner]
    ok = accept[rule * width + script]
    letters = np.bincount(owner, minlength=n)
    accepted = np.bincount(owner[ok], minlength=n)
    first, last = _names(cps, ids)
    names = np.bincount(text[first], weights=last - first, minlength=n).astype(np.int64)
    names *= set_aside[rule_of]
    effective = letters - names
    mismatch = (judged[rule_of] & (effective - accepted >= MIN_FOREIGN)
                & (accepted < MIN_SHARE * effective))
    foreign = np.zeros(n, np.int32)
    failing = np.flatnonzero(mismatch)
    if len(failing):
        # Letters per (failing text, script) outside the accepted set, Latin names aside.
        slot = np.full(n, -1, np.int64)
        slot[failing] = np.arange(len(failing))
        keep = ~ok & (slot[owner] >= 0)
        counts = np.bincount(slot[owner[keep]] * width + script[keep],
                             minlength=len(failing) * width).reshape(len(failing), width)
        counts[:, _LATIN] -= names[failing]
        foreign[failing] = counts.argmax(axis=1)   # ties: Latin, then alphabetical
    return mismatch, foreign


def script_verdicts(texts: Sequence[str], scripts) -> list[tuple[bool, str | None]]:
    """Per text: (whether it MISMATCHES its expected script, the dominant foreign script's
    ISO 15924 code when it does, else None), for all texts at once in numpy.

    `scripts` gives each text's expected script: an ISO 15924 code ("Ethi", "Hans"), a tuple
    of codes all accepted (a `LanguageInfo.scripts`), or None (script unknown: never a
    mismatch); or one code (or None) for every text. ValueError for a code ICU knows no
    letters of. `script_verdict_arrays` gives the same as numpy arrays."""
    mismatch, foreign = script_verdict_arrays(texts, scripts)
    return list(zip(mismatch.tolist(), foreign.tolist()))
