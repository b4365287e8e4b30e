"""`xhq-audit …` / `python -m audit …`: the headless face of the audit library.

Only what a scan needs to find its remembered results (audit/engine/store.py) is imported
up front; the library (DuckDB, Arrow, the checks) when a command uses it, so a warm rescan
costs little more than the interpreter's start."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from audit.cli.progress import progress_printer
from audit.engine import store
from audit.errors import ExitCode, InputError
from audit.io.atomic import refuse_existing
from audit.paths import resolve_paths
from audit.settings import Settings, configure, one_blas_thread
from audit.sql.safe import literal


def cmd_scan(args: argparse.Namespace) -> int:
    say = progress_printer(time.perf_counter())
    refuse_existing(args.out)
    skip, target = frozenset(args.skip), Path(args.out) if args.out else None
    say(f"opening {args.release}")
    paths = resolve_paths(args.release)
    digests = store.input_digests(paths, args.source)
    key = store.files_identity(paths, args.source, digests, args.policy, skip)
    single = Path(args.release).is_file()
    restored = None if args.fresh or key is None else store.restore(
        key, paths, single, args.source, digests, target, say)
    if restored is not None:
        out, summary = restored
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="open") as pool:
            # DuckDB groups the release's contexts there (C++, mostly one core) while the
            # checks' modules import here (Python, ~0.2 s); a bad policy or --skip is still
            # the error reported, once the opening has ended.
            opening = pool.submit(_open, args.release, args.source, paths, digests)
            from audit.checks import registry
            from audit.engine import policy, scan
            rules = policy.load(args.policy)
            unknown = sorted(skip - set(registry.BY_NAME))
            if unknown:
                raise InputError("--skip", f"unknown check(s) {', '.join(unknown)}",
                                 expected="names from `python -m audit checks`")
            release = opening.result()
        say(f"{release.layout} release, {release.rows:,} rows in {len(release.paths)} file(s)")
        result = scan.run(release, rules, progress=say, skip=skip, describe=True)
        out = store.write_scan(result, target)     # and remembered under its identity
        say(f"written to {out}")
        summary = result.summary
    print(json.dumps({"scan": str(out), "rows": summary["rows"],
                      "status_counts": summary["status_counts"]}, indent=2))
    return ExitCode.OK


def _open(spec: str, sources: list[str] | None, paths: list[Path], digests: dict[str, str]):
    from audit.io import release as readers
    return readers.open_release(spec, sources, files=paths, known_digests=digests)


def cmd_export(args: argparse.Namespace) -> int:
    from audit.io import tables
    from audit.reports import quarantine
    statuses = tuple(args.status or ("quarantined", "review_required"))
    findings, status, _ = store.load_scan(Path(args.scan))
    table = quarantine.quarantine(findings, status, statuses)
    out = tables.write_table(table, Path(args.out), args.format or
                                  Path(args.out).suffix.lstrip(".") or "csv")
    print(f"{table.num_rows} reasons for {len(set(table.column('row').to_pylist()))} rows "
          f"→ {out}")
    return ExitCode.OK


def cmd_manifest(args: argparse.Namespace) -> int:
    from audit.io.atomic import staged_file
    scan_dir = Path(args.scan)
    store.load_scan(scan_dir)
    text = (scan_dir / "manifest.json").read_text(encoding="utf-8")
    if args.out:
        with staged_file(Path(args.out)) as staging:
            staging.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return ExitCode.OK


def cmd_checks(args: argparse.Namespace) -> int:
    from audit.checks import registry
    for check in registry.REGISTRY:
        print(f"{check.name:45} {','.join(check.units):9} {check.severity:8} {check.origin:11} "
              f"{','.join(sorted(registry.layouts_of(check))):16} {check.description}")
        if check.thresholds:
            print(f"{'':45} thresholds: " + ", ".join(
                f"{name} = {str(value).lower() if isinstance(value, bool) else value}"
                for name, value in check.thresholds) + "  (tune: [thresholds."
                f"{check.name}] in --policy)")
    return ExitCode.OK


def cmd_descriptors(args: argparse.Namespace) -> int:
    from audit.io import release as readers
    from audit.io.atomic import staged_file
    from audit.language import descriptors
    out = Path(args.out)
    if out.is_dir():
        raise InputError(out, "is a directory", expected="a .parquet file path for --out")
    release = readers.open_release(args.release, args.source)
    cached = descriptors.cached(release)
    with staged_file(out) as staging:
        shutil.copyfile(cached, staging)
    print(json.dumps({"descriptors": str(out), "rows": release.rows,
                      **descriptors.counts(release.con, f"read_parquet({literal(str(cached))})")},
                     indent=2, ensure_ascii=False))
    return ExitCode.OK


def _descriptor_table(spec: str, sources: list[str]):
    """A scan directory's descriptors.parquet, else the descriptors of a release."""
    from audit.io import release as readers
    from audit.io.tables import read_parquet
    from audit.language import descriptors
    path = Path(spec)
    if path.is_dir() and (path / "descriptors.parquet").is_file():
        return read_parquet(path / "descriptors.parquet")
    return descriptors.descriptors(readers.open_release(spec, sources))


