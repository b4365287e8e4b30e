"""Time the any-language script rule (audit/language/anyscript.py) on every NTREX-128 reference.

    .venv/bin/python bench/anyscript.py

Reads the 128 reference files of ../shared/realdata/ntrex128 (`newstest2019-ref.<code>.txt`
and the second Spanish reference `newstest2019-ref-2.spa.txt`, 1,997 lines each), gives each
line its language's accepted scripts (`language_info`) and prints the seconds
`script_verdicts` takes over all of them at once (the ICU script table built beforehand, and
separately), and the number of lines that mismatch.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.language import anyscript  # noqa: E402

NTREX = REPO.parent / "shared" / "realdata" / "ntrex128"


def main() -> None:
    texts, scripts = [], []
    for path in sorted(NTREX.glob("newstest2019-ref*.txt")):
        code = path.name.split(".")[1]
        info = anyscript.language_info(code)
        lines = path.read_text(encoding="utf-8").splitlines()
        texts += lines
        scripts += [info.scripts if info and info.scripts else None] * len(lines)
    start = time.perf_counter()
    anyscript._script_table()
    table = time.perf_counter() - start
    start = time.perf_counter()
    verdicts = anyscript.script_verdicts(texts, scripts)
    seconds = time.perf_counter() - start
    chars = sum(map(len, texts))
    print(f"ICU script table: {table:.2f} s")
    print(f"script_verdicts: {len(texts):,} texts ({chars / len(texts):.0f} chars on average) "
          f"in {seconds:.2f} s, {sum(m for m, _ in verdicts):,} mismatches")


if __name__ == "__main__":
    main()
