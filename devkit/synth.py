"""Build XHotpotQA V1.1 records the way the public reference builder does (SPEC §1.1, §2).

Used to synthesise small releases (the demo, tests, benchmarks) whose flags, status and
hashes are computed exactly like the published ones, so an auditor can be checked against them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from audit.languages import BY_NAME, UNKNOWN_CODE
from audit.sql.macros import normalize_title

S, I16, I32, B = pa.string(), pa.int16(), pa.int32(), pa.bool_()


def _required(name: str, type_: pa.DataType) -> pa.Field:
    return pa.field(name, type_, nullable=False)


_STRINGS = pa.list_(S)

_CANDIDATE = pa.struct([
    _required("paragraph_id", S), _required("candidate_index", I16),
    _required("source_title", S), _required("source_sentences", _STRINGS),
    _required("title", S), _required("sentences", _STRINGS),
    _required("language", S), _required("language_code", S),
])
# paragraph_id/candidate_index are null when the fact's title join failed (SPEC §1.1).
_FACT = pa.struct([
    _required("source_title", S), pa.field("paragraph_id", S), pa.field("candidate_index", I16),
    _required("sentence_index", I32), _required("in_bounds", B),
])
_PROVENANCE = pa.struct([
    _required("source_dataset", S), _required("source_file", S),
    _required("source_record_sha256", S), _required("legacy_shard", S),
    _required("legacy_shard_row", I32), _required("legacy_raw_sha256", S),
    _required("translation_model", S), _required("prompt_version", S),
    _required("assignment_version", S), _required("release_selection", S),
    _required("build_version", S),
])

V11_SCHEMA = pa.schema([
    _required("id", S), _required("source_id", S), _required("source_split", S),
    _required("source_position", I32), _required("release_position", I32),
    _required("legacy_view_index", I16),
    _required("question", S), _required("answer", S),
    _required("question_language", S), _required("question_language_name", S),
    _required("answer_language", S), _required("answer_language_name", S),
    _required("source_question", S), _required("source_answer", S),
    _required("question_type", S), _required("difficulty", S),
    _required("candidates", pa.list_(_CANDIDATE)),
    _required("supporting_facts", pa.list_(_FACT)),
    _required("status", S), _required("structural_flags", _STRINGS),
    _required("provenance", _PROVENANCE), _required("record_sha256", S),
])

# The one non-blocking flag: it alone makes a record review_required (SPEC §2).
REVIEW_FLAG = "duplicate_normalized_translated_title"

SOURCE_FILES = {"train": "hotpot_train_v1.1.json", "validation": "hotpot_dev_distractor_v1.json"}
RELEASE_SELECTION = {"train": "hotpotqa-train-level-hard", "validation": "hotpotqa-validation-all"}


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def record_sha256(record: dict) -> str:
    return sha256_json({k: v for k, v in record.items() if k != "record_sha256"})


def is_blank(text: str) -> bool:
    # Python's notion of whitespace (NBSP, U+3000, tab...), not just ASCII space.
    return not text.strip()


def language_code(name: str) -> str:
    return BY_NAME[name].code if name in BY_NAME else UNKNOWN_CODE


def status_of(flags: Iterable[str]) -> str:
    flags = set(flags)
    if flags - {REVIEW_FLAG}:
        return "quarantined"
    return "review_required" if flags else "accepted"


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _valid_source_entry(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
            and _is_str_list(entry[1]))


def _valid_translated_entry(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
            and _is_str_list(entry[1]) and isinstance(entry[2], str))


def _source_title(entry: Any) -> str | None:
    """The reference joins fact titles against [str, anything] pairs only."""
    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
        return entry[0]
    return None


def _valid_fact(fact: Any) -> bool:
    return (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
            and isinstance(fact[1], int) and not isinstance(fact[1], bool) and fact[1] >= 0)


def _build_candidates(source_context: list, translated: list, flags: set[str]) -> list[dict]:
    candidates: list[dict] = []
    for i, entry in enumerate(translated):
        if not _valid_translated_entry(entry):
            flags.add("invalid_candidate")
            continue  # skipped: leaves a gap in candidate_index
        title, sentences, language = entry
        if language not in BY_NAME:
            flags.add("unknown_candidate_language")
        if any(is_blank(s) for s in sentences):
            flags.add("blank_sentence")
        source_title, source_sentences = "", []
        if i < len(source_context):
            source_entry = source_context[i]
            if _valid_source_entry(source_entry):
                source_title, source_sentences = source_entry[0], list(source_entry[1])
                if len(sentences) < len(source_sentences):
                    flags.add("paragraph_sentence_shortfall")
                elif len(sentences) > len(source_sentences):
                    flags.add("paragraph_sentence_surplus")
                if language == "English" and (title != source_title
                                              or sentences != source_sentences):
                    flags.add("english_identity_mismatch")
            else:
                flags.add("invalid_source_candidate")
        candidates.append({
            "paragraph_id": f"p{i:02d}", "candidate_index": i,
            "source_title": source_title, "source_sentences": source_sentences,
            "title": title, "sentences": list(sentences),
            "language": language, "language_code": language_code(language),
        })
    seen: set[str] = set()
    for candidate in candidates:
        key = normalize_title(candidate["title"])
        if key in seen:
            flags.add(REVIEW_FLAG)
        seen.add(key)
    return candidates


def _build_facts(source_facts: Any, source_context: list, candidates: list[dict],
                 flags: set[str]) -> list[dict]:
    if not isinstance(source_facts, list):
        return []  # the reference iterates over nothing and raises no flag
    titles = [_source_title(entry) for entry in source_context]
    kept = {c["candidate_index"]: c for c in candidates}
    facts: list[dict] = []
    for fact in source_facts:
        if not _valid_fact(fact):
            flags.add("malformed_supporting_fact")
            continue
        title, sentence_index = fact
        matches = [i for i, t in enumerate(titles) if t == title]  # exact, un-normalised
        index: int | None = None
        if not matches:
            flags.add("supporting_title_missing")
        elif len(matches) > 1:
            flags.add("supporting_title_ambiguous")
        else:
            index = matches[0]
        # Bounds are checked against the TRANSLATED paragraph, not the source one.
        in_bounds = index is not None and index in kept and (
            sentence_index < len(kept[index]["sentences"]))
        if not in_bounds:
            flags.add("support_index_out_of_range")
        facts.append({
            "source_title": title,
            "paragraph_id": None if index is None else f"p{index:02d}",
            "candidate_index": index, "sentence_index": sentence_index, "in_bounds": in_bounds,
        })
    return facts


def build_v11_record(source: dict, translated_context: Any, question: str, answer: str,
                     language_name: str, *, split: str, source_position: int,
                     release_position: int, view_index: int) -> dict:
    """One V1.1 row from a HotpotQA source record and its legacy translated view."""
    flags: set[str] = set()
    if is_blank(question):
        flags.add("blank_question")
    if is_blank(answer):
        flags.add("blank_answer")
    if language_name not in BY_NAME:
        flags.add("unknown_question_language")
    if language_name == "English" and (question != source["question"]
                                       or answer != source["answer"]):
        flags.add("english_identity_mismatch")
    source_context = source.get("context")
    if not isinstance(source_context, list):
        flags.add("invalid_source_context")
        source_context = []
    translated = translated_context
    if not isinstance(translated, list):
        flags.add("invalid_context")
        translated = []
    if len(translated) != len(source_context):
        flags.add("candidate_count_mismatch")
    candidates = _build_candidates(source_context, translated, flags)
    facts = _build_facts(source.get("supporting_facts"), source_context, candidates, flags)
    code = language_code(language_name)
    record = {
        "id": source["_id"], "source_id": source["_id"], "source_split": split,
        "source_position": source_position, "release_position": release_position,
        "legacy_view_index": view_index,
        "question": question, "answer": answer,
        "question_language": code, "question_language_name": language_name,
        "answer_language": code, "answer_language_name": language_name,
        "source_question": source["question"], "source_answer": source["answer"],
        "question_type": source["type"], "difficulty": source["level"],
        "candidates": candidates, "supporting_facts": facts,
        "status": status_of(flags), "structural_flags": sorted(flags),
        "provenance": _provenance(source, translated_context, question, answer, language_name,
                                  split=split, source_position=source_position),
    }
    record["record_sha256"] = record_sha256(record)
    return record


def _provenance(source: dict, translated_context: Any, question: str, answer: str,
                language_name: str, *, split: str, source_position: int) -> dict:
    legacy_raw = {"translate_context": translated_context, "translate_question": question,
                  "translate_answer": answer, "target_language": language_name}
    return {
        "source_dataset": "hotpot_qa",
        "source_file": SOURCE_FILES.get(split, f"hotpot_{split}.json"),
        "source_record_sha256": sha256_json(source),
        "legacy_shard": f"legacy/{split}/shard-{source_position // 1000:05d}.jsonl",
        "legacy_shard_row": source_position % 1000,
        "legacy_raw_sha256": sha256_json(legacy_raw),
        "translation_model": "xhotpotqa-legacy-mt",
        "prompt_version": "legacy-v1",
        "assignment_version": "xhotpotqa-public-v1",
        "release_selection": RELEASE_SELECTION.get(split, split),
        "build_version": "1.1.0",
    }


def write_release(records: Iterable[dict], out_dir: Path) -> list[Path]:
    """Write `{split}-00000.parquet` per split (zstd), atomically via a temp name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_split: dict[str, list[dict]] = {}
    for record in records:
        by_split.setdefault(record["source_split"], []).append(record)
    paths = []
    for split, rows in sorted(by_split.items()):
        path = out_dir / f"{split}-00000.parquet"
        tmp = out_dir / f".{path.name}.tmp-{os.getpid()}"
        table = pa.Table.from_pylist(rows, schema=V11_SCHEMA)
        pq.write_table(table, tmp, compression="zstd", row_group_size=2048)
        os.replace(tmp, path)
        paths.append(path)
    return paths
