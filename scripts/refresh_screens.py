"""Refresh the screenshots the README shows, from the browser tests that take them.

Run with ``.venv/bin/python scripts/refresh_screens.py`` after building the extension
(``cd labextension && jlpm build:prod``). It runs the browser tests that photograph the
views in JupyterLab Light and Dark (``tests/ui/test_themes_browser.py`` and
``tests/ui/test_diagram_browser.py``); they leave every screenshot in
``test-output/screens/`` (not committed). The few the README shows are then copied to
``docs/screens/``, each cropped to its element by the test, so they stay small. Review the
images before committing them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TAKEN = REPO / "test-output" / "screens"
SHOWN = REPO / "docs" / "screens"
TESTS = ("tests/ui/test_themes_browser.py", "tests/ui/test_diagram_browser.py")
README_SCREENS = ("panel-light.png", "blocked-gate-dark.png", "pending-approval-dark.png")
"""The screenshots the README shows (``docs/screens/<name>``)."""
MAX_BYTES = 150_000
"""A screenshot larger than this is a sign the test photographed more than its element."""


def main() -> int:
    """Take the screenshots, copy the README's ones, and say what was written."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "skillnb_magics"), env.get("PYTHONPATH")])
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", *TESTS]
    tests = subprocess.run(command, cwd=REPO, env=env, check=False)  # noqa: S603 - our interpreter
    if tests.returncode != 0:
        sys.stderr.write("the browser tests failed: docs/screens/ was left as it was\n")
        return tests.returncode
    SHOWN.mkdir(parents=True, exist_ok=True)
    for name in README_SCREENS:
        source = TAKEN / name
        size = source.stat().st_size
        if size > MAX_BYTES:
            sys.stderr.write(f"{source} is {size} bytes: crop it to its element\n")
            return 1
        shutil.copyfile(source, SHOWN / name)
        sys.stdout.write(f"docs/screens/{name} ({size // 1024} KB)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
