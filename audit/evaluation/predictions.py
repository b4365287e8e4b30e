"""Prediction files and per-item scores against a release.

A prediction file is the reference toolkit's format, one JSON object a line:

    {"id": "...", "answer": "...", "supporting_facts": [{"paragraph_id": "p03", "sentence_id": 1}]}

`id` is the release row id (V1.1: the HotpotQA id; V2: "xhp-<split>-<source id>"). `answer`
defaults to "" and `supporting_facts` to [] when absent. A line that is not such an object
(bad UTF-8 or JSON, a non-string id or answer, a fact without a non-empty paragraph_id or a
non-negative integer sentence_id, a repeated fact, an id already seen) stops the read with an
InputError naming the line. Ids the release lacks are counted as unexpected, never scored.

Scoring is set-based: the gold side comes from one DuckDB query over the release, the support
overlap from list functions over the joined facts, and the answer scores are computed once per
distinct (prediction, gold, language) triple. A release row with no prediction scores as an
empty answer with no support and is counted as missing. Gold facts whose paragraph did not
resolve (V1.1's null paragraph_id) stay in the gold set and can never be matched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ..io.model import Release
from ..io.tables import iter_jsonl_objects
from ..languages import BY_CODE
from ..sql.connection import connect
from . import metrics

METRICS = ("answer_em", "answer_f1", "support_em", "support_f1", "joint_em", "joint_f1")
PARTS = ("answer_em", "answer_precision", "answer_recall", "answer_f1",
         "support_em", "support_precision", "support_recall", "support_f1",
         "joint_em", "joint_precision", "joint_recall", "joint_f1")
_UNRESOLVED = "\x00unresolved"


@dataclass(frozen=True)
class Predictions:
    path: Path
    table: pa.Table          # id, answer, facts (list of fact keys), line
    lines: int

    @property
    def label(self) -> str:
        return self.path.name


def _fact_keys(value: object) -> list[str] | str:
    """The fact keys of a supporting_facts value, or the first problem with it."""
    if type(value) is not list:
        return "supporting_facts is not a list"
    keys = []
    for i, fact in enumerate(value):
        if type(fact) is not dict:
            return f"supporting fact {i} is not an object"
        paragraph, sentence = fact.get("paragraph_id"), fact.get("sentence_id")
        if type(paragraph) is not str or not paragraph:
            return f"supporting fact {i}: paragraph_id must be a non-empty string"
        if type(sentence) is not int or sentence < 0:   # bool is not int here
            return f"supporting fact {i}: sentence_id must be a non-negative integer"
        keys.append(f"{paragraph}\x1f{sentence}")
    if len(set(keys)) != len(keys):
        seen = set()
        for i, key in enumerate(keys):
            if key in seen:
                paragraph, sentence = key.split("\x1f")
                return f"supporting fact {i} repeats ({paragraph!r}, {sentence})"
            seen.add(key)
    return keys


def read_predictions(path: str | Path) -> Predictions:
    """Validate and load a prediction JSONL file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such file", expected="a prediction .jsonl file")
    ids, answers, facts, lines = [], [], [], []
    first_line: dict[str, str] = {}
    for where, obj in iter_jsonl_objects(path):
        ident = obj.get("id")
        if not isinstance(ident, str) or not ident:
            raise InputError(path, "no string id", where=where,
                             expected='{"id": "...", "answer": "...", "supporting_facts": [...]}')
        if ident in first_line:
            raise InputError(path, f"id {ident!r} was already predicted on {first_line[ident]}",
                             where=where, expected="one prediction per id")
        answer = obj.get("answer", "")
        if not isinstance(answer, str):
            raise InputError(path, f"answer is a JSON {type(answer).__name__}", where=where,
                             expected="a string answer")
        keys = _fact_keys(obj.get("supporting_facts", []))
        if type(keys) is str:
            raise InputError(path, keys, where=where,
                             expected='[{"paragraph_id": "p00", "sentence_id": 0}, ...]')
        first_line[ident] = where
        ids.append(ident)
        answers.append(answer)
        facts.append(keys)
        lines.append(int(where.split()[-1]))
    table = pa.table({"id": pa.array(ids, pa.string()), "answer": pa.array(answers, pa.string()),
                      "facts": pa.array(facts, pa.list_(pa.string())),
                      "line": pa.array(lines, pa.int64())})
    return Predictions(path, table, len(ids))


# ----------------------------------------------------------------------------- gold side

_GOLD_QUERY = f"""
SELECT rid, id, source_id, source_split, coalesce(answer, '') AS answer,
       coalesce(answer_language, '') AS answer_language,
       list_distinct(list_transform(coalesce(supporting_facts, []), lambda f:
           coalesce(f.paragraph_id, '{_UNRESOLVED}:' || coalesce(f.source_title, ''))
           || chr(31) || coalesce(f.sentence_index::VARCHAR, '?'))) AS gold_facts,
       len(list_filter(coalesce(supporting_facts, []), lambda f: f.paragraph_id IS NULL))
           AS unresolved_facts
FROM release ORDER BY rid
"""