def cmd_mixing(args: argparse.Namespace) -> int:
    from audit.analysis import mixing  # SciPy and statsmodels: only the command that needs them
    result = mixing.mixing(_descriptor_table(args.release, args.source))
    if args.json:
        print(json.dumps(mixing.to_json(result), indent=2, ensure_ascii=False))
    else:
        print(mixing.format_report(result), end="")
    return ExitCode.OK


def _scan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("release", help="a Parquet file, a directory of shards, a glob, JSONL, "
                                   "or a mapping file (.toml, README: Mapping a benchmark)")
    p.add_argument("--source", action="append", default=[],
                   help="HotpotQA source JSON (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--out", help="new directory for the scan (default data/scans/…)")
    p.add_argument("--policy", help="JSON/TOML file overriding check severities")
    p.add_argument("--skip", action="append", default=[], metavar="CHECK",
                   help="do not run this check (repeatable), e.g. the slow language_mismatch")
    p.add_argument("--fresh", action="store_true",
                   help="scan again even when a scan of these inputs, policy, checks and "
                        "code is remembered")
    p.set_defaults(func=cmd_scan)


def scan_parser() -> argparse.ArgumentParser:
    """The scan command alone (what `parser` gives it), without importing the library."""
    p = argparse.ArgumentParser(prog="python -m audit scan",
                                description="run every check over a release")
    _scan_arguments(p)
    return p


def parser() -> argparse.ArgumentParser:
    from audit.cli import compare, evaluation, repair, review
    from audit.engine import scan
    from audit.io import tables
    top = argparse.ArgumentParser(prog="python -m audit", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    _scan_arguments(sub.add_parser("scan", help="run every check over a release"))
    p = sub.add_parser("export-quarantine", help="write the quarantine list of a scan")
    p.add_argument("scan", help="a scan directory")
    p.add_argument("--out", required=True, help="output file (.csv, .jsonl or .parquet)")
    p.add_argument("--format", choices=tables.QUARANTINE_FORMATS)
    p.add_argument("--status", action="append", choices=scan.STATUS_ORDER,
                   help="statuses to include (default quarantined and review_required)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("manifest", help="print or write the manifest of a scan")
    p.add_argument("scan", help="a scan directory")
    p.add_argument("--out", help="write it to this file instead of stdout")
    p.set_defaults(func=cmd_manifest)
    p = sub.add_parser("descriptors", help="write the per-row language descriptors "
                                           "(ℓq, gold/distractor languages, ρ, H, K_C, "
                                           "strata, script relation, roles)")
    p.add_argument("release", help="a Parquet file, a directory of shards, a glob, or JSONL")
    p.add_argument("--source", action="append", default=[],
                   help="HotpotQA source JSON (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--out", required=True, help="output .parquet file (replaced atomically)")
    p.set_defaults(func=cmd_descriptors)
    p = sub.add_parser("mixing", help="expected vs realised language mixing, Table 11 "
                                      "distribution, strata and relation counts")
    p.add_argument("release", help="a release (as for scan) or a scan directory")
    p.add_argument("--source", action="append", default=[],
                   help="HotpotQA source JSON (PATH or SPLIT=PATH); repeatable")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_mixing)
    p = sub.add_parser("checks", help="list the check registry")
    p.set_defaults(func=cmd_checks)
    compare.add_parsers(sub)
    evaluation.add_parsers(sub)
    review.add_parser(sub)
    repair.add_parser(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    """The entry point (`xhq-audit`, `python -m audit`): the settings from the environment,
    then the command; bad input is one line on stderr and exit 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    one_blas_thread()
    configure(Settings.from_env())
    plain_scan = argv[:1] == ["scan"] and not {"-h", "--help"} & set(argv)
    args = scan_parser().parse_args(argv[1:]) if plain_scan else parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
