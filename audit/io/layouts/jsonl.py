"""Canonical JSONL (SPEC §1.3, the toolkit's schema): each line validated and mapped to the
canonical V1.1-shaped row; a corrected release rewrites its corrected lines by the
toolkit's own rule and copies every other line byte for byte.

A corrected record keeps every key it had; its text is replaced, its provenance's
`translation_revision` points at the correction record, and its `checksum` is recomputed by
the reference toolkit's rule (`xhotpotqa.data.checksum.compute_checksum`): the SHA-256 of
the canonical JSON of the typed record — every schema field with its default, checksum
empty, provenance without its execution history (created_at, retry_count,
validation_status), and without `assignment_manifest_sha256` when that is empty. The line
is written as canonical JSON (sorted keys, compact), as the toolkit writes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from ...errors import InputError
from ...languages import BY_CODE
from ...paths import JSONL_SUFFIXES
from ..tables import iter_jsonl_objects
from .base import Corrected, Opened, Progress
from .multihop import CANDIDATE, FACT, MultiHopLayout, patch_candidates

if TYPE_CHECKING:
    from ..units import Patch

_REQUIRED: dict[str, type] = {
    "id": str, "source_id": str, "source_split": str, "question": str, "answer": str,
    "question_language": str, "answer_language": str, "candidates": list,
    "supporting_facts": list, "question_type": str}
_CANDIDATE_REQUIRED: dict[str, type] = {"id": str, "title": str, "sentences": list,
                                        "language": str}
_FACT_REQUIRED: dict[str, type] = {"paragraph_id": str, "sentence_id": int}

_SCHEMA = pa.schema([
    ("rid", pa.int64()), ("id", pa.string()), ("source_id", pa.string()),
    ("source_split", pa.string()), ("question", pa.string()), ("answer", pa.string()),
    ("question_language", pa.string()), ("question_language_name", pa.string()),
    ("answer_language", pa.string()), ("answer_language_name", pa.string()),
    ("source_question", pa.string()), ("source_answer", pa.string()),
    ("question_type", pa.string()), ("difficulty", pa.string()),
    ("candidates", pa.list_(CANDIDATE)), ("supporting_facts", pa.list_(FACT)),
])

_VIEWS = """
SELECT rid, ctx, 'jsonl' AS layout, id, source_id, source_split,
       NULL::INTEGER AS source_position, NULL::INTEGER AS release_position, question, answer,
       question_language, question_language_name, answer_language, answer_language_name,
       source_question, source_answer, question_type, difficulty, NULL::VARCHAR AS status,
       []::VARCHAR[] AS structural_flags, []::VARCHAR[] AS quality_flags,
       NULL::VARCHAR AS shipped_hash
