"""Findings on untouched real text, per language, and how many of them are false alarms:
every NTREX-128 reference (examples/ntrex128.toml) and XQuAD (examples/xquad.toml) scanned
as mapped releases.

    .venv/bin/python bench/mapped_alarms.py

A unit is a line (NTREX) or a distinct context, question or answer (XQuAD); it is flagged
when it holds a review or blocking finding. These are human translations, but not clean
ones: a flagged unit is a false alarm unless the text is wrong. Two kinds of finding are
wrong text by construction (`invalid_unicode`: NTREX's Bosnian reference holds C1 control
characters; `mojibake`: XQuAD's Arabic and Turkish hold repairable mojibake, NTREX's
Burmese reference is in the Zawgyi encoding). The flagged units of every language above 1 %
were read by bilingual reviewers: bench/judged/<release>.tsv holds, per unit, a key (the
first 16 hex digits of sha256 of language, column and text, joined by U+001F), the verdict
(real or false) and a short reason, and no text. Prints per language: units, flagged,
real (by construction or judged), judged false, not judged, and the false-alarm share,
counting every unit not judged as false.
"""

from __future__ import annotations

import csv
import hashlib
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.engine import scan  # noqa: E402
from audit.io import release as readers  # noqa: E402

BY_CONSTRUCTION = {"invalid_unicode", "mojibake"}


def unit_key(language: str, column: str, text: str) -> str:
    return hashlib.sha256(f"{language}\x1f{column}\x1f{text}".encode()).hexdigest()[:16]


def flagged_units(mapping: Path) -> tuple[dict[str, dict[str, set]], dict[str, int]]:
    """Per language: {unit key: its checks} of the flagged units, and the unit count."""
    result = scan.run(readers.open_release(mapping))
    with result.cursor() as con:
        units = dict(con.execute("""SELECT v.language, count(DISTINCT (u.paragraph_id, u.tgt))
                                    FROM units u JOIN views v USING (rid) GROUP BY 1""").fetchall())
        found = con.execute("""
            SELECT f.language, f.unit, u.tgt, f."check" FROM findings f
            JOIN units u ON u.rid = f."row" AND u.paragraph_id = f.unit
            WHERE f.severity <> 'info'""").fetchall()
    flagged: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for language, column, text, check in found:
        flagged[language][unit_key(language, column, text)].add(check)
    return flagged, units


def verdicts(name: str) -> dict[str, str]:
    path = REPO / "bench" / "judged" / f"{name}.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["key"]: row["verdict"] for row in csv.DictReader(handle, delimiter="\t")}


def main() -> None:
    for name in ("ntrex128", "xquad"):
        flagged, units = flagged_units(REPO / "examples" / f"{name}.toml")
        judged = verdicts(name)
        rows = []
        for language, n in units.items():
            tally = Counter()
            for key, checks in flagged[language].items():
                tally["real" if checks & BY_CONSTRUCTION else judged.get(key, "unjudged")] += 1
            false = tally["false"] + tally["unjudged"]
            rows.append((false / n, len(flagged[language]) / n, language, n, tally))
        rows.sort(reverse=True)
        shares = sorted(r[0] for r in rows)
        flagged_shares = sorted(r[1] for r in rows)
        print(f"{name}: {len(rows)} languages; false alarms median {shares[len(rows) // 2]:.2%}, "
              f"max {shares[-1]:.2%}, over 1 %: {sum(s > 0.01 for s in shares)}; flagged units "
              f"median {flagged_shares[len(rows) // 2]:.2%}, over 1 %: "
              f"{sum(s > 0.01 for s in flagged_shares)}")
        print(f"  {'language':10} {'units':>6} {'flagged':>8} {'real':>6} {'false':>6} "
              f"{'unjudged':>8}  false alarms")
        for false_share, flagged_share, language, n, tally in rows:
            print(f"  {language:10} {n:6,} {flagged_share:8.2%} {tally['real']:6} "
                  f"{tally['false']:6} {tally['unjudged']:8}  {false_share:.2%}")


if __name__ == "__main__":
    main()
