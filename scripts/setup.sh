#!/usr/bin/env bash
# Create .venv and install the pinned requirements; a no-op when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
# PyICU compiles against the system ICU; the browser tests drive Debian's chromium, and the
# Noto fonts give Thai, Bengali, Devanagari, Arabic-script and CJK text real glyphs.
packages="libicu-dev pkg-config chromium fonts-noto-core fonts-noto-cjk"
if ! dpkg -s $packages >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages \
    >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # (The filter drops pip's notes about an unused local index on these machines.)
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt 2>&1 \
    | { grep -v "^WARNING: Location 'file:///opt/" || true; }
  echo "$want" > "$stamp"
fi
