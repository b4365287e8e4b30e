#!/usr/bin/env bash
# Set up, start the review loop's local Label Studio (unless LABEL_STUDIO_URL names one), then
# serve the workbench on the bundled demo release at http://127.0.0.1:8501. Ctrl-C (or any
# termination) stops the app and the Label Studio this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
started_ls=""
app=""
cleanup() {
  [ -n "$app" ] && kill "$app" 2>/dev/null || true
  [ -n "$started_ls" ] && scripts/labelstudio.sh stop || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "${LABEL_STUDIO_URL:-}" ]; then
  if scripts/labelstudio.sh status >/dev/null; then
    export LABEL_STUDIO_URL="$(cat data/labelstudio/default/server.url)"
  elif ls_url=$(scripts/labelstudio.sh start --port "${LABEL_STUDIO_PORT:-8080}"); then
    export "$ls_url"
    started_ls=yes
  else
    echo "app.sh: Label Studio did not start; the review pages need LABEL_STUDIO_URL" >&2
  fi
fi
.venv/bin/streamlit run app.py --server.address 127.0.0.1 --server.port "${PORT:-8501}" \
  --server.headless true --browser.gatherUsageStats false &
app=$!
wait "$app"
