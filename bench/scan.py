"""Benchmark: the default scan (every check, language compliance included) of releases built
from real text, phase by phase, beside the public reference builder.

    .venv/bin/python bench/scan.py [--reference TOOLKIT_DIR] [--only real|plus|copies|heavy]

Releases (bench/realtext.py, built once under bench/data/): `real` 990 sources × 24 views
= 23,760 rows; `plus` 23,066 × 24 = 553,584 views (XHotpotQA+); `copies` and `heavy` the
same shape with two and four sentences per context left untranslated, so that exact copies
give ~2.3 M and ~4.0 M findings.
Each scan is `python -m audit scan RELEASE --source …` in a child process: wall clock from
the command to its exit (start-up included), the time to its first line (start-up), each
phase from its progress lines, its CPU time (user + system, its child processes included:
steadier than wall clock on a machine whose speed drifts) and its peak RSS. Runs: `cold`,
the first scan ever (a fresh cache directory: parsed sources, grouped contexts, record
hashes, heuristics and language signals all computed); `warm`, the median of three rescans
(the remembered results of the same inputs, policy, checks and code are copied:
audit/engine/store.py); `rescan`, the median of three `--fresh` rescans (every signal cache
warm, the results computed again); `lang-cold`, the median of three `--fresh` rescans each
with the language cache (AUDIT_CACHE_DIR/langid) emptied, the issue's "cold cache".

With --reference, the reference toolkit's `build_record` builds the 23,760-row release from
the same source records and views in the same run (bench/reference_build.py, in a venv of
its dependencies, bench/.reference-venv, made on first use) and the ratios are printed.
Targets (issue 25): 23,760 rows cold ≥ 5× and warm ≥ 20× the reference; 553,584 views cold
< 30 s and warm < 5 s, peak RSS < 3 GiB on both; lang-cold ≤ 3× rescan.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import realtext  # noqa: E402

REPO = HERE.parent
PYTHON = sys.executable
WARM_RUNS = 3
_LINE = re.compile(r"\[\s*([\d.]+)s\] (.*)")
_CHECK_LINE = re.compile(r"([a-z_:]+) done in ([\d.]+) s")   # one whole-release check


def run_scan(info: dict, cache: Path, *extra: str) -> dict:
    """One CLI scan in a child process (`extra`: more arguments): wall, start-up, phases,
    CPU seconds, peak RSS."""
    out = Path(tempfile.mkdtemp(prefix="bench-scan-")) / "scan"
    env = {**os.environ, "AUDIT_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # compiled once, as an installed package is
    peak_file = out.parent / "peak"
    # GNU time reports this run's own peak RSS (getrusage's children maximum spans runs)
    # and CPU seconds (of the scan and the processes it forked).
    command = ["/usr/bin/time", "-q", "-f", "%M %U %S", "-o", str(peak_file), PYTHON, "-m",
               "audit", "scan", info["release"], "--source", f"validation={info['source']}",
               "--out", str(out), *extra]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first_line = proc.stderr.readline()
    startup = time.perf_counter() - started
    rest, _ = proc.stderr.read(), proc.wait()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"scan failed: {first_line}{rest}")
    summary = json.loads((out / "summary.json").read_text())
    peak, user, system = peak_file.read_text().split()[-3:]
    shutil.rmtree(out.parent)
    lines = [m.groups() for m in map(_LINE.match, (first_line + rest).splitlines()) if m]
    return {"wall": wall, "startup": startup, "peak_gib": int(peak) / 2**20,
            "cpu": (float(user), float(system)), "lines": lines,
            "seconds": summary["seconds"], "findings": sum(summary["check_counts"].values()),
            "rows": summary["rows"], "signals": summary.get("signals", {})}


def language_cold_scan(info: dict, cache: Path) -> dict:
    """A `--fresh` rescan with the language cache emptied (every other cache warm)."""
    shutil.rmtree(cache / "langid")
    return run_scan(info, cache, "--fresh")


def median_run(scan, *args) -> dict:
    """The median by wall clock of WARM_RUNS runs of `scan`."""
    return sorted((scan(*args) for _ in range(WARM_RUNS)),
                  key=lambda f: f["wall"])[WARM_RUNS // 2]


def report(name: str, label: str, f: dict) -> None:
    s = f["seconds"]
    opened = float(next(t for t, text in f["lines"] if text.startswith("v1.1 release")))
    share = s["findings_and_status"] / s["total"]
    print(f"{name:6} {label:9} {f['rows']:>8,} rows  wall {f['wall']:6.2f} s  "
          f"start-up {f['startup']:4.2f} s  open {opened:5.2f} s  checks {s['checks']:5.2f} s  "
          f"whole-release {s['whole_release_checks']:5.2f} s  findings+status "
          f"{s['findings_and_status']:5.2f} s ({share:.0%} of the scan)  scan {s['total']:6.2f} s"
          f"  CPU {f['cpu'][0]:.1f} user + {f['cpu'][1]:.1f} sys s"
          f"  peak RSS {f['peak_gib']:.2f} GiB  findings {f['findings']:,}", flush=True)
    slow = [(m.group(1), float(m.group(2))) for m in
            (_CHECK_LINE.fullmatch(text) for _, text in f["lines"]) if m and m.group(1) != "scan"]
    print("               whole-release checks: " + ", ".join(
        f"{n} {t:.1f} s" for n, t in slow), flush=True)
    for layer, done in f["signals"].items():   # a signal layer's own phases (s)
        print(f"               {layer} signals: " + ", ".join(
            f"{phase} {t:.2f}" for phase, t in done["seconds"].items()), flush=True)


def reference_python() -> str:
    venv = HERE / ".reference-venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "pyarrow", "ijson"],
                       check=True)
    return str(venv / "bin" / "python")


def checkout(toolkit: Path) -> Path:
    """A toolkit directory with its scripts: TOOLKIT itself, or, for a bare git mirror
    (the search tools' fetch), its scripts/ and src/ archived into a temporary directory."""
    if (toolkit / "scripts").is_dir():
        return toolkit
    target = Path(tempfile.mkdtemp(prefix="bench-toolkit-"))
    archive = subprocess.run(["git", "--git-dir", str(toolkit), "archive", "HEAD", "scripts",
                              "src"], capture_output=True, check=True)
    subprocess.run(["tar", "x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def run_reference(toolkit: Path, info: dict) -> float:
    toolkit = checkout(toolkit)
    python = reference_python()    # made before the clock starts: pip is not the reference's
    out = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, str(HERE / "reference_build.py"), str(toolkit),
                    info["release"], info["source"], str(out)], check=True,
                   capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    shutil.rmtree(out)
    return wall


# ------------------------------------------------------------------------ like for like

_REFERENCE_FLAG = re.compile(r'flags\.add\("([a-z_]+)"\)')


def reference_flags(toolkit: Path) -> set[str]:
    """The flags the reference's build_record computes (its `flags.add(...)` calls)."""
    text = (checkout(toolkit) / "scripts" / "build_hf_public_v1.py").read_text(encoding="utf-8")
    return set(_REFERENCE_FLAG.findall(text))


def like_for_like(toolkit: Path, runs: int) -> None:
    """Our scan doing the reference's work only — its flags, the status and the record
    hashes, every other check skipped — with an empty cache each run, beside the
    reference building the same 23,760 rows, in turn (A B A B …), so that drift in the
    machine's speed reaches both; medians of `runs` pairs."""
    import subprocess as sp
    info = realtext.release("real")
    toolkit = checkout(toolkit)     # once: its scripts compiled once, as ours are
    flags = reference_flags(toolkit)
    names = sp.run([PYTHON, "-m", "audit", "checks"], cwd=REPO, capture_output=True,
                   text=True, check=True).stdout
    ours = {line.split()[0] for line in names.splitlines()
            if line and not line.startswith(" ")}
    missing = flags - ours
    if missing:
        raise SystemExit(f"the reference computes flags we have no check for: {sorted(missing)}")
    skip = [a for name in sorted(ours - flags - {"record_hash_mismatch"})
            for a in ("--skip", name)]
    walls, references = [], []
    for _ in range(runs):
        cache = Path(tempfile.mkdtemp(prefix="bench-cache-"))
        try:
            walls.append(run_scan(info, cache, *skip))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        references.append(run_reference(toolkit, info))
    ratios = sorted(r / f["wall"] for r, f in zip(references, walls))
    mid = sorted(walls, key=lambda f: f["wall"])[runs // 2]
    print(f"like for like ({len(flags)} reference flags, status, record hashes; "
          f"{len(skip) // 2} checks skipped), 23,760 rows, empty cache, {runs} pairs:")
    print(f"  ours: wall {mid['wall']:.2f} s median (min {min(f['wall'] for f in walls):.2f}, "
          f"max {max(f['wall'] for f in walls):.2f}), start-up {mid['startup']:.2f} s, "
          f"CPU {mid['cpu'][0] + mid['cpu'][1]:.1f} s, peak RSS {mid['peak_gib']:.2f} GiB")
    print("  phases (s, from its progress lines): " + ", ".join(
        f"{text} @ {t}" for t, text in mid["lines"]))
    print(f"  reference build_record: wall {sorted(references)[runs // 2]:.2f} s median "
          f"(min {min(references):.2f}, max {max(references):.2f})")
    print(f"  reference / ours, pair by pair: median {ratios[runs // 2]:.1f}× (min "
          f"{ratios[0]:.1f}×, max {ratios[-1]:.1f}×; target ≥ 10×)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, help="a checkout of the XHotpotQA toolkit, or its bare git mirror")
    parser.add_argument("--only", choices=tuple(realtext.RELEASES), action="append")
    parser.add_argument("--like-for-like", type=int, metavar="PAIRS",
                        help="with --reference: only the reference's work, PAIRS runs of "
                             "each in turn (issue 49)")
    args = parser.parse_args()
    # Checked before any scan runs, not after minutes of them.
    if args.reference and not ((args.reference / "scripts").is_dir()
                               or (args.reference / "HEAD").is_file()):
        parser.error(f"--reference {args.reference}: expected a checkout of the XHotpotQA "
                     "toolkit (with scripts/) or its bare git mirror (with HEAD)")
    if args.like_for_like:
        if not args.reference:
            parser.error("--like-for-like needs --reference")
        like_for_like(args.reference, args.like_for_like)
        return
    for name in args.only or realtext.RELEASES:
        info = realtext.release(name)
        cache = Path(tempfile.mkdtemp(prefix="bench-cache-"))
        try:
            cold = run_scan(info, cache)
            report(name, "cold", cold)
            warm = median_run(run_scan, info, cache)
            report(name, "warm", warm)
            rescan = median_run(run_scan, info, cache, "--fresh")
            report(name, "rescan", rescan)
            language_cold = median_run(language_cold_scan, info, cache)
            report(name, "lang-cold", language_cold)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"{name:6} language cache cold / rescan "
              f"{language_cold['wall'] / rescan['wall']:.2f}× (target ≤ 3×); every cache cold "
              f"/ warm {cold['wall'] / warm['wall']:.2f}×", flush=True)
        if name == "real" and args.reference:
            reference = run_reference(args.reference, info)
            print(f"{name:6} reference build_record {reference:6.2f} s wall  →  ours cold "
                  f"{reference / cold['wall']:.1f}× faster (target ≥ 5×), warm "
                  f"{reference / warm['wall']:.1f}× (target ≥ 20×), rescan "
                  f"{reference / rescan['wall']:.1f}×", flush=True)


if __name__ == "__main__":
    main()
