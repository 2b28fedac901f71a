"""The extension's TypeScript unit tests (node's test runner), run from pytest.

They need ``labextension/node_modules`` (``jlpm install`` in ``labextension/``); without it
the test is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[2] / "labextension"


def test_typescript_unit_tests_pass() -> None:
    bin_dir = Path(sys.executable).parent
    jlpm = shutil.which("jlpm", path=str(bin_dir)) or shutil.which("jlpm")
    if jlpm is None or not (LABEXTENSION / "node_modules").is_dir():
        pytest.skip("run `jlpm install` in labextension/ to enable the TypeScript tests")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [jlpm, "test"],
        cwd=LABEXTENSION,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    passed = re.search(r"^\S+ pass (\d+)$", output, re.MULTILINE)
    assert passed is not None, output[-2000:]
    assert int(passed.group(1)) >= 30, output[-2000:]
    assert re.search(r"^\S+ fail 0$", output, re.MULTILINE), output[-2000:]
