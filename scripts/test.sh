#!/usr/bin/env bash
# Set up (see scripts/setup.sh) and run the whole test suite: lint and types (Python and
# TypeScript), then pytest: unit, store crash/concurrency, real kernels, nbval notebooks,
# the TypeScript unit tests and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports
(cd labextension && PATH="$PWD/../.venv/bin:$PATH" jlpm lint:check >/dev/null)
.venv/bin/pytest -n 2 --dist loadgroup "$@"
