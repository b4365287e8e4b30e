"""The demo's instances before any plant: which source ids, which question, which
paragraphs in which candidate languages, materialised as a HotpotQA source record and its
legacy translated view."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from audit.languages import BY_CODE, BY_NAME, CODES, VIEW_ORDER

SEED = "xhotpotqa-demo-v1"
SPLIT_ROWS = {"validation": 96, "train": 144}
NO_DISTRACTOR_SLOTS = (5, 23, 61)  # a few instances carry only their gold paragraphs


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


def translate(bank: dict, inst: Instance, i: int) -> list:
    """Legacy translated entry [title, sentences, language NAME]; English copies the source."""
    code = inst.codes[i]
    if code == "en":
        title, sentences = inst.source["context"][i]
        return [title, list(sentences), "English"]
    paragraph = bank[code]["paragraphs"][inst.paragraphs[i]]
    return [paragraph["title"], list(paragraph["sentences"]), BY_CODE[code].name]


def materialize(bank: dict, inst: Instance) -> None:
    english = bank["en"]["questions"][inst.question_key]
    titles = {k: bank["en"]["paragraphs"][k]["title"] for k in bank["en"]["paragraphs"]}
    inst.source = {
        "_id": inst.source_id, "answer": english["answer"], "question": english["question"],
        "supporting_facts": [[titles[k], idx] for k, idx in english["supporting_facts"]],
        "context": [_source_paragraph(bank, k) for k in inst.paragraphs],
        "type": english["type"], "level": "hard",
    }
    inst.translated = [translate(bank, inst, i) for i in range(len(inst.paragraphs))]
    set_question_language(bank, inst, BY_NAME[inst.language].code)


def set_question_language(bank: dict, inst: Instance, code: str) -> None:
    text = bank[code]["questions"][inst.question_key]
    inst.question, inst.answer = text["question"], text["answer"]
    if code == "en":  # English units are exact copies of the source
        inst.question, inst.answer = inst.source["question"], inst.source["answer"]


def make_instances(bank: dict, split: str, rng: random.Random) -> list[Instance]:
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
        materialize(bank, inst)
        instances.append(inst)
    # Fixed places for the completeness plants (not at the ends, to be less trivial).
    instances[-2].role, instances[-1].role = "unexpected", "missing"
    instances.insert(n_rows // 3, instances.pop(-2))
    instances.insert(2 * n_rows // 3, instances.pop(-1))
    return instances
