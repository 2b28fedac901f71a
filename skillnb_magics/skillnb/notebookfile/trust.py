"""Jupyter's notebook trust, asked about a saved notebook (edge layer).

Jupyter signs a notebook when the user saves it after producing its outputs in their own
session, and keeps the signatures in ``nbsignatures.db`` beside a secret key in the Jupyter
data folder (:class:`nbformat.sign.NotebookNotary`); a notebook someone else wrote is not
signed until the user runs it or says ``jupyter trust``. SKILL.nb follows the same rule for
the ``%%workflow`` cell of a saved notebook: a rebuild takes its definition as trusted (its
``module:function`` callables may be imported) only when the notary trusts the notebook;
otherwise it is display-only. Asking never creates a key or a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["notebook_trusted"]


def notebook_trusted(nb: Mapping[str, Any], data_dir: str | Path | None = None) -> bool:
    """Tell whether this user's Jupyter has signed ``nb`` as trusted.

    Args:
        nb: the notebook JSON.
        data_dir: the Jupyter data folder (default: ``jupyter_data_dir()``).

    Returns:
        False when the notebook is unsigned, its signature does not match, the user has never
        signed a notebook (no key yet), or anything about the check fails.

    """
    from jupyter_core.paths import jupyter_data_dir

    folder = Path(data_dir) if data_dir is not None else Path(jupyter_data_dir())
    if not ((folder / "notebook_secret").is_file() and (folder / "nbsignatures.db").is_file()):
        return False
    try:
        from nbformat import from_dict
        from nbformat.sign import NotebookNotary

        # nbformat is untyped: its notary and from_dict carry no annotations.
        with NotebookNotary(data_dir=str(folder)) as notary:  # type: ignore[no-untyped-call]
            return bool(notary.check_signature(from_dict(dict(nb))))  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001  # an unreadable store or notebook means "not trusted"
        return False
