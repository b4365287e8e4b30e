"""The reports of one or two LLM-judge sample files: validation, statistics, exact copies,
calibration against human ratings, and the difference of two files."""

from __future__ import annotations

from . import judge


def judge_reports(paths: list[str], release=None, findings=None, human=None,
                  n_boot: int | None = None, seed: int | None = None) -> dict:
    """Every judge report for one or two files (the CLI's `judge` and the Judge page)."""
    n_boot = n_boot or judge.N_BOOT
    seed = judge.SAMPLING_SEED if seed is None else seed
    files = [judge.read_judge(p) for p in paths]
    out: dict = {"files": [str(f.path) for f in files]}
    for i, f in enumerate(files):
        boot = judge.bootstrap(f.table, n_boot, seed, f"file-{i}")
        out[f"validation_{i}"] = judge.validate(f, release)
        out[f"statistics_{i}"] = judge.statistics(f.table, boot)
        if release is not None and findings is not None:
            units = judge.copy_units(f.table, release, findings)
            out[f"units_{i}"] = units
            out[f"copies_{i}"] = judge.copy_split(units)
        if human is not None:
            out[f"calibration_{i}"], out[f"pairs_{i}"] = judge.calibration(
                f.table, human, min(n_boot, 2000), seed)
    if len(files) == 2:
        out["difference"] = judge.difference(files[0].table, files[1].table, n_boot, seed)
    return out
