"""MAPLE multi-aspect retrieval runs (MAPLE paper §4.1, Table 5; SPEC §6).

Inputs (validated line by line; a bad line is an InputError naming it):
- qrels, TREC format `qid iter docid rel` (rel an integer; rel > 0 is relevant);
- a run, TREC format `qid Q0 docid rank score tag` (score a number, rank an integer);
- the query mapping, `qid paper aspect` (whitespace-separated, optional header line) or JSONL
  `{"query_id", "paper_id", "aspect"}`; aspect ∈ motivation, method, experiment-result
  ("experiment/result" and "experiment_result" are read as experiment-result).

Per query, hit@k (the target paper among the top k) is computed by `ranx` (its hit_rate@k,
trec_eval's success@k). The run's order is made explicit before the library sees it: score
descending, ties broken by the run's rank, then docid, so a tie never depends on the
library's sort. Queries of the mapping without a ranking score 0 and are counted; run
queries outside the mapping are ignored and counted; a mapped query without qrels is an
error (its hit is undefined).

Per paper p with queries Q_p: AllAspect@k = 1 if every query hits, AnyAspect@k = 1 if at
least one does, AspectCoverage@k = the share that hit; each is averaged over papers. Per
aspect, R@k = the share of that aspect's queries that hit. Intervals: a bootstrap over
papers (a paper carries all its queries), 2,000 replicates by default. Two runs: the
paired difference B − A with the same paper resamples, and a paired randomisation test
(sign flips of per-paper / per-query differences, SciPy's permutation_test, seeded).
ranx's own Fisher test draws from numba's per-thread generators and gives a different
p-value on every call even with one thread, so it cannot back a seeded report.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from .. import stats
from ..errors import InputError

ASPECTS = ("motivation", "method", "experiment-result")
_ASPECT_SPELLINGS = {"motivation": "motivation", "method": "method",
                     "experiment-result": "experiment-result",
                     "experiment/result": "experiment-result",
                     "experiment_result": "experiment-result"}
PAPER_METRICS = ("all_aspect", "any_aspect", "aspect_coverage")
N_BOOT = 2000
SEED = 20260810
N_PERMUTATIONS = 10_000


def _lines(path: Path):
    if not Path(path).is_file():
        raise InputError(path, "no such file")
    with Path(path).open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(path, f"invalid UTF-8 at byte {error.start}",
                                 where=f"line {number}") from None
            if line.strip():
                yield f"line {number}", line.split()


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for where, parts in _lines(Path(path)):
        if len(parts) != 4:
            raise InputError(path, f"{len(parts)} fields", where=where,
                             expected="qid iter docid rel")
        try:
            rel = int(parts[3])
        except ValueError:
            raise InputError(path, f"relevance {parts[3]!r} is not an integer",
                             where=where, expected="qid iter docid rel") from None
        qrels.setdefault(parts[0], {})[parts[2]] = rel
    if not qrels:
        raise InputError(path, "no judgement", expected="qid iter docid rel lines")
    return qrels


def read_run(path: str | Path) -> dict[str, list[tuple[str, int, float]]]:
    """qid → [(docid, rank, score)] in file order."""
    run: dict[str, list[tuple[str, int, float]]] = {}
    seen: set[tuple[str, str]] = set()
    for where, parts in _lines(Path(path)):
        if len(parts) != 6:
            raise InputError(path, f"{len(parts)} fields", where=where,
                             expected="qid Q0 docid rank score tag")
        try:
            rank, score = int(parts[3]), float(parts[4])
        except ValueError:
            raise InputError(path, f"rank {parts[3]!r} / score {parts[4]!r} not numeric",
                             where=where, expected="an integer rank and a number score"
                             ) from None
        if not np.isfinite(score):
            raise InputError(path, f"score {parts[4]!r} is not finite", where=where)
        if (parts[0], parts[2]) in seen:
            raise InputError(path, f"document {parts[2]!r} ranked twice for query "
                             f"{parts[0]!r}", where=where)
        seen.add((parts[0], parts[2]))
        run.setdefault(parts[0], []).append((parts[2], rank, score))
    if not run:
        raise InputError(path, "no ranked document", expected="qid Q0 docid rank score tag")
    return run


def read_queries(path: str | Path) -> dict[str, tuple[str, str]]:
    """qid → (paper, aspect)."""
    path = Path(path)
    mapping: dict[str, tuple[str, str]] = {}
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        from ..readers import iter_jsonl_objects
        entries = ((where, [obj.get("query_id"), obj.get("paper_id"), obj.get("aspect")])
                   for where, obj in iter_jsonl_objects(path))
    else:
        entries = _lines(path)
    for where, parts in entries:
        if where == "line 1" and [p.lower() for p in parts[:3]] in (
                ["qid", "paper", "aspect"], ["query_id", "paper_id", "aspect"]):
            continue
        if len(parts) != 3 or not all(isinstance(p, str) and p for p in parts):
            raise InputError(path, "not a query, paper and aspect", where=where,
                             expected="qid paper aspect")
        aspect = _ASPECT_SPELLINGS.get(parts[2].lower())
        if aspect is None:
            raise InputError(path, f"unknown aspect {parts[2]!r}", where=where,
                             expected=", ".join(ASPECTS))
        if parts[0] in mapping:
            raise InputError(path, f"query {parts[0]!r} mapped twice", where=where)
        mapping[parts[0]] = (parts[1], aspect)
    if not mapping:
        raise InputError(path, "no query", expected="qid paper aspect lines")
    return mapping


# ----------------------------------------------------------------------------- hits

def _ordered(run: dict[str, list[tuple[str, int, float]]]) -> dict[str, dict[str, float]]:
    """The run with strictly decreasing scores in the order score ↓, rank ↑, docid ↑."""
    out = {}
    for qid, docs in run.items():
        ranked = sorted(docs, key=lambda d: (-d[2], d[1], d[0]))
        out[qid] = {doc: float(len(ranked) - i) for i, (doc, _, _) in enumerate(ranked)}
    return out


def hits(qrels: dict, run: dict, queries: dict, ks: tuple[int, ...]) -> dict[int, np.ndarray]:
    """hit@k per mapped query (mapping order) from ranx."""
    from ranx import Qrels, Run, evaluate
    qids = list(queries)
    no_qrels = [q for q in qids if not any(v > 0 for v in qrels.get(q, {}).values())]
    if no_qrels:
        raise InputError("qrels", f"{len(no_qrels)} mapped quer(ies) without a relevant "
                         f"document, e.g. {no_qrels[0]!r}",
                         expected="a relevant document for every mapped query")
    ordered = _ordered(run)
    lib_qrels = Qrels({q: {d: r for d, r in qrels[q].items() if r > 0} for q in qids})
    lib_run = Run({q: ordered.get(q) or {} for q in qids})
    lib_run = lib_run.make_comparable(lib_qrels)
    with warnings.catch_warnings():   # numba's note about ranx's own uint64 → int64 ids
        warnings.simplefilter("ignore")
        scores = evaluate(lib_qrels, lib_run, [f"hit_rate@{k}" for k in ks],
                          return_mean=False)
    if len(ks) == 1:
        scores = {f"hit_rate@{ks[0]}": scores}
    order = {q: i for i, q in enumerate(lib_run.get_query_ids())}
    position = np.array([order[q] for q in qids])
    return {k: np.asarray(scores[f"hit_rate@{k}"], dtype=float)[position] for k in ks}


@dataclass
class RetrievalReport:
    metrics: pa.Table          # one row per (run, k, metric)
    per_query: pa.Table        # qid, paper, aspect, hit@k per run
    comparison: pa.Table | None
    summary: dict


METRIC_SCHEMA = pa.schema([
    ("run", pa.string()), ("k", pa.int64()), ("metric", pa.string()), ("level", pa.string()),
    ("n", pa.int64()), ("value", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("n_boot", pa.int64()),
])
COMPARISON_SCHEMA = pa.schema([
    ("k", pa.int64()), ("metric", pa.string()), ("a", pa.float64()), ("b", pa.float64()),
    ("difference", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("p_value", pa.float64()), ("p_holm", pa.float64()), ("test", pa.string()),
    ("n_permutations", pa.int64()),
])


def _paper_values(query_hits: np.ndarray, paper_index: np.ndarray, n_papers: int
                  ) -> dict[str, np.ndarray]:
    count = np.bincount(paper_index, minlength=n_papers)
    hit = np.bincount(paper_index, weights=query_hits, minlength=n_papers)
    return {"all_aspect": (hit == count).astype(float), "any_aspect": (hit > 0).astype(float),
            "aspect_coverage": hit / count}


def evaluate_runs(qrels_path, run_paths: list, queries_path, ks=(5, 10, 20),
                  n_boot: int = N_BOOT, seed: int = SEED,
                  n_permutations: int = N_PERMUTATIONS) -> RetrievalReport:
    """Metrics of one or two runs (module docstring)."""
    qrels, queries = read_qrels(qrels_path), read_queries(queries_path)
    runs = [read_run(p) for p in run_paths]
    labels = ["A", "B"][:len(runs)]
    qids = list(queries)
    papers, paper_index = np.unique([queries[q][0] for q in qids], return_inverse=True)
    aspect_codes = np.array([ASPECTS.index(queries[q][1]) for q in qids])
    paper_boot = stats.ClusterBootstrap(papers, n_boot, seed, "papers")
    query_boot = stats.ClusterBootstrap(paper_index, n_boot, seed, "papers")
    per_query = {"qid": qids, "paper": [queries[q][0] for q in qids],
                 "aspect": [queries[q][1] for q in qids]}
    rows, by_run = [], []
    for label, run in zip(labels, runs):
        run_hits = hits(qrels, run, queries, tuple(ks))
        values = {}
        for k in ks:
            per_query[f"hit@{k}_{label}"] = run_hits[k]
            paper = _paper_values(run_hits[k], paper_index, len(papers))
            est, reps = paper_boot.means(np.column_stack([paper[m] for m in PAPER_METRICS]))
            for j, metric in enumerate(PAPER_METRICS):
                low, high, _ = stats.percentile_interval(reps[:, 0, j])
                rows.append({"run": label, "k": k, "metric": metric, "level": "paper",
                             "n": len(papers), "value": float(est[0, j]), "ci_low": low,
                             "ci_high": high, "n_boot": n_boot})
                values[(k, metric)] = (paper[metric], "paper")
            est, reps = query_boot.means(run_hits[k], [(aspect_codes, len(ASPECTS))])
            for a, aspect in enumerate(ASPECTS):
                low, high, _ = stats.percentile_interval(reps[:, a, 0])
                rows.append({"run": label, "k": k, "metric": f"recall_{aspect}",
                             "level": "query", "n": int((aspect_codes == a).sum()),
                             "value": float(est[a, 0]), "ci_low": low, "ci_high": high,
                             "n_boot": n_boot})
                values[(k, f"recall_{aspect}")] = (run_hits[k], aspect)
        by_run.append(values)
    comparison = _compare(by_run, ks, paper_index, aspect_codes, paper_boot, query_boot,
                          n_permutations, seed) if len(runs) == 2 else None
    summary = {"queries": len(qids), "papers": len(papers),
               "aspects": {a: int((aspect_codes == i).sum()) for i, a in enumerate(ASPECTS)},
               "runs": {label: {"file": str(p), "queries_ranked": len(set(run) & set(qids)),
                                "queries_unranked": len(set(qids) - set(run)),
                                "queries_outside_mapping": len(set(run) - set(qids))}
                        for label, p, run in zip(labels, run_paths, runs)},
               "ks": list(ks), "n_boot": n_boot, "seed": seed,
               "hit_at_k": "ranx hit_rate@k (trec_eval success@k)"}
    return RetrievalReport(pa.Table.from_pylist(rows, schema=METRIC_SCHEMA),
                           pa.table(per_query), comparison, summary)


def _compare(by_run, ks, paper_index, aspect_codes, paper_boot, query_boot, n_permutations,
             seed) -> pa.Table:
    """B − A per k and metric: paired bootstrap interval over papers, randomisation p-value
    over papers (paper metrics) or the aspect's queries (recall), Holm across all rows."""
    rows = []
    for k in ks:
        for metric in (*PAPER_METRICS, *(f"recall_{a}" for a in ASPECTS)):
            (a_values, level), (b_values, _) = by_run[0][(k, metric)], by_run[1][(k, metric)]
            diff = b_values - a_values
            if level == "paper":
                _, reps = paper_boot.means(diff)
                inside = np.ones(len(diff), bool)
            else:
                inside = aspect_codes == ASPECTS.index(level)
                _, reps = query_boot.means(diff, [(np.where(inside, 0, -1), 1)])
            low, high, _ = stats.percentile_interval(reps[:, 0, 0])
            a_mean, b_mean = a_values[inside].mean(), b_values[inside].mean()
            rng = stats.rng_for(seed, "randomisation", str(k), metric)
            rows.append({"k": k, "metric": metric, "a": float(a_mean), "b": float(b_mean),
                         "difference": float(b_mean - a_mean), "ci_low": low, "ci_high": high,
                         "p_value": _randomisation_p(diff[inside], n_permutations, rng),
                         "test": "paired randomisation (sign flips), two-sided",
                         "n_permutations": n_permutations})
    adjusted = stats.holm([r["p_value"] for r in rows])
    return pa.Table.from_pylist([{**r, "p_holm": float(p)} for r, p in zip(rows, adjusted)],
                                schema=COMPARISON_SCHEMA)


def _randomisation_p(diff: np.ndarray, n_permutations: int, rng) -> float:
    """SciPy's paired permutation test of the mean difference (exact when 2^n is small)."""
    if len(diff) == 0 or not np.any(diff):
        return 1.0
    result = sps.permutation_test((diff,), np.mean, permutation_type="samples",
                                  n_resamples=n_permutations, alternative="two-sided",
                                  vectorized=True, random_state=rng)
    return float(result.pvalue)
