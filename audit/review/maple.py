"""MAPLE review inputs (paper §3.3.1, appendix D.1–D.2): query pairs for the blind realism
comparison and query–paper pairs for the relevance check, read from JSONL or Parquet.

Query pair      {pair_id, setting, query_a, source_a, query_b, source_b}
Relevance pair  {pair_id, query_id, query, aspect, paper_id, title, abstract, text}

Every field is a required, non-blank string; other fields are ignored. Canonical spellings
(exact, case-sensitive, so a typo is an error rather than a new category):

  sources   MAPLE | human-written | LLM+human-edited | LLM
            (the paper's "MAPLE (ours)", "Human", "LLM+Human Editing", "LLM")
  settings  the five comparisons of Table 4, named "<first> vs <second>":
            MAPLE vs human-written, MAPLE vs LLM+human-edited,
            human-written vs LLM+human-edited, MAPLE vs LLM, human-written vs LLM;
            a pair's two sources must be the setting's two, in either order
  aspects   motivation | method | experiment-result (the paper's "experiment/result")

Errors are InputError with the file, "line N" (JSONL) or "row N" (Parquet, 1-based), the
field and what was expected.

Blinding: assign_order() decides per pair, from sha256(f"{seed}:order:{pair_id}"), whether
the pair is shown swapped, and records shown_a_source / swapped in a RealismItem that stays
on our side. The task payload holds only the two texts; the item id is an opaque hash (a
pair id such as "maple-vs-llm-03" would give the sources away in the task list).

The demo set in data/maple_demo/ was written for this workbench: invented papers, queries
and excerpts, not taken from MAPLE or any paper.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..io.atomic import staged_file
from ..io.tables import iter_jsonl_objects
from ..settings import REPO

SOURCES = ("MAPLE", "human-written", "LLM+human-edited", "LLM")
SETTINGS: dict[str, tuple[str, str]] = {
    "MAPLE vs human-written": ("MAPLE", "human-written"),
    "MAPLE vs LLM+human-edited": ("MAPLE", "LLM+human-edited"),
    "human-written vs LLM+human-edited": ("human-written", "LLM+human-edited"),
    "MAPLE vs LLM": ("MAPLE", "LLM"),
    "human-written vs LLM": ("human-written", "LLM"),
}
ASPECTS = ("motivation", "method", "experiment-result")
REALISM_CHOICES = ("A", "Tie", "B")
QUERY_PAIR_FIELDS = ("pair_id", "setting", "query_a", "source_a", "query_b", "source_b")
RELEVANCE_FIELDS = ("pair_id", "query_id", "query", "aspect", "paper_id", "title",
                    "abstract", "text")

DEMO_DIR = REPO / "data" / "maple_demo"
DEMO_QUERY_PAIRS = DEMO_DIR / "query_pairs.jsonl"
DEMO_RELEVANCE_PAIRS = DEMO_DIR / "relevance_pairs.jsonl"
_JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class QueryPair:
    pair_id: str
    setting: str
    query_a: str
    source_a: str
    query_b: str
    source_b: str


@dataclass(frozen=True)
class RelevancePair:
    pair_id: str
    query_id: str
    query: str
    aspect: str
    paper_id: str
    title: str
    abstract: str
    text: str


@dataclass(frozen=True)
class RealismItem:
    """A query pair as shown: shown_a / shown_b are the texts in display order."""

    pair_id: str
    item_id: str
    setting: str
    shown_a: str
    shown_b: str
    shown_a_source: str
    shown_b_source: str
    swapped: bool


# ------------------------------------------------------------------------- reading

def read_query_pairs(path: str | Path) -> list[QueryPair]:
    """Validated query pairs, in file order."""
    pairs, seen = [], {}
    for where, record in _records(Path(path)):
        fields = _strings(record, QUERY_PAIR_FIELDS, path, where)
        _check_pair_sources(fields, path, where)
        _check_unique(fields["pair_id"], seen, path, where)
        pairs.append(QueryPair(**fields))
    return pairs


def read_relevance_pairs(path: str | Path) -> list[RelevancePair]:
    """Validated query–paper pairs, in file order."""
    pairs, seen = [], {}
    for where, record in _records(Path(path)):
        fields = _strings(record, RELEVANCE_FIELDS, path, where)
        _check_choice(fields, "aspect", ASPECTS, path, where)
        _check_unique(fields["pair_id"], seen, path, where)
        pairs.append(RelevancePair(**fields))
    return pairs


def _records(path: Path) -> Iterator[tuple[str, dict]]:
    """(where, record) for each record of a JSONL or Parquet file; at least one."""
    if not path.is_file():
        raise InputError(path, "no such file" if not path.exists() else "not a regular file")
    if path.suffix in _JSONL_SUFFIXES:
        records = iter_jsonl_objects(path)
    elif path.suffix == ".parquet":
        records = _parquet_records(path)
    else:
        raise InputError(path, f"unsupported file type {path.suffix!r}",
                         expected=".jsonl or .parquet")
    count = 0
    for count, item in enumerate(records, start=1):
        yield item
    if count == 0:
        raise InputError(path, "the file holds no records", expected="at least one pair")


def _parquet_records(path: Path) -> Iterator[tuple[str, dict]]:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(path, f"not a readable Parquet file ({error})",
                         expected="a complete Parquet file") from None
    for number, record in enumerate(table.to_pylist(), start=1):
        yield f"row {number}", record


def _strings(record: dict, names: tuple[str, ...], path, where: str) -> dict[str, str]:
    """The named fields, each a non-blank string (a Parquet null counts as missing)."""
    out = {}
    for name in names:
        value = record.get(name)
        if value is None:
            raise InputError(path, f"missing field {name!r}", where=where,
                             expected=f"the fields {', '.join(names)}")
        if not isinstance(value, str):
            raise InputError(path, f"field {name!r} is {type(value).__name__}", where=where,
                             expected="a string")
        if not value.strip():
            raise InputError(path, f"field {name!r} is empty", where=where,
                             expected="non-empty text")
        out[name] = value
    return out


def _check_choice(fields: dict, name: str, allowed: tuple[str, ...], path, where) -> None:
    if fields[name] not in allowed:
        raise InputError(path, f"unknown {name} {fields[name]!r}", where=where,
                         expected=f"one of {', '.join(allowed)}")


def _check_pair_sources(fields: dict, path, where: str) -> None:
    _check_choice(fields, "source_a", SOURCES, path, where)
    _check_choice(fields, "source_b", SOURCES, path, where)
    _check_choice(fields, "setting", tuple(SETTINGS), path, where)
    named = SETTINGS[fields["setting"]]
    if {fields["source_a"], fields["source_b"]} != set(named):
        raise InputError(path, f"setting {fields['setting']!r} compares {named[0]} with "
                         f"{named[1]}, but the pair holds {fields['source_a']} and "
                         f"{fields['source_b']}", where=where,
                         expected="source_a and source_b to be the setting's two sources")
    if fields["query_a"].strip() == fields["query_b"].strip():
        raise InputError(path, "query_a and query_b are the same text", where=where,
                         expected="two different queries")


def _check_unique(pair_id: str, seen: dict[str, str], path, where: str) -> None:
    if pair_id in seen:
        raise InputError(path, f"duplicate pair_id {pair_id!r} (first at {seen[pair_id]})",
                         where=where, expected="each pair_id once")
    seen[pair_id] = where


# ------------------------------------------------------------------------- blinding

def _digest(seed: int | str, purpose: str, pair_id: str) -> str:
    # Separate purposes, so the public item id says nothing about the swap.
    return hashlib.sha256(f"{seed}:{purpose}:{pair_id}".encode("utf-8")).hexdigest()


def is_swapped(seed: int | str, pair_id: str) -> bool:
    return int(_digest(seed, "order", pair_id), 16) % 2 == 1


def assign_order(pairs: list[QueryPair], seed: int) -> list[RealismItem]:
    """The pairs as they will be shown, A/B order decided per pair by the seed."""
    return [_assign(pair, seed) for pair in pairs]


def _assign(pair: QueryPair, seed: int) -> RealismItem:
    first, second = (pair.query_a, pair.source_a), (pair.query_b, pair.source_b)
    swapped = is_swapped(seed, pair.pair_id)
    (a_text, a_source), (b_text, b_source) = (second, first) if swapped else (first, second)
    return RealismItem(pair_id=pair.pair_id,
                       item_id=f"realism:{_digest(seed, 'item', pair.pair_id)[:16]}",
                       setting=pair.setting, shown_a=a_text, shown_b=b_text,
                       shown_a_source=a_source, shown_b_source=b_source, swapped=swapped)


def preferred_source(item: RealismItem, choice: str) -> str | None:
    """The source an annotator's A / Tie / B choice prefers; None for a tie."""
    if choice not in REALISM_CHOICES:
        raise ValueError(f"choice {choice!r} (expected one of {', '.join(REALISM_CHOICES)})")
    return {"A": item.shown_a_source, "B": item.shown_b_source, "Tie": None}[choice]


def setting_outcome(item: RealismItem, choice: str) -> str:
    """The choice in Table 4's terms: 'A' prefers the setting's first-named source, 'B' its
    second, whatever the display order was."""
    source = preferred_source(item, choice)
    if source is None:
        return "Tie"
    return "A" if source == SETTINGS[item.setting][0] else "B"


def write_assignments(path: str | Path, items: list[RealismItem]) -> Path:
    """The blinding key as JSONL (one RealismItem per line), written atomically."""
    path = Path(path)
    with staged_file(path) as staging:
        staging.write_text("".join(json.dumps(asdict(item), ensure_ascii=False) + "\n"
                                   for item in items), encoding="utf-8")
    return path
