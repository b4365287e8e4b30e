"""CHANGELOG.md: what one apply changed, in Markdown a release manager can paste into a
dataset card. It shows counts, check names, language codes and digests only: no author,
reason or text from a corrections file, and the release's name escaped."""

from __future__ import annotations

import re

from ..languages import BY_CODE

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def escape(text: str) -> str:
    """Outside text (a file name) as literal Markdown."""
    return _MARKDOWN.sub(r"\\\1", " ".join(text.split()))


def _language(code: str) -> str:
    known = BY_CODE.get(code)
    return f"{known.name} ({code})" if known else "unknown language"


def render(manifest: dict, release_name: str) -> str:
    counts = manifest["counts"]
    date = manifest["created_at"][:10]
    lines = [
        f"## Repair of {escape(release_name)} ({date})", "",
        f"{counts['applied']:,} correction(s) applied, {counts['held']:,} held for review, "
        f"{counts['refused']:,} refused; {counts['rows_changed']:,} row(s) changed "
        f"({manifest['layout']} layout).", "",
    ]
    if manifest["fixed_per_check"]:
        lines += ["| finding fixed | corrections |", "|---|---:|"]
        lines += [f"| `{check}` | {n:,} |" for check, n in manifest["fixed_per_check"].items()]
        lines.append("")
    languages = {code: c for code, c in manifest["per_language"].items() if c.get("applied")}
    if languages:
        lines += ["| language | corrections applied | views changed |", "|---|---:|---:|"]
        lines += [f"| {_language(code)} | {c['applied']:,} | {c.get('views', 0):,} |"
                  for code, c in languages.items()]
        lines.append("")
    if manifest["status_transitions"]:
        lines += ["| status before → after | rows |", "|---|---:|"]
        lines += [f"| {t} | {n:,} |" for t, n in manifest["status_transitions"].items()]
        lines.append("")
    provenance = manifest["provenance"]
    lines += [
        f"Every corrected row's `{provenance['field']}` ends in `+repair.<digest>`, the "
        f"correction record's digest `{manifest['record']['digest']}` "
        f"(`{manifest['record']['file']}`, {manifest['record']['entries']:,} entries); its "
        f"`{provenance['checksum']}` is recomputed and its flags and status re-derived by "
        "the release's own rule. Every other row is unchanged.",
    ]
    if counts["held"]:
        lines += ["", f"{counts['held']:,} correction(s) still raise a finding or disagree "
                      "with another: they are listed in `repair_manifest.json` and wait for "
                      "a reviewer's decision."]
    return "\n".join(lines) + "\n"
