"""Findings on untouched real text, per language: every NTREX-128 reference
(examples/ntrex128.toml) and XQuAD (examples/xquad.toml) scanned as mapped releases.

    .venv/bin/python bench/mapped_alarms.py

Prints, per language, the share of units (NTREX: lines; XQuAD: distinct contexts,
questions and answers) holding a review or blocking finding, and the checks behind it.
These are human translations: a finding is a false alarm unless the text is wrong (NTREX's
Bosnian reference does hold C1 control characters, its Burmese one Zawgyi-encoded text,
XQuAD's Arabic mojibake).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.engine import scan  # noqa: E402
from audit.io import release as readers  # noqa: E402


def alarms(mapping: Path) -> tuple[dict[str, set], dict[str, Counter], dict[str, int]]:
    """Per language: the flagged units (column and text), the checks, the unit count."""
    result = scan.run(readers.open_release(mapping))
    with result.cursor() as con:
        units = dict(con.execute("""SELECT v.language, count(DISTINCT (u.paragraph_id, u.tgt))
                                    FROM units u JOIN views v USING (rid) GROUP BY 1""").fetchall())
        found = con.execute("""
            SELECT f.language, f.unit, u.tgt, f."check" FROM findings f
            JOIN units u ON u.rid = f."row" AND u.paragraph_id = f.unit
            WHERE f.severity <> 'info'""").fetchall()
    flagged: dict[str, set] = defaultdict(set)
    checks: dict[str, Counter] = defaultdict(Counter)
    for language, unit, text, check in found:
        flagged[language].add((unit, text))
        checks[language][check] += 1
    return flagged, checks, units


def main() -> None:
    for name in ("ntrex128", "xquad"):
        flagged, checks, units = alarms(REPO / "examples" / f"{name}.toml")
        shares = sorted(((len(flagged[lang]) / n, lang) for lang, n in units.items()),
                        reverse=True)
        over = [lang for share, lang in shares if share > 0.01]
        print(f"{name}: {len(units)} languages; units with a review or blocking finding, "
              f"median {sorted(s for s, _ in shares)[len(shares) // 2]:.2%}; over 1 %: "
              f"{len(over)}")
        for share, lang in shares:
            top = ", ".join(f"{c} {n}" for c, n in checks[lang].most_common(3))
            print(f"  {lang:10} {share:6.2%} of {units[lang]:,}  {top}")


if __name__ == "__main__":
    main()
