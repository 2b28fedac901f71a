#!/usr/bin/env bash
# Set up the development environment: a virtualenv with the package (and its prebuilt
# JupyterLab extension) installed editable with the dev tools, plus Debian's Chromium for
# the browser tests. Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"

# The JupyterLab extension's own dev dependencies (TypeScript tests, lint).
if [ ! -d labextension/node_modules ]; then
  (cd labextension && PATH="$PWD/../.venv/bin:$PATH" jlpm install --immutable >/dev/null)
fi

if [ "${SKILLNB_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
  fi
fi
