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

Headless clients leave none of these behind, so two more places are looked at when nothing
above tells:

5. papermill's *input* notebook, when the kernel's parent process is the ``papermill``
   command (its first ``.ipynb`` argument, seen from that process's working folder);
   ``papermill --engine skillnb`` sets ``SKILLNB_NOTEBOOK`` instead, which also covers
   papermill's Python API;
6. the notebook in the kernel's working folder that holds the cell being run (nbclient,
   ``jupyter nbconvert --execute``, ``jupyter execute`` and nbmake start the kernel in the
   notebook's folder). When several copies hold it, the one named on the client's command
   line wins, then the one that already has a run; when that does not settle it, nothing is
   chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "NotebookLocation",
    "find_notebook",
    "named_notebooks",
    "notebook_holding",
    "papermill_input",
    "resolve_notebook",
    "resolve_use",
]

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


def resolve_use(value: str, base: Path) -> Path | None:
    """Resolve the ``.ipynb`` of ``%skillnb use PATH`` against ``base`` (``None``: not one).

    ``base`` is the folder of the notebook when it is known, else the kernel's working
    folder.

    Raises:
        FileNotFoundError: no such notebook (never a new run in the wrong place).

    """
    text = value.strip()
    if not text.endswith(".ipynb"):
        return None
    path = Path(text).expanduser()
    full = (path if path.is_absolute() else base / path).resolve()
    if not full.is_file():
        raise FileNotFoundError(f"no notebook {text!r} in {base} (looked for {full})")
    return full


def papermill_input(parent: tuple[list[str], str] | None) -> Path | None:
    """Return papermill's input notebook when ``parent`` is a ``papermill`` command.

    Args:
        parent: the parent process's command line and working folder (``None``: unknown).

    """
    if parent is None:
        return None
    argv, cwd = parent
    first = next((i for i, arg in enumerate(argv) if arg.endswith(".ipynb")), None)
    if first is None:
        return None
    # `papermill IN OUT`, `python -m papermill IN OUT`, `python .../bin/papermill IN OUT`
    if not any(Path(word).stem == "papermill" for word in argv[:first]):
        return None
    path = (Path(cwd) / Path(argv[first]).expanduser()).resolve()
    return path if path.is_file() else None


def parent_process() -> tuple[list[str], str] | None:
    """Return the command line and working folder of this process's parent, when readable."""
    try:
        import psutil

        parent = psutil.Process().parent()
        if parent is None:
            return None
        return list(parent.cmdline()), str(parent.cwd())
    except (ImportError, OSError, psutil.Error):
        return None


def _cells(path: Path) -> list[str]:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        cells = data.get("cells", [])
        out = []
        for cell in cells:
            source = cell.get("source", "")
            out.append("".join(source) if isinstance(source, list) else str(source))
    except (OSError, ValueError, AttributeError, TypeError):
        return []
    return out


def named_notebooks(parent: tuple[list[str], str] | None) -> list[Path]:
    """The notebooks named on the parent process's command line (``nbconvert X.ipynb``)."""
    if parent is None:
        return []
    argv, cwd = parent
    named = [(Path(cwd) / Path(a).expanduser()) for a in argv[1:] if a.endswith(".ipynb")]
    return [p.resolve() for p in named if p.is_file()]


def notebook_holding(
    cell: str, folder: Path, *, has_run: Any = None, named: list[Path] | None = None
) -> Path | None:
    """Return the one notebook in ``folder`` that holds a cell with source ``cell``.

    Args:
        cell: the source of the cell being run.
        folder: where to look (the kernel's working folder).
        has_run: ``path -> bool``; breaks a tie between copies in favour of the one that
            already has a run.
        named: notebooks the client was told to run (its command line); between copies,
            they win first (a duplicated notebook run by name gets its own run).

    """
    text = cell.strip()
    if not text:
        return None
    try:
        candidates = sorted(folder.glob("*.ipynb"))
    except OSError:
        return None
    found = [p for p in candidates if any(c.strip() == text for c in _cells(p))]
    if len(found) > 1 and named:
        found = [p for p in found if p.resolve() in named] or found
    if len(found) > 1 and has_run is not None:
        found = [p for p in found if has_run(p)] or found
    return found[0].resolve() if len(found) == 1 else None
