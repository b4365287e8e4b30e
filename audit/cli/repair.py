"""`python -m audit repair plan|apply`: the repair loop headless (parse and print only).

    repair plan RELEASE|SCAN_DIR [--status S]... [--checks C[,C]]... [--language L]...
                [--out DIR]
        the units to repair with their findings, current text and English source; --out
        writes plan.parquet, plan.csv, corrections.template.jsonl and summary.json
    repair apply RELEASE --corrections FILE [--corrections FILE]... --out DIR
                 [--from-batch BATCH_DIR]... [--workspace DIR] [--author NAME]
                 [--accept ID]... [--reject ID]... [--choose ID]... [--reviewer NAME]
        the corrected release in the input's layout, its correction record,
        repair_manifest.json and CHANGELOG.md, in a new DIR; --from-batch adds the
        corrections a `review pull` recorded for a post-edit batch (its folder)

Bad input (a malformed, stale or unknown correction, an unknown check or correction id)
is one line on stderr naming the file, the line and the row id, and exit 2; nothing is
written. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from audit.cli.progress import progress_printer
from audit.errors import ExitCode, InputError
from audit.io.atomic import refuse_existing

_DECISIONS = (("accept", "accepted"), ("reject", "rejected"), ("choose", "chosen"))


def add_parser(subparsers) -> None:
    repair = subparsers.add_parser("repair", help="from findings to a corrected release")
    commands = repair.add_subparsers(dest="repair_command", required=True)
    p = commands.add_parser("plan", help="the work list: units to repair with their "
                                         "findings, text and English source")
    p.add_argument("release", help="a release (file, shard directory, glob, JSONL) or a "
                                   "scan directory")
    p.add_argument("--source", action="append", default=[],
                   help="HotpotQA source JSON (PATH or SPLIT=PATH) when scanning; repeatable")
    p.add_argument("--policy", help="policy file (severities, thresholds) when scanning")
    p.add_argument("--status", action="append", choices=("quarantined", "review_required"),
                   help="statuses of the rows to repair (default both)")
    p.add_argument("--checks", action="append", default=[], metavar="CHECK[,CHECK]",
                   help="only units with a finding of these checks")
    p.add_argument("--language", action="append", default=[], metavar="CODE",
                   help="only units in these languages (ISO 639-1)")
    p.add_argument("--out", help="a new directory for the work list and a corrections "
                                 "template")
    p.set_defaults(func=cmd_plan)
    p = commands.add_parser("apply", help="apply corrections: a corrected release, its "
                                          "correction record, manifest and changelog")
    p.add_argument("release", help="the release to correct (file, shard directory, glob, "
                                   "JSONL)")
    p.add_argument("--corrections", action="append", default=[], metavar="FILE",
                   help="a corrections file (.jsonl or .csv); repeatable")
    p.add_argument("--from-batch", action="append", default=[], metavar="BATCH_DIR",
                   help="a pulled post-edit batch's folder (review push kind = "
                        "\"post-edit\"): its editors' corrections; repeatable")
    p.add_argument("--out", required=True, help="a new directory for the corrected release")
    p.add_argument("--workspace", help="a repair workspace: its record is read and "
                                       "appended to (earlier proposals and decisions count)")
    p.add_argument("--author", help="the author of lines that name none (a vendor's file)")
    for flag, _ in _DECISIONS:
        p.add_argument(f"--{flag}", action="append", default=[], metavar="CORRECTION_ID",
                       help=f"{flag} a correction (recorded with --reviewer); repeatable")
    p.add_argument("--reviewer", help="who decides (--accept, --reject, --choose)")
    p.add_argument("--policy", help="policy file: the severities that hold a correction")
    p.add_argument("--skip", action="append", default=[], metavar="CHECK",
                   help="leave this check out of the verdicts (repeatable)")
    p.set_defaults(func=cmd_apply)


def _names(values: list[str], flag: str) -> tuple[str, ...]:
    from audit.checks import registry
    names = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    unknown = sorted(set(names) - set(registry.BY_NAME))
    if unknown:
        raise InputError(flag, f"unknown check(s) {', '.join(unknown)}",
                         expected="names from `python -m audit checks`")
    return names


def _scanned(spec: str, sources: list[str], policy_file: str | None, say):
    """A release's scan: a scan directory's, or the release's (remembered or made now)."""
    from audit.engine import policy, store
    from audit.io import release as readers
    path = Path(spec)
    rules = policy.load(policy_file)
    if path.is_dir() and (path / "summary.json").is_file() and (
            path / "findings.parquet").is_file():
        return store.from_scan_dir(path, rules, say)
    release = readers.open_release(spec, sources)
    say(f"{release.layout} release, {release.rows:,} rows")
    return store.scanned(release, rules, progress=say)[0]


