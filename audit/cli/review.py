"""`python -m audit review push|status|pull|adjudicate|report`: the review loop headless,
through the same functions as the Review and Annotations pages.

    review push SPEC                 route, invite and push a batch (spec.py describes SPEC)
    review status BATCH [--watch S]  done / skipped / remaining per annotator and language
    review pull BATCH                pull annotations; refusals appended to refusals.jsonl
    review release BATCH             give an annotator's queue back what another member
                                     took: the intruder's annotations logged in
                                     refusals.jsonl, the tasks labelable again
    review adjudicate BATCH [--adjudicator EMAIL:LANGS ...] [--reoffer]
                                     push the open disagreements to adjudicators; lists
                                     the ones an adjudicator skipped, --reoffer offers
                                     them again
    review report BATCH --out DIR [--kappa-floor K] [--release R [--source S]...]
                                     the CSV and Plotly HTML of every report into a new DIR
                                     (agreement pooled, per language and per annotator
                                     pair); prints each κ with its n and every κ below
                                     the κ floor (criterion, slice, raw agreement, n);
                                     with the batch's release, the preservation checks
                                     against the human flags too

Bad input (a spec, a batch, an unreachable server) is one line on stderr and exit 2.
Progress bars go to stderr. New accounts' passwords are printed once, on stdout, and
appended to the batch's credentials.txt (mode 600); nothing else ever shows them.
Heavy modules are imported inside the commands so `python -m audit` starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from audit.cli import options
from audit.errors import ExitCode, InputError
from audit.io.atomic import refuse_existing
from audit.settings import current


def add_parser(subparsers) -> None:
    review = subparsers.add_parser("review", help="the human review loop with Label Studio")
    review.add_argument("--workspace", help="review workspace (default data/reviews)")
    commands = review.add_subparsers(dest="review_command", required=True)
    p = commands.add_parser("push", help="route a batch spec's units to annotators and push")
    p.add_argument("spec", help="batch spec, .json or .toml (see audit/review/spec.py)")
    p.set_defaults(func=cmd_push)
    p = commands.add_parser("status", help="progress per annotator and language")
    p.add_argument("batch")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--watch", type=float, metavar="SECONDS",
                   help="poll again every SECONDS until interrupted")
    p.set_defaults(func=cmd_status)
    p = commands.add_parser("pull", help="pull a batch's annotations (idempotent)")
    p.add_argument("batch")
    p.set_defaults(func=cmd_pull)
    p = commands.add_parser("release", help="give back the tasks another member took from "
                                            "an annotator's queue")
    p.add_argument("batch")
    p.set_defaults(func=cmd_release)
    p = commands.add_parser("adjudicate", help="push the open disagreements to adjudicators")
    p.add_argument("batch")
    p.add_argument("--adjudicator", action="append", default=[], metavar="EMAIL:LANGS",
                   help="repeatable; default: the spec's adjudicators")
    p.add_argument("--reoffer", action="store_true",
                   help="offer the open items an adjudicator skipped again (deletes the skip "
                        "in Label Studio; the skip stays in skips.log.jsonl)")
    p.set_defaults(func=cmd_adjudicate)
    p = commands.add_parser("evidence", help="a paired batch's ΔH (Eq. 37) and preservation "
                                             "flags, as the acceptance gate reads them")
    p.add_argument("batch")
    p.add_argument("--out", help="write the JSON to this file (replaced atomically)")
    options.resampling(p, help="bootstrap replicates")
    p.set_defaults(func=cmd_evidence)
    p = commands.add_parser("report", help="write every report as CSV and Plotly HTML")
    p.add_argument("batch")
    p.add_argument("--out", required=True, help="a new directory")
    options.resampling(p, help="bootstrap replicates")
    p.add_argument("--kappa-floor", type=float, default=None, metavar="K",
                   help="flag every κ below K: pooled, per language, per pair (default 0.6)")
    p.add_argument("--release", help="the release the batch was drawn from: adds "
                                     "checks_vs_humans.csv (the preservation checks against "
                                     "the answer and entity flags)")
    p.add_argument("--source", action="append", default=[], metavar="SPEC",
                   help="its HotpotQA source (PATH or split=PATH), repeatable")
    p.set_defaults(func=cmd_report)


def _workspace(args: argparse.Namespace) -> Path:
    return Path(args.workspace) if args.workspace else current().reviews


class Bars:
    """Progress bars on stderr, one per Label Studio project: redrawn in place on a
    terminal, one line per finished project otherwise."""

    WIDTH = 30

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.current: str | None = None

    def __call__(self, title: str, done: int, total: int) -> None:
        if title != self.current and self.current is not None and self.tty:
            self.stream.write("\n")
        self.current = title
        filled = self.WIDTH * done // total if total else self.WIDTH
        line = f"{title[-48:]:48} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}"
        if self.tty:
            self.stream.write("\r" + line)
        elif done >= total:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.current is not None:
            self.stream.write("\n")
            self.stream.flush()


def _table(rows: list[dict], columns: list[str] | None = None) -> str:
    if not rows:
        return "(none)\n"
    columns = columns or list(rows[0])
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- push

def cmd_push(args: argparse.Namespace) -> int:
    from audit.review import spec as specs
    from audit.review.inputs import server_urls
    from audit.review.push import push
    from audit.review.sites import connect_sites
    from audit.review.workspace import batch_dir
    spec = specs.load(args.spec)
    workspace = _workspace(args)
    print(f"building the {spec.kind} batch…", file=sys.stderr)
    batch = specs.build_batch(spec)
    sites = connect_sites(server_urls(spec))
    bars = Bars()
    try:
        report = push(sites, batch, spec.annotators, workspace=workspace, progress=bars)
    finally:
        bars.close()
        sites.close()
    folder = batch_dir(batch.batch_id, workspace)
    from audit.io.atomic import staged_file, write_json
    with staged_file(folder / "spec.json") as staging:
        write_json(staging, spec.as_json())
    routed = len(batch.tasks) - len(report.routing["left_out"])
    print(f"batch {report.batch_id}: {len(batch.tasks):,} units, {routed:,} routed, "
          f"{len(report.routing['left_out']):,} left out; {report.sent:,} tasks sent; "
          f"blinding {report.blinding}")
    print(_table([{"project": p.title, "annotator": p.annotator, "items": p.n_items,
                   "sent": p.sent} for p in report.projects]), end="")
    notes = report.intrusion_notes()
    if notes:
        print("\n" + "\n  ".join(notes))
    short = [r for r in report.routing["shortfall"] if r["left_out"]]
    if short:
        print("\nshortfall per language:")
        print(_table(short, ["language", "units", "routed", "left_out", "readers", "reason"]),
              end="")
    _print_accounts(report, folder)
    return ExitCode.OK


def _print_accounts(report, folder: Path) -> None:
    found = [a for a in report.accounts if not a.created]
    if found:
        print("\naccounts found (signed up before; they log in with their own password): "
              + ", ".join(sorted({a.email for a in found})))
    if report.credentials:
        print(f"\nNEW ACCOUNTS (shown once; also in {folder / 'credentials.txt'}, mode 600):")
        for note in report.credentials:
            print(f"  {note.server}/user/login/  {note.email}  {note.password}")


# ------------------------------------------------------------------------- status

def cmd_status(args: argparse.Namespace) -> int:
    from audit.review.sites import ledger_sites
    from audit.review.status import status as poll
    workspace = _workspace(args)
    sites = ledger_sites(args.batch, workspace)
    try:
        while True:
            started = time.perf_counter()
            status = poll(sites, args.batch, workspace=workspace)
            _print_status(status, args.json, time.perf_counter() - started)
            if not args.watch:
                return ExitCode.OK
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        sites.close()


def _print_status(status, as_json: bool, seconds: float) -> None:
    if as_json:
        print(json.dumps({"batch_id": status.batch_id, "blinding": status.blinding,
                          "left_out": status.left_out, "projects": status.rows(),
                          "annotators": status.by("annotator"),
                          "groups": status.by("group"),
                          "intrusions": status.intrusions()}, indent=2))
        return
    print(f"batch {status.batch_id} · blinding {status.blinding} · "
          f"{status.left_out} units left out · read in {seconds:.2f} s")
    print("\nper annotator:\n" + _table(status.by("annotator")), end="")
    languages = status.by("group")
    if languages:      # a MAPLE batch has none
        print("\nper language:\n" + _table(languages), end="")
    missing = [p.key for p in status.projects if p.missing]
    if missing:
        print("\nprojects missing on the server: " + ", ".join(missing))
    if status.intrusions():
        print(f"\nintrusions: annotations by someone other than the project's annotator, "
              f"not counted above (`python -m audit review release {status.batch_id}` "
              f"gives the tasks back):\n" + _table(
                  [row | {"on_behalf_of": row["on_behalf_of"] or ""}
                   for row in status.intrusions()]), end="")
    sys.stdout.flush()


# ------------------------------------------------------------------------- pull

def cmd_pull(args: argparse.Namespace) -> int:
    from audit.review.pull import pull
    from audit.review.sites import ledger_sites
    from audit.review.workspace import batch_dir
    workspace = _workspace(args)
    sites = ledger_sites(args.batch, workspace)
    bars = Bars()
    try:
        report = pull(sites, args.batch, workspace=workspace, progress=bars)
    finally:
        bars.close()
        sites.close()
    print(f"batch {report.batch_id}: {report.rows_added:,} new rows ({report.rows_total:,} in "
          f"all) in {report.path}")
    print(_table([{"project": p.title, "annotator": p.annotator, "annotations": p.annotations,
                   "accepted": p.accepted, "skipped": p.skipped, "new": p.new,
                   "missing": p.missing} for p in report.projects]), end="")
    # The log is named only where it is: no refusal ever logged, no file.
    refusals = batch_dir(args.batch, workspace) / "refusals.jsonl"
    print(f"{len(report.rejected):,} refused" + (
        f" ({report.new_refusals:,} newly logged in {refusals})" if refusals.exists()
        else ""))
    for refusal in report.rejected[:20]:
        print(f"  {refusal['project']} task {refusal['task_id']}: {refusal['reason']}")
    made = report.corrections
    if made is not None:      # a post-edit batch: its submissions as correction records
        print(f"post-edit: {made.submissions:,} submission(s): {made.corrections:,} "
              f"correction(s), {made.fine:,} fine as it is, {made.unchanged:,} unchanged; "
              f"{made.appended:,} new record row(s) in {made.workspace / 'record'}\n"
              f"apply them: python -m audit repair apply RELEASE --from-batch "
              f"{made.workspace} --out DIR")
    return ExitCode.OK


# ------------------------------------------------------------------------- release

def cmd_release(args: argparse.Namespace) -> int:
    from audit.review.intrusions import release
    from audit.review.sites import ledger_sites
    from audit.review.workspace import batch_dir
    workspace = _workspace(args)
    sites = ledger_sites(args.batch, workspace)
    try:
        released = release(sites, args.batch, workspace=workspace)
    finally:
        sites.close()
    print(f"batch {args.batch}: {len(released)} project(s) with an intrusion")
    for project in released:
        print(f"  {project.describe()}")
    print(f"refusals in {batch_dir(args.batch, workspace) / 'refusals.jsonl'}")
    return ExitCode.OK


# ------------------------------------------------------------------------- adjudicate

def cmd_adjudicate(args: argparse.Namespace) -> int:
    from audit.review.push import push_adjudication, reoffer_hint
    from audit.review.sites import ledger_sites
    from audit.review.workspace import batch_dir
    workspace = _workspace(args)
    folder = batch_dir(args.batch, workspace)
    recorded = {}
    if (folder / "spec.json").exists():
        recorded = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
    adjudicators = args.adjudicator or recorded.get("adjudicators") or []
    if not adjudicators:
        raise InputError("--adjudicator", "no adjudicator given, and the batch's spec names "
                         "none", expected="--adjudicator EMAIL:LANGS (repeatable)")
    sites = ledger_sites(args.batch, workspace)
    bars = Bars()
    try:
        report = push_adjudication(sites, args.batch, adjudicators, workspace=workspace,
                                   progress=bars, reoffer=args.reoffer)
    finally:
        bars.close()
        sites.close()
    print(f"batch {report.batch_id}: {report.queue.num_rows:,} open items; "
          f"{report.sent:,} adjudication tasks sent")
    print(_table([{"project": p.title, "adjudicator": p.annotator, "items": p.n_items,
                   "sent": p.sent} for p in report.projects]), end="")
    for row in report.routing["left_out"][:20]:
        print(f"  not pushed: {row['item_id']}: {row['reason']}")
    for skip in report.reoffered:
        print(f"  offered again: {skip['item_id']} (task {skip['task_id']}, skipped by "
              f"{skip['annotator']})")
    if report.skipped:
        print(f"{len(report.skipped):,} open items skipped by their adjudicator: "
              f"{reoffer_hint(args.batch)}")
        for skip in report.skipped:
            print(f"  skipped: {skip['item_id']} (task {skip['task_id']}, by "
                  f"{skip['annotator']})")
    _print_accounts(report, folder)
    return ExitCode.OK


# ------------------------------------------------------------------------- report

def cmd_evidence(args: argparse.Namespace) -> int:
    from audit.io.atomic import staged_file, write_json
    from audit.review.kinds import paired
    found = paired.evidence(args.batch, _workspace(args), n_boot=args.n_boot, seed=args.seed)
    if args.out:
        with staged_file(Path(args.out)) as staging:
            write_json(staging, found)
    h = found["delta_h"]
    print(f"batch {found['batch_id']}: {found['complete_pairs']:,} of {found['pairs']:,} pairs "
          f"rated on both versions, {found['sources']:,} sources")
    if not found["sufficient"]:
        print("insufficient: " + "; ".join(found["insufficient"]))
        return ExitCode.OK
    print(f"ΔH (Eq. 37) {h['estimate']:+.3f} [{h['ci'][0]:+.3f}, {h['ci'][1]:+.3f}]")
    print(_table([{"flag": flag, "units": row["units"], "old": _rate(row["old_rate"]),
                   "new": _rate(row["new_rate"]), "new - old": _rate(row["difference"]),
                   "b": row["b"], "c": row["c"], "McNemar p": _rate(row["p_value"])}
                  for flag, row in found["preservation"].items()]), end="")
    return ExitCode.OK


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def cmd_report(args: argparse.Namespace) -> int:
    from audit.review import kinds
    from audit.review.reports import write_reports
    from audit.review.workspace import LEDGER, Workspace, batch_dir
    out = Path(args.out)
    refuse_existing(out, "report")
    if args.n_boot < 1:
        raise InputError("--n-boot", str(args.n_boot), expected="a positive number")
    floor = agreement_floor(args.kappa_floor)
    files = Workspace(args.batch, _workspace(args))
    table = files.annotations()
    if table is None or table.num_rows == 0:
        raise InputError(batch_dir(args.batch, _workspace(args)) / "annotations.parquet",
                         "nothing pulled yet", expected="`review pull` first")
    # a table pulled elsewhere may come without its ledger: the agreement reports then
    if files.path(LEDGER).exists() and kinds.of_config(files.ledger()["config"]).tables:
        return _span_report(args, files, table, out, floor)
    extra = {}
    if args.release:
        from audit.engine import scan
        from audit.io import release
        from audit.review import agreement, check_agreement
        final = agreement.final_frame(agreement.prepare(table))
        scanned = scan.run(release.open_release(args.release, args.source or None))
        extra["checks_vs_humans"] = check_agreement.against_humans(
            final, scanned, args.batch,
            _workspace(args))
    written = write_reports(table, out, n_boot=args.n_boot, seed=args.seed, extra=extra,
                            kappa_floor=floor, batch_id=args.batch,
                            skips=Workspace(args.batch, _workspace(args)).skips())
    print(f"{len(written)} files in {out}:")
    for name in written:
        print(f"  {name}")
    _print_agreement(out, floor)
    return ExitCode.OK


def _span_report(args: argparse.Namespace, files, table, out: Path, floor: float) -> int:
    """An error-span batch's reports (kinds/spans.py), then its character κ and the checks
    measured against people, each with the n and interval it rests on."""
    from audit.review import kinds
    from audit.review.reports import write_tables
    if args.release:
        raise InputError("--release", args.release, expected="no release for an error-span "
                         "batch: its pre-filled spans measure the checks "
                         "(checks_vs_people.csv)")
    kind = kinds.of_config(files.ledger()["config"])
    assert kind.tables is not None
    tables = kind.tables(table, files, args.n_boot, args.seed, floor)
    written = write_tables(tables, out)
    print(f"{len(written)} files in {out}:")
    for name in written:
        print(f"  {name}")
    print("\ncharacter κ over none / minor / major (95% cluster bootstrap):")
    print(_table([{"slice": f"{r['by']} {r['group']}", "κ": _number(r["kappa"]),
                   "95% interval": f"[{_number(r['ci_low'])}, {_number(r['ci_high'])}]",
                   "raw": _number(r["raw_agreement"]), "n": r["n_items"],
                   "characters": r["n_characters"], "state": r["state"]}
                  for r in tables["span_kappa"].to_pylist()]), end="")
    flagged = [r["note"] for r in tables["span_kappa"].to_pylist() if r["flagged"]]
    print(f"\nbelow the κ floor {floor:g}: {len(flagged)}")
    for note in flagged:
        print(f"  {note}")
    print("\nthe checks measured against people (95% Wilson):")
    print(_table([{"check": r["check"], "language": r["language"],
                   "pre-filled": r["n_prefilled"],
                   "kept": f"{_number(r['share_kept'])} [{_number(r['kept_low'])}, "
                           f"{_number(r['kept_high'])}] of {r['n_judgments']}",
                   "major spans proposed": f"{_number(r['recall'])} [{_number(r['recall_low'])}"
                                           f", {_number(r['recall_high'])}] of {r['n_serious']}"}
                  for r in tables["checks_vs_people"].to_pylist()
                  if r["language"] == "all"]), end="")
    return ExitCode.OK


def _number(value: float | None) -> str:
    return "—" if value is None or value != value else f"{value:.3f}"


def agreement_floor(value: float | None) -> float:
    from audit.review.agreement import KAPPA_FLOOR
    if value is None:
        return KAPPA_FLOOR
    if not -1 <= value <= 1:
        raise InputError("--kappa-floor", str(value), expected="a κ between -1 and 1")
    return value


def _print_agreement(out: Path, floor: float) -> None:
    """Each κ with the items it rests on, then every κ below the floor, pooled and per
    group, with its criterion, slice, raw agreement and n (read back from the CSVs just
    written, so the lines say exactly what the files hold)."""
    from pyarrow import csv

    from audit.review.agreement import floor_notes

    def rows(name: str) -> list[dict]:
        return csv.read_csv(out / f"{name}.csv").to_pylist()

    pooled = rows("agreement")
    print("\nκ pooled (95% cluster bootstrap; n = items with two initial annotations):")
    print(_table([_kappa_line(r) for r in pooled
                  if r["statistic"].startswith("cohen_kappa")]), end="")
    notes = [note for table in (pooled, rows("agreement_by_language"),
                                rows("agreement_by_pair"))
             for note in floor_notes(table, floor)]
    print(f"\nbelow the κ floor {floor:g}: {len(notes)}")
    for note in notes:
        print(f"  {note}")


def _kappa_line(row: dict) -> dict:
    return {"criterion": row["criterion"], "statistic": row["statistic"],
            "estimate": _number(row["estimate"]),
            "95% interval": f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]",
            "n": row["n_items"], "clusters": row["n_clusters"],
            "irregular": row["n_irregular"], "note": row["note"]}
