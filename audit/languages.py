"""The 24 XHotpotQA languages with their script and family (SPEC §4)."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Language:
    code: str
    name: str
    script: str
    family: str


# Order is the train view order of SPEC §1.1 (VIEW_ORDER[legacy_view_index]).
LANGUAGES: tuple[Language, ...] = (
    Language("en", "English", "Latin", "Germanic"),
    Language("zh", "Mandarin Chinese", "Han", "Sinitic"),
    Language("es", "Spanish", "Latin", "Romance"),
    Language("hi", "Hindi", "Devanagari", "Indo-Aryan"),
    Language("ar", "Arabic", "Arabic", "Semitic"),
    Language("fr", "French", "Latin", "Romance"),
    Language("ru", "Russian", "Cyrillic", "Slavic"),
    Language("pt", "Portuguese", "Latin", "Romance"),
    Language("bn", "Bengali", "Bengali", "Indo-Aryan"),
    Language("ur", "Urdu", "Arabic", "Indo-Aryan"),
    Language("id", "Indonesian", "Latin", "Austronesian"),
    Language("ja", "Japanese", "Japanese", "Japonic"),
    Language("de", "German", "Latin", "Germanic"),
    Language("sw", "Swahili", "Latin", "Bantu"),
    Language("tr", "Turkish", "Latin", "Turkic"),
    Language("vi", "Vietnamese", "Latin", "Austroasiatic"),
    Language("ko", "Korean", "Hangul", "Koreanic"),
    Language("it", "Italian", "Latin", "Romance"),
    Language("fa", "Persian", "Arabic", "Iranian"),
    Language("th", "Thai", "Thai", "Kra-Dai"),
    Language("nl", "Dutch", "Latin", "Germanic"),
    Language("pl", "Polish", "Latin", "Slavic"),
    Language("el", "Greek", "Greek", "Hellenic"),
    Language("sv", "Swedish", "Latin", "Germanic"),
)

VIEW_ORDER: tuple[str, ...] = tuple(language.name for language in LANGUAGES)
BY_CODE: dict[str, Language] = {language.code: language for language in LANGUAGES}
BY_NAME: dict[str, Language] = {language.name: language for language in LANGUAGES}
CODES: tuple[str, ...] = tuple(BY_CODE)
UNKNOWN_CODE = "und"
# Written right to left (the three Arabic-script languages).
RTL_CODES = frozenset({"ar", "fa", "ur"})


@functools.lru_cache(maxsize=1024)
def base_language(code: str) -> str:
    """A code's base language as ICU canonicalises it ("deu", "zho-CN" → de, zh; "mya",
    "bur" → my; "ell", "gre" → el), or the code itself where ICU finds none."""
    import icu
    return icu.Locale.createCanonical(code.replace("_", "-")).getLanguage() or code


def normalized(code: str) -> str:
    """The code the checks and the review read a language by: one of the 24 where the code
    names one of them ("deu", "zho-CN", "por-BR" → de, zh, pt), else the code as given
    (with "-" for "_")."""
    base = base_language(code)
    return base if base in BY_CODE else code.replace("_", "-")
