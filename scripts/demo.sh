#!/usr/bin/env bash
# Set up (see scripts/setup.sh) and run the durable-workflow demo headless.
set -euo pipefail
cd "$(dirname "$0")/.."
SKILLNB_SKIP_BROWSER=1 scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
