"""Canonical JSONL (SPEC §1.3): corrected lines rewritten by the toolkit's own rule, every
other line copied byte for byte.

A corrected record keeps every key it had; its text is replaced, its provenance's
`translation_revision` points at the correction record, and its `checksum` is recomputed
by the reference toolkit's rule (`xhotpotqa.data.checksum.compute_checksum`): the SHA-256
of the canonical JSON of the typed record — every schema field with its default, checksum
empty, provenance without its execution history (created_at, retry_count,
validation_status), and without `assignment_manifest_sha256` when that is empty. The line
is written as canonical JSON (sorted keys, compact), as the toolkit writes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from ..io.model import Release
from . import units
from .edits import Edit, patch_candidates

# The toolkit's Provenance dataclass, field by field, with its defaults.
PROVENANCE_DEFAULTS = {
    "schema_version": "xhotpotqa-record-v2", "source_dataset": "hotpotqa/hotpot_qa",
    "source_license": "CC-BY-SA-4.0", "assignment_version": "",
    "assignment_manifest_sha256": "", "seed": None, "translation_model": "",
    "translation_revision": "", "prompt_version": "", "prompt_hash": "", "retry_count": 0,
    "created_at": "", "validation_status": "", "decoding": {},
}
PROVENANCE_FIELD = "translation_revision"


def canonical_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def checksum(obj: dict) -> str:
    """The toolkit's semantic checksum of one canonical JSONL record."""
    provenance = {**PROVENANCE_DEFAULTS, **(obj.get("provenance") or {})}
    provenance.update(created_at="", retry_count=0, validation_status="")
    if not provenance["assignment_manifest_sha256"]:
        del provenance["assignment_manifest_sha256"]
    payload = {
        "id": obj["id"], "source_id": obj["source_id"], "source_split": obj["source_split"],
        "question": obj["question"], "answer": obj["answer"],
        "question_language": obj["question_language"],
        "answer_language": obj["answer_language"],
        "candidates": [{"id": c["id"], "title": c["title"], "sentences": list(c["sentences"]),
                        "language": c["language"], "source_title": c.get("source_title"),
                        "source_sentences": (list(c["source_sentences"])
                                             if c.get("source_sentences") is not None else None)}
                       for c in obj["candidates"]],
        "supporting_facts": [{"paragraph_id": f["paragraph_id"], "sentence_id": f["sentence_id"],
                              "role": f.get("role", "support")}
                             for f in obj["supporting_facts"]],
        "question_type": obj.get("question_type", "unknown"),
        "difficulty": obj.get("difficulty", "unknown"),
        "provenance": provenance, "checksum": "",
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def patched(obj: dict, edits: list[Edit]) -> dict:
    """The record with every edit that reaches it applied."""
    obj = dict(obj)
    for edit in edits:
        if edit.unit in units.ROW_UNITS:
            obj[edit.unit] = edit.text
    context = [e for e in edits if e.unit in units.CONTEXT_UNITS]
    if context:
        obj["candidates"] = patch_candidates(obj["candidates"], context, id_key="id")
    return obj


def finished(obj: dict, record_digest: str) -> dict:
    """A corrected record's provenance and checksum."""
    provenance = dict(obj.get("provenance") or {})
    provenance[PROVENANCE_FIELD] = (f"{provenance.get(PROVENANCE_FIELD) or ''}"
                                    f"+repair.{record_digest}")
    obj = {**obj, "provenance": provenance}
    obj["checksum"] = checksum(obj)
    return obj


def lines(release: Release) -> Iterator[tuple[Path, bytes, int | None, dict | None]]:
    """(file, raw line, rid, object) of every line of the release in order; a blank line
    has no rid (the reader skips it)."""
    rid = 0
    for path in release.paths:
        with path.open("rb") as stream:
            for raw in stream:
                if not raw.decode("utf-8").strip():
                    yield path, raw, None, None
                    continue
                yield path, raw, rid, json.loads(raw)
                rid += 1


def edits_by_row(release: Release, edits: list[Edit], rids: list[int]) -> dict[int, list[Edit]]:
    """{rid: the edits reaching it} for the given rows (their contexts' and their own)."""
    con = release.con.cursor()
    ctx_of = dict(con.sql(f"SELECT rid, ctx FROM views WHERE rid IN {units.among(con, rids)}"
                          ).fetchall())
    con.close()
    by_ctx: dict[int, list[Edit]] = {}
    by_rid: dict[int, list[Edit]] = {}
    for edit in edits:
        if edit.unit in units.ROW_UNITS:
            by_rid.setdefault(edit.first.rid, []).append(edit)
        else:
            by_ctx.setdefault(edit.first.ctx, []).append(edit)
    return {rid: by_ctx.get(ctx_of[rid], []) + by_rid.get(rid, []) for rid in rids}


def write_probe(release: Release, path: Path, selection: pa.Table, edits: list[Edit]) -> None:
    """The selected rows (probe_rid order), patched where asked, as JSONL."""
    chosen = selection.to_pylist()
    wanted = {row["rid"] for row in chosen}
    reaching = edits_by_row(release, edits, sorted(wanted))
    objects = {rid: obj for _, _, rid, obj in lines(release) if rid in wanted}
    with path.open("w", encoding="utf-8") as out:
        for row in sorted(chosen, key=lambda r: r["probe_rid"]):
            obj = objects[row["rid"]]
            out.write(canonical_json(patched(obj, reaching[row["rid"]]) if row["patched"]
                                     else obj) + "\n")


def write_release(release: Release, staging: Path, names: list[str], edits: list[Edit],
                  rids: list[int], record_digest: str) -> None:
    """The corrected release: each file under its own name, corrected lines rewritten and
    every other line copied as it was."""
    reaching = edits_by_row(release, edits, rids)
    outputs = {path: staging / name for path, name in zip(release.paths, names)}
    handles = {}
    try:
        for path, raw, rid, obj in lines(release):
            if path not in handles:
                outputs[path].parent.mkdir(parents=True, exist_ok=True)
                handles[path] = outputs[path].open("wb")
            if rid in reaching:
                ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
                raw = canonical_json(finished(patched(obj, reaching[rid]), record_digest)
                                     ).encode("utf-8") + ending
            handles[path].write(raw)
    finally:
        for handle in handles.values():
            handle.close()
