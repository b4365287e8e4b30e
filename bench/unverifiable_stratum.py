"""How many review units the "unverifiable" design has to draw from on issue 47's
single-view XQuAD release (tests/xquad_release.py, setting 'single': the paragraph in L,
question and answer in M ≠ L, no rendering of the answer in L anywhere).

    .venv/bin/python bench/unverifiable_stratum.py

The release is scanned with the two preservation checks alone, its unit table built
(audit/review/sampling.py) and, per paragraph language, the paragraph units counted by
their `preservation` attribute, the 'unverifiable' ones split into clean rows and damaged
copies (what a person would find lost), and the units the "unverifiable" preset draws.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

import cache_kind  # noqa: E402
import xquad_release  # noqa: E402

from audit.checks import registry  # noqa: E402
from audit.checks.preservation import PRESERVATION_NAMES  # noqa: E402
from audit.engine import scan  # noqa: E402
from audit.io import release as readers  # noqa: E402
from audit.review import sampling  # noqa: E402

WORK = Path(tempfile.gettempdir()) / "xhotpotqa-bench" / "unverifiable_stratum"


def paragraph_units(out: Path) -> tuple[list[dict], dict]:
    """The single-view release's paragraph units and the builder's {row id: unit}."""
    shutil.rmtree(out, ignore_errors=True)
    built = xquad_release.build(out, "single")
    others = frozenset(c.name for c in registry.REGISTRY) - set(PRESERVATION_NAMES)
    result = scan.run(readers.open_release(built["release"]), skip=others)
    units = sampling.build_units(result)
    drawn = set(sampling.sample_design(units, sampling.PRESETS["unverifiable"]).item_ids)
    rows = [{**unit, "drawn": unit["item_id"] in drawn} for unit in units.to_pylist()
            if unit["unit"] == "paragraph"]
    return rows, {row_id: unit for (row_id, _, _), unit in built["units"].items()}


def report(rows: list[dict], built: dict) -> None:
    counts: dict[str, Counter] = {lang: Counter() for lang in xquad_release.LANGUAGES}
    for row in rows:
        c = counts.setdefault(row["language"], Counter())
        c["paragraphs"] += 1
        c[row["preservation"] or "no finding"] += 1
        if row["preservation"] == "unverifiable":
            c["damaged" if built[row["id"]]["plant"] else "clean"] += 1
        c["drawn"] += row["drawn"]
    columns = ("paragraphs", "lost", "unverifiable", "clean", "damaged", "no finding", "drawn")
    print("\n== the 'preservation unverifiable' stratum on the single-view XQuAD release, "
          "per paragraph language (clean / damaged: the unverifiable units' rows)")
    print(f"{'lang':5} " + " ".join(f"{name:>12}" for name in columns))
    for lang, c in [*counts.items(), ("all", sum(counts.values(), Counter()))]:
        print(f"{lang:5} " + " ".join(f"{c[name]:12}" for name in columns))


def main() -> None:
    fresh = Path(tempfile.mkdtemp(prefix="preservation-cache-"))
    cache_kind.isolate("preservation", fresh)   # a cold cache, as bench/preservation.py
    try:
        started = time.perf_counter()
        rows, built = paragraph_units(WORK)
        print(f"{len(rows):,} paragraph units built, scanned and sampled in "
              f"{time.perf_counter() - started:.0f} s")
        report(rows, built)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    main()
