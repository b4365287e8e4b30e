"""Canonical JSONL (SPEC §1.3): each line validated and mapped to the canonical V1.1-shaped
row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import InputError
from ..languages import BY_CODE
from . import layouts

_JSONL_REQUIRED: dict[str, type] = {"id": str, "source_id": str, "source_split": str, "question": str,
                   "answer": str, "question_language": str, "answer_language": str,
                   "candidates": list, "supporting_facts": list, "question_type": str}


_CANDIDATE_REQUIRED: dict[str, type] = {"id": str, "title": str, "sentences": list, "language": str}


_FACT_REQUIRED: dict[str, type] = {"paragraph_id": str, "sentence_id": int}


_JSONL_SCHEMA = pa.schema([
    ("rid", pa.int64()), ("id", pa.string()), ("source_id", pa.string()),
    ("source_split", pa.string()), ("question", pa.string()), ("answer", pa.string()),
    ("question_language", pa.string()), ("question_language_name", pa.string()),
    ("answer_language", pa.string()), ("answer_language_name", pa.string()),
    ("source_question", pa.string()), ("source_answer", pa.string()),
    ("question_type", pa.string()), ("difficulty", pa.string()),
    ("candidates", pa.list_(layouts.V11_CANDIDATE)),
    ("supporting_facts", pa.list_(layouts.V11_FACT)),
])


def _type_problem(obj: dict[str, Any], required: dict[str, type], what: str) -> str | None:
    for key, kind in required.items():
        if key not in obj:
            return f"{what} has no '{key}'"
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{what} field '{key}' is {type(value).__name__} (expected {kind.__name__})"
    return None


def _jsonl_row(obj: dict[str, Any], rid: int) -> dict[str, Any]:
    """One validated JSONL object → the canonical V1.1-shaped row."""
    candidates = []
    for index, cand in enumerate(obj["candidates"]):
        code = cand["language"]
        candidates.append({
            "paragraph_id": cand["id"], "candidate_index": index,
            "source_title": cand.get("source_title") or "",
            "source_sentences": list(cand.get("source_sentences") or []),
            "title": cand["title"], "sentences": cand["sentences"],
            "language": BY_CODE[code].name if code in BY_CODE else "Unknown",
            "language_code": code if code in BY_CODE else "und",
        })
    ids = [c["paragraph_id"] for c in candidates]
    facts = [{"source_title": next((c["source_title"] for c in candidates
                                    if c["paragraph_id"] == f["paragraph_id"]), ""),
              "paragraph_id": f["paragraph_id"],
              "candidate_index": ids.index(f["paragraph_id"]) if f["paragraph_id"] in ids
              else None,
              "sentence_index": f["sentence_id"], "in_bounds": None}
             for f in obj["supporting_facts"]]
    q, a = obj["question_language"], obj["answer_language"]
    return {"rid": rid, "id": obj["id"], "source_id": obj["source_id"],
            "source_split": obj["source_split"], "question": obj["question"],
            "answer": obj["answer"], "question_language": q,
            "question_language_name": BY_CODE[q].name if q in BY_CODE else "Unknown",
            "answer_language": a,
            "answer_language_name": BY_CODE[a].name if a in BY_CODE else "Unknown",
            "source_question": obj.get("source_question"),
            "source_answer": obj.get("source_answer"),
            "question_type": obj["question_type"], "difficulty": obj.get("difficulty"),
            "candidates": candidates, "supporting_facts": facts}


def iter_jsonl_objects(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`line N`, object) for each non-blank line; bad UTF-8, bad JSON or a non-object line
    is an InputError naming the line."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            where = f"line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(path, f"invalid UTF-8 at byte {error.start}", where=where,
                                 expected="UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(path, f"invalid JSON ({error.msg}, column {error.colno})",
                                 where=where, expected="one JSON object per line") from None
            if not isinstance(obj, dict):
                raise InputError(path, f"a JSON {type(obj).__name__}", where=where,
                                 expected="a JSON object")
            yield where, obj


def _record_problem(obj: dict[str, Any]) -> str | None:
    """The first missing or mistyped field of a canonical JSONL record, if any."""
    problem = _type_problem(obj, _JSONL_REQUIRED, "record")
    for i, cand in enumerate(obj.get("candidates") or []):
        problem = problem or (f"candidate {i} is not an object" if not isinstance(cand, dict)
                              else _type_problem(cand, _CANDIDATE_REQUIRED, f"candidate {i}"))
    for i, fact in enumerate(obj.get("supporting_facts") or []):
        problem = problem or (f"supporting fact {i} is not an object"
                              if not isinstance(fact, dict) else
                              _type_problem(fact, _FACT_REQUIRED, f"supporting fact {i}"))
    return problem


def _read_jsonl(paths: list[Path]) -> pa.Table:
    rows: list[dict[str, Any]] = []
    for path in paths:
        if path.stat().st_size == 0:
            raise InputError(path, "the file is empty", expected="JSON lines")
        for where, obj in iter_jsonl_objects(path):
            problem = _record_problem(obj)
            if problem:
                raise InputError(path, problem, where=where)
            rows.append(_jsonl_row(obj, len(rows)))
    return pa.Table.from_pylist(rows, schema=_JSONL_SCHEMA)
