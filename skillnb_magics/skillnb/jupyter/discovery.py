"""Finding the notebook a kernel runs, from what the frontends leave behind (edge layer).

A kernel is not told which notebook it serves. The places looked at, first match wins:

1. ``SKILLNB_NOTEBOOK`` in the environment: an explicit choice (``skillnb run`` sets it), so
   it beats anything inherited, e.g. a ``JPY_SESSION_NAME`` leaking into a child process;
2. ``__vsc_ipynb_file__`` in the user namespace (VS Code);
3. ``__session__`` in the user namespace (ipykernel, from the Jupyter server's session);
4. ``JPY_SESSION_NAME`` in the environment (the Jupyter server's session path).

``%skillnb use PATH`` overrides all of them. A relative path that does not exist from the
kernel's working folder is tried by its file name there, since a Jupyter server starts the
kernel in the notebook's folder while session paths are relative to the server's root.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["NotebookLocation", "find_notebook", "resolve_notebook"]

_NAMESPACE_KEYS = ("__vsc_ipynb_file__", "__session__")


@dataclass(frozen=True)
class NotebookLocation:
    """Where the notebook is and how it was found."""

    path: Path
    """The notebook's absolute path (the file may not exist yet: an unsaved notebook)."""
    source: str
    """Where the path came from, e.g. ``SKILLNB_NOTEBOOK`` or ``__session__``."""


def resolve_notebook(value: str, cwd: Path) -> Path | None:
    """Return the absolute path of notebook ``value`` seen from ``cwd`` (``None``: not one).

    Only ``.ipynb`` paths count (a console's session name is not a notebook).
    """
    text = value.strip()
    if not text.endswith(".ipynb"):
        return None
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    direct = cwd / path
    if direct.exists() or len(path.parts) == 1:
        return direct.resolve()
    return (cwd / path.name).resolve()


def find_notebook(
    user_ns: Mapping[str, Any], env: Mapping[str, str], cwd: Path
) -> NotebookLocation | None:
    """Return the notebook this kernel runs, or ``None`` when nothing tells (see module docs)."""
    candidates: list[tuple[str, object]] = [("SKILLNB_NOTEBOOK", env.get("SKILLNB_NOTEBOOK"))]
    candidates += [(key, user_ns.get(key)) for key in _NAMESPACE_KEYS]
    candidates.append(("JPY_SESSION_NAME", env.get("JPY_SESSION_NAME")))
    for source, value in candidates:
        if isinstance(value, str) and value:
            path = resolve_notebook(value, cwd)
            if path is not None:
                return NotebookLocation(path, source)
    return None
