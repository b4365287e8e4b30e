"""The demo's hand-written text bank: one `<code>.json` per language, every one holding the
English paragraphs (same keys, same sentence counts) and questions in its own language."""

from __future__ import annotations

import json
from pathlib import Path

from audit.languages import CODES
from devkit import REPO

TEXT_DIR = REPO / "data/demo/text"


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