FROM raw_views
"""

PROVENANCE_FIELD = "translation_revision"    # where a corrected record's pointer goes
# The toolkit's Provenance dataclass, field by field, with its defaults.
PROVENANCE_DEFAULTS: dict[str, Any] = {
    "schema_version": "xhotpotqa-record-v2", "source_dataset": "hotpotqa/hotpot_qa",
    "source_license": "CC-BY-SA-4.0", "assignment_version": "",
    "assignment_manifest_sha256": "", "seed": None, "translation_model": "",
    "translation_revision": "", "prompt_version": "", "prompt_hash": "", "retry_count": 0,
    "created_at": "", "validation_status": "", "decoding": {},
}


class Jsonl(MultiHopLayout):
    name = "jsonl"
    description = "canonical JSONL (toolkit schema)"
    # Its reference flags are V1.1's; it ships no status, flags or reproducible checksum.
    capabilities = frozenset({"questions", "contexts", "supporting_facts", "flags:v1.1"})
    provenance = ("provenance", PROVENANCE_FIELD)
    views_sql = _VIEWS
    remembers = False      # parsed in Python each time: its contexts are grouped anew

    @property
    def checksum_field(self) -> str:
        return "checksum"      # the toolkit's rule (`checksum`), not a canonical JSON hash

    def claims(self, path: Path, schema: pa.Schema | None) -> bool:
        return path.suffix in JSONL_SUFFIXES

    def read(self, con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
        con.register("jsonl_arrow", _read(paths))
        # Tables, not registered Arrow views, so every cursor of the connection sees them.
        con.execute("CREATE TABLE jsonl_rows AS SELECT * FROM jsonl_arrow")
        con.unregister("jsonl_arrow")
        con.execute("CREATE VIEW raw_release AS SELECT * FROM jsonl_rows")

    # --------------------------------------------------------------- corrected releases

    def write_rows(self, release: Opened, folder: Path, selection: pa.Table,
                   patches: list[Patch], contexts: pa.Table | None = None) -> Path:
        """The selected rows (probe_rid order), patched where asked, as JSONL."""
        folder.mkdir()
        chosen = selection.to_pylist()
        wanted = {row["rid"] for row in chosen}
        reaching = _patches_by_row(release, patches, sorted(wanted))
        objects = {rid: obj for _, _, rid, obj in _lines(release)
                   if rid in wanted and obj is not None}
        with (folder / "probe.jsonl").open("w", encoding="utf-8") as out:
            for row in sorted(chosen, key=lambda r: r["probe_rid"]):
                obj = objects[row["rid"]]
                out.write(canonical_json(_patched(obj, reaching[row["rid"]]) if row["patched"]
                                         else obj) + "\n")
        return folder

    def write(self, release: Opened, staging: Path, names: list[str], corrected: Corrected,
              progress: Progress | None = None) -> None:
        """Each file under its own name, corrected lines rewritten and every other line
        copied as it was."""
        if progress is not None:
            progress(f"writing {len(names)} file(s)")
        reaching = _patches_by_row(release, corrected.patches, corrected.rids)
        outputs = {path: staging / name for path, name in zip(release.paths, names)}
        handles = {}
        try:
            for path, raw, rid, obj in _lines(release):
                if path not in handles:
                    outputs[path].parent.mkdir(parents=True, exist_ok=True)
                    handles[path] = outputs[path].open("wb")
                if rid in reaching and obj is not None:
                    ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
                    raw = canonical_json(_finished(_patched(obj, reaching[rid]),
                                                   corrected.record_digest)
                                         ).encode("utf-8") + ending
                handles[path].write(raw)
        finally:
            for handle in handles.values():
                handle.close()


# ------------------------------------------------------------------------------- reading

def _type_problem(obj: dict[str, Any], required: dict[str, type], what: str) -> str | None:
    for key, kind in required.items():
        if key not in obj:
            return f"{what} has no '{key}'"
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{what} field '{key}' is {type(value).__name__} (expected {kind.__name__})"
    return None


def _record_problem(obj: dict[str, Any]) -> str | None:
    """The first missing or mistyped field of a canonical JSONL record, if any."""
    problem = _type_problem(obj, _REQUIRED, "record")
    for i, cand in enumerate(obj.get("candidates") or []):
        problem = problem or (f"candidate {i} is not an object" if not isinstance(cand, dict)
                              else _type_problem(cand, _CANDIDATE_REQUIRED, f"candidate {i}"))
    for i, fact in enumerate(obj.get("supporting_facts") or []):
        problem = problem or (f"supporting fact {i} is not an object"
                              if not isinstance(fact, dict) else
                              _type_problem(fact, _FACT_REQUIRED, f"supporting fact {i}"))
    return problem


def _row(obj: dict[str, Any], rid: int) -> dict[str, Any]:
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


def _read(paths: list[Path]) -> pa.Table:
    rows: list[dict[str, Any]] = []
    for path in paths:
        if path.stat().st_size == 0:
            raise InputError(path, "the file is empty", expected="JSON lines")
        for where, obj in iter_jsonl_objects(path):
            problem = _record_problem(obj)
            if problem:
                raise InputError(path, problem, where=where)
            rows.append(_row(obj, len(rows)))
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


# ------------------------------------------------------------------------------- writing

def canonical_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def checksum(obj: dict[str, Any]) -> str:
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


def _patched(obj: dict[str, Any], patches: list[Patch]) -> dict[str, Any]:
    """The record with every patch that reaches it applied."""
    obj = dict(obj)
    for patch in patches:
        if patch.rid is not None:
            obj[patch.unit] = patch.text
    context = [p for p in patches if p.ctx is not None]
    if context:
        obj["candidates"] = patch_candidates(obj["candidates"], context, id_key="id")
    return obj


def _finished(obj: dict[str, Any], record_digest: str) -> dict[str, Any]:
    """A corrected record's provenance and checksum."""
    provenance = dict(obj.get("provenance") or {})
    provenance[PROVENANCE_FIELD] = (f"{provenance.get(PROVENANCE_FIELD) or ''}"
                                    f"+repair.{record_digest}")
    obj = {**obj, "provenance": provenance}
    obj["checksum"] = checksum(obj)
    return obj


def _lines(release: Opened) -> Iterator[tuple[Path, bytes, int | None, dict[str, Any] | None]]:
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


def _patches_by_row(release: Opened, patches: list[Patch], rids: list[int]
                    ) -> dict[int, list[Patch]]:
    """{rid: the patches reaching it} for the given rows (their contexts' and their own)."""
    con = release.con.cursor()
    con.register("patched_rid", pa.table({"rid": pa.array(sorted(set(rids)), pa.int64())}))
    ctx_of = dict(con.sql("SELECT rid, ctx FROM views SEMI JOIN patched_rid USING (rid)"
                          ).fetchall())
    con.close()
    by_ctx: dict[int, list[Patch]] = {}
    by_rid: dict[int, list[Patch]] = {}
    for patch in patches:
        if patch.rid is not None:
            by_rid.setdefault(patch.rid, []).append(patch)
        elif patch.ctx is not None:
            by_ctx.setdefault(patch.ctx, []).append(patch)
    return {rid: by_ctx.get(ctx_of[rid], []) + by_rid.get(rid, []) for rid in rids}
