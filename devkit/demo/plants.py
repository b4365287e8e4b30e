"""The demo's planted defects: each plant corrupts an instance's translated view or source
before its row is built (so flags, status and hashes are the reference builder's) and
returns the marks an auditor must report; the release plants edit finished rows."""

from __future__ import annotations

import random
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit.languages import BY_CODE, CODES
from devkit import synth
from devkit.demo.instances import Instance, materialize, set_question_language, translate

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
            inst.translated[i] = translate(self.bank, inst, i)
        return inst.translated[i]

    def set_code(self, inst: Instance, i: int, code: str) -> list:
        inst.codes[i] = code
        inst.translated[i] = translate(self.bank, inst, i)
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
    set_question_language(ctx.bank, inst, "de")
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
    inst.translated.append(translate(ctx.bank, inst, len(inst.paragraphs) - 1))
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


def apply_language_plants(bank: dict, instances: list[Instance]
                          ) -> list[tuple[Instance, Mark]]:
    """Like `apply_plants`, but searching backwards from the end of the split, so the
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


def apply_plants(bank: dict, split: str, instances: list[Instance]
                 ) -> list[tuple[Instance, Mark]]:
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


def completeness_plants(bank: dict, split: str, instances: list[Instance],
                        rng: random.Random, emit: Callable[[Instance], dict],
                        row_of: dict[str, dict]) -> list[dict]:
    original = next(x for x in instances if x.role == "normal" and not x.planted)
    original.planted = True
    # The duplicate is another build of the same source with fresh candidate languages.
    twin = Instance(split, original.slot, original.source_id, original.view_index,
                    original.question_key, original.language, list(original.paragraphs),
                    [rng.choice(CODES) for _ in original.paragraphs], role="duplicate")
    materialize(bank, twin)
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


def release_plants(split: str, rows: list[dict], planted: list[dict]) -> list[dict]:
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
