"""Seeded synthetic prediction files for the demo, the tests and the benchmark.

A synthetic reader/selector answers each release row from its gold side, with a success rate
that falls with the language geometry (S4 and different-script gold, an answer-hop paragraph
not in ℓq), so the demo's contrasts have something to show. Everything is drawn from one
numpy generator in release order: the same release and seed give the same file. Rows whose id
repeats in the release get one prediction (the first row's); `missing` leaves out that share
of rows, which then score as empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..outputs import staged_file
from ..readers import Release

_ROWS = """
SELECT r.id, coalesce(r.answer, '') AS answer,
       list_transform(list_filter(coalesce(r.supporting_facts, []),
                                  lambda f: f.paragraph_id IS NOT NULL),
                      lambda f: {'p': f.paragraph_id, 's': f.sentence_index}) AS facts,
       list_transform(r.candidates, lambda c: c.paragraph_id) AS paragraphs,
       d.stratum, d.script_relation, d.answer_hop_aligned
FROM release r JOIN descriptors d ON d.rid = r.rid
ORDER BY r.rid
"""


def write_predictions(release: Release, descriptors, path: str | Path, *, seed: int,
                      skill: float = 0.6, missing: float = 0.01) -> Path:
    """Write a prediction JSONL for `release` (see the module docstring) atomically."""
    con = release.con.cursor()
    con.register("descriptors", descriptors)
    rows = con.sql(_ROWS).fetchall()
    rng = np.random.default_rng(seed)
    n = len(rows)
    draws = rng.random((n, 6))
    others = rng.integers(0, max(n, 1), n)
    target = Path(path)
    seen: set[str] = set()
    with staged_file(target) as staging, staging.open("w", encoding="utf-8") as out:
        for i, (ident, answer, facts, paragraphs, stratum, script, aligned) in enumerate(rows):
            if ident in seen or draws[i, 0] < missing:
                continue
            seen.add(ident)
            p = skill - 0.15 * (stratum == "S4") - 0.1 * (script == "different-script") \
                - 0.1 * (aligned is False)
            out.write(json.dumps({
                "id": ident,
                "answer": _answer(answer, rows[others[i]][1], draws[i, 1], draws[i, 2], p),
                "supporting_facts": _support(facts, paragraphs, draws[i, 3:], p)},
                ensure_ascii=False) + "\n")
    return target


def _answer(gold: str, other: str, u: float, v: float, p: float) -> str:
    if u < p:
        return gold
    words = gold.split()
    if u < p + 0.15 and len(words) > 1:      # a partial answer: one word short
        return " ".join(words[:-1]) if v < 0.5 else " ".join(words[1:])
    if u < p + 0.2:
        return ""
    return other                              # another row's answer


def _support(facts: list[dict], paragraphs: list[str], u: np.ndarray, p: float) -> list[dict]:
    keep = [f for k, f in enumerate(facts) if u[0] < 0.3 + p or k % 2 == 0]
    chosen = [{"paragraph_id": f["p"], "sentence_id": int(f["s"])} for f in keep
              if f["s"] is not None and f["s"] >= 0]
    if u[1] > 0.3 + p and paragraphs:          # a distractor sentence as well
        extra = {"paragraph_id": paragraphs[int(u[2] * len(paragraphs))], "sentence_id": 0}
        if extra not in chosen:
            chosen.append(extra)
    return chosen
