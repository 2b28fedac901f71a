"""The type drift check: the committed JSON Schema and TypeScript types are what the pydantic
models of skillnb.core.contract.shapes generate today (``scripts/gen_types.py --check``).

The schema half needs only Python; the TypeScript half needs node and
``labextension/node_modules`` (``jlpm install`` in ``labextension/``) and is skipped without.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_types.py"
GENERATOR = ROOT / "labextension" / "node_modules" / "json-schema-to-typescript"


def check(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_committed_schema_matches_the_models() -> None:
    done = check("--schema-only")
    assert done.returncode == 0, done.stderr


def test_the_committed_typescript_types_match_the_schema() -> None:
    if shutil.which("node") is None or not GENERATOR.is_dir():
        pytest.skip("run `jlpm install` in labextension/ to check the generated TypeScript")
    done = check()
    assert done.returncode == 0, done.stderr


def test_the_check_names_the_file_that_drifted(tmp_path: Path) -> None:
    schema = ROOT / "skillnb_magics" / "skillnb" / "core" / "contract.schema.json"
    saved = schema.read_text(encoding="utf-8")
    # Work on a copy of the script so the committed schema is never touched.
    copy = tmp_path / "scripts" / "gen_types.py"
    copy.parent.mkdir()
    shutil.copy(SCRIPT, copy)
    (tmp_path / "skillnb_magics" / "skillnb" / "core").mkdir(parents=True)
    stale = tmp_path / "skillnb_magics" / "skillnb" / "core" / "contract.schema.json"
    stale.write_text(saved.replace('"RunDescription"', '"RunDescriptionOld"', 1), "utf-8")
    done = subprocess.run(
        [sys.executable, str(copy), "--check", "--schema-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={"PYTHONPATH": str(ROOT / "skillnb_magics"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1
    assert "skillnb_magics/skillnb/core/contract.schema.json differs from the models" in (
        done.stderr
    )
    assert "scripts/gen_types.py" in done.stderr