def cmd_plan(args: argparse.Namespace) -> int:
    from audit.repair import plan
    say = progress_printer(time.perf_counter())
    refuse_existing(args.out, "work list")
    checks = _names(args.checks, "--checks")
    scanned = _scanned(args.release, args.source, args.policy, say)
    release = scanned.release
    work = plan.work_list(scanned, tuple(args.status or plan.STATUSES), checks,
                          tuple(args.language))
    counts = plan.summary(work)
    if args.out:
        from audit.io import tables
        from audit.io.atomic import staged_directory, write_json
        with staged_directory(Path(args.out), what="work list") as staging:
            tables.write_table(work, staging / "plan.parquet", "parquet")
            tables.write_table(work, staging / "plan.csv", "csv")
            lines = plan.template(work, by_language=release.layout.has("aligned"))
            (staging / "corrections.template.jsonl").write_text(
                "".join(line + "\n" for line in lines), encoding="utf-8")
            write_json(staging / "summary.json", {"release": [str(p) for p in release.paths],
                                                  **counts})
        print(json.dumps({"out": args.out, **counts}, indent=2, ensure_ascii=False))
        return ExitCode.OK
    print("unit\tid\tparagraph_id\tsentence_index\tlanguage\tviews\trequired_for")
    for r in work.select(["unit", "id", "paragraph_id", "sentence_index", "language", "views",
                          "required_for"]).to_pylist():
        print("\t".join("" if r[k] is None else ",".join(r[k]) if k == "required_for"
                        else str(r[k]) for k in r))
    print(f"{counts['units']:,} unit(s) on {counts['views']:,} view(s)", file=sys.stderr)
    return ExitCode.OK


def cmd_apply(args: argparse.Namespace) -> int:
    from audit.engine import policy
    from audit.io import release as readers
    from audit.repair import apply as repair
    from audit.repair.corrections import read_file
    from audit.repair.record import Workspace
    from audit.review.kinds.post_edit import batch_corrections
    say = progress_printer(time.perf_counter())
    refuse_existing(args.out, "repair")
    decisions = [repair.Decision(action, cid, args.reviewer or "")
                 for flag, action in _DECISIONS for cid in getattr(args, flag)]
    if decisions and not (args.reviewer or "").strip():
        raise InputError("--reviewer", "a decision needs the reviewer's name",
                         expected="--reviewer NAME with --accept, --reject or --choose")
    if not args.corrections and not args.workspace and not args.from_batch:
        raise InputError("--corrections", "no corrections given",
                         expected="--corrections FILE, --from-batch BATCH_DIR or "
                                  "--workspace DIR")
    skip = frozenset(_names(args.skip, "--skip"))
    rules = policy.load(args.policy)
    corrections = [c for path in args.corrections for c in read_file(path, args.author)]
    inputs = [Path(p) for p in args.corrections]
    release = readers.open_release(args.release)
    for folder in map(Path, args.from_batch):
        found = batch_corrections(folder, release)
        if not found:
            raise InputError(folder, "no correction recorded for this release",
                             expected="a post-edit batch pulled (`review pull`) after its "
                                      "editors submitted")
        corrections += found
        inputs += Workspace(folder).files()
    say(f"{release.layout} release, {release.rows:,} rows; {len(corrections):,} correction(s)")
    result = repair.apply(release, corrections, Path(args.out),
                          workspace=Workspace(Path(args.workspace)) if args.workspace else None,
                          decisions=decisions, policy=rules, skip=skip,
                          inputs=inputs, progress=say)
    manifest = result.manifest
    print(json.dumps({
        "out": str(result.out), "counts": manifest["counts"],
        "record": manifest["record"],
        "held": [{k: e.get(k) for k in ("correction_id", "id", "unit", "paragraph_id",
                                        "sentence_index", "held_for")}
                 for e in manifest["held"]],
        "refused": dict(Counter(e["note"] for e in manifest["refused"])),
    }, indent=2, ensure_ascii=False))
    return ExitCode.OK
