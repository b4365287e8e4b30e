"""MAPLE multi-aspect retrieval runs (MAPLE paper §4.1, Table 5; SPEC §6).

Inputs (validated line by line; a bad line is an InputError naming it):
- qrels, TREC format `qid iter docid rel` (rel an integer; rel > 0 is relevant);
- a run, TREC format `qid Q0 docid rank score tag` (score a number, rank an integer);
- the query mapping, `qid paper aspect` (whitespace-separated, optional header line) or JSONL
  `{"query_id", "paper_id", "aspect"}`; aspect ∈ motivation, method, experiment-result
  ("experiment/result" and "experiment_result" are read as experiment-result).

Per query, hit@k = 1 when the query's mapped paper is among the run's first k documents for
that query (MAPLE's 1[q →ₖ p]). The qrels must agree: a mapped query's relevant documents
are exactly its mapped paper (anything else is refused, naming the query), so the hit is
the same read from either. The run's order is trec_eval's: score descending, ties by
document id descending (byte order); the rank column is not used. Hits are computed in one
DuckDB join keyed by (query id, document id), so a query can never be paired with another
query's ranking. Queries of the mapping the run does not rank score 0 and are counted, as
are ranked queries whose paper the run does not retrieve; run queries outside the mapping
are ignored and counted; a mapped query without qrels is an error (its hit is undefined).
A (query, document) pair judged twice with different relevance is refused, naming both lines
(trec_eval refuses it too).

Per paper p with queries Q_p: AllAspect@k = 1 if every query hits, AnyAspect@k = 1 if at
least one does, AspectCoverage@k = the share that hit; each is averaged over papers. Per
aspect, R@k = the share of that aspect's queries that hit. Intervals: a bootstrap over
papers (a paper carries all its queries), 2,000 replicates by default. Two runs: the
paired difference B − A with the same paper resamples, and a paired randomisation test at
the same level: sign flips per paper (of its paper-metric difference, or of the sum of its
differences over the aspect's queries for R@k), SciPy's permutation_test, seeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy import stats as sps

from ..analysis import stats
from ..errors import InputError

ASPECTS = ("motivation", "method", "experiment-result")
_ASPECT_SPELLINGS = {"motivation": "motivation", "method": "method",
                     "experiment-result": "experiment-result",
                     "experiment/result": "experiment-result",
                     "experiment_result": "experiment-result"}
PAPER_METRICS = ("all_aspect", "any_aspect", "aspect_coverage")
N_BOOT = 2000
SEED = stats.SEED
N_PERMUTATIONS = 10_000
HIT_RULE = ("1 if the query's mapped paper (its only relevant document in the qrels) is among "
            "the run's first k documents for the query, in trec_eval's order: score "
            "descending, ties by document id descending, the rank column not used; an "
            "unranked query, or one whose paper the run does not retrieve, scores 0")


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
    """qid → {docid: relevance}."""
    qrels: dict[str, dict[str, tuple[int, str]]] = {}
    for where, parts in _lines(Path(path)):
        if len(parts) != 4:
            raise InputError(path, f"{len(parts)} fields", where=where,
                             expected="qid iter docid rel")
        try:
            rel = int(parts[3])
        except ValueError:
            raise InputError(path, f"relevance {parts[3]!r} is not an integer",
                             where=where, expected="qid iter docid rel") from None
        judged = qrels.setdefault(parts[0], {})
        if parts[2] in judged and judged[parts[2]][0] != rel:
            first, first_where = judged[parts[2]]
            raise InputError(path, f"query {parts[0]!r} document {parts[2]!r} judged "
                             f"{first} on {first_where} and {rel} on {where}", where=where,
                             expected="one relevance per query and document")
        judged.setdefault(parts[2], (rel, where))
    if not qrels:
        raise InputError(path, "no judgement", expected="qid iter docid rel lines")
    return {q: {d: rel for d, (rel, _) in judged.items()} for q, judged in qrels.items()}


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
        from ..io.tables import iter_jsonl_objects
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

def check_targets(qrels: dict, queries: dict) -> None:
    """Every mapped query's relevant documents are exactly its mapped paper (module
    docstring): otherwise a hit read from the qrels would not be MAPLE's 1[q →ₖ p]."""
    no_qrels = [q for q in queries if not any(v > 0 for v in qrels.get(q, {}).values())]
    if no_qrels:
        raise InputError("qrels", f"{len(no_qrels)} mapped quer(ies) without a relevant "
                         f"document, e.g. {no_qrels[0]!r}",
                         expected="a relevant document for every mapped query")
    for qid, (paper, _) in queries.items():
        relevant = sorted(d for d, rel in qrels[qid].items() if rel > 0)
        if relevant != [paper]:
            raise InputError("qrels", f"query {qid!r}: relevant document(s) "
                             f"{', '.join(map(repr, relevant))}, its mapped paper is {paper!r}",
                             expected="the mapped paper as the query's only relevant document")


_POSITIONS = """
SELECT m.ordinal, t.position
FROM mapping m
LEFT JOIN (SELECT qid, docid, row_number() OVER (PARTITION BY qid
                                                 ORDER BY score DESC, docid DESC) AS position
           FROM run) t
  ON t.qid = m.qid AND t.docid = m.paper
ORDER BY m.ordinal
"""