def gold(release: Release) -> pa.Table:
    """One row per release row (rid order): ids, gold answer, its language, gold fact keys."""
    return release.con.cursor().sql(_GOLD_QUERY).to_arrow_table()


@dataclass(frozen=True)
class Scores:
    """Per release row (rid order) scores of one prediction file under one protocol."""

    protocol: str
    values: dict[str, np.ndarray]     # PARTS → (n,) float
    missing: np.ndarray               # (n,) bool: no prediction for the row
    unexpected: int                   # predicted ids the release lacks
    unknown_language: int             # rows whose answer language is outside the 24
    unresolved_facts: int             # gold facts with no paragraph id

    def matrix(self, names=METRICS) -> np.ndarray:
        return np.column_stack([self.values[name] for name in names])


_JOIN_QUERY = """
SELECT g.rid, p.id IS NULL AS missing, coalesce(p.answer, '') AS predicted,
       g.answer AS gold, g.answer_language AS language,
       len(list_intersect(list_distinct(coalesce(p.facts, [])), g.gold_facts)) AS overlap,
       len(list_distinct(coalesce(p.facts, []))) AS n_predicted, len(g.gold_facts) AS n_gold
FROM gold_rows g LEFT JOIN predicted p ON p.id = g.id
ORDER BY g.rid
"""


def score(gold_rows: pa.Table, predictions: Predictions,
          protocols: tuple[str, ...] = metrics.PROTOCOLS) -> dict[str, Scores]:
    """Scores of every release row under each protocol (support is protocol-free)."""
    con = connect()
    con.register("gold_rows", gold_rows)
    con.register("predicted", predictions.table)
    joined = con.sql(_JOIN_QUERY).to_arrow_table()
    unexpected = con.sql("SELECT count(*) FROM predicted WHERE id NOT IN "
                         "(SELECT id FROM gold_rows)").fetchall()[0][0]
    con.close()
    support = _support(joined)
    languages = joined.column("language").to_pylist()
    unknown = sum(1 for code in languages if code not in BY_CODE)
    unresolved = int(np.asarray(gold_rows.column("unresolved_facts")).sum())
    missing = np.asarray(joined.column("missing"))
    out = {}
    for protocol in protocols:
        answer = _answers(joined.column("predicted").to_pylist(),
                          joined.column("gold").to_pylist(), languages, protocol)
        values = {**answer, **support}
        values["joint_em"] = answer["answer_em"] * support["support_em"]
        values["joint_precision"] = answer["answer_precision"] * support["support_precision"]
        values["joint_recall"] = answer["answer_recall"] * support["support_recall"]
        values["joint_f1"] = _f1(values["joint_precision"], values["joint_recall"])
        out[protocol] = Scores(protocol, values, missing, unexpected, unknown, unresolved)
    return out


def _f1(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    total = precision + recall
    with np.errstate(all="ignore"):
        return np.where(total > 0, 2 * precision * recall / total, 0.0)


def _support(joined: pa.Table) -> dict[str, np.ndarray]:
    overlap = np.asarray(joined.column("overlap"), dtype=float)
    n_pred = np.asarray(joined.column("n_predicted"), dtype=float)
    n_gold = np.asarray(joined.column("n_gold"), dtype=float)
    with np.errstate(all="ignore"):
        precision = np.where(n_pred > 0, overlap / n_pred, (n_gold == 0).astype(float))
        recall = np.where(n_gold > 0, overlap / n_gold, (n_pred == 0).astype(float))
    exact = ((overlap == n_pred) & (overlap == n_gold)).astype(float)
    return {"support_em": exact, "support_precision": precision, "support_recall": recall,
            "support_f1": _f1(precision, recall)}


def _answers(predicted: list[str], gold_answers: list[str], languages: list[str],
             protocol: str) -> dict[str, np.ndarray]:
    """Answer scores, computed once per distinct normalised (prediction, gold, tokeniser)."""
    normalized: dict[tuple[str, str], str] = {}
    compared: dict[tuple[str, str, bool], metrics.Component] = {}
    by_character = {code: metrics.character_tokens(code, protocol) for code in set(languages)}
    rows = np.empty((len(predicted), 4))
    for i, (pred, gold_answer, code) in enumerate(zip(predicted, gold_answers, languages)):
        key_p, key_g = (pred, code), (gold_answer, code)
        if key_p not in normalized:
            normalized[key_p] = metrics.normalize(pred, code, protocol)
        if key_g not in normalized:
            normalized[key_g] = metrics.normalize(gold_answer, code, protocol)
        key = (normalized[key_p], normalized[key_g], by_character[code])
        component = compared.get(key)
        if component is None:
            component = compared[key] = metrics.compare_normalized(*key)
        rows[i] = (component.exact_match, component.precision, component.recall, component.f1)
    return {"answer_em": rows[:, 0], "answer_precision": rows[:, 1],
            "answer_recall": rows[:, 2], "answer_f1": rows[:, 3]}
