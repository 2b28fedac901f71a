#!/usr/bin/env bash
# Set up (see scripts/setup.sh) and run the whole test suite: lint, types, TypeScript unit
# tests, then pytest (unit, store crash/concurrency, real kernels, nbval notebooks, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
if [ -f labextension/package.json ]; then
  (cd labextension && ../.venv/bin/jlpm test)
fi
.venv/bin/pytest -n 2 --dist loadgroup "$@"
