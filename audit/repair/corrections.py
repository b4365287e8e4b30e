"""Corrections from outside: the documented file format, and each correction located in a
release with its old text verified.

One correction a line, JSONL or CSV with the same columns:

    {"id": ROW_ID, "unit": "question"|"answer"|"title"|"sentence"|"paragraph",
     "paragraph_id": "p03", "sentence_index": 2, "old_sha256": HEX,
     "text": "…"  (or, for a paragraph, "sentences": ["…", …]),
     "reason": "…", "author": "…"}

A mapped release's correction names the item's language and the column:
    {"id": ITEM_ID, "language": "de", "unit": "question", "old_sha256": HEX, "text": "…", …}

`id` names a release row (`source_split` may be added where ids repeat across splits);
`paragraph_id` is required for a title, sentence or paragraph and `sentence_index` (from 0)
for a sentence, neither for a question or answer. `old_sha256` is the SHA-256 of the UTF-8
text being replaced (a paragraph: its sentences as compact JSON, `ensure_ascii=False`): it
refuses a fix of a text that changed meanwhile. In CSV, `sentences` is that JSON array and an
empty cell is a missing value. Any other key, a missing or mistyped one, an unknown row or
unit, or a stale digest is an InputError naming the file, the line and the row id.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from ..io.digests import text_sha256
from ..io.model import Release
from ..io.tables import iter_jsonl_objects
from ..io.units import CONTEXT_UNITS, CORRECTABLE_UNITS, ROW_UNITS, paragraph_text
from ..sql.macros import among
from .record import Origin, is_sha256

FIELDS = ("id", "source_split", "unit", "paragraph_id", "sentence_index", "old_sha256",
          "text", "sentences", "reason", "author", "language")
_FORMAT = ('{"id", "unit", "paragraph_id", "sentence_index", "old_sha256", "text" or '
           '"sentences", "reason", "author"}')
TER_PARALLEL_FROM = 2_000   # corrections: TER in two processes from this many on


@dataclass(frozen=True)
class Correction:
    """One correction as filed: the unit it names, the digest it replaces and the new text
    (a paragraph's as compact JSON, its sentences in `sentences`)."""

    row_id: str
    unit: str
    paragraph_id: str | None
    sentence_index: int | None
    old_sha256: str
    new_text: str
    reason: str
    author: str
    origin: Origin
    source_split: str | None = None
    sentences: tuple[str, ...] | None = None
    # A mapped release's: the item's language (its unit is a column of that row).
    language: str | None = None
    # From what it changes, not who sent it: two identical fixes are one correction. One
    # read back from the record keeps the id it was given.
    correction_id: str = ""

    def __post_init__(self) -> None:
        if not self.correction_id:
            parts = [self.row_id, self.source_split, self.unit, self.paragraph_id,
                     self.sentence_index, self.old_sha256, self.new_text]
            key = json.dumps(parts + ([self.language] if self.language is not None else []),
                             ensure_ascii=False, separators=(",", ":"))
            object.__setattr__(self, "correction_id",
                               "c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16])

    @property
    def in_row(self) -> bool:
        """Whether it edits a unit of one row (a question, an answer, a mapped release's
        column), not of a shared context."""
        return self.language is not None or self.unit in ROW_UNITS

    def where(self) -> str:
        return (f"line {self.origin.line}, id {self.row_id}" if self.origin.kind == "file"
                else f"{self.origin.where()}, id {self.row_id}")


# ----------------------------------------------------------------------------- parsing

def _problem(obj: dict) -> str | None:
    """The first thing wrong with one correction object, or None."""
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        return f"unknown field '{unknown[0]}'"
    for key in ("id", "unit", "old_sha256", "author"):
        if obj.get(key) is None:
            return f"no '{key}'"
    for key in ("id", "unit", "old_sha256", "author", "reason", "source_split",
                "paragraph_id"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return f"'{key}' is {type(obj[key]).__name__} (expected a string)"
    if not obj["id"] or not obj["author"].strip():
        return "'id' and 'author' must not be empty"
    if obj.get("language") is not None:
        return _mapped_problem(obj)
    unit = obj["unit"]
    if unit not in CORRECTABLE_UNITS:
        return f"unknown unit '{unit}' (expected {' / '.join(CORRECTABLE_UNITS)})"
    if not is_sha256(obj["old_sha256"]):
        return "'old_sha256' is not 64 lower-case hex digits"
    pid, k = obj.get("paragraph_id"), obj.get("sentence_index")
    if unit in CONTEXT_UNITS and not pid:
        return f"a {unit} needs 'paragraph_id'"
    if unit in ROW_UNITS and pid is not None:
        return f"a {unit} takes no 'paragraph_id'"
    if unit == "sentence":
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            return "a sentence needs 'sentence_index', an integer from 0"
    elif k is not None:
        return f"a {unit} takes no 'sentence_index'"
    text, sentences = obj.get("text"), obj.get("sentences")
    if unit == "paragraph":
        if text is not None:
            return "a paragraph takes 'sentences', not 'text'"
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            return "a paragraph needs 'sentences', a list of strings"
    else:
        if sentences is not None:
            return f"a {unit} takes 'text', not 'sentences'"
        if not isinstance(text, str):
            return f"a {unit} needs 'text', a string"
    return None


def _mapped_problem(obj: dict) -> str | None:
    """A mapped release's correction: a language, a column and a text."""
    if not isinstance(obj["language"], str) or not obj["language"]:
        return "'language' must be a non-empty string"
    for key in ("paragraph_id", "sentence_index", "sentences"):
        if obj.get(key) is not None:
            return f"a mapped release's correction takes no '{key}'"
    if not is_sha256(obj["old_sha256"]):
        return "'old_sha256' is not 64 lower-case hex digits"
    if not isinstance(obj.get("text"), str):
        return "a correction needs 'text', a string"
    return None


def _correction(obj: dict, origin: Origin) -> Correction:
    sentences = obj.get("sentences")
    return Correction(
        row_id=obj["id"], unit=obj["unit"], paragraph_id=obj.get("paragraph_id"),
        sentence_index=obj.get("sentence_index"), old_sha256=obj["old_sha256"],
        new_text=paragraph_text(sentences) if sentences is not None else obj["text"],
        reason=obj.get("reason") or "", author=obj["author"], origin=origin,
        source_split=obj.get("source_split"),
        sentences=tuple(sentences) if sentences is not None else None,
        language=obj.get("language"))


def _checked(path: Path, number: int, obj: dict, author: str | None) -> Correction:
    if author and not (obj.get("author") or "").strip():
        obj = {**obj, "author": author}
    problem = _problem(obj)
    if problem:
        row = obj.get("id") if isinstance(obj.get("id"), str) else None
        raise InputError(path, problem, where=f"line {number}" + (f", id {row}" if row else ""),
                         expected=_FORMAT)
    return _correction(obj, Origin("file", file=str(path), line=number))


def _csv_objects(path: Path) -> list[tuple[int, dict]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(path, f"invalid UTF-8 at byte {error.start}",
                         expected="UTF-8 CSV") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    unknown = [name for name in header if name not in FIELDS]
    if unknown or not {"id", "unit", "old_sha256", "author"} <= set(header):
        raise InputError(path, f"unknown column '{unknown[0]}'" if unknown else
                         "the header lacks id, unit, old_sha256 or author", where="line 1",
                         expected="columns " + ", ".join(FIELDS))
    out = []
    for row in reader:
        number = reader.line_num
        if None in row:
            raise InputError(path, "more cells than columns", where=f"line {number}")
        obj = {k: v for k, v in row.items() if v not in (None, "")}
        if "sentence_index" in obj:
            try:
                obj["sentence_index"] = int(obj["sentence_index"])
            except ValueError:
                pass     # _problem names it
        if "sentences" in obj:
            try:
                obj["sentences"] = json.loads(obj["sentences"])
            except json.JSONDecodeError as error:
                raise InputError(path, f"'sentences' is not a JSON array ({error.msg})",
                                 where=f"line {number}" + (f", id {obj['id']}"
                                                           if obj.get("id") else "")) from None
        if unit_text := obj.get("unit"):
            if unit_text != "paragraph" and "text" not in obj and "sentences" not in obj:
                obj["text"] = ""     # an empty cell: the new text is empty
        out.append((number, obj))
    return out


def read_file(path: str | Path, author: str | None = None) -> list[Correction]:
    """Every correction of one JSONL (.jsonl / .ndjson) or CSV file, validated; `author`
    stands for a line's missing or empty author (a vendor's file)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such corrections file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        objects = [(int(where.split()[1]), obj) for where, obj in iter_jsonl_objects(path)]
    elif suffix == ".csv":
        objects = _csv_objects(path)
    else:
        raise InputError(path, f"unknown corrections format '{suffix}'",
                         expected=".jsonl or .csv")
    return [_checked(path, number, obj, author) for number, obj in objects]


# ---------------------------------------------------------------------------- locating

@dataclass(frozen=True)
class Located:
    """A correction found in the release: the row it names, the context it edits (context
    units reach every view holding it), the old text it replaces, the unit's language."""

    correction: Correction
    rid: int
    ctx: int
    source_id: str
    source_split: str | None
    language: str
    views: int
    old_text: str
    old_sentences: tuple[str, ...] | None = None

    @property
    def unit_key(self) -> tuple:
        """Equal for two corrections of the same text (a context unit by its context)."""
        c = self.correction
        if c.in_row:
            return ("row", self.rid, c.unit)
        return ("ctx", self.ctx, c.paragraph_id, c.unit, c.sentence_index)

    @property
    def unchanged(self) -> bool:
        return self.correction.new_text == self.old_text


def _fail(c: Correction, problem: str, expected: str | None = None) -> InputError:
    return InputError(c.origin.file or c.origin.where(), problem, where=c.where(),
                      expected=expected)


def locate(release: Release, corrections: list[Correction]) -> list[Located]:
    """Each correction's row, context and current text; the first unknown row, ambiguous
    id, unknown paragraph or sentence, or stale digest (in input order) is an InputError."""
    if not corrections:
        return []
    if release.layout.has("aligned"):
        return _locate_mapped(release, corrections)
    stray = next((c for c in corrections if c.language is not None), None)
    if stray is not None:
        raise _fail(stray, "'language' names a mapped release's row; this release's rows "
                    "are named by id (and source_split)", expected=_FORMAT)
    con = release.con.cursor()
    wanted = pa.table({"k": pa.array(range(len(corrections)), pa.int64()),
                       "row_id": pa.array([c.row_id for c in corrections], pa.string()),
                       "split": pa.array([c.source_split for c in corrections], pa.string())})
    con.register("repair_wanted", wanted)
    rows = con.sql("""
        SELECT w.k, count(v.rid) AS n, min(v.rid) AS rid, any_value(v.ctx) AS ctx,
               any_value(v.source_id) AS source_id, any_value(v.source_split) AS split,
               any_value(v.question) AS question, any_value(v.answer) AS answer,
               any_value(v.question_language) AS ql, any_value(v.answer_language) AS al
        FROM repair_wanted w LEFT JOIN views v
          ON v.id = w.row_id AND (w.split IS NULL OR v.source_split = w.split)
        GROUP BY w.k ORDER BY w.k""").to_arrow_table().to_pylist()
    con.unregister("repair_wanted")
    ctxs = sorted({r["ctx"] for r, c in zip(rows, corrections)
                   if r["n"] == 1 and c.unit in CONTEXT_UNITS})
    wanted_ctx = among(con, ctxs, pa.int32())
    candidates = dict(con.sql(f"SELECT ctx, candidates FROM contexts WHERE ctx IN "
                              f"{wanted_ctx}").fetchall())
    views = dict(con.sql(f"SELECT ctx, count(*) FROM views WHERE ctx IN {wanted_ctx} "
                         "GROUP BY ctx").fetchall())
    con.close()
    return [_located(c, r, candidates, views) for c, r in zip(corrections, rows)]


def _locate_mapped(release: Release, corrections: list[Correction]) -> list[Located]:
    """Each correction's row (its id in its language) and the column's current text."""
    layout = release.layout
    columns = {c.name: i for i, c in enumerate(layout.values)  # type: ignore[attr-defined]
               if c.role in ("text", "answer")}
    con = release.con.cursor()
    out = []
    try:
        for c in corrections:
            if c.language is None:
                raise _fail(c, "a mapped release's correction names its 'language'",
                            expected='{"id", "language", "unit": a text column, '
                                     '"old_sha256", "text", "reason", "author"}')
            if c.unit not in columns:
                raise _fail(c, f"unknown unit '{c.unit}'",
                            expected="a text or answer column: " + ", ".join(columns))
            rows = con.execute(f"""SELECT rid, v{columns[c.unit]} FROM raw_views
                                   WHERE id = ? AND language = ? AND NOT missing""",
                               [c.row_id, c.language]).fetchall()
            if len(rows) != 1:
                raise _fail(c, f"{len(rows) or 'no'} row(s) with id '{c.row_id}' in "
                            f"{c.language}", expected="the id of one row of that language")
            rid, old = rows[0]
            located = Located(correction=c, rid=rid, ctx=-1, source_id=c.row_id,
                              source_split=None, language=c.language, views=1,
                              old_text=old or "")
            _fresh(located)
            out.append(located)
    finally:
        con.close()
    return out


def _fresh(located: Located) -> None:
    """A stale correction (the text changed since it was written) is refused."""
    c = located.correction
    if text_sha256(located.old_text) != c.old_sha256:
        raise _fail(c, f"stale correction: old_sha256 {c.old_sha256[:12]}… is not the SHA-256 "
                    f"of the {c.unit}'s current text ({text_sha256(located.old_text)[:12]}…)",
                    expected="the digest of the text this release holds")


def _located(c: Correction, row: dict, candidates: dict, views: dict) -> Located:
    if row["n"] == 0:
        raise _fail(c, f"no release row has id '{c.row_id}'" + (
            f" in split {c.source_split}" if c.source_split else ""),
            expected="the id of a row of this release")
    if row["n"] > 1:
        raise _fail(c, f"{row['n']} release rows have id '{c.row_id}'",
                    expected="'source_split' to tell them apart")
    base = dict(correction=c, rid=row["rid"], ctx=row["ctx"], source_id=row["source_id"],
                source_split=row["split"])
    if c.unit in ROW_UNITS:
        located = Located(**base, language=row["ql" if c.unit == "question" else "al"],
                          views=1, old_text=row[c.unit])
    else:
        matches = [p for p in candidates[row["ctx"]] if p["paragraph_id"] == c.paragraph_id]
        if len(matches) != 1:
            raise _fail(c, f"row '{c.row_id}' has {len(matches) or 'no'} paragraph(s) "
                        f"'{c.paragraph_id}'", expected="a paragraph_id of that row")
        paragraph = matches[0]
        sentences = tuple(paragraph["sentences"])
        if c.unit == "title":
            old = paragraph["title"]
        elif c.unit == "paragraph":
            old = paragraph_text(sentences)
        elif c.sentence_index >= len(sentences):
            raise _fail(c, f"paragraph {c.paragraph_id} has {len(sentences)} sentence(s), no "
                        f"sentence {c.sentence_index}",
                        expected="a sentence_index below the sentence count (a missing "
                                 "sentence is a paragraph correction)")
        else:
            old = sentences[c.sentence_index]
        located = Located(**base, language=paragraph["language_code"], views=views[row["ctx"]],
                          old_text=old, old_sentences=sentences)
    _fresh(located)
    return located


# --------------------------------------------------------------------------- distances

def _pair(x: Located) -> tuple[str, object, object]:
    """(unit, old, new): a paragraph as its sentence lists."""
    unit = x.correction.unit
    if unit == "paragraph":
        return unit, json.loads(x.old_text), json.loads(x.correction.new_text)
    return unit, x.old_text, x.correction.new_text


def _distances(pairs: list[tuple[str, object, object]]) -> list[tuple[int, float]]:
    from rapidfuzz.distance import Levenshtein
    from sacrebleu.metrics import TER
    ter = TER(normalized=True, case_sensitive=True, asian_support=True)
    out = []
    for unit, old, new in pairs:
        if old == new:
            out.append((0, 0.0))
        elif unit != "paragraph":
            out.append((Levenshtein.distance(old, new), round(ter.sentence_score(new, [old]).score, 4)))
        else:
            edit = Levenshtein.distance(paragraph_text(old), paragraph_text(new))
            score = (ter.corpus_score(new, [old]) if len(old) == len(new) else
                     ter.sentence_score(" ".join(new), [" ".join(old)])).score
            out.append((edit, round(score, 4)))
    return out


class Distances:
    """(character edit distance, TER) of each correction's new text against its old text,
    computed in two processes beside whatever runs meanwhile when there are many.
    TER is sacrebleu's (edits per 100 reference words; tokenised, so CJK by character; case
    kept). A paragraph's edit distance is over its JSON text; its TER is its sentences'
    edits over their reference words when the sentence count is kept, else the joined
    texts'."""

    def __init__(self, located: list[Located]) -> None:
        self.pairs = [_pair(x) for x in located]
        self.pool = None
        if len(self.pairs) >= TER_PARALLEL_FROM:
            self.pool = ProcessPoolExecutor(2)
            half = (len(self.pairs) + 1) // 2
            self.jobs = [self.pool.submit(_distances, part)
                         for part in (self.pairs[:half], self.pairs[half:])]

    def result(self) -> list[tuple[int, float]]:
        if self.pool is None:
            return _distances(self.pairs)
        return [d for job in self.jobs for d in job.result()]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
