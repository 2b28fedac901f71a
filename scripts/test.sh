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
# LangGraph's own graph tests with SkillnbSaver run beside the rest (scripts/langgraph_suite.py).
mkdir -p test-output
.venv/bin/python scripts/langgraph_suite.py -n 1 >test-output/langgraph-suite.log 2>&1 &
langgraph_suite=$!
status=0
.venv/bin/pytest -n 2 --dist loadgroup "$@" || status=$?
if ! wait "$langgraph_suite"; then
    tail -n 60 test-output/langgraph-suite.log
    status=1
fi
tail -n 1 test-output/langgraph-suite.log
exit "$status"
