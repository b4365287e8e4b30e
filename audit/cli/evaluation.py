"""CLI subcommands of the evaluation reports (issue 14), registered by audit/cli/main.py:

    evaluate RELEASE PRED.jsonl [PRED2.jsonl] [--out DIR]     predictions by language vector
    judge JUDGE.parquet [JUDGE2.parquet] [--release RELEASE]   LLM-judge sample reports
    retrieval QRELS RUN [RUN2] --queries MAP [--k 5,10,20]     MAPLE retrieval runs

Heavy imports stay inside the commands. Bad input raises InputError (exit 2 via main).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from audit.cli import options
from audit.errors import ExitCode, InputError
from audit.io.atomic import refuse_existing


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _scan(release_spec: str, sources: list[str], skip: list[str]):
    """A release's scan (status per row, findings) with the default policy: remembered, or
    made now."""
    from audit.checks import registry
    from audit.engine import policy, store
    from audit.io import release as readers
    unknown = sorted(set(skip) - set(registry.BY_NAME))
    if unknown:
        raise InputError("--skip", f"unknown check(s) {', '.join(unknown)}",
                         expected="names from `python -m audit checks`")
    release = readers.open_release(release_spec, sources)
    _say(f"scanning {release.rows:,} rows ({release.layout})")
    return release, store.scanned(release, policy.DEFAULT, frozenset(skip), _say)[0]


def _scan_status(scan_dir: str, rows: int):
    from audit.engine import store
    _, status, _ = store.load_scan(Path(scan_dir))
    if status.num_rows != rows:
        raise InputError(scan_dir, f"its status covers {status.num_rows:,} rows, the release "
                         f"{rows:,}", expected="a scan of this release")
    return status


# ------------------------------------------------------------------------------ evaluate

def cmd_evaluate(args: argparse.Namespace) -> int:
    from audit.evaluation import predictions, report
    from audit.io import release as readers
    from audit.language import descriptors
    refuse_existing(args.out, "report")
    files = [predictions.read_predictions(p) for p in args.predictions]
    if args.scan:
        release = readers.open_release(args.release, args.source)
        status = _scan_status(args.scan, release.rows)
    else:
        release, result = _scan(args.release, args.source, args.skip)
        status = result.status
    _say(f"scoring {', '.join(f.label for f in files)} against {release.rows:,} rows")
    evaluation = report.evaluate(predictions.gold(release), descriptors.descriptors(release),
                                 status, files, n_boot=args.n_boot, seed=args.seed)
    if args.out:
        report.write(evaluation, Path(args.out))
        _say(f"wrote {args.out}")
    print(json.dumps({**evaluation.metrics_json(), "runs": evaluation.summary["runs"]},
                     indent=2, ensure_ascii=False))
    return ExitCode.OK


# --------------------------------------------------------------------------------- judge

def _human_scores(batch: str | None):
    if not batch:
        return None
    from audit.evaluation import judge
    from audit.review import workspace
    table = workspace.Workspace(batch).annotations()
    if table is None:
        raise InputError(workspace.batch_dir(batch), "no pulled annotations",
                         expected="a review batch with annotations.parquet")
    return judge.human_adequacy(table)


def cmd_judge(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq
    refuse_existing(args.out, "report")
    release = findings = None
    if args.release:
        release, result = _scan(args.release, args.source, args.skip)
        findings = result.findings
    from audit.evaluation.judge_report import judge_reports
    reports = judge_reports(args.judge, release, findings, _human_scores(args.reviews),
                            args.n_boot, args.seed)
    if args.out:
        from audit.io.atomic import staged_directory, write_json
        with staged_directory(Path(args.out), what="report") as staging:
            for name, table in reports.items():
                if name != "files":
                    pq.write_table(table, staging / f"{name}.parquet")
            write_json(staging / "files.json", reports["files"])
        _say(f"wrote {args.out}")
    for i, path in enumerate(reports["files"]):
        issues = reports[f"validation_{i}"].to_pylist()
        print(f"{path}: {len(issues)} departure(s) from the schema and design")
        for issue in issues:
            print(f"  {issue['severity']:7} {issue['check']:15} {issue['detail']}")
        for row in reports[f"statistics_{i}"].to_pylist():
            if row["language"] == "all":
                print(f"  all languages {row['unit']:9} n={row['n']:5,} mean {row['mean']:7.3f} "
                      f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]  ({row['weighting']})")
    if "difference" in reports:
        print("second − first (descriptive: independent, unpaired samples)")
        for row in reports["difference"].to_pylist():
            if row["language"] == "all":
                print(f"  {row['unit']:9} {row['difference']:+7.3f} "
                      f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]")
    strict_errors = sum(1 for i in range(len(reports["files"]))
                        for r in reports[f"validation_{i}"].to_pylist()
                        if r["severity"] == "error")
    return ExitCode.FAILED if args.strict and strict_errors else ExitCode.OK


# ----------------------------------------------------------------------------- retrieval

def cmd_retrieval(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from audit.evaluation import retrieval
    refuse_existing(args.out, "report")
    report = retrieval.evaluate_runs(args.qrels, args.runs, args.queries,
                                     retrieval.parse_ks(args.k),
                                     n_boot=args.n_boot, seed=args.seed)
    if args.out:
        from audit.io.atomic import staged_directory, write_json
        with staged_directory(Path(args.out), what="report") as staging:
            pq.write_table(report.metrics, staging / "metrics.parquet")
            pq.write_table(report.per_query, staging / "per_query.parquet")
            if report.comparison is not None:
                pq.write_table(report.comparison, staging / "comparison.parquet")
            write_json(staging / "summary.json", report.summary)
    for row in report.metrics.to_pylist():
        print(f"{row['run']} @{row['k']:<3} {row['metric']:26} {100 * row['value']:6.1f} "
              f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]  n={row['n']}")
    if report.comparison is not None:
        for row in report.comparison.to_pylist():
            print(f"B − A @{row['k']:<3} {row['metric']:26} {100 * row['difference']:+6.1f} "
                  f"[{100 * row['ci_low']:+.1f}, {100 * row['ci_high']:+.1f}]  "
                  f"p={row['p_value']:.4f} Holm {row['p_holm']:.4f}")
    return ExitCode.OK


# ------------------------------------------------------------------------------- parsers

def add_parsers(sub) -> None:
    p = sub.add_parser("evaluate", help="score predictions by language vector: slices, "
                                        "contrasts, Table 17 sensitivity, paired differences")
    p.add_argument("release", help="the release the predictions are for")
    p.add_argument("predictions", nargs="+", metavar="PRED.jsonl",
                   help="one or two prediction files ({id, answer, supporting_facts})")
    p.add_argument("--out", help="new directory: metrics.json, slices.parquet, "
                                 "contrasts.parquet, summary.json")
    p.add_argument("--scan", help="a saved scan of this release (its status per row) "
                                  "instead of scanning it now")
    p.add_argument("--source", action="append", default=[],
                   help="HotpotQA source JSON (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--skip", action="append", default=[], metavar="CHECK",
                   help="leave a check out of the scan (repeatable)")
    options.resampling(p)
    p.set_defaults(func=_two_at_most(cmd_evaluate, "predictions"))

    p = sub.add_parser("judge", help="validate and report LLM-judge sample files")
    p.add_argument("judge", nargs="+", metavar="JUDGE.parquet", help="one or two judge files")
    p.add_argument("--release", help="the release the units come from (joins, exact copies)")
    p.add_argument("--source", action="append", default=[])
    p.add_argument("--skip", action="append", default=[], metavar="CHECK")
    p.add_argument("--reviews", metavar="BATCH",
                   help="a review batch whose adequacy ratings calibrate the judge")
    p.add_argument("--out", help="new directory for the report tables")
    options.resampling(p, 10_000)
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a departure of severity 'error' is found")
    p.set_defaults(func=_two_at_most(cmd_judge, "judge"))

    p = sub.add_parser("retrieval", help="MAPLE multi-aspect retrieval metrics of TREC runs")
    p.add_argument("qrels", help="TREC qrels: qid iter docid rel")
    p.add_argument("runs", nargs="+", metavar="RUN", help="one or two TREC runs")
    p.add_argument("--queries", required=True,
                   help="query mapping: qid paper aspect (or JSONL query_id, paper_id, aspect)")
    p.add_argument("--k", default="5,10,20", help="cut-offs (default 5,10,20)")
    p.add_argument("--out", help="new directory for the report tables")
    options.resampling(p)
    p.set_defaults(func=_two_at_most(cmd_retrieval, "runs"))


def _two_at_most(command, field: str):
    def run(args: argparse.Namespace) -> int:
        if len(getattr(args, field)) > 2:
            raise InputError(field, f"{len(getattr(args, field))} files", expected="one or two")
        return command(args)
    return run
