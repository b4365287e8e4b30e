"""Options several commands share, each with one default: a batch's ΔH interval is the same
from `review evidence BATCH` and `accept --reviews BATCH`."""

from __future__ import annotations

import argparse

from audit.analysis.stats import SEED

N_BOOT = 2000   # bootstrap replicates, unless a command's statistic needs more


def seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed (default {SEED})")


def n_boot(p: argparse.ArgumentParser, default: int = N_BOOT, help: str | None = None
           ) -> None:
    p.add_argument("--n-boot", type=int, default=default, help=help)


def resampling(p: argparse.ArgumentParser, default: int = N_BOOT,
               help: str | None = None) -> None:
    """--n-boot and --seed."""
    n_boot(p, default, help)
    seed(p)
