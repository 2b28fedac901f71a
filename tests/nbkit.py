"""Helpers of the tests that run the shipped notebooks: copies of them, and a clean environment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SUPPORT = ("resume_extractor.py", "data")
"""What the shipped notebooks read beside them."""


def copy_notebook(dest: Path, stem: str, support: tuple[str, ...] = SUPPORT) -> Path:
    """Copy notebook ``stem`` and the files it reads into ``dest``; return the copy."""
    for name in support:
        source = NOTEBOOKS / name
        if source.is_dir():
            shutil.copytree(source, dest / name)
        else:
            shutil.copy2(source, dest / name)
    shutil.copy2(NOTEBOOKS / f"{stem}.ipynb", dest / f"{stem}.ipynb")
    return dest / f"{stem}.ipynb"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without SKILLNB_/JPY_ settings: skill memory in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
    env.update(SKILLNB_HOME=str(home), SKILLNB_USER="tester", **extra)
    return env
