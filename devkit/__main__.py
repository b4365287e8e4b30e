"""`python -m devkit …`: regenerate this checkout's fixtures.

    demo [--out DIR]                                         the bundled demo release (data/demo/)
    eval-demo [--out DIR]                                    the evaluation demo files
    synth-judge OUT.parquet --profile v1|v2 [--release R]    a seeded synthetic judge file

Bad input prints one line and exits 2, as `python -m audit` does."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from audit.analysis.stats import SEED
from audit.errors import ExitCode, InputError
from audit.settings import DEMO_EVALUATION
from devkit import REPO


def cmd_demo(args: argparse.Namespace) -> int:
    from devkit.demo.build import generate_demo
    print(json.dumps(generate_demo(Path(args.out)), indent=2, default=str))
    return 0


def cmd_eval_demo(args: argparse.Namespace) -> int:
    from devkit.evaluation.demo import make_demo
    print(json.dumps(make_demo(Path(args.out)), indent=2))
    return 0


def cmd_synth_judge(args: argparse.Namespace) -> int:
    from audit.io import release as readers
    from devkit.evaluation import judge_synth
    release = readers.open_release(args.release, args.source) if args.release else None
    table = judge_synth.generate(args.profile, release=release, seed=args.seed)
    judge_synth.write(table, Path(args.out))
    print(json.dumps({"judge": args.out, "rows": table.num_rows, "profile": args.profile}))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m devkit", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="regenerate the bundled demo release")
    p.add_argument("--out", default=str(REPO / "data" / "demo"))
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("eval-demo", help="regenerate the demo prediction, judge and "
                                         "human-score files (deterministic)")
    p.add_argument("--out", default=str(DEMO_EVALUATION))
    p.set_defaults(func=cmd_eval_demo)
    p = sub.add_parser("synth-judge", help="write a seeded synthetic judge file whose means "
                                           "are the published ones")
    p.add_argument("out", metavar="OUT.parquet")
    p.add_argument("--profile", choices=("v1", "v2"), required=True)
    p.add_argument("--release", help="draw real units from this release")
    p.add_argument("--source", action="append", default=[])
    p.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed (default {SEED})")
    p.set_defaults(func=cmd_synth_judge)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return args.func(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)


if __name__ == "__main__":
    sys.exit(main())
