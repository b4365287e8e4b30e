#!/usr/bin/env bash
# Create .venv and install the pinned requirements; a no-op when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi
