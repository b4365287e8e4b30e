"""A V1.1-layout release built from real data, with defects planted at seeded places.

Skeletons are real HotpotQA dev records (validation = the official dev head, train = the
HippoRAG subset minus the dev head); every non-English unit is filled with real human text
from NTREX-128, whose files are line-aligned across languages. English units copy HotpotQA
exactly, as the reference builder requires. Flags, status and hashes come from
`devkit.synth.build_v11_record`, so the release ships exactly what the reference would.

The third-party data is read from ../shared/realdata at run time; only the scratch
`out_dir` receives copies (the planted source JSON and the release).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Callable

from conftest import REALDATA

from audit.languages import BY_NAME, VIEW_ORDER
from devkit import synth

DEV_HEAD = REALDATA / "hotpotqa_dev_head" / "hotpot_dev_distractor_v1_first103.json"
HIPPORAG = REALDATA / "hotpotqa_hipporag100" / "hotpotqa_100.json"
NTREX = REALDATA / "ntrex128"
SPLITS = ("validation", "train")
VIEW_SEED, PLANT_SEED = 20261101, 20261102

# Our codes -> NTREX reference files (ntrex128/SOURCE.md). English is never drawn from
# NTREX: English-assigned units copy the HotpotQA source.
NTREX_CODE = {
    "zh": "zho-CN", "es": "spa", "hi": "hin", "ar": "arb", "fr": "fra", "ru": "rus",
    "pt": "por", "bn": "ben", "ur": "urd", "id": "ind", "ja": "jpn", "de": "deu",
    "sw": "swa", "tr": "tur", "vi": "vie", "ko": "kor", "it": "ita", "fa": "fas",
    "th": "tha", "nl": "nld", "pl": "pol", "el": "ell", "sv": "swe",
}
# Scripts written without spaces between words: cut by characters, not words.
UNSPACED = {"zh", "ja", "th"}

BLANKS = ("", "\u00a0", "\u3000")
KIND_COUNTS = {
    "blank_sentence": len(BLANKS),
    "paragraph_sentence_shortfall": 3,
    "paragraph_sentence_surplus": 3,
    "blank_question": 3,
    "blank_answer": 3,
    "duplicate_normalized_translated_title": 4,
    "english_identity_mismatch": 3,
    "unknown_candidate_language": 3,
    "exact_source_copy": 3,
    "placeholder_sentence": 3,
    "invalid_unicode": 3,
    "supporting_title_missing": 3,
}


# ------------------------------------------------------------------------- inputs

def load_sources() -> dict[str, list[dict]]:
    """{split: HotpotQA records}; train drops the ids the dev head already holds."""
    dev = json.loads(DEV_HEAD.read_text(encoding="utf-8"))
    dev_ids = {record["_id"] for record in dev}
    train = [r for r in json.loads(HIPPORAG.read_text(encoding="utf-8"))
             if r["_id"] not in dev_ids]
    for record in train:
        record.setdefault("level", "hard")  # the release keeps hard train rows only
    return {"validation": dev, "train": train}


def load_ntrex(english: bool = False) -> dict[str, list[str]]:
    """{our code: lines}, with the English source lines too when asked; the files end lines
    with CRLF, which is all we strip."""
    files = {code: f"ref.{file_code}" for code, file_code in NTREX_CODE.items()}
    if english:
        files["en"] = "src.eng"
    lines = {}
    for code, name in files.items():
        text = (NTREX / f"newstest2019-{name}.txt").read_bytes().decode("utf-8")
        lines[code] = text.split("\r\n")[:-1]
    assert len({len(v) for v in lines.values()}) == 1, "NTREX files must be line-aligned"
    return lines


def train_view_index(source_id: str) -> int:
    """The public V1.1 train view rule (SPEC §1.1)."""
    digest = hashlib.sha256(("xhotpotqa-public-v1|" + source_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") % len(VIEW_ORDER)


def has_source_anomaly(source: dict) -> bool:
    """A blank source sentence or an out-of-range support: inherited, never planted on."""
    paragraphs = dict((title, sentences) for title, sentences in source["context"])
    return (any(not s.strip() for _, sentences in source["context"] for s in sentences)
            or any(title in paragraphs and index >= len(paragraphs[title])
                   for title, index in source["supporting_facts"]))


# ------------------------------------------------------------------ the translated view

def _prefix(line: str, code: str, words: int, chars: int) -> str:
    """The first few words (or characters, for unspaced scripts) of a line."""
    if code in UNSPACED:
        return line[:chars].strip()
    return " ".join(line.split()[:words])


def _draw(rng: random.Random, ntrex: dict, code: str, make: Callable[[str], str],
          reject: Callable[[str], bool]) -> str:
    """A text made from a random NTREX line, redrawn until it is acceptable."""
    lines = ntrex[code]
    while True:
        text = make(lines[rng.randrange(len(lines))])
        if text.strip() and not reject(text):
            return text


def _paragraph(entry: list, language: str, ntrex: dict, rng: random.Random,
               used: set[str]) -> list:
    """[title, sentences, language]: consecutive aligned NTREX lines, one per sentence."""
    source_title, source_sentences = entry
    if language == "English":
        return [source_title, list(source_sentences), language]
    code = BY_NAME[language].code
    lines = ntrex[code]
    start = rng.randrange(len(lines) - len(source_sentences) + 1)
    sentences = lines[start:start + len(source_sentences)]
    # Titles must not collide after normalisation nor copy the source: only plants may.
    title = _draw(rng, ntrex, code, lambda line: _prefix(line, code, 4, 12),
                  lambda t: synth.normalize_title(t) in used or t == source_title)
    return [title, sentences, language]


def _question_language(split: str, source: dict, rng: random.Random) -> tuple[str, int]:
    if split == "train":
        index = train_view_index(source["_id"])
        return VIEW_ORDER[index], index
    return rng.choice(VIEW_ORDER), 0


def make_view(split: str, source: dict, ntrex: dict, rng: random.Random) -> dict:
    """The legacy translated record: question language, question, answer, context."""
    language, view_index = _question_language(split, source, rng)
    used = {synth.normalize_title(title) for title, _ in source["context"]}
    context = []
    for entry in source["context"]:
        paragraph = _paragraph(entry, rng.choice(VIEW_ORDER), ntrex, rng, used)
        used.add(synth.normalize_title(paragraph[0]))
        context.append(paragraph)
    question, answer = source["question"], source["answer"]
    if language != "English":
        code = BY_NAME[language].code
        # Never byte-equal to the English source: only the planted copies may be.
        question = _draw(rng, ntrex, code, lambda line: line,
                         lambda t: t == source["question"])
        answer = _draw(rng, ntrex, code, lambda line: _prefix(line, code, 2, 6),
                       lambda t: t == source["answer"])
    return {"split": split, "source": source, "language": language,
            "view_index": view_index, "question": question, "answer": answer,
            "context": context}


# ------------------------------------------------------------------------ planting
# Each planter edits one row in place and returns (paragraph_id, sentence_index) of the
# place it touched, or None (row untouched) when the row offers no suitable place.

Location = tuple[str | None, int | None]


def _pid(index: int) -> str:
    return f"p{index:02d}"


def _translated(row: dict) -> list[int]:
    """Candidates not assigned English: editing an English one would add an identity flag."""
    return [i for i, entry in enumerate(row["context"]) if entry[2] != "English"]


def _pick_sentence(row: dict, rng: random.Random, fits: Callable[[str], bool]
                   ) -> tuple[int, int] | None:
    """A (candidate, sentence) of a translated candidate whose source sentence `fits`."""
    places = [(i, k) for i in _translated(row)
              for k, s in enumerate(row["source"]["context"][i][1]) if fits(s)]
    return rng.choice(places) if places else None


def plant_blank_sentence(row, rng, nth, ntrex) -> Location | None:
    place = _pick_sentence(row, rng, lambda s: True)
    if place is None:
        return None
    i, k = place
    row["context"][i][1][k] = BLANKS[nth % len(BLANKS)]
    return _pid(i), k


def plant_shortfall(row, rng, nth, ntrex) -> Location | None:
    """Drop the last sentence of a gold paragraph whose support points at exactly that
    sentence, so support_index_out_of_range fires too (once)."""
    titles = [title for title, _ in row["source"]["context"]]
    places = []
    for title, index in row["source"]["supporting_facts"]:
        i = titles.index(title) if titles.count(title) == 1 else None
        if i is None or row["context"][i][2] == "English":
            continue
        length = len(row["source"]["context"][i][1])
        at_end = [f for f in row["source"]["supporting_facts"]
                  if f[0] == title and f[1] >= length - 1]
        if length >= 2 and index == length - 1 and len(at_end) == 1:
            places.append((i, index))
    if not places:
        return None
    i, k = rng.choice(places)
    del row["context"][i][1][k]
    return _pid(i), k


def plant_surplus(row, rng, nth, ntrex) -> Location | None:
    choices = _translated(row)
    if not choices:
        return None
    i = rng.choice(choices)
    sentences = row["context"][i][1]
    code = BY_NAME[row["context"][i][2]].code
    sentences.append(ntrex[code][rng.randrange(len(ntrex[code]))])
    return _pid(i), len(sentences) - 1


def _plant_blank_unit(field: str) -> Callable:
    def plant(row, rng, nth, ntrex) -> Location | None:
        if row["language"] == "English":  # a blank English unit is also an identity flag
            return None
        row[field] = ""
        return None, None
    return plant


def _fullwidth(text: str) -> str:
    """ASCII printables to their fullwidth forms (NFKC maps them back)."""
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text)


def plant_duplicate_title(row, rng, nth, ntrex) -> Location | None:
    """Two translated titles equal after NFKC + casefold: fullwidth vs ASCII, or ß vs SS.
    The finding sits on the later of the two candidates."""
    choices = _translated(row)
    if nth % 2 == 0:
        # The earlier title must hold ASCII letters, or fullwidth would change nothing.
        firsts = [i for i in choices if any(ch.isascii() and ch.isalpha()
                                            for ch in row["context"][i][0])]
        pairs = [(a, b) for a in firsts for b in choices if b > a]
    else:
        pairs = [(a, b) for a in choices for b in choices if b > a]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    if nth % 2 == 0:
        row["context"][b][0] = _fullwidth(row["context"][a][0])
    else:
        row["context"][a][0], row["context"][b][0] = "Straße", "STRASSE"
    return _pid(b), None


def plant_english_edit(row, rng, nth, ntrex) -> Location | None:
    """An English candidate whose sentence lost its leading space (a 'harmless' cleanup
    that breaks the exact identity the reference demands)."""
    places = [(i, k) for i, entry in enumerate(row["context"]) if entry[2] == "English"
              for k, s in enumerate(entry[1]) if s[:1].isspace() and s.strip()]
    if not places:
        return None
    i, k = rng.choice(places)
    row["context"][i][1][k] = row["context"][i][1][k].lstrip()
    return _pid(i), k


def plant_unknown_language(row, rng, nth, ntrex) -> Location | None:
    choices = _translated(row)
    if not choices:
        return None
    i = rng.choice(choices)
    row["context"][i][2] = "Latin"
    return _pid(i), None


def plant_source_copy(row, rng, nth, ntrex) -> Location | None:
    """An ordinary English sentence left untranslated: long enough to be category
    'sentence', never a name or a number."""
    place = _pick_sentence(row, rng, lambda s: len(s) > 60 and any(c.isalpha() for c in s))
    if place is None:
        return None
    i, k = place
    row["context"][i][1][k] = row["source"]["context"][i][1][k]
    return _pid(i), k


def plant_placeholder(row, rng, nth, ntrex) -> Location | None:
    place = _pick_sentence(row, rng, lambda s: len(s.strip()) > 1)
    if place is None:
        return None
    i, k = place
    row["context"][i][1][k] = "—"
    return _pid(i), k


def plant_replacement_char(row, rng, nth, ntrex) -> Location | None:
    place = _pick_sentence(row, rng, lambda s: True)
    if place is None:
        return None
    i, k = place
    text = row["context"][i][1][k]
    row["context"][i][1][k] = text[:len(text) // 2] + "\ufffd" + text[len(text) // 2:]
    return _pid(i), k


def plant_title_missing(row, rng, nth, ntrex) -> Location | None:
    """A source support title with a trailing space: it joins no paragraph title (the
    reference compares exactly), so support_index_out_of_range fires too."""
    facts = row["source"]["supporting_facts"]
    fact = facts[rng.randrange(len(facts))]
    fact[0] += " "
    return None, fact[1]


PLANTERS: dict[str, Callable] = {
    "blank_sentence": plant_blank_sentence,
    "paragraph_sentence_shortfall": plant_shortfall,
    "paragraph_sentence_surplus": plant_surplus,
    "blank_question": _plant_blank_unit("question"),
    "blank_answer": _plant_blank_unit("answer"),
    "duplicate_normalized_translated_title": plant_duplicate_title,
    "english_identity_mismatch": plant_english_edit,
    "unknown_candidate_language": plant_unknown_language,
    "exact_source_copy": plant_source_copy,
    "placeholder_sentence": plant_placeholder,
    "invalid_unicode": plant_replacement_char,
    "supporting_title_missing": plant_title_missing,
}


def plant_all(rows: list[dict], ntrex: dict, rng: random.Random) -> list[dict]:
    """Plant every kind KIND_COUNTS times, alternating splits, one kind per row at most;
    rows with an inherited source anomaly are left alone so findings stay attributable."""
    free = [row for row in rows if not has_source_anomaly(row["source"])]
    planted = []
    for turn, (kind, count) in enumerate(KIND_COUNTS.items()):
        for nth in range(count):
            split = SPLITS[(turn + nth) % len(SPLITS)]  # both splits get every kind
            pool = [row for row in free if row["split"] == split]
            rng.shuffle(pool)
            for row in pool:
                location = PLANTERS[kind](row, rng, nth, ntrex)
                if location is not None:
                    free.remove(row)
                    planted.append({"id": row["source"]["_id"], "split": split, "kind": kind,
                                    "paragraph_id": location[0],
                                    "sentence_index": location[1]})
                    break
            else:
                raise RuntimeError(f"no row of {split} can take {kind}")
    return planted


# --------------------------------------------------------------------------- build

def _records(rows: list[dict]) -> list[dict]:
    positions: dict[str, int] = {}
    records = []
    for row in rows:
        split = row["split"]
        position = positions.get(split, 0)
        positions[split] = position + 1
        records.append(synth.build_v11_record(
            row["source"], row["context"], row["question"], row["answer"], row["language"],
            split=split, source_position=position, release_position=position,
            view_index=row["view_index"]))
    return records


def build(out_dir: Path) -> dict:
    """Write out_dir/source_{split}.json, out_dir/release and out_dir/planted.json.

    Returns {"release": path, "sources": {split: path}, "planted": [...],
    "rows": {split: n}}; each planted entry is {id, split, kind, paragraph_id,
    sentence_index}: the paragraph and sentence the plant touched (None when it touched
    none, e.g. a question, a title or a language name; for supporting_title_missing the
    sentence index of the broken fact)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = load_sources()  # fresh objects: the plants edit them in place
    ntrex = load_ntrex()
    view_rng = random.Random(VIEW_SEED)
    rows = [make_view(split, source, ntrex, view_rng)
            for split in SPLITS for source in sources[split]]
    planted = plant_all(rows, ntrex, random.Random(PLANT_SEED))
    source_paths = {}
    for split in SPLITS:  # after planting: the sources carry the broken support titles
        source_paths[split] = out_dir / f"source_{split}.json"
        source_paths[split].write_text(json.dumps(sources[split]), encoding="utf-8")
    release = out_dir / "release"
    synth.write_release(_records(rows), release)
    (out_dir / "planted.json").write_text(json.dumps(planted, indent=1), encoding="utf-8")
    return {"release": release, "sources": source_paths, "planted": planted,
            "rows": {split: len(sources[split]) for split in SPLITS}}
