"""Which team-store run a notebook uses: the store URL and the run's name (edge layer).

The store comes from ``%config SkillNB.store = "postgresql://…"`` or, failing that,
``SKILLNB_STORE``. The run's name comes from ``%skillnb use --name NAME``
(``SkillNB.run_name``) or, by default, from the notebook's path relative to the Jupyter
root: ``SKILLNB_ROOT``, which the SKILL.nb server extension sets to the server's root folder
for the kernels it starts (an analyst's ``reports/weekly.ipynb`` is run ``reports/weekly.ipynb``
whoever opens it, from whichever folder).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["ROOT_ENV", "default_run_name", "store_url"]

ROOT_ENV = "SKILLNB_ROOT"
"""The Jupyter root folder run names are relative to."""


def store_url(configured: str, env: Mapping[str, str]) -> str | None:
    """The team store URL (``SkillNB.store`` first, then ``SKILLNB_STORE``), or ``None``."""
    from skillnb.store.choose import store_from_env

    return configured.strip() or store_from_env(env)


def default_run_name(notebook: Path, env: Mapping[str, str], cwd: Path) -> str:
    """``notebook``'s path relative to the Jupyter root (``SKILLNB_ROOT``, else ``cwd``).

    A notebook outside the root is named by its absolute path.
    """
    root = Path(env.get(ROOT_ENV) or cwd).expanduser().resolve()
    path = notebook.resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
