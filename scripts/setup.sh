#!/usr/bin/env bash
# Set up the development environment: a virtualenv with the package (and its prebuilt
# JupyterLab extension) installed editable with the dev tools (Notebook 7 among them), plus
# Debian's Chromium for the browser tests. Safe to run again: it only does what is missing.
# Each step says what it installs; the first run takes a few minutes, mostly step 3.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

step() { printf '[%s/5] %s\n' "$1" "$2"; }

step 1 "virtualenv .venv ($PYTHON)"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
else
  echo "      already there"
fi

step 2 "pip, up to date"
.venv/bin/python -m pip install --quiet --upgrade pip

step 3 "skillnb (editable, with its prebuilt JupyterLab extension) and the dev tools: pytest, JupyterLab, Notebook 7, papermill, LangGraph, pgserver, Playwright... (minutes the first time)"
# pip's own lines show what is downloaded and installed; what is already there stays quiet.
set +e
.venv/bin/python -m pip install --progress-bar off -e ".[dev]" | grep -v '^Requirement already satisfied'
pip_status=${PIPESTATUS[0]}
set -e
[ "$pip_status" -eq 0 ] || exit "$pip_status"

step 4 "the JupyterLab extension's own dev dependencies (TypeScript tests, lint)"
if [ ! -d labextension/node_modules ]; then
  (cd labextension && PATH="$PWD/../.venv/bin:$PATH" jlpm install --immutable >/dev/null)
else
  echo "      already there"
fi

step 5 "Chromium for the browser tests (Debian's package)"
if [ "${SKILLNB_SKIP_BROWSER:-0}" = "1" ]; then
  echo "      skipped (SKILLNB_SKIP_BROWSER=1)"
elif command -v chromium >/dev/null 2>&1; then
  echo "      already there"
else
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
  fi
fi
echo "set up: .venv is ready"
