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
(the release holds no rendering: only verbatim, romanised and numeric matches can decide).

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
SETTINGS = ("own", "english")
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
                            "others": [pair for pair in answers if pair[0] != a["text"]]})
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


def _record(n: int, unit: dict, sentence: str, setting: str, row_id: str) -> dict:
    title = f"XQuAD {unit['id']}"
    source = {"_id": row_id, "question": unit["en_question"], "answer": unit["en_answer"],
              "type": "bridge", "level": "hard", "supporting_facts": [[title, 0]],
              "context": [[title, [unit["en_sentence"]]]]}
    context = [[title, [sentence], BY_CODE[unit["lang"]].name]]
    own = setting == "own"
    record = synth.build_v11_record(
        source, context, unit["question"] if own else unit["en_question"],
        unit["answer"] if own else unit["en_answer"],
        BY_CODE[unit["lang"]].name if own else "English", split="validation",
        source_position=n, release_position=n, view_index=0)
    return record


def build(out_dir: Path, setting: str = "own", languages: tuple[str, ...] = LANGUAGES,
          limit: int | None = None, plants: tuple[str, ...] = PLANTS, seed: int = SEED) -> dict:
    """Write out_dir/release: every unit of `languages` (the first `limit` per language),
    and one planted copy per plant kind where it applies, in the given setting.

    Returns {"release": path, "units": {(id, "p00", 0): unit + {"plant": None | kind,
    "translation": the sentence in the release}}}."""
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
