"""Fixtures and tools for developing the audit library, run as `python -m devkit …`: the demo
release generator and its oracle, the reference-builder port, the evaluation demo
generators and the local Label Studio process manager. They belong to this checkout (they
read and write its data/ and scripts/); `audit/` never imports them."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
