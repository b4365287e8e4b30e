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

from audit.io.atomic import staged_file
from audit.io.model import Release

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


# ------------------------------------------------------------------- MAPLE retrieval runs

ASPECT_DIFFICULTY = {"motivation": 0.1, "method": 0.05, "experiment-result": 0.035}


def write_retrieval_demo(folder: str | Path, *, papers: int = 30, seed: int = 5,
                         depth: int = 25) -> list[Path]:
    """A seeded MAPLE-shaped demo: `papers` target papers with 2–4 queries per aspect, a
    corpus of papers plus 300 negatives, qrels, the query mapping and two TREC runs of `depth`
    documents per query (B a little better than A; experiment/result hardest, as in the
    paper). The target's rank is geometric with an aspect-dependent success rate."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    negatives = [f"N{i:04d}" for i in range(300)]
    queries, qrels = ["qid paper aspect"], []
    runs: dict[str, list[str]] = {"a": [], "b": []}
    for p in range(papers):
        paper = f"P{p:03d}"
        for aspect, rate in ASPECT_DIFFICULTY.items():
            for q in range(int(rng.integers(2, 5))):
                qid = f"{paper}-{aspect[:3]}-{q}"
                queries.append(f"{qid} {paper} {aspect}")
                qrels.append(f"{qid} 0 {paper} 1")
                others = list(rng.choice(negatives, depth, replace=False))
                for name, boost in (("a", 1.0), ("b", 1.3)):
                    # A target ranked past `depth` is simply not retrieved.
                    rank = int(rng.geometric(min(rate * boost, 1.0)))
                    docs = (others[:rank - 1] + [paper] + others[rank - 1:])[:depth]
                    runs[name] += [f"{qid} Q0 {doc} {r} {100 - r:.1f} demo-{name}"
                                   for r, doc in enumerate(docs, start=1)]
    written = []
    for name, lines in (("maple-queries.tsv", queries), ("maple-qrels.txt", qrels),
                        ("maple-run-a.txt", runs["a"]), ("maple-run-b.txt", runs["b"])):
        with staged_file(folder / name) as staging:
            staging.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(folder / name)
    return written
