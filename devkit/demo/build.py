"""A small deterministic DEMO release (V1.1 layout) with planted defects and its oracle.

`generate_demo(out_dir)` (`python -m devkit demo`) writes
  release/{train,validation}-00000.parquet   built by devkit.synth like the reference builder
  hotpot_source_{train,validation}.json      the English HotpotQA-format sources
  expected_findings.json                     every finding an auditor must report

The rooms: `bank` (the hand-written text in 24 languages), `instances` (which source, which
question, which paragraphs in which languages), `plants` (the defects), `oracle` (the
findings) and this module, which builds the rows and writes the files.

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

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from audit.languages import CODES
from devkit import synth
from devkit.demo import plants
from devkit.demo.bank import TEXT_DIR, load_text_bank
from devkit.demo.instances import SEED, Instance, make_instances
from devkit.demo.oracle import compute_findings, finding_key

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
    instances = make_instances(bank, split, rng)
    marks = plants.apply_plants(bank, split, instances)
    marks += plants.apply_language_plants(bank, instances)
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
    planted += plants.completeness_plants(bank, split, instances, rng, emit, row_of)
    planted += plants.release_plants(split, rows, planted)
    negatives = [p for p in planted if p["kind"].startswith("negative:")]
    planted = [p for p in planted if not p["kind"].startswith("negative:")]
    for p in negatives:
        p["kind"] = p["kind"].removeprefix("negative:")
    return rows, sources, planted, negatives, shapes



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
         for p in planted if p["kind"] in plants.LANGUAGE_CHECKS), key=finding_key)
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
