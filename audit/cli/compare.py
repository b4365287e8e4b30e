"""`python -m audit compare` and `python -m audit accept`: release acceptance, headless."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from audit.cli import options
from audit.cli.progress import progress_printer
from audit.engine import policy
from audit.errors import ExitCode, InputError
from audit.io.atomic import refuse_existing, staged_directory, write_json
from audit.reports import compare
from audit.settings import current


def versions(args: argparse.Namespace, rules: policy.Policy, say
             ) -> tuple[compare.Version, compare.Version]:
    return compare.release_versions(args.old, args.new, old_sources=args.old_source,
                                    new_sources=args.new_source, policy=rules, progress=say)


def cmd_compare(args: argparse.Namespace) -> int:
    say = progress_printer(time.perf_counter())
    refuse_existing(args.out, "comparison")
    old, new = versions(args, policy.load(args.policy), say)
    result = compare.compare(old, new, n_boot=args.n_boot, seed=args.seed, progress=say)
    summary = result.as_json()
    if args.out:
        compare.write(result, Path(args.out))
        summary = {"out": args.out, **summary}
    if not args.json:
        summary = {k: summary[k] for k in ("out", "key_equality", "sources", "r_struct",
                                            "delta_r", "delta_r_ci", "changes", "findings")
                   if k in summary}
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return ExitCode.OK


def cmd_accept(args: argparse.Namespace) -> int:
    # Plotly and the review stack: imported only when a gate is asked for (CLI start-up).
    from audit.reports import acceptance, acceptance_html
    from audit.review.kinds import paired
    say = progress_printer(time.perf_counter())
    refuse_existing(args.out, "gate")
    rules = policy.load(args.policy)
    workspace = Path(args.workspace) if args.workspace else current().reviews
    if args.reviews:
        paired.read_pairs(args.reviews, workspace)   # a missing batch fails before scanning
    old, new = versions(args, rules, say)
    comparison = compare.compare(old, new, n_boot=args.n_boot, seed=args.seed, progress=say)
    evidence = None
    if args.reviews:
        say(f"paired review evidence of batch {args.reviews}")
        evidence = paired.evidence(args.reviews, workspace, n_boot=args.n_boot, seed=args.seed)
        _check_reviewed(args.reviews, evidence, comparison)
    decision = acceptance.decide(comparison.as_json(), evidence, rules.acceptance())
    if args.out:
        with staged_directory(Path(args.out), what="gate") as staging:
            write_json(staging / "acceptance.json", {**decision.as_json(), "evidence": evidence})
            (staging / "report.html").write_text(
                acceptance_html.report_html(decision, comparison, evidence), encoding="utf-8")
            compare.write_files(comparison, staging)
    for c in decision.criteria:
        hint = " (give one with --reviews)" if c.reason == acceptance.NO_REVIEWS else ""
        print(f"{c.criterion}. {c.name:13} {c.verdict.upper():13} {c.reason}{hint}")
    print(f"verdict: {decision.verdict.upper()}" + (f" (written to {args.out})"
                                                    if args.out else ""))
    return decision.exit_code


def _check_reviewed(batch: str, evidence: dict, comparison: compare.Comparison) -> None:
    """The batch must have been drawn from these very releases (by content)."""
    for version, described in (("old", comparison.old), ("new", comparison.new)):
        reviewed = (evidence["releases"].get(version) or {}).get("content")
        if reviewed != described["content"]:
            raise InputError(f"--reviews {batch}", f"the batch's {version.upper()} release is "
                             "not the one given (its files' SHA-256s differ)",
                             expected="the releases the batch was pushed from, as OLD and NEW")


def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", help="the earlier release (file, shard directory, glob or JSONL)")
    p.add_argument("new", help="the corrected release")
    p.add_argument("--old-source", action="append", default=[], metavar="SOURCE",
                   help="HotpotQA source JSON for OLD (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--new-source", action="append", default=[], metavar="SOURCE",
                   help="HotpotQA source JSON for NEW; repeatable")
    p.add_argument("--policy", help="policy file (severities, thresholds, acceptance)")
    options.resampling(p, compare.N_BOOT, f"bootstrap replicates (default {compare.N_BOOT})")


def add_parsers(sub) -> None:
    p = sub.add_parser("compare", help="match two versions of a release unit by unit: key "
                                       "equality, language agreement, changes, ΔR (Eq. 36)")
    _release_arguments(p)
    p.add_argument("--out", help="new directory for compare.json and the unit tables")
    p.add_argument("--json", action="store_true",
                   help="print all of compare.json (per-slice ΔR and transitions too)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("accept", help="the acceptance gate (paper C.4): key equality, "
                                      "structure, adequacy ΔH, preservation; exit 0 pass, "
                                      "1 fail, 3 insufficient evidence")
    _release_arguments(p)
    p.add_argument("--reviews", metavar="BATCH",
                   help="a pulled paired review batch (review push with kind = \"paired\" in "
                        "its spec); without it criteria 3 and 4 have insufficient evidence")
    p.add_argument("--workspace", help="review workspace (default data/reviews)")
    p.add_argument("--out", help="new directory for acceptance.json, report.html and the "
                                 "comparison")
    p.set_defaults(func=cmd_accept)
