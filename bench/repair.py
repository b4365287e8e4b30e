"""Benchmark: applying 10,000 corrections to the 553,584-view XHotpotQA+ release
(bench/realtext.py `plus`: 23,066 sources × 24 views of real NTREX-128 text): seconds per
phase and peak memory.

    .venv/bin/python bench/repair.py [--corrections 10000] [--release plus]

The corrections are post-edits of seeded random units: 70% sentences, 10% titles, 5% whole
paragraphs (one sentence edited, the others resubmitted), 10% questions, 5% answers; each
edit swaps two neighbouring words (two characters in Chinese, Japanese and Thai), so the
text stays in its language and script with its numbers and final punctuation: what a light
post-edit looks like. Every context correction reaches the 24 views holding it.

Runs, each `python -m audit repair apply` in a child process (GNU time for its peak RSS):
  scan   the release is scanned once first (a plan needs a scan; it fills the caches)
  apply  10,000 corrections (their new texts never seen: language and heuristic signals
         computed for them), cold for the corrected rows
  again  another 10,000 (another seed) on the same release
Printed: wall, each phase from the progress lines, peak RSS, and what was applied, held and
refused, and how many views changed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pyarrow as pa  # noqa: E402
import realtext  # noqa: E402

REPO = HERE.parent
sys.path.insert(0, str(REPO))
from audit.io import release as readers  # noqa: E402
from audit.io.digests import text_sha256  # noqa: E402
from audit.io.units import paragraph_text  # noqa: E402
from audit.sql.macros import among  # noqa: E402

SEED = 20261221
MIX = (("sentence", 0.70), ("title", 0.10), ("paragraph", 0.05), ("question", 0.10),
       ("answer", 0.05))
UNSPACED = ("zh", "ja", "th")
_LINE = re.compile(r"\[\s*([\d.]+)s\] (.*)")


def swapped(text: str, language: str, rng: random.Random) -> str | None:
    """Two neighbouring words (characters, unspaced scripts) swapped, the last one kept;
    None when the text has too few."""
    if language in UNSPACED:
        chars = list(text)
        if len(chars) < 4:
            return None
        k = rng.randrange(len(chars) - 2)
        chars[k], chars[k + 1] = chars[k + 1], chars[k]
        edited = "".join(chars)
    else:
        words = text.split(" ")
        if len(words) < 3:
            return None
        k = rng.randrange(len(words) - 2)
        words[k], words[k + 1] = words[k + 1], words[k]
        edited = " ".join(words)
    return edited if edited != text else None


def draw(release_path: str, n: int, seed: int) -> list[dict]:
    """n corrections of seeded random units, in the documented format."""
    rng = random.Random(seed)
    release = readers.open_release(release_path)
    con = release.con
    contexts = con.sql("SELECT count(*) FROM contexts").fetchall()[0][0]
    rows = release.rows
    kinds = rng.choices([k for k, _ in MIX], [w for _, w in MIX], k=n * 2)
    chosen_ctx = rng.sample(range(contexts), min(contexts, n * 2))
    chosen_rid = rng.sample(range(rows), n * 2)
    wanted = among(con, chosen_ctx, pa.int32())
    cands = dict(con.sql(f"SELECT ctx, candidates FROM contexts WHERE ctx IN {wanted}"
                         ).fetchall())
    first = dict(con.sql(f"SELECT ctx, min_by(id, rid) FROM views WHERE ctx IN {wanted} "
                         "GROUP BY ctx").fetchall())
    views = {rid: (i, q, a, ql) for rid, i, q, a, ql in con.sql(
        "SELECT rid, id, question, answer, question_language FROM views WHERE rid IN "
        f"{among(con, chosen_rid)}").fetchall()}
    out, used = [], set()
    ctx_iter, rid_iter = iter(chosen_ctx), iter(chosen_rid)
    for kind in kinds:
        if len(out) == n:
            break
        if kind in ("question", "answer"):
            rid = next(rid_iter)
            row_id, question, answer, language = views[rid]
            old = question if kind == "question" else answer
            new = swapped(old, language, rng)
            if new is None:
                continue
            out.append({"id": row_id, "unit": kind, "old_sha256": text_sha256(old),
                        "text": new, "reason": "post-edit", "author": "bench"})
            continue
        ctx = next(ctx_iter)
        paragraph = rng.choice(cands[ctx])
        if paragraph["language_code"] == "en" or (ctx, paragraph["paragraph_id"]) in used:
            continue
        used.add((ctx, paragraph["paragraph_id"]))
        code = paragraph["language_code"]
        base = {"id": first[ctx], "unit": kind, "paragraph_id": paragraph["paragraph_id"],
                "reason": "post-edit", "author": "bench"}
        if kind == "title":
            new = swapped(paragraph["title"], code, rng)
            if new is not None:
                out.append({**base, "old_sha256": text_sha256(paragraph["title"]),
                            "text": new})
            continue
        sentences = list(paragraph["sentences"])
        k = rng.randrange(len(sentences))
        new = swapped(sentences[k], code, rng)
        if new is None:
            continue
        if kind == "sentence":
            out.append({**base, "sentence_index": k, "old_sha256": text_sha256(sentences[k]),
                        "text": new})
        else:
            edited = sentences[:k] + [new] + sentences[k + 1:]
            out.append({**base, "old_sha256": text_sha256(paragraph_text(sentences)),
                        "sentences": edited})
    con.close()
    return out


def run(command: list[str], cache: Path) -> dict:
    """One CLI run in a child process: wall, phases (progress lines), peak RSS, stdout."""
    peak = Path(tempfile.mkstemp(prefix="bench-repair-peak-")[1])
    env = {**os.environ, "AUDIT_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", str(peak), sys.executable,
                           "-m", "audit", *command], cwd=REPO, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr}")
    rss = int(peak.read_text().split()[-1]) / 2**20
    peak.unlink()
    lines = [(float(t), text) for t, text in (m.groups() for m in map(
        _LINE.match, done.stderr.splitlines()) if m)]
    return {"wall": wall, "peak_gib": rss, "lines": lines, "stdout": done.stdout}


def phases(lines: list[tuple[float, str]]) -> str:
    """Seconds from each phase's first progress line to the next phase's."""
    marks = [("open", "release,"), ("locate", "locating"), ("judge", "checking the corrected"),
             ("derive", "re-deriving flags"), ("write", "writing "), ("done", "applied ")]
    found = []
    for name, text in marks:
        at = next((t for t, line in lines if line.startswith(text) or text in line), None)
        if at is not None:
            found.append((name, at))
    return ", ".join(f"{a} {b_at - a_at:.1f} s" for (a, a_at), (_, b_at) in zip(found, found[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corrections", type=int, default=10_000)
    parser.add_argument("--release", default="plus", choices=tuple(realtext.RELEASES))
    args = parser.parse_args()
    info = realtext.release(args.release)
    work = Path(tempfile.mkdtemp(prefix="bench-repair-"))
    cache = work / "cache"
    try:
        scanned = run(["scan", info["release"], "--out", str(work / "scan")], cache)
        print(f"scan   {info['rows']:,} views  wall {scanned['wall']:6.1f} s  peak RSS "
              f"{scanned['peak_gib']:.2f} GiB (fills the caches, as the plan's scan does)",
              flush=True)
        for label, seed in (("apply", SEED), ("again", SEED + 1)):
            clock = time.perf_counter()
            lines = draw(info["release"], args.corrections, seed)
            fixes = work / f"{label}.jsonl"
            fixes.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                             encoding="utf-8")
            kinds = {k: sum(1 for x in lines if x["unit"] == k) for k, _ in MIX}
            print(f"{label:6} drew {len(lines):,} corrections {kinds} in "
                  f"{time.perf_counter() - clock:.1f} s", flush=True)
            result = run(["repair", "apply", info["release"], "--corrections", str(fixes),
                          "--out", str(work / label)], cache)
            counts = json.loads(result["stdout"])["counts"]
            print(f"{label:6} wall {result['wall']:6.1f} s  peak RSS {result['peak_gib']:.2f} "
                  f"GiB  applied {counts['applied']:,}, held {counts['held']:,}, refused "
                  f"{counts['refused']:,}; {counts['rows_changed']:,} views changed", flush=True)
            print(f"       phases: {phases(result['lines'])}", flush=True)
            shutil.rmtree(work / label)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
