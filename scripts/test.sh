#!/usr/bin/env bash
# Set up, lint (ruff) and type-check (mypy; both configured in pyproject.toml, either failing
# fails the run), start a fresh local Label Studio (unless LABEL_STUDIO_URL names one), run
# the whole test suite (extra arguments go to pytest), then stop and remove that server.
# --fast (first argument): the developer's loop — no Label Studio, and pytest leaves out the
# browser, Label Studio, real-data, package and slow tests (pytest.ini names the markers).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest -q \
    -m "not (browser or labelstudio or realdata or package or slow)" "$@"
fi
if [ -z "${LABEL_STUDIO_URL:-}" ]; then
  ls_dir=data/labelstudio/test-$$
  trap 'scripts/labelstudio.sh stop --data-dir "$ls_dir" 2>/dev/null || true; rm -rf "$ls_dir"' EXIT
  ls_port=$(.venv/bin/python -c 'from devkit.labelstudio_local import free_port; print(free_port())')
  ls_url=$(scripts/labelstudio.sh start --data-dir "$ls_dir" --port "$ls_port")
  export "$ls_url"   # LABEL_STUDIO_URL=http://127.0.0.1:<port>
fi
.venv/bin/python -m pytest -q "$@"