def target_positions(run: dict, queries: dict) -> np.ndarray:
    """Per mapped query (mapping order) the 1-based position of its paper in the run under
    trec_eval's order (score ↓, docid ↓), 0 when the run does not retrieve it."""
    from ..sql.connection import connect
    run_table = pa.table({
        "qid": [q for q, docs in run.items() for _ in docs],
        "docid": [d for docs in run.values() for d, _, _ in docs],
        "score": pa.array([s for docs in run.values() for _, _, s in docs], pa.float64())})
    mapping = pa.table({"ordinal": range(len(queries)), "qid": list(queries),
                        "paper": [paper for paper, _ in queries.values()]})
    con = connect()
    con.register("run", run_table)
    con.register("mapping", mapping)
    positions = con.sql(_POSITIONS).to_arrow_table().column("position")
    con.close()
    return positions.fill_null(0).to_numpy().astype(np.int64)


def hits(positions: np.ndarray, ks: tuple[int, ...]) -> dict[int, np.ndarray]:
    """hit@k per mapped query: its paper retrieved at a position ≤ k."""
    return {k: ((positions > 0) & (positions <= k)).astype(float) for k in ks}


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
    check_targets(qrels, queries)
    runs = [read_run(p) for p in run_paths]
    labels = ["A", "B"][:len(runs)]
    qids = list(queries)
    papers, paper_index = np.unique([queries[q][0] for q in qids], return_inverse=True)
    aspect_codes = np.array([ASPECTS.index(queries[q][1]) for q in qids])
    paper_boot = stats.ClusterBootstrap(papers, n_boot, seed, "papers")
    query_boot = stats.ClusterBootstrap(paper_index, n_boot, seed, "papers")
    per_query = {"qid": qids, "paper": [queries[q][0] for q in qids],
                 "aspect": [queries[q][1] for q in qids]}
    rows, by_run, not_retrieved = [], [], {}
    for label, run in zip(labels, runs):
        positions = target_positions(run, queries)
        per_query[f"position_{label}"] = pa.array(np.where(positions > 0, positions, None),
                                                  pa.int64())
        not_retrieved[label] = int(sum(1 for q, at in zip(qids, positions)
                                       if at == 0 and q in run))
        run_hits = hits(positions, tuple(ks))
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
                                "queries_paper_not_retrieved": not_retrieved[label],
                                "queries_outside_mapping": len(set(run) - set(qids))}
                        for label, p, run in zip(labels, run_paths, runs)},
               "ks": list(ks), "n_boot": n_boot, "seed": seed,
               "hit_at_k": HIT_RULE}
    return RetrievalReport(pa.Table.from_pylist(rows, schema=METRIC_SCHEMA),
                           pa.table(per_query), comparison, summary)


def _compare(by_run, ks, paper_index, aspect_codes, paper_boot, query_boot, n_permutations,
             seed) -> pa.Table:
    """B − A per k and metric: paired bootstrap interval over papers and a randomisation
    p-value flipping signs per paper (for recall, of the paper's summed differences over the
    aspect's queries: the statistic is their total over the aspect's n queries, so the test
    resamples the unit the interval resamples), Holm across all rows."""
    rows = []
    for k in ks:
        for metric in (*PAPER_METRICS, *(f"recall_{a}" for a in ASPECTS)):
            (a_values, level), (b_values, _) = by_run[0][(k, metric)], by_run[1][(k, metric)]
            diff = b_values - a_values
            if level == "paper":
                _, reps = paper_boot.means(diff)
                inside = np.ones(len(diff), bool)
                flipped = diff
            else:
                inside = aspect_codes == ASPECTS.index(level)
                _, reps = query_boot.means(diff, [(np.where(inside, 0, -1), 1)])
                flipped = _per_paper_sums(diff[inside], paper_index[inside])
            low, high, _ = stats.percentile_interval(reps[:, 0, 0])
            a_mean, b_mean = a_values[inside].mean(), b_values[inside].mean()
            rng = stats.rng_for(seed, "randomisation", str(k), metric)
            rows.append({"k": k, "metric": metric, "a": float(a_mean), "b": float(b_mean),
                         "difference": float(b_mean - a_mean), "ci_low": low, "ci_high": high,
                         "p_value": _randomisation_p(flipped, n_permutations, rng),
                         "test": "paired randomisation (sign flips per paper), two-sided",
                         "n_permutations": n_permutations})
    adjusted = stats.holm([r["p_value"] for r in rows])
    return pa.Table.from_pylist([{**r, "p_holm": float(p)} for r, p in zip(rows, adjusted)],
                                schema=COMPARISON_SCHEMA)


def _per_paper_sums(diff: np.ndarray, paper_index: np.ndarray) -> np.ndarray:
    """The summed difference of each paper that has queries here."""
    present, codes = np.unique(paper_index, return_inverse=True)
    return np.bincount(codes, weights=diff, minlength=len(present))


def _randomisation_p(diff: np.ndarray, n_permutations: int, rng) -> float:
    """SciPy's paired permutation test of the mean difference (exact when 2^n is small)."""
    if len(diff) == 0 or not np.any(diff):
        return 1.0
    result = sps.permutation_test((diff,), np.mean, permutation_type="samples",
                                  n_resamples=n_permutations, alternative="two-sided",
                                  vectorized=True, random_state=rng)
    return float(result.pvalue)


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise InputError("--k", f"{text!r} is not a comma-separated list of integers",
                         expected="e.g. 5,10,20") from None
    if not ks or min(ks) < 1:
        raise InputError("--k", f"{text!r}", expected="positive cut-offs, e.g. 5,10,20")
    repeated = sorted({k for k in ks if ks.count(k) > 1})
    if repeated:
        raise InputError("--k", f"{text!r} repeats {', '.join(map(str, repeated))}",
                         expected="each cut-off once, e.g. 5,10,20")
    return ks
