"""V1.1 releases of REAL aligned answers for the preservation checks (audit/checks/preservation.py, audit/translation/preservation.py):
the ground truth of tests/test_preservation.py and bench/preservation.py.

XQuAD (../shared/realdata/xquad) is SQuAD v1.1 dev with professional translations in 11 of
our languages, aligned paragraph by paragraph and question by question, each answer a span
of its own language's paragraph. Each QA becomes one release row: one gold paragraph of one
sentence, the English sentence that holds the English answer and the translated sentence
that holds the translated answer, its supporting fact that sentence. Sentences are split at
final punctuation; where a paragraph splits into the same number of sentences in both
languages the answer's sentences must share their index, otherwise (German abbreviations,
Thai, which writes no full stops) the translated sentence is the stretch of the translated
paragraph at the English sentence's relative position, widened to whole words and to the
answer (`alignment` 'sentence' or 'window').

Settings: `own` puts the translated question and answer in the row (the answer language is
the paragraph's, so the release holds a rendering of the answer in that language, as every
XHotpotQA+ paragraph has in its sibling view); `english` keeps question and answer English
(the release holds no rendering: only verbatim, romanised and numeric matches can decide);
`single` is a V1.1 single-view release (issue 47): the paragraph in language L, question and
answer XQuAD's in another language M, and no row anywhere holds the answer in L. Per English
answer (its title key) the ten languages are split at random into five paragraph languages
and five answer languages, so every question yields up to five rows, each paragraph language
L paired with an answer language M drawn from the other five; its damaged copy has every
occurrence of the L answer replaced by another answer (a name, number or date: `answer_type`)
of the same paragraph, in L.

Plants (one copy of the row each): the translated answer span deleted, or replaced by the
translated answer of another question on the same paragraph (another entity of it); only
where the translated answer occurs once in the sentence and a deletion leaves no
occurrence. The third-party text is read at run time; only `out_dir` receives the release.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import duckdb
from conftest import REALDATA

from audit.language.descriptors import normalize_answer
from audit.languages import BY_CODE
from audit.sql import macros
from devkit import synth

XQUAD = REALDATA / "xquad"
LANGUAGES = ("es", "de", "el", "ru", "tr", "ar", "vi", "th", "zh", "hi")
SETTINGS = ("own", "english", "single")
PLANTS = ("deleted", "replaced")
SEED = 20261222
_SENTENCE_END = re.compile(r"(?<=[.!?。！？।؟۔])[\"'”’»)]*\s+|(?<=[。！？])")


def load(lang: str) -> list[dict]:
    return json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]


def _sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _window(text: str, share: tuple[float, float], answer: tuple[int, int]) -> tuple[int, int]:
    start = min(int(share[0] * len(text)), answer[0])
    end = max(int(share[1] * len(text)), answer[1])
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def categories(texts: list[str]) -> dict[str, str]:
    """copy_category of each text, by the very SQL the checks use."""
    con = duckdb.connect()
    macros.register(con)
    return dict(con.execute("SELECT s, copy_category(s) FROM unnest(?::VARCHAR[]) t(s)",
                            [sorted(set(texts))]).fetchall())


def units(lang: str) -> list[dict]:
    """One unit per XQuAD question whose answers can be placed in aligned sentences:
    {id, lang, question, en_question, answer, en_answer, sentence, en_sentence, at (the
    translated answer's offset in its sentence), alignment, others (the paragraph's other
    translated answers that are names, numbers or dates, with their English), eligible (a name, number or date answer the
    English sentence contains, as the check decides)}."""
    out = []
    for en_article, article in zip(load("en"), load(lang)):
        for en_par, par in zip(en_article["paragraphs"], article["paragraphs"]):
            en_text, text = en_par["context"], par["context"]
            en_spans, spans = _sentences(en_text), _sentences(text)
            answers = [(qa["answers"][0]["text"], en_qa["answers"][0]["text"])
                       for en_qa, qa in zip(en_par["qas"], par["qas"])]
            for en_qa, qa in zip(en_par["qas"], par["qas"]):
                en_a, a = en_qa["answers"][0], qa["answers"][0]
                k = next(i for i, (s, e) in enumerate(en_spans) if s <= en_a["answer_start"] < e)
                start, end = en_spans[k]
                if len(en_spans) == len(spans):
                    if not spans[k][0] <= a["answer_start"] < spans[k][1]:
                        continue
                    t_start, t_end = spans[k]
                    alignment = "sentence"
                else:
                    t_start, t_end = _window(text, (start / len(en_text), end / len(en_text)),
                                             (a["answer_start"], a["answer_start"] + len(a["text"])))
                    alignment = "window"
                sentence = text[t_start:t_end].strip()
                lead = len(text[t_start:t_end]) - len(text[t_start:t_end].lstrip())
                at = a["answer_start"] - t_start - lead
                if sentence[at:at + len(a["text"])] != a["text"]:
                    continue    # an offset XQuAD got wrong: the span cannot be placed
                out.append({"id": qa["id"], "lang": lang, "question": qa["question"],
                            "en_question": en_qa["question"], "answer": a["text"],
                            "en_answer": en_a["text"], "sentence": sentence,
                            "en_sentence": en_text[start:end].strip(),
                            "at": at, "alignment": alignment,
                            "others": [pair for pair in answers if pair[0] != a["text"]],
                            "paragraph_answers": [pair for pair in answers
                                                  if pair[0] != a["text"]]})
    kinds = categories([u["en_answer"] for u in out] + [en for u in out for _, en in u["others"]])
    for u in out:
        u["others"] = [(t, en) for t, en in u["others"] if kinds[en] in ("name_like",
                                                                         "number_or_date")]
        u["eligible"] = (kinds[u["en_answer"]] in ("name_like", "number_or_date")
                         and f" {normalize_answer(u['en_answer'])} "
                         in f" {normalize_answer(u['en_sentence'])} ")
    return out


def plant(unit: dict, kind: str, rng: random.Random) -> str | None:
    """The translated sentence with its answer span deleted or replaced by another entity
    of the paragraph (None where the plant would not lose the answer)."""
    sentence, at, answer = unit["sentence"], unit["at"], unit["answer"]
    if sentence.casefold().count(answer.casefold()) != 1:
        return None
    if kind == "deleted":
        return re.sub(r"\s{2,}", " ", sentence[:at] + sentence[at + len(answer):]).strip()
    others = [t for t, en in unit["others"]
              if answer.casefold() not in t.casefold() and t.casefold() not in answer.casefold()
              and unit["en_answer"].casefold() not in en.casefold()]
    if not others:
        return None
    return sentence[:at] + rng.choice(others) + sentence[at + len(answer):]


def _record(n: int, unit: dict, sentence: str, setting: str, row_id: str,
            asked: dict | None = None) -> dict:
    """One row; `asked`, the unit in the answer language M (setting 'single'), gives the
    question and answer."""
    title = f"XQuAD {unit['id']}"
    source = {"_id": row_id, "question": unit["en_question"], "answer": unit["en_answer"],
              "type": "bridge", "level": "hard", "supporting_facts": [[title, 0]],
              "context": [[title, [unit["en_sentence"]]]]}
    context = [[title, [sentence], BY_CODE[unit["lang"]].name]]
    if asked is None:
        asked = unit if setting == "own" else {"question": unit["en_question"],
                                              "answer": unit["en_answer"], "lang": "en"}
    record = synth.build_v11_record(
        source, context, asked["question"], asked["answer"], BY_CODE[asked["lang"]].name,
        split="validation", source_position=n, release_position=n, view_index=0)
    return record


# ------------------------------------------------------------- setting 'single' (issue 47)

_MONTHS = ("january february march april may june july august september october november "
           "december jan feb mar apr jun jul aug sep sept oct nov dec").split()
_MONTH = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_DATE = re.compile(r"\b1\d{3}s?\b|\b20\d{2}s?\b|\b\d{2,4}'?s\b|\bcentur(?:y|ies)\b|"
                   r"\b(?-i:BC|AD|BCE|CE)\b", re.IGNORECASE)
_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fifteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
                 "thousand million billion trillion half dozen").split()
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_FIGURE = re.compile(r"\d|[$£€¥%]")
_LINKS = frozenset("of the and de la le du des del der von van da di y for in on at a an to "
                   "&".split())


def answer_type(answer: str) -> str | None:
    """What an English answer is, as a person would say, independent of the check:
    'date' (a month name with a figure, a year or decade, a century, an era), 'number' (a
    digit, a currency sign, a number word in three words at most), both six words at most, 'name' (every word capitalised but the linking ones: "of",
    "the", "de"…), else None (a phrase, not looked for)."""
    text = answer.strip()
    if not text or len(text) > 60:
        return None
    n_words = len(text.split())
    if n_words <= 6 and (_DATE.search(text) or (_MONTH.search(text) and (
            _FIGURE.search(text) or n_words == 1))):
        return "date"
    if n_words <= 6 and (_FIGURE.search(text) or (n_words <= 3 and _NUMBER_WORD.search(text))):
        return "number"
    tokens = re.findall(r"[^\W\d_][\w'’.-]*", text)
    if tokens and tokens[0][0].isupper() and all(
            t[0].isupper() or t.casefold() in _LINKS for t in tokens):
        return "name"
    return None


def _partition(en_answer: str, seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The paragraph languages and the answer languages of an English answer: a seeded
    split of LANGUAGES by its title key, the same for every question with that answer."""
    key = " ".join(en_answer.split()).casefold()
    order = list(LANGUAGES)
    random.Random(f"{seed}:{key}").shuffle(order)
    half = len(order) // 2
    return tuple(order[:half]), tuple(order[half:])


