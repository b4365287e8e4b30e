"""A small deterministic DEMO release (V1.1 layout) with planted defects and its oracle.

`generate_demo(out_dir)` writes
  release/{train,validation}-00000.parquet   built by audit.synth like the reference builder
  hotpot_source_{train,validation}.json      the English HotpotQA-format sources
  expected_findings.json                     every finding an auditor must report

Defects are planted by corrupting the translated view or the source *before* building a row
(so flags, status and hashes are the reference's), except the release-consistency plants,
which edit finished rows. The findings come from an independent plain-Python oracle that
reads only the finished rows and the source files, never the plant list.

Language compliance (script_mismatch, language_mismatch) has no independent oracle: its
plants (wrong-language paragraphs, a wrong-language question, a wrong-script sentence, and
the Latin words other plants put into non-Latin candidates) record the units the language
checks must report, in `language_findings`; `findings` leaves those two checks out.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit import synth
from audit.languages import BY_CODE, BY_NAME, CODES, VIEW_ORDER

SEED = "xhotpotqa-demo-v1"
SPLIT_ROWS = {"validation": 96, "train": 144}
TEXT_DIR = Path(__file__).resolve().parent.parent / "data/demo/text"
NO_DISTRACTOR_SLOTS = (5, 23, 61)  # a few instances carry only their gold paragraphs
CONNECTORS = frozenset({"of", "the", "de", "la", "le", "van", "von", "du", "da", "del", "der",
                        "den", "y", "and", "bin", "al"})
PLACEHOLDERS = frozenset({"—", "–", "―", "-", "--", "---", "…", "...", "N/A", "n/a"})
# The 18 SPEC §2 flags; duplicate_normalized_translated_title alone is non-blocking.
STRUCTURAL_CHECKS = frozenset({
    "blank_question", "blank_answer", "unknown_question_language",
    "english_identity_mismatch", "invalid_source_context", "invalid_context",
    "candidate_count_mismatch", "invalid_candidate", "invalid_source_candidate",
    "unknown_candidate_language", "blank_sentence", "paragraph_sentence_shortfall",
    "paragraph_sentence_surplus", "malformed_supporting_fact", "supporting_title_missing",
    "supporting_title_ambiguous", "support_index_out_of_range",
    "duplicate_normalized_translated_title",
})


# ---------------------------------------------------------------- text bank

def load_text_bank(text_dir: Path = TEXT_DIR) -> dict[str, dict]:
    """All 24 `<code>.json` files, checked to share en.json's keys and sentence counts."""
    bank: dict[str, dict] = {}
    for code in CODES:
        path = Path(text_dir) / f"{code}.json"
        if not path.is_file():
            raise FileNotFoundError(f"demo text bank file missing: {path} "
                                    f"(all 24 languages are required)")
        bank[code] = json.loads(path.read_text(encoding="utf-8"))
    english = bank["en"]
    for code, text in bank.items():
        for key, paragraph in english["paragraphs"].items():
            other = text.get("paragraphs", {}).get(key)
            if other is None or len(other.get("sentences", [])) != len(paragraph["sentences"]):
                raise ValueError(f"{text_dir}/{code}.json: paragraph {key!r} missing or has "
                                 f"a different sentence count than en.json")
        missing = set(english["questions"]) - set(text.get("questions", {}))
        if missing:
            raise ValueError(f"{text_dir}/{code}.json: questions missing: {sorted(missing)}")
    return bank


# ---------------------------------------------------------------- instances

@dataclass
class Instance:
    split: str
    slot: int
    source_id: str
    view_index: int
    question_key: str
    language: str                 # question language NAME (a plant may make it unknown)
    paragraphs: list[str]         # bank keys in source-context order
    codes: list[str]              # candidate language codes, parallel to paragraphs
    role: str = "normal"          # "unexpected": not in source file; "missing": no release row
    planted: bool = False
    source: dict = field(default_factory=dict)
    translated: Any = None
    question: str = ""
    answer: str = ""


def source_id_for(split: str, n: int) -> str:
    return hashlib.sha1(f"{SEED}|{split}|{n}".encode()).hexdigest()[:24]


