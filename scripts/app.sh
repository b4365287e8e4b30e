#!/usr/bin/env bash
# Set up, then serve the workbench on the bundled demo release at http://127.0.0.1:8501.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/streamlit run app.py --server.address 127.0.0.1 --server.port "${PORT:-8501}" \
  --server.headless true --browser.gatherUsageStats false
