"""MAPLE review inputs (audit/review/maple.py): the bundled demo set, one test per
validation error with its exact message, and the seeded, recorded A/B order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.errors import InputError
from audit.review import maple
from audit.review.maple import QueryPair, assign_order, read_query_pairs, read_relevance_pairs

PAIR = {"pair_id": "qp-1", "setting": "MAPLE vs human-written",
        "query_a": "papers on adaptive draft lengths in speculative decoding", "source_a": "MAPLE",
        "query_b": "Which paper stops drafting early when the draft model is unsure?",
        "source_b": "human-written"}
RELEVANCE = {"pair_id": "rp-1", "query_id": "q-1", "query": "orthogonal LoRA for continual tuning",
             "aspect": "method", "paper_id": "paper-1", "title": "A title",
             "abstract": "An abstract.", "text": "An excerpt."}
PAIR_FIELDS = "pair_id, setting, query_a, source_a, query_b, source_b"


def jsonl(tmp_path: Path, *records, name: str = "pairs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def error_of(reader, path: Path) -> str:
    with pytest.raises(InputError) as error:
        reader(path)
    return str(error.value)


# ------------------------------------------------------------------------- demo set

def test_demo_query_pairs():
    pairs = read_query_pairs(maple.DEMO_QUERY_PAIRS)
    assert len(pairs) == 30
    assert Counter(p.setting for p in pairs) == {setting: 6 for setting in maple.SETTINGS}
    sources = Counter(s for p in pairs for s in (p.source_a, p.source_b))
    assert sources == {"MAPLE": 18, "human-written": 18, "LLM+human-edited": 12, "LLM": 12}
    # Either stored order is accepted; some demo pairs are stored second-source first.
    assert any((p.source_a, p.source_b) != maple.SETTINGS[p.setting] for p in pairs)


def test_demo_relevance_pairs():
    pairs = read_relevance_pairs(maple.DEMO_RELEVANCE_PAIRS)
    assert len(pairs) == 24
    assert len({p.paper_id for p in pairs}) == 12
    assert Counter(p.aspect for p in pairs) == {"experiment-result": 10, "method": 9,
                                                "motivation": 5}
    titles = {p.paper_id: p.title for p in pairs}
    assert all(p.title == titles[p.paper_id] for p in pairs)  # one title per paper


def test_parquet_input(tmp_path):
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist([PAIR, {**PAIR, "pair_id": "qp-2"}]), path)
    assert [p.pair_id for p in read_query_pairs(path)] == ["qp-1", "qp-2"]


# ------------------------------------------------------------------------- errors

def test_missing_field(tmp_path):
    path = jsonl(tmp_path, PAIR, {k: v for k, v in PAIR.items() if k != "query_b"})
    assert error_of(read_query_pairs, path) == (
        f"{path}: line 2: missing field 'query_b' (expected the fields {PAIR_FIELDS})")


def test_wrong_type(tmp_path):
    path = jsonl(tmp_path, {**PAIR, "pair_id": 7})
    assert error_of(read_query_pairs, path) == (
        f"{path}: line 1: field 'pair_id' is int (expected a string)")


def test_unknown_source(tmp_path):
    path = jsonl(tmp_path, {**PAIR, "source_b": "Human"})
    assert error_of(read_query_pairs, path) == (
        f"{path}: line 1: unknown source_b 'Human' "
        "(expected one of MAPLE, human-written, LLM+human-edited, LLM)")


def test_unknown_setting(tmp_path):
    path = jsonl(tmp_path, {**PAIR, "setting": "MAPLE vs Human"})
    assert error_of(read_query_pairs, path).startswith(
        f"{path}: line 1: unknown setting 'MAPLE vs Human' (expected one of "
        "MAPLE vs human-written, MAPLE vs LLM+human-edited, ")


def test_sources_must_match_the_setting(tmp_path):
    path = jsonl(tmp_path, {**PAIR, "source_b": "LLM"})
    assert error_of(read_query_pairs, path) == (
        f"{path}: line 1: setting 'MAPLE vs human-written' compares MAPLE with human-written, "
        "but the pair holds MAPLE and LLM (expected source_a and source_b to be the setting's "
        "two sources)")


def test_identical_queries(tmp_path):
    path = jsonl(tmp_path, {**PAIR, "query_b": PAIR["query_a"] + " "})
    assert error_of(read_query_pairs, path) == (
        f"{path}: line 1: query_a and query_b are the same text (expected two different "
        "queries)")


def test_unknown_aspect(tmp_path):
    path = jsonl(tmp_path, RELEVANCE, {**RELEVANCE, "pair_id": "rp-2",
                                       "aspect": "experiment/result"})
    assert error_of(read_relevance_pairs, path) == (
        f"{path}: line 2: unknown aspect 'experiment/result' "
        "(expected one of motivation, method, experiment-result)")


def test_duplicate_pair_id(tmp_path):
    path = jsonl(tmp_path, RELEVANCE, "", {**RELEVANCE, "query_id": "q-2"})
    assert error_of(read_relevance_pairs, path) == (
        f"{path}: line 3: duplicate pair_id 'rp-1' (first at line 1) "
        "(expected each pair_id once)")


@pytest.mark.parametrize("value", ["", "   \t"])
def test_empty_text(tmp_path, value):
    path = jsonl(tmp_path, {**RELEVANCE, "abstract": value})
    assert error_of(read_relevance_pairs, path) == (
        f"{path}: line 1: field 'abstract' is empty (expected non-empty text)")


def test_parquet_errors_name_the_row(tmp_path):
    path = tmp_path / "relevance.parquet"
    rows = [RELEVANCE, {**RELEVANCE, "pair_id": "rp-2", "title": None}]
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert error_of(read_relevance_pairs, path) == (
        f"{path}: row 2: missing field 'title' (expected the fields pair_id, query_id, "
        "query, aspect, paper_id, title, abstract, text)")


@pytest.mark.parametrize("content, message", [
    ('{"pair_id": ', "line 1: invalid JSON (Expecting value, column 13) "
                     "(expected one JSON object per line)"),
    ("[1, 2]", "line 1: a JSON list (expected a JSON object)"),
    ("", "the file holds no records (expected at least one pair)"),
])
def test_malformed_files(tmp_path, content, message):
    path = tmp_path / "pairs.jsonl"
    path.write_text(content, encoding="utf-8")
    assert error_of(read_query_pairs, path) == f"{path}: {message}"


def test_missing_or_unsupported_file(tmp_path):
    assert error_of(read_query_pairs, tmp_path / "absent.jsonl") == (
        f"{tmp_path / 'absent.jsonl'}: no such file")
    csv = tmp_path / "pairs.csv"
    csv.write_text("pair_id\n", encoding="utf-8")
    assert error_of(read_query_pairs, csv) == (
        f"{csv}: unsupported file type '.csv' (expected .jsonl or .parquet)")


# ------------------------------------------------------------------------- blinding

def synthetic_pairs(n: int) -> list[QueryPair]:
    return [QueryPair(f"qp-{i:04d}", "MAPLE vs LLM", f"query {i} a", "MAPLE",
                      f"query {i} b", "LLM") for i in range(n)]


def test_swap_is_reproducible_and_recorded():
    pairs = read_query_pairs(maple.DEMO_QUERY_PAIRS)
    first, again = assign_order(pairs, 20260810), assign_order(pairs, 20260810)
    assert first == again
    assert sum(item.swapped for item in first) == 13
    other = assign_order(pairs, 1)
    assert [i.swapped for i in other] != [i.swapped for i in first]
    for pair, item in zip(pairs, first):
        expected = ((pair.query_b, pair.source_b, pair.query_a, pair.source_a) if item.swapped
                    else (pair.query_a, pair.source_a, pair.query_b, pair.source_b))
        assert (item.shown_a, item.shown_a_source, item.shown_b, item.shown_b_source) == expected
        assert item.swapped == maple.is_swapped(20260810, pair.pair_id)


def test_swap_is_balanced():
    items = assign_order(synthetic_pairs(1000), seed=20260810)
    assert 450 <= sum(item.swapped for item in items) <= 550


def test_item_ids_are_opaque_and_stable():
    pairs = synthetic_pairs(50)
    items = assign_order(pairs, seed=9)
    assert len({i.item_id for i in items}) == 50
    assert all(i.item_id.startswith("realism:") and i.pair_id not in i.item_id for i in items)
    assert [i.item_id for i in assign_order(pairs, seed=9)] == [i.item_id for i in items]
    assert [i.item_id for i in assign_order(pairs, seed=10)] != [i.item_id for i in items]


def test_unblinding_maps_choices_back_to_sources():
    pair = QueryPair("qp-x", "human-written vs LLM", "short query", "human-written",
                     "long formal query", "LLM")
    item = next(i for seed in range(20) for i in assign_order([pair], seed) if i.swapped)
    assert item.shown_a_source == "LLM"
    assert maple.preferred_source(item, "A") == "LLM"
    assert maple.preferred_source(item, "B") == "human-written"
    assert maple.preferred_source(item, "Tie") is None
    # In Table 4's terms, A is the setting's first-named source (human-written).
    assert maple.setting_outcome(item, "B") == "A"
    assert maple.setting_outcome(item, "A") == "B"
    assert maple.setting_outcome(item, "Tie") == "Tie"
    with pytest.raises(ValueError, match="choice 'a'"):
        maple.preferred_source(item, "a")


def test_assignments_written_as_jsonl(tmp_path):
    items = assign_order(synthetic_pairs(3), seed=4)
    path = maple.write_assignments(tmp_path / "key" / "assignments.jsonl", items)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [maple.RealismItem(**row) for row in rows] == items
    assert set(rows[0]) == {"pair_id", "item_id", "setting", "shown_a", "shown_b",
                            "shown_a_source", "shown_b_source", "swapped"}
