"""Two corrections of the bundled demo, shared by the Repair page's tests: one repairs the
Dutch sentence with U+FFFD inside a word (applied: invalid_unicode fixed); one fills the
blank Turkish sentence with its English source (held: a near copy of the source)."""

from __future__ import annotations

import json
from pathlib import Path

from audit.repair import plan

DUTCH = ("34962fa499bf98cd04217dcc", "p00", 1, "Ze werkte drie decennia lang in Berlijn.")
TURKISH = ("42984c31986f332064d56256", "p00", 2, "It is the highest mountain in Africa.")


def write_fixes(scanned, path: Path, author: str = "") -> Path:
    """The two corrections as a JSONL file made from the demo's corrections template."""
    lines = [json.loads(line) for line in plan.template(plan.work_list(scanned))]
    fixes = []
    for row_id, pid, k, text in (DUTCH, TURKISH):
        line = next(x for x in lines if (x["id"], x["unit"], x.get("paragraph_id"),
                                         x.get("sentence_index")) == (row_id, "sentence", pid, k))
        fixes.append({**line, "text": text, "reason": "other", "author": author})
    path.write_text("".join(json.dumps(f, ensure_ascii=False) + "\n" for f in fixes),
                    encoding="utf-8")
    return path