def replace_all(unit: dict, rng: random.Random) -> str | None:
    """The translated sentence with every occurrence of its answer (case-folded) replaced by
    another answer of the same paragraph that is a name, number or date; None where none
    fits or the answer does not occur."""
    sentence, answer = unit["sentence"], unit["answer"]
    if answer.casefold() not in sentence.casefold():
        return None
    others = sorted({t for t, en in unit["paragraph_answers"]
                     if answer_type(en) and t.strip()
                     and answer.casefold() not in t.casefold()
                     and t.casefold() not in answer.casefold()
                     and unit["en_answer"].casefold() not in en.casefold()
                     and en.casefold() not in unit["en_answer"].casefold()})
    if not others:
        return None
    other = rng.choice(others)
    return re.sub(re.escape(answer), lambda _: other, sentence, flags=re.IGNORECASE)


def _single(languages: tuple[str, ...], limit: int | None, seed: int) -> tuple[list, dict]:
    rng = random.Random(seed)
    by_lang = {lang: {u["id"]: u for u in units(lang)[:limit]} for lang in languages}
    ids = sorted({i for found in by_lang.values() for i in found})
    records, placed = [], {}
    for qid in ids:
        present = {lang: by_lang[lang][qid] for lang in languages if qid in by_lang[lang]}
        if not present:
            continue
        en_answer = next(iter(present.values()))["en_answer"]
        paragraph_langs, answer_langs = _partition(en_answer, seed)
        askers = [lang for lang in answer_langs if lang in present]
        if not askers:
            continue
        for lang in paragraph_langs:
            if lang not in present:
                continue
            unit, asked = present[lang], present[rng.choice(askers)]
            typed = answer_type(unit["en_answer"])
            unit = {**unit, "answer_lang": asked["lang"], "asked_answer": asked["answer"],
                    "type": typed,
                    "typed": bool(typed) and f" {normalize_answer(unit['en_answer'])} "
                    in f" {normalize_answer(unit['en_sentence'])} "}
            variants = [(None, unit["sentence"])]
            damaged = replace_all(unit, rng)
            if damaged is not None:
                variants.append(("replaced", damaged))
            for kind, sentence in variants:
                row_id = f"xq-{lang}-{qid}-{kind or 'clean'}"
                records.append(_record(len(records), unit, sentence, "single", row_id, asked))
                placed[(row_id, "p00", 0)] = {**unit, "plant": kind, "translation": sentence}
    return records, placed


