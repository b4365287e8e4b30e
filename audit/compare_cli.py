"""`python -m audit compare` and `python -m audit accept`: release acceptance, headless."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import compare, policy
from .errors import InputError


def _progress(started: float):
    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)
    return say


def _refuse_existing(out: str | None) -> None:
    if out and Path(out).exists():
        raise InputError(out, "already exists; a comparison never overwrites an earlier one",
                         expected="a new --out directory")


def versions(args: argparse.Namespace, say) -> tuple[compare.Version, compare.Version]:
    rules = policy.load(args.policy)
    return compare.release_versions(args.old, args.new, old_sources=args.old_source,
                                    new_sources=args.new_source, policy=rules, progress=say)


def cmd_compare(args: argparse.Namespace) -> int:
    say = _progress(time.perf_counter())
    _refuse_existing(args.out)
    old, new = versions(args, say)
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
    return 0


def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", help="the earlier release (file, shard directory, glob or JSONL)")
    p.add_argument("new", help="the corrected release")
    p.add_argument("--old-source", action="append", default=[], metavar="SOURCE",
                   help="HotpotQA source JSON for OLD (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--new-source", action="append", default=[], metavar="SOURCE",
                   help="HotpotQA source JSON for NEW; repeatable")
    p.add_argument("--policy", help="policy file (severities, thresholds, acceptance)")
    p.add_argument("--n-boot", type=int, default=compare.N_BOOT,
                   help=f"bootstrap replicates (default {compare.N_BOOT})")
    p.add_argument("--seed", type=int, default=compare.SEED,
                   help=f"bootstrap seed (default {compare.SEED})")


def add_parsers(sub) -> None:
    p = sub.add_parser("compare", help="match two versions of a release unit by unit: key "
                                       "equality, language agreement, changes, ΔR (Eq. 36)")
    _release_arguments(p)
    p.add_argument("--out", help="new directory for compare.json and the unit tables")
    p.add_argument("--json", action="store_true",
                   help="print all of compare.json (per-slice ΔR and transitions too)")
    p.set_defaults(func=cmd_compare)