def train_view(source_id: str) -> int:
    digest = hashlib.sha256(("xhotpotqa-public-v1|" + source_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") % 24


def _pick_ids(split: str, n_normal: int, n_extra: int) -> list[str]:
    """Deterministic ids; for train, skip ids until every view occurs among the normal ones."""
    ids: list[str] = []
    views: set[int] = set()
    n = 0
    while len(ids) < n_normal:
        sid = source_id_for(split, n)
        n += 1
        view = train_view(sid) if split == "train" else 0
        if split == "train" and view in views and n_normal - len(ids) <= 24 - len(views):
            continue  # remaining slots are reserved for views not yet covered
        ids.append(sid)
        views.add(view)
    return ids + [source_id_for(split, n + j) for j in range(n_extra)]


def _source_paragraph(bank: dict, key: str) -> list:
    """HotpotQA style: sentences after the first start with a space."""
    paragraph = bank["en"]["paragraphs"][key]
    sentences = paragraph["sentences"]
    return [paragraph["title"], [sentences[0]] + [" " + s for s in sentences[1:]]]


def _translate(bank: dict, inst: Instance, i: int) -> list:
    """Legacy translated entry [title, sentences, language NAME]; English copies the source."""
    code = inst.codes[i]
    if code == "en":
        title, sentences = inst.source["context"][i]
        return [title, list(sentences), "English"]
    paragraph = bank[code]["paragraphs"][inst.paragraphs[i]]
    return [paragraph["title"], list(paragraph["sentences"]), BY_CODE[code].name]


def _materialize(bank: dict, inst: Instance) -> None:
    english = bank["en"]["questions"][inst.question_key]
    titles = {k: bank["en"]["paragraphs"][k]["title"] for k in bank["en"]["paragraphs"]}
    inst.source = {
        "_id": inst.source_id, "answer": english["answer"], "question": english["question"],
        "supporting_facts": [[titles[k], idx] for k, idx in english["supporting_facts"]],
        "context": [_source_paragraph(bank, k) for k in inst.paragraphs],
        "type": english["type"], "level": "hard",
    }
    inst.translated = [_translate(bank, inst, i) for i in range(len(inst.paragraphs))]
    _set_question_language(bank, inst, BY_NAME[inst.language].code)


def _set_question_language(bank: dict, inst: Instance, code: str) -> None:
    text = bank[code]["questions"][inst.question_key]
    inst.question, inst.answer = text["question"], text["answer"]
    if code == "en":  # English units are exact copies of the source
        inst.question, inst.answer = inst.source["question"], inst.source["answer"]


def _make_instances(bank: dict, split: str, rng: random.Random) -> list[Instance]:
    n_rows = SPLIT_ROWS[split]
    # Release rows = normal + unexpected + one duplicate row; the missing one has no row.
    ids = _pick_ids(split, n_rows - 2, 2)
    question_keys = sorted(bank["en"]["questions"])
    paragraph_keys = sorted(bank["en"]["paragraphs"])
    if split == "validation":  # uniform draws, with every language guaranteed once
        draws = list(CODES) + [rng.choice(CODES) for _ in range(n_rows - 2 - len(CODES))]
        rng.shuffle(draws)
    instances = []
    for slot, sid in enumerate(ids):
        key = rng.choice(question_keys)
        gold = list(dict.fromkeys(k for k, _ in bank["en"]["questions"][key]["supporting_facts"]))
        others = [k for k in paragraph_keys if k not in gold]
        n_distractors = 0 if slot in NO_DISTRACTOR_SLOTS else rng.randint(2, 8)
        keys = gold + rng.sample(others, n_distractors)
        rng.shuffle(keys)
        if split == "train":
            view = train_view(sid)
            language = VIEW_ORDER[view]
        else:
            view = 0
            code = draws[slot] if slot < len(draws) else rng.choice(CODES)
            language = BY_CODE[code].name
        inst = Instance(split, slot, sid, view, key, language, keys,
                        [rng.choice(CODES) for _ in keys])
        _materialize(bank, inst)
        instances.append(inst)
    # Fixed places for the completeness plants (not at the ends, to be less trivial).
    instances[-2].role, instances[-1].role = "unexpected", "missing"
    instances.insert(n_rows // 3, instances.pop(-2))
    instances.insert(2 * n_rows // 3, instances.pop(-1))
    return instances


# ---------------------------------------------------------------- plants

Mark = dict  # {"kind", "note", "paragraph_id", "sentence_index"}


def _mark(kind: str, note: str, i: int | None = None, k: int | None = None) -> Mark:
    return {"kind": kind, "note": note,
            "paragraph_id": None if i is None else f"p{i:02d}", "sentence_index": k}


@dataclass
class PlantContext:
    bank: dict

    def foreign(self, inst: Instance, i: int) -> list:
        """Make candidate i non-English (so edits don't also trip English identity)."""
        if inst.codes[i] == "en":
            inst.codes[i] = CODES[1 + (inst.slot + i) % (len(CODES) - 1)]
            inst.translated[i] = _translate(self.bank, inst, i)
        return inst.translated[i]

    def set_code(self, inst: Instance, i: int, code: str) -> list:
        inst.codes[i] = code
        inst.translated[i] = _translate(self.bank, inst, i)
        return inst.translated[i]


def _gold(inst: Instance, bank: dict) -> list[str]:
    return [k for k, _ in bank["en"]["questions"][inst.question_key]["supporting_facts"]]


def _distractors(inst: Instance, bank: dict) -> list[int]:
    gold = set(_gold(inst, bank))
    return [i for i, k in enumerate(inst.paragraphs) if k not in gold]


def _blank_sentence(text: str, k: int) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        ctx.foreign(inst, 0)[1][k] = text
        return [_mark("blank_sentence", f"sentence = {text!r}", 0, k)]
    return apply


def _zwsp_sentence(inst: Instance, ctx: PlantContext) -> list[Mark]:
    ctx.foreign(inst, 0)[1][1] = "\u200b"
    return [_mark("negative:blank_sentence", "sentence is exactly U+200B (not whitespace)", 0, 1),
            _mark("invisible_control", "sentence is exactly U+200B (zero width: info)", 0, 1)]


def _shortfall_gold(inst: Instance, ctx: PlantContext) -> list[Mark]:
    i = inst.paragraphs.index("danube")
    ctx.foreign(inst, i)[1].pop()
    return [_mark("paragraph_sentence_shortfall", "last sentence of gold Danube dropped", i),
            _mark("support_index_out_of_range", "fact [Danube, 2] now past the end", i, 2)]


def _shortfall_distractor(inst: Instance, ctx: PlantContext) -> list[Mark]:
    i = _distractors(inst, ctx.bank)[0]
    ctx.foreign(inst, i)[1].pop()
    return [_mark("paragraph_sentence_shortfall", "last sentence of a distractor dropped", i)]


def _surplus(inst: Instance, ctx: PlantContext) -> list[Mark]:
    sentences = ctx.foreign(inst, 0)[1]
    sentences.append(sentences[0])  # repetition, a typical MT failure
    return [_mark("paragraph_sentence_surplus", "first sentence repeated at the end", 0)]


def _blank_question(text: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        inst.question = text
        return [_mark("blank_question", f"question = {text!r}")]
    return apply


def _blank_answer(text: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        inst.answer = text
        return [_mark("blank_answer", f"answer = {text!r}")]
    return apply


def _klingon(inst: Instance, ctx: PlantContext) -> list[Mark]:
    _set_question_language(ctx.bank, inst, "de")
    inst.language = "Klingon"
    return [_mark("unknown_question_language", "question language 'Klingon' (German text)")]


def _latin_candidate(inst: Instance, ctx: PlantContext) -> list[Mark]:
    title, sentences = inst.source["context"][0]
    inst.translated[0] = [title, list(sentences), "Latin"]  # untranslated, mislabelled
    return [_mark("unknown_candidate_language", "candidate language 'Latin' (English text)", 0),
            _mark("exact_source_copy", "the 'Latin' (und) candidate copies the source", 0, 0)]


def _english_candidate_edit(inst: Instance, ctx: PlantContext) -> list[Mark]:
    sentences = ctx.set_code(inst, 0, "en")[1]
    sentences[0] = sentences[0].rstrip(".")
    return [_mark("english_identity_mismatch", "English candidate lost its final period", 0)]


def _english_title_edit(inst: Instance, ctx: PlantContext) -> list[Mark]:
    entry = ctx.set_code(inst, 0, "en")
    entry[0] = entry[0].upper()
    return [_mark("english_identity_mismatch", "English candidate title upper-cased", 0)]


def _english_question_edit(inst: Instance, ctx: PlantContext) -> list[Mark]:
    inst.question = inst.question.rstrip("?") + " ?"
    return [_mark("english_identity_mismatch", "English question re-spaced before '?'")]


def _title_missing(inst: Instance, ctx: PlantContext) -> list[Mark]:
    for fact in inst.source["supporting_facts"]:
        if fact[0] == "Rhine":
            fact[0] = "Rhine "
            return [_mark("supporting_title_missing", "source fact title 'Rhine ' (trailing "
                          "space)", None, fact[1])]
    raise AssertionError("no Rhine fact")


def _title_ambiguous(inst: Instance, ctx: PlantContext) -> list[Mark]:
    key = _gold(inst, ctx.bank)[0]
    i = inst.paragraphs.index(key)
    title, sentences = inst.source["context"][i]
    inst.source["context"].append([title, list(sentences)])
    inst.paragraphs.append(key)
    taken = {synth.normalize_title(e[0]) for e in inst.translated}
    code = next(c for c in CODES[1:] if c != inst.codes[i] and synth.normalize_title(
        ctx.bank[c]["paragraphs"][key]["title"]) not in taken)
    inst.codes.append(code)
    inst.translated.append(_translate(ctx.bank, inst, len(inst.paragraphs) - 1))
    index = next(idx for t, idx in inst.source["supporting_facts"] if t == title)
    return [_mark("supporting_title_ambiguous", f"source context holds {title!r} twice",
                  None, index)]


def _dup_titles(first: str, second: str, kind: str = "duplicate_normalized_translated_title"
                ) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        ctx.foreign(inst, 0)[0] = first
        ctx.foreign(inst, 1)[0] = second
        # ZWNJ is Persian, Urdu, Hindi and Bengali spelling: never an invisible_control.
        zwnj = [_mark("negative:invisible_control", "ZWNJ inside a title", 1)] \
            if "\u200c" in second else []
        return ([_mark(kind, f"titles {first!r} and {second!r}", 1)] + zwnj
                + _latin_in_foreign_script(inst, 0, first) +
                _latin_in_foreign_script(inst, 1, second))
    return apply


def _invalid_candidate(title: Any) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        i = _distractors(inst, ctx.bank)[0]
        ctx.foreign(inst, i)[0] = title
        return [_mark("invalid_candidate", f"translated title is {title!r}", i)]
    return apply


def _count_mismatch(inst: Instance, ctx: PlantContext) -> list[Mark]:
    inst.translated.pop()
    return [_mark("candidate_count_mismatch", "translated context one shorter than source")]


def _invalid_context(value: Any) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        inst.translated = value
        return [_mark("invalid_context", f"translated context is {type(value).__name__}")]
    return apply


def _invalid_source_candidate(style: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        i = _distractors(inst, ctx.bank)[0]
        ctx.foreign(inst, i)
        title, sentences = inst.source["context"][i]
        inst.source["context"][i] = ([title, "".join(sentences)] if style == "string"
                                     else [None, sentences])
        return [_mark("invalid_source_candidate", f"source entry malformed ({style})", i)]
    return apply


def _invalid_source_context(style: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        context = inst.source["context"]
        inst.source["context"] = {t: s for t, s in context} if style == "dict" else None
        return [_mark("invalid_source_context", f"source context is {style}")]
    return apply


def _malformed_fact(fact: list) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        inst.source["supporting_facts"].append(list(fact))
        return [_mark("malformed_supporting_fact", f"source fact {fact!r} added")]
    return apply


def _exact_copy(k: int) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        i = len(inst.paragraphs) - 1
        ctx.foreign(inst, i)[1][k] = inst.source["context"][i][1][k]
        return ([_mark("exact_source_copy", "ordinary English sentence left untranslated",
                       i, k)] + _latin_in_foreign_script(inst, i, inst.translated[i][1][k], k))
    return apply


def _placeholder(text: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        ctx.foreign(inst, 0)[1][1] = text
        return [_mark("placeholder_sentence", f"sentence = {text!r}", 0, 1)]
    return apply


def _placeholder_one_char_source(inst: Instance, ctx: PlantContext) -> list[Mark]:
    i = _distractors(inst, ctx.bank)[0]
    ctx.foreign(inst, i)[1][2] = "—"
    inst.source["context"][i][1][2] = " *"
    return [_mark("negative:placeholder_sentence", "'—' for a 1-character source ' *'", i, 2)]


def _fffd_sentence(inst: Instance, ctx: PlantContext) -> list[Mark]:
    sentences = ctx.foreign(inst, 0)[1]
    middle = len(sentences[1]) // 2
    sentences[1] = sentences[1][:middle] + "\ufffd" + sentences[1][middle:]
    return [_mark("invalid_unicode", "U+FFFD inside a sentence", 0, 1)]


def _bel_title(inst: Instance, ctx: PlantContext) -> list[Mark]:
    entry = ctx.foreign(inst, 0)
    entry[0] = entry[0][:2] + "\x07" + entry[0][2:] + "\u2060"
    return [_mark("invalid_unicode", "BEL (U+0007) inside a title", 0),
            _mark("invisible_control", "U+2060 WORD JOINER ends the same title", 0)]


def _c1_question(inst: Instance, ctx: PlantContext) -> list[Mark]:
    inst.question = inst.question[:3] + "\x9b" + inst.question[3:]
    return [_mark("invalid_unicode", "C1 control U+009B inside the question")]


def _source_blank(inst: Instance, ctx: PlantContext) -> list[Mark]:
    i = _distractors(inst, ctx.bank)[0]
    ctx.foreign(inst, i)[1][1] = "—"
    inst.source["context"][i][1][1] = ""
    return [_mark("source_blank_sentence", "source sentence '' translated as '—'", i, 1),
            _mark("negative:placeholder_sentence", "'—' for a blank source is no placeholder",
                  i, 1)]


def _source_index_oob(inst: Instance, ctx: PlantContext) -> list[Mark]:
    fact = inst.source["supporting_facts"][0]
    fact[1] = 7
    i = inst.paragraphs.index(_gold(inst, ctx.bank)[0])
    return [_mark("source_support_index_out_of_range", "source fact index 7 of 3", i, 7),
            _mark("support_index_out_of_range", "index 7 also past the translation", i, 7)]


# ------------------------------------------------------- language plants (SPEC §3)
# Language ID has no independent oracle: each plant records the units the two language
# checks must report (kinds script_mismatch / language_mismatch), and the scan must report
# no other unit. Scripts are recognised here with unicodedata character names, not ICU.

LANGUAGE_CHECKS = frozenset({"script_mismatch", "language_mismatch"})


def _letters_named(text: str, *prefixes: str) -> int:
    return sum(1 for ch in text if ch.isalpha() and
               unicodedata.name(ch, "").startswith(prefixes))


def _kana_rich(text: str) -> bool:
    """The Japanese give-away in Chinese-labelled text: >= 2 kana, >= 10% of Han + kana."""
    kana = _letters_named(text, "HIRAGANA", "KATAKANA")
    han = _letters_named(text, "CJK UNIFIED IDEOGRAPH")
    return kana >= 2 and kana >= 0.1 * (han + kana)


def _latin_in_foreign_script(inst: Instance, i: int, text: str, k: int | None = None
                             ) -> list[Mark]:
    """A side effect of another plant: ordinary Latin words (not capitalised names) put into
    a candidate whose language has another script are a script mismatch too."""
    if BY_CODE[inst.codes[i]].script == "Latin":
        return []
    words = [w for w in text.split() if w[:1].islower()]
    if sum(_letters_named(w, "LATIN") for w in words) < 4:
        return []
    return [_mark("script_mismatch", "side effect: Latin words in a "
                  f"{BY_CODE[inst.codes[i]].name} {'title' if k is None else 'sentence'}",
                  i, k)]


def _wrong_language(assigned: str, actual: str) -> Callable[[Instance, PlantContext],
                                                            list[Mark]]:
    """A candidate assigned `assigned` whose title and sentences are in `actual`."""
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        i = len(inst.paragraphs) // 2
        paragraph = ctx.bank[actual]["paragraphs"][inst.paragraphs[i]]
        inst.codes[i] = assigned
        inst.translated[i] = [paragraph["title"], list(paragraph["sentences"]),
                              BY_CODE[assigned].name]
        note = f"{BY_CODE[assigned].name}-assigned paragraph in {BY_CODE[actual].name}"
        marks = [_mark("language_mismatch", note, i)]
        if BY_CODE[assigned].script == BY_CODE[actual].script:
            return marks
        units = [(None, paragraph["title"])] + list(enumerate(paragraph["sentences"]))
        for k, text in units:
            foreign = (_kana_rich(text) if actual == "ja" else
                       _letters_named(text, BY_CODE[actual].script.upper()) >= 4)
            if foreign:
                marks.append(_mark("script_mismatch", f"{note}: {BY_CODE[actual].script} "
                                   f"{'title' if k is None else 'sentence'}", i, k))
        return marks
    return apply


def _wrong_script_sentence(assigned: str, actual: str, k: int
                           ) -> Callable[[Instance, PlantContext], list[Mark]]:
    """Sentence k of an `assigned` paragraph in `actual` (another script); the rest of the
    paragraph keeps the assigned language, which still dominates it."""
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        i = len(inst.paragraphs) // 2
        entry = ctx.set_code(inst, i, assigned)
        entry[1][k] = ctx.bank[actual]["paragraphs"][inst.paragraphs[i]]["sentences"][k]
        script = BY_CODE[assigned].script.upper()
        own = sum(_letters_named(t, script) for t in entry[1])
        other = sum(_letters_named(t, BY_CODE[actual].script.upper()) for t in entry[1])
        assert own > other, "the assigned language must still dominate the paragraph"
        return [_mark("script_mismatch", f"{BY_CODE[assigned].name} paragraph, sentence in "
                      f"{BY_CODE[actual].name}", i, k)]
    return apply


def _wrong_language_question(actual: str) -> Callable[[Instance, PlantContext], list[Mark]]:
    def apply(inst: Instance, ctx: PlantContext) -> list[Mark]:
        inst.question = ctx.bank[actual]["questions"][inst.question_key]["question"]
        return [_mark("language_mismatch", f"{inst.language}-assigned question in "
                      f"{BY_CODE[actual].name}")]
    return apply


def _language_plants() -> list[tuple["Wants", Callable[[Instance, PlantContext],
                                                        list[Mark]]]]:
    return [
        (_any, _wrong_language("de", "nl")),
        (_any, _wrong_language("pt", "es")),
        (_any, _wrong_language("ru", "el")),
        (_any, _wrong_language("zh", "ja")),
        (lambda inst: inst.language == "Persian", _wrong_language_question("ur")),
        (_any, _wrong_script_sentence("hi", "bn", 1)),
    ]


def _apply_language_plants(bank: dict, instances: list[Instance]
                           ) -> list[tuple[Instance, Mark]]:
    """Like `_apply_plants`, but searching backwards from the end of the split, so the
    instances the other plants take (and the rows the release plants pick from the start)
    are the same as without these plants."""
    ctx = PlantContext(bank)
    plants = _language_plants()
    stride = max(1, len(instances) // (2 * len(plants) + 1))
    marks = []
    for n, (wants, apply) in enumerate(plants):
        start = len(instances) - 1 - n * stride
        order = instances[start::-1] + instances[:start:-1]
        inst = next((x for x in order if x.role == "normal" and not x.planted
                     and len(x.paragraphs) > 2 and wants(x)), None)
        if inst is None:
            raise RuntimeError(f"no instance fits language plant {apply}")
        inst.planted = True
        marks.extend((inst, mark) for mark in apply(inst, ctx))
    return marks


Wants = Callable[[Instance], bool]


def _any(inst: Instance) -> bool:
    return True


def _question(key: str) -> Wants:
    return lambda inst: inst.question_key == key


def _foreign_question(inst: Instance) -> bool:
    return inst.language != "English"


def _english_question(inst: Instance) -> bool:
    return inst.language == "English"


def _has_distractor(inst: Instance) -> bool:
    return len(inst.paragraphs) > 2


def _inner_distractor(bank: dict) -> Wants:
    """The first distractor sits strictly inside, so skipping it leaves a gap mid-list."""
    def wants(inst: Instance) -> bool:
        d = _distractors(inst, bank)
        return bool(d) and 0 < d[0] < len(inst.paragraphs) - 1
    return wants


def _last_is_distractor(bank: dict) -> Wants:
    return lambda inst: inst.paragraphs[-1] not in set(_gold(inst, bank))


def _without(*keys: str) -> Wants:
    """Avoid paragraphs whose real translations would collide with planted titles."""
    return lambda inst: not set(keys) & set(inst.paragraphs)


def _plants(split: str, bank: dict, instances: list[Instance]
            ) -> list[tuple[Wants, Callable[[Instance, PlantContext], list[Mark]]]]:
    counts = Counter(i.language for i in instances if i.role == "normal")
    spare_language: Wants = lambda inst: counts[inst.language] > 1  # keeps 24-coverage
    inner, last = _inner_distractor(bank), _last_is_distractor(bank)
    common = [
        (_question("danube_rhine"), _title_missing),
        (_any, _title_ambiguous),
        (_inner_distractor(bank), _shortfall_distractor if split == "train" else _source_blank),
        (_any, _surplus),
        (_any, _latin_candidate),
        (_any, _english_candidate_edit if split == "validation" else _english_title_edit),
        (_english_question, _english_question_edit),
        (inner, _invalid_candidate(None if split == "validation" else 42)),
        (last, _count_mismatch),
        (_any, _invalid_context({"error": "context translation failed"}
                                if split == "validation" else "ERROR: rate limited")),
        (_has_distractor, _invalid_source_candidate("string" if split == "validation"
                                                    else "untitled")),
        (_any, _invalid_source_context("dict" if split == "validation" else "null")),
        (_question("danube_rhine"), _malformed_fact(["Danube", -1] if split == "validation"
                                                    else ["Danube", "2"])),
        (_any, _exact_copy(0 if split == "validation" else 1)),
        (_any, _placeholder("—")),
        (_any, _fffd_sentence),
        (_any, _source_index_oob),
        (_without("rhine"), _dup_titles("Rhein", "Rh\u200cein",
                                        "negative:duplicate_normalized_translated_title")),
    ]
    if split == "validation":
        return common + [
            (_any, _blank_sentence("", 1)),
            (_any, _blank_sentence("\u00a0", 0)),
            (_any, _blank_sentence("\t", 2)),
            (_any, _zwsp_sentence),
            (_question("danube_rhine"), _shortfall_gold),
            (_foreign_question, _blank_question("")),
            (_foreign_question, _blank_answer("\u3000")),
            (spare_language, _klingon),
            (_without("danube"), _dup_titles("Danube", "ＤＡＮＵＢＥ")),
            (_without("baikal"), _dup_titles("Lake  Baikal", "lake baikal")),
            (_has_distractor, _placeholder_one_char_source),
            (_foreign_question, _c1_question),
        ]
    return common + [
        (_any, _blank_sentence(" ", 1)),
        (_any, _blank_sentence("\u3000", 0)),
        (_any, _blank_sentence("", 2)),
        (_inner_distractor(bank), _source_blank),
        (_foreign_question, _blank_question("\u3000")),
        (_foreign_question, _blank_answer(" ")),
        (_any, _dup_titles("Straße", "STRASSE")),
        (_without("danube"), _dup_titles("ＤＡＮＵＢＥ", "Danube")),
        (_any, _placeholder("...")),
        (_any, _bel_title),
    ]


def _apply_plants(bank: dict, split: str, instances: list[Instance]) -> list[tuple[Instance,
                                                                                   Mark]]:
    """Plant n takes the first free normal instance it wants, searching from a start that
    moves by a fixed stride, so plants spread over the split (deterministic)."""
    ctx = PlantContext(bank)
    plants = _plants(split, bank, instances)
    stride = max(1, len(instances) // (len(plants) + 1))
    marks = []
    for n, (wants, apply) in enumerate(plants):
        start = (n * stride) % len(instances)
        order = instances[start:] + instances[:start]
        inst = next((x for x in order if x.role == "normal" and not x.planted
                     and wants(x)), None)
        if inst is None:
            raise RuntimeError(f"no {split} instance fits plant {apply}")
        inst.planted = True
        marks.extend((inst, mark) for mark in apply(inst, ctx))
    return marks


# ---------------------------------------------------------------- building the release

def _shape(translated: Any) -> dict:
    """What the oracle cannot see in a finished row: the translated context's own shape."""
    if not isinstance(translated, list):
        return {"translated_context_is_list": False, "translated_context_len": 0,
                "invalid_candidate_indices": []}
    bad = [i for i, e in enumerate(translated) if not (
        isinstance(e, list) and len(e) == 3 and isinstance(e[0], str) and isinstance(e[2], str)
        and isinstance(e[1], list) and all(isinstance(s, str) for s in e[1]))]
    return {"translated_context_is_list": True, "translated_context_len": len(translated),
            "invalid_candidate_indices": bad}


def _build_split(bank: dict, split: str) -> tuple[list[dict], list[dict], list[dict],
                                                  list[dict], list[dict]]:
    """Returns (rows, sources, planted, negative_controls, shapes) for one split."""
    rng = random.Random(f"{SEED}|{split}")
    instances = _make_instances(bank, split, rng)
    marks = _apply_plants(bank, split, instances)
    marks += _apply_language_plants(bank, instances)
    sources = [inst.source for inst in instances if inst.role != "unexpected"]
    position = {inst.source_id: n for n, inst in enumerate(
        x for x in instances if x.role != "unexpected")}
    rows, shapes = [], []
    row_of: dict[str, dict] = {}

    def emit(inst: Instance) -> dict:
        row = synth.build_v11_record(
            inst.source, inst.translated, inst.question, inst.answer, inst.language,
            split=split, source_position=position.get(inst.source_id, len(sources)),
            release_position=len(rows), view_index=inst.view_index)
        shape = _shape(inst.translated)
        if (not shape["translated_context_is_list"]
                or shape["translated_context_len"] != len(row["candidates"])):
            shapes.append({"source_split": split, "release_position": len(rows), **shape})
        rows.append(row)
        return row

    for inst in instances:
        if inst.role != "missing":
            row_of[inst.source_id] = emit(inst)
    planted = [{"id": inst.source_id, "split": split,
                "release_position": row_of[inst.source_id]["release_position"]
                if inst.source_id in row_of else None, **mark} for inst, mark in marks]
    planted += _completeness_plants(bank, split, instances, rng, emit, row_of)
    planted += _release_plants(split, rows, planted)
    negatives = [p for p in planted if p["kind"].startswith("negative:")]
    planted = [p for p in planted if not p["kind"].startswith("negative:")]
    for p in negatives:
        p["kind"] = p["kind"].removeprefix("negative:")
    return rows, sources, planted, negatives, shapes


def _completeness_plants(bank: dict, split: str, instances: list[Instance],
                         rng: random.Random, emit: Callable[[Instance], dict],
                         row_of: dict[str, dict]) -> list[dict]:
    original = next(x for x in instances if x.role == "normal" and not x.planted)
    original.planted = True
    # The duplicate is another build of the same source with fresh candidate languages.
    twin = Instance(split, original.slot, original.source_id, original.view_index,
                    original.question_key, original.language, list(original.paragraphs),
                    [rng.choice(CODES) for _ in original.paragraphs], role="duplicate")
    _materialize(bank, twin)
    twin_row = emit(twin)
    unexpected = next(x for x in instances if x.role == "unexpected")
    missing = next(x for x in instances if x.role == "missing")
    return [
        {"id": original.source_id, "split": split,
         "release_position": row_of[original.source_id]["release_position"],
         "kind": "duplicate_id", "note": "a second row reuses this id (last row of the split)",
         "paragraph_id": None, "sentence_index": None},
        {"id": twin.source_id, "split": split, "release_position": twin_row["release_position"],
         "kind": "duplicate_id", "note": "rebuilt twin with fresh candidate languages",
         "paragraph_id": None, "sentence_index": None},
        {"id": unexpected.source_id, "split": split,
         "release_position": row_of[unexpected.source_id]["release_position"],
         "kind": "unexpected_source_id", "note": "row built from a source not in the file",
         "paragraph_id": None, "sentence_index": None},
        {"id": missing.source_id, "split": split, "release_position": None,
         "kind": "missing_source_id", "note": "source record with no release row",
         "paragraph_id": None, "sentence_index": None},
    ]


def _release_plants(split: str, rows: list[dict], planted: list[dict]) -> list[dict]:
    """Edits to finished rows: the builder never produces these inconsistencies."""
    touched = {p["id"] for p in planted}

    def clean_row(skip: set[str]) -> dict:
        return next(r for r in rows if r["status"] == "accepted" and r["id"] not in touched
                    and r["id"] not in skip)

    def planted_row(kind: str) -> dict:
        p = next(p for p in planted if p["kind"] == kind)
        return rows[p["release_position"]]

    marks = []

    def mark(row: dict, kind: str, note: str) -> None:
        marks.append({"id": row["id"], "split": split, "release_position":
                      row["release_position"], "kind": kind, "note": note,
                      "paragraph_id": None, "sentence_index": None})

    row = clean_row(set())
    last = row["record_sha256"][-1]
    row["record_sha256"] = row["record_sha256"][:-1] + ("0" if last != "0" else "1")
    mark(row, "record_hash_mismatch", "record_sha256 last hex digit changed")

    if split == "validation":
        row = planted_row("blank_answer")
        row["status"] = "accepted"
        mark(row, "status_mismatch", "quarantined row shipped as accepted (hash recomputed)")
        row = planted_row("paragraph_sentence_shortfall")
        row["structural_flags"].remove("support_index_out_of_range")
        mark(row, "structural_flags_mismatch", "support_index_out_of_range removed")
    else:
        row = clean_row({m["id"] for m in marks})
        row["status"] = "quarantined"
        mark(row, "status_mismatch", "accepted row shipped as quarantined (hash recomputed)")
        row = planted_row("supporting_title_missing")
        row["structural_flags"].remove("supporting_title_missing")
        mark(row, "structural_flags_mismatch", "supporting_title_missing removed")
    for m in marks[1:]:
        rows[m["release_position"]]["record_sha256"] = synth.record_sha256(
            rows[m["release_position"]])
    return marks


# ---------------------------------------------------------------- the oracle

def _blank(text: str) -> bool:
    return not text.strip()


def _norm_title(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title).split()).casefold()


def _bad_unicode(text: str) -> bool:
    return any(ch == "\ufffd" or ord(ch) <= 0x08 or ord(ch) in (0x0B, 0x0C)
               or 0x0E <= ord(ch) <= 0x1F or 0x7F <= ord(ch) <= 0x9F for ch in text)


def copy_category(text: str) -> str:
    """Why a byte-equal copy may be legitimate: punctuation, numbers, names stay as is."""
    cats = [unicodedata.category(ch) for ch in text]
    letters = any(c.startswith("L") for c in cats)
    digits = any(c.startswith("N") for c in cats)
    if not letters and not digits:
        return "punctuation"
    if digits and not letters:
        return "number_or_date"
    tokens = text.split()
    if 1 <= len(tokens) <= 6 and len(text) <= 60 and all(
            unicodedata.category(t[0]) in ("Lu", "Lt") or t.isdigit() or t in CONNECTORS
            for t in tokens):
        return "name_like"
    return "sentence"


def _entry_ok(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
            and isinstance(entry[1], list) and all(isinstance(s, str) for s in entry[1]))


def _pseudo_source(row: dict) -> dict:
    """For a row whose source is absent: rebuild what the row itself says about its source."""
    candidates = sorted(row["candidates"], key=lambda c: c["candidate_index"])
    return {"question": row["source_question"], "answer": row["source_answer"],
            "context": [[c["source_title"], c["source_sentences"]] for c in candidates],
            "supporting_facts": [[f["source_title"], f["sentence_index"]]
                                 for f in row["supporting_facts"]]}


Finding = tuple  # (check, paragraph_id, sentence_index, extra: dict)


def _structural(row: dict, source: dict, shape: dict | None) -> list[Finding]:
    """Re-derive the SPEC §2 flags, one finding per offending unit."""
    out: list[Finding] = []

    def add(check: str, pid: str | None = None, k: int | None = None, **extra: str) -> None:
        out.append((check, pid, k, extra))

    english = row["question_language_name"] == "English"
    if _blank(row["question"]):
        add("blank_question")
    if _blank(row["answer"]):
        add("blank_answer")
    if row["question_language_name"] not in BY_NAME:
        add("unknown_question_language")
    if english and row["question"] != source["question"]:
        add("english_identity_mismatch", unit="question")
    if english and row["answer"] != source["answer"]:
        add("english_identity_mismatch", unit="answer")
    context = source["context"]
    if not isinstance(context, list):
        add("invalid_source_context")
        context = []
    shape = shape or {"translated_context_is_list": True,
                      "translated_context_len": len(row["candidates"]),
                      "invalid_candidate_indices": []}
    if not shape["translated_context_is_list"]:
        add("invalid_context")
    if shape["translated_context_len"] != len(context):
        add("candidate_count_mismatch")
    for i in shape["invalid_candidate_indices"]:
        add("invalid_candidate", f"p{i:02d}")
    kept: dict[int, dict] = {}
    seen_titles: set[str] = set()
    for cand in sorted(row["candidates"], key=lambda c: c["candidate_index"]):
        i, pid, sentences = cand["candidate_index"], cand["paragraph_id"], cand["sentences"]
        kept[i] = cand
        if cand["language"] not in BY_NAME:
            add("unknown_candidate_language", pid)
        for k, sentence in enumerate(sentences):
            if _blank(sentence):
                add("blank_sentence", pid, k)
        if i < len(context):
            if _entry_ok(context[i]):
                n_source = len(context[i][1])
                if len(sentences) < n_source:
                    add("paragraph_sentence_shortfall", pid)
                if len(sentences) > n_source:
                    add("paragraph_sentence_surplus", pid)
                if cand["language"] == "English" and (cand["title"] != context[i][0]
                                                      or sentences != context[i][1]):
                    add("english_identity_mismatch", pid, unit="candidate")
            else:
                add("invalid_source_candidate", pid)
        key = _norm_title(cand["title"])
        if key in seen_titles:
            add("duplicate_normalized_translated_title", pid)
        seen_titles.add(key)
    facts = source["supporting_facts"]
    if not isinstance(facts, list):
        add("malformed_supporting_fact")
        facts = []
    titles = [e[0] if isinstance(e, list) and e and isinstance(e[0], str) else None
              for e in context]
    for fact in facts:
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and type(fact[1]) is int and fact[1] >= 0):
            add("malformed_supporting_fact")
            continue
        title, k = fact
        hits = [i for i, t in enumerate(titles) if t == title]
        if len(hits) != 1:
            add("supporting_title_missing" if not hits else "supporting_title_ambiguous",
                None, k)
            add("support_index_out_of_range", None, k)
            continue
        i = hits[0]
        if i not in kept or k >= len(kept[i]["sentences"]):
            add("support_index_out_of_range", f"p{i:02d}", k)
    return out


def _source_anomalies(source: dict) -> list[Finding]:
    out: list[Finding] = []
    context = source["context"] if isinstance(source["context"], list) else []
    for i, entry in enumerate(context):
        if _entry_ok(entry):
            out += [("source_blank_sentence", f"p{i:02d}", k, {})
                    for k, s in enumerate(entry[1]) if _blank(s)]
    titles = [e[0] if isinstance(e, list) and e and isinstance(e[0], str) else None
              for e in context]
    facts = source["supporting_facts"] if isinstance(source["supporting_facts"], list) else []
    for fact in facts:
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and type(fact[1]) is int and fact[1] >= 0):
            continue
        hits = [i for i, t in enumerate(titles) if t == fact[0]]
        if len(hits) == 1 and _entry_ok(context[hits[0]]) and fact[1] >= len(
                context[hits[0]][1]):
            out.append(("source_support_index_out_of_range", f"p{hits[0]:02d}", fact[1], {}))
    return out


def _text_checks(row: dict) -> list[Finding]:
    """Exact source copies, placeholders and invalid Unicode (SPEC §3)."""
    out: list[Finding] = []

    def copy(text: str, unit: str, pid: str | None = None, k: int | None = None) -> None:
        out.append(("exact_source_copy", pid, k, {"unit": unit,
                                                  "category": copy_category(text)}))

    if row["question_language"] != "en":
        if row["question"] == row["source_question"]:
            copy(row["question"], "question")
        if row["answer"] == row["source_answer"]:
            copy(row["answer"], "answer")
    for unit in ("question", "answer"):
        if _bad_unicode(row[unit]):
            out.append(("invalid_unicode", None, None, {"unit": unit}))
    for cand in row["candidates"]:
        pid, source_sentences = cand["paragraph_id"], cand["source_sentences"]
        foreign = cand["language_code"] != "en"
        if foreign and cand["title"] == cand["source_title"] and not _blank(cand["title"]):
            copy(cand["title"], "title", pid)
        if _bad_unicode(cand["title"]):
            out.append(("invalid_unicode", pid, None, {"unit": "title"}))
        for k, sentence in enumerate(cand["sentences"]):
            source = source_sentences[k] if k < len(source_sentences) else None
            if foreign and source is not None and not _blank(source) and sentence == source:
                copy(sentence, "sentence", pid, k)
            if (sentence.strip() in PLACEHOLDERS and source is not None
                    and not _blank(source) and len(source.strip()) > 1):
                out.append(("placeholder_sentence", pid, k, {}))
            if _bad_unicode(sentence):
                out.append(("invalid_unicode", pid, k, {"unit": "sentence"}))
    out += _hiding(row)
    return out


_HIDING = {*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200B, 0x2060}


def _hiding(row: dict) -> list[Finding]:
    """invisible_control: a text unit holding a bidi control, U+200B or U+2060 anywhere, or
    U+FEFF after its first character (never ZWNJ, ZWJ, LRM, RLM or ALM)."""
    def hides(text: str) -> bool:
        return any(ord(ch) in _HIDING or (ord(ch) == 0xFEFF and i > 0)
                   for i, ch in enumerate(text))
    out = [("invisible_control", None, None, {"unit": unit})
           for unit in ("question", "answer") if hides(row[unit])]
    for cand in row["candidates"]:
        if hides(cand["title"]):
            out.append(("invisible_control", cand["paragraph_id"], None, {"unit": "title"}))
        out += [("invisible_control", cand["paragraph_id"], k, {"unit": "sentence"})
                for k, sentence in enumerate(cand["sentences"]) if hides(sentence)]
    return out


# ------------------------------------------------ views that drift from their siblings

def _drift(rows: dict[str, list[dict]]) -> list[dict]:
    """view_context_drift: the rows of one (split, source id) whose candidates or facts
    differ from the context most of them share (the first in release order on a tie), one
    finding per differing unit, as audit/checks.py's rule names them."""
    out = []
    for split, split_rows in rows.items():
        groups: dict[str, list[dict]] = {}
        for row in split_rows:
            groups.setdefault(row["source_id"], []).append(row)
        for views in groups.values():
            contexts: dict[str, list[dict]] = {}
            for row in views:
                contexts.setdefault(json.dumps([row["candidates"], row["supporting_facts"]],
                                               sort_keys=True), []).append(row)
            if len(contexts) < 2:
                continue
            ranked = sorted(contexts.values(), key=lambda vs: -len(vs))   # stable: first
            reference = ranked[0][0]
            for other in ranked[1:]:
                for row in other:
                    out += [{"id": row["id"], "source_split": split,
                             "release_position": row["release_position"],
                             "check": "view_context_drift", "paragraph_id": pid,
                             "sentence_index": k} for pid, k in _drift_units(row, reference)]
    return out


def _drift_units(row: dict, sibling: dict) -> list[tuple[str | None, int | None]]:
    units: list[tuple[str | None, int | None]] = []
    mine, theirs = row["candidates"], sibling["candidates"]
    for i in range(max(len(mine), len(theirs))):
        a = mine[i] if i < len(mine) else None
        b = theirs[i] if i < len(theirs) else None
        if a is None or b is None:
            units.append(((a or b)["paragraph_id"], None))
        elif any(a[key] != b[key] for key in ("paragraph_id", "language_code", "title",
                                               "source_title", "source_sentences")) or (
                len(a["sentences"]) != len(b["sentences"])) or (
                a["sentences"] == b["sentences"] and a != b):
            units.append((a["paragraph_id"], None))
        else:
            units += [(a["paragraph_id"], k) for k, (x, y) in
                      enumerate(zip(a["sentences"], b["sentences"])) if x != y]
    if row["supporting_facts"] != sibling["supporting_facts"]:
        units.append((None, None))
    return units


# ------------------------------------------- what the question needs survives translation

_PAREN = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")


def _preservation(rows: dict[str, list[dict]]) -> list[dict]:
    """answer_not_in_evidence and bridge_entity_lost with the default thresholds: the units
    (supporting sentences holding the English answer or the other gold title), the
    renderings (the whole release's translated titles and answers) and the verdicts are
    derived here from the finished rows; the matcher is the check's own
    (`preservation.match_signals`: there is no second one to compare it with)."""
    from audit import preservation
    from audit.descriptors import normalize_answer
    thresholds = dict(preservation.THRESHOLDS)
    renderings: dict[tuple[str, str], set[str]] = {}
    for row in (r for split_rows in rows.values() for r in split_rows):
        pairs = [(_PAREN.sub("", c["source_title"]), c["language_code"],
                  _PAREN.sub("", c["title"])) for c in row["candidates"]]
        pairs.append((row["source_answer"], row["answer_language"], row["answer"]))
        for english, lang, form in pairs:
            if english is not None and form is not None and not _blank(form):
                renderings.setdefault((synth.normalize_title(english), lang), set()).add(form)

    def contains(text: str, part: str) -> bool:
        return f" {normalize_answer(part)} " in f" {normalize_answer(text)} "

    out = []
    for split, split_rows in rows.items():
        for row in split_rows:
            answer = row["source_answer"]
            eligible = (answer is not None and not _blank(answer)
                        and copy_category(answer) in ("name_like", "number_or_date"))
            cands = {c["paragraph_id"]: c for c in row["candidates"]}
            facts = list(dict.fromkeys(
                (f["paragraph_id"], f["sentence_index"]) for f in row["supporting_facts"]
                if f["paragraph_id"] in cands and f["sentence_index"] >= 0))
            gold = list(dict.fromkeys(p for p, _ in facts))
            for pid, k in facts:
                c = cands[pid]
                if c["language_code"] not in preservation.TARGETS or k >= min(
                        len(c["sentences"]), len(c["source_sentences"])):
                    continue
                src, tgt = c["source_sentences"][k], c["sentences"][k]
                if _blank(src) or _blank(tgt):
                    continue
                units = []
                if eligible and normalize_answer(answer) and contains(src, answer):
                    units.append(("answer", answer))
                if row["question_type"] == "bridge" and len(gold) >= 2:
                    for other in (g for g in gold if g != pid):
                        full = _PAREN.sub("", cands[other]["source_title"])
                        head = full.split(",")[0]
                        if normalize_answer(full) and contains(src, full):
                            units.append(("bridge", full))
                        elif head != full and len(normalize_answer(head)) >= 4 and contains(
                                src, head):
                            units.append(("bridge", head))
                for kind, target in units:
                    forms = sorted(renderings.get((synth.normalize_title(target),
                                                   c["language_code"]), ()))
                    if _preservation_verdict(preservation, thresholds, kind, c["language_code"],
                                             target, src, tgt, forms):
                        out.append({"id": row["id"], "source_split": split,
                                    "release_position": row["release_position"],
                                    "check": ("answer_not_in_evidence" if kind == "answer"
                                              else "bridge_entity_lost"),
                                    "paragraph_id": pid, "sentence_index": k})
    return out


def _preservation_verdict(preservation, t: dict, kind: str, lang: str, target: str,
                          src: str, tgt: str, forms: list[str]) -> str | None:
    """'lost', 'unverifiable' or None (found) for one unit."""
    s = preservation.match_signals(kind, lang, target, src, tgt, forms)
    script = t[preservation.SCRIPT_KEYS[preservation.script_of(lang)] + "_score"]
    found = (s["en_score"] >= t["rendering_score"] or (s["form_score"] or 0) >=
             t["rendering_score"] or (s.get("roman_score") or 0) >= script)
    if s["num_missing"]:
        return "lost"
    if any(ch.isalpha() for ch in target) and not found:
        return "lost" if forms else "unverifiable"
    return None


def _status(flags: set[str]) -> str:
    if flags - {"duplicate_normalized_translated_title"}:
        return "quarantined"
    return "review_required" if flags else "accepted"


def _row_hash(row: dict) -> str:
    body = {k: v for k, v in row.items() if k != "record_sha256"}
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compute_findings(rows: dict[str, list[dict]], sources: dict[str, list[dict]],
                     shapes: list[dict]) -> tuple[list[dict], dict[tuple[str, int], set[str]]]:
    """Every finding for the finished rows and source files, plus each row's re-derived flags.

    `shapes` supplies the translated-context shape the rows cannot show (planted knowledge).
    """
    shape_of = {(s["source_split"], s["release_position"]): s for s in shapes}
    findings: list[dict] = []
    derived: dict[tuple[str, int], set[str]] = {}
    for split, split_rows in rows.items():
        by_id = {s["_id"]: s for s in sources.get(split, [])}
        id_counts = Counter(r["id"] for r in split_rows)
        for row in split_rows:
            position = row["release_position"]
            source = by_id.get(row["id"]) or _pseudo_source(row)
            structural = _structural(row, source, shape_of.get((split, position)))
            flags = {f[0] for f in structural}
            assert flags <= STRUCTURAL_CHECKS
            derived[(split, position)] = flags
            found = structural + _source_anomalies(source) + _text_checks(row)
            if _row_hash(row) != row["record_sha256"]:
                found.append(("record_hash_mismatch", None, None, {}))
            if row["status"] != _status(flags):
                found.append(("status_mismatch", None, None, {}))
            if sorted(set(row["structural_flags"])) != sorted(flags) or (
                    row["structural_flags"] != sorted(row["structural_flags"])):
                found.append(("structural_flags_mismatch", None, None, {}))
            if id_counts[row["id"]] > 1:
                found.append(("duplicate_id", None, None, {}))
            if row["id"] not in by_id:
                found.append(("unexpected_source_id", None, None, {}))
            findings += [{"id": row["id"], "source_split": split, "release_position": position,
                          "check": check, "paragraph_id": pid, "sentence_index": k, **extra}
                         for check, pid, k, extra in found]
        for missing in sorted(set(by_id) - set(id_counts)):
            findings.append({"id": missing, "source_split": split, "release_position": None,
                             "check": "missing_source_id", "paragraph_id": None,
                             "sentence_index": None})
    findings += _drift(rows) + _preservation(rows)
    return sorted(findings, key=finding_key), derived


def finding_key(f: dict) -> tuple:
    none_last = lambda v, empty: empty if v is None else v  # noqa: E731
    return (f["source_split"], f["id"], none_last(f["release_position"], -1), f["check"],
            none_last(f["paragraph_id"], ""), none_last(f["sentence_index"], -1),
            f.get("unit") or "")


# ---------------------------------------------------------------- output

def _json_lines(items: list, *, sort_keys: bool = True) -> str:
    """A JSON list with one compact item per line: small and diff-friendly."""
    body = ",\n".join(json.dumps(x, ensure_ascii=False, sort_keys=sort_keys,
                                 separators=(",", ":")) for x in items)
    return "[\n" + body + "\n]" if items else "[]"


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def generate_demo(out_dir: Path, *, text_dir: Path = TEXT_DIR) -> dict:
    """Write the demo release, its sources and expected findings; return a summary."""
    out_dir = Path(out_dir)
    bank = load_text_bank(text_dir)
    rows: dict[str, list[dict]] = {}
    sources: dict[str, list[dict]] = {}
    planted, negatives, shapes = [], [], []
    for split in ("train", "validation"):
        rows[split], sources[split], p, n, s = _build_split(bank, split)
        planted += p
        negatives += n
        shapes += s
    findings, derived = compute_findings(rows, sources, shapes)
    _check_consistency(rows, planted, derived)
    language_findings = sorted(
        ({"id": p["id"], "source_split": p["split"], "release_position": p["release_position"],
          "check": p["kind"], "paragraph_id": p["paragraph_id"],
          "sentence_index": p["sentence_index"]}
         for p in planted if p["kind"] in LANGUAGE_CHECKS), key=finding_key)
    synth.write_release([r for split in rows for r in rows[split]], out_dir / "release")
    for split, records in sources.items():
        text = _json_lines(records, sort_keys=False) + "\n"  # HotpotQA key order kept
        _write_text(out_dir / f"hotpot_source_{split}.json", text)
    status_counts = {split: dict(sorted(Counter(r["status"] for r in split_rows).items()))
                     for split, split_rows in rows.items()}
    generator = {"seed": SEED, "rows": {s: len(r) for s, r in rows.items()},
                 "sources": {s: len(v) for s, v in sources.items()},
                 "findings": len(findings), "language_findings": len(language_findings),
                 "shapes": shapes,
                 "languages": list(CODES)}
    document = {"generator": generator, "status_counts_shipped": status_counts,
                "planted": sorted(planted, key=_plant_key),
                "negative_controls": sorted(negatives, key=_plant_key), "findings": findings,
                "language_findings": language_findings}
    _write_text(out_dir / "expected_findings.json", _render(document))
    return {"out_dir": str(out_dir), "rows": generator["rows"], "sources": generator["sources"],
            "findings": len(findings), "language_findings": len(language_findings),
            "planted": len(planted),
            "status_counts_shipped": status_counts}


def _plant_key(p: dict) -> tuple:
    return (p["split"], p["id"], p["kind"], p["paragraph_id"] or "", p["sentence_index"] or -1)


def _render(document: dict) -> str:
    parts = []
    for key, value in document.items():
        text = _json_lines(value) if isinstance(value, list) else json.dumps(
            value, ensure_ascii=False, sort_keys=True)
        parts.append(f"{json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _check_consistency(rows: dict[str, list[dict]], planted: list[dict],
                       derived: dict[tuple[str, int], set[str]]) -> None:
    """The port and the oracle must agree on every row the release plants did not edit."""
    edited = {(p["split"], p["release_position"]) for p in planted
              if p["kind"] in ("status_mismatch", "structural_flags_mismatch")}
    planted_ids = {(p["split"], p["id"]) for p in planted}
    for split, split_rows in rows.items():
        for row in split_rows:
            key = (split, row["release_position"])
            if key not in edited and set(row["structural_flags"]) != derived[key]:
                raise RuntimeError(f"oracle disagrees with the builder on {key}: "
                                   f"{row['structural_flags']} vs {sorted(derived[key])}")
            if (split, row["id"]) not in planted_ids and row["status"] != "accepted":
                raise RuntimeError(f"unplanted row {key} is {row['status']}: "
                                   f"{row['structural_flags']}")