def build(out_dir: Path, setting: str = "own", languages: tuple[str, ...] = LANGUAGES,
          limit: int | None = None, plants: tuple[str, ...] = PLANTS, seed: int = SEED) -> dict:
    """Write out_dir/release: every unit of `languages` (the first `limit` per language),
    and one planted copy per plant kind where it applies, in the given setting.

    Returns {"release": path, "units": {(id, "p00", 0): unit + {"plant": None | kind,
    "translation": the sentence in the release}}}."""
    if setting == "single":
        records, placed = _single(languages, limit, seed)
        release = Path(out_dir) / "release"
        synth.write_release(records, release)
        return {"release": release, "units": placed}
    rng = random.Random(seed)
    records, placed = [], {}
    for lang in languages:
        for unit in units(lang)[:limit]:
            variants = [(None, unit["sentence"])]
            for kind in plants:
                planted = plant(unit, kind, rng)
                if planted is not None:
                    variants.append((kind, planted))
            for kind, sentence in variants:
                row_id = f"xq-{lang}-{unit['id']}-{kind or 'clean'}"
                records.append(_record(len(records), unit, sentence, setting, row_id))
                placed[(row_id, "p00", 0)] = {**unit, "plant": kind, "translation": sentence}
    release = Path(out_dir) / "release"
    synth.write_release(records, release)
    return {"release": release, "units": placed}
