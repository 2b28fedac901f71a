"""Turning a path from an HTTP request into a notebook inside the server root (server edge).

Request paths are untrusted: they are relative, ``/``-separated contents paths, as JupyterLab
sends them. Absolute paths, ``..`` segments and anything that resolves outside the root
(a symlink pointing out, for instance) are refused before any file is touched. Hidden
notebooks and notebooks in hidden folders are answered 404, as jupyter_server's contents
API answers them, unless the server allows hidden files (``ContentsManager.allow_hidden``).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from jupyter_core.paths import is_hidden

__all__ = ["PathRefused", "ensure_inside", "resolve_notebook"]

_MAX_PATH = 4096


class PathRefused(Exception):
    """A request path that cannot be served.

    Attributes:
        status: the HTTP status to answer with (400 malformed, 403 outside the root,
            404 no such notebook).
        message: what is wrong, for the ``{"error": ...}`` answer.

    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def ensure_inside(root: Path, path: Path) -> Path:
    """Return ``path`` resolved, or refuse it when it resolves outside ``root``.

    Raises:
        PathRefused: 403 when the resolved path leaves the resolved root.

    """
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise PathRefused(403, "the path leads outside the server root")
    return real


def resolve_notebook(root: Path, request_path: str, *, allow_hidden: bool = False) -> Path:
    """Return the notebook named by ``request_path``, inside ``root``.

    The returned path is ``root`` joined with the request's segments, not resolved, so the
    sidecar is found where the kernel (which sees the same name) looks for it.

    Raises:
        PathRefused: 400 for an empty, absolute, ``..``-bearing or non-notebook path, 403 for
            one that resolves outside ``root``, 404 when no such notebook file exists or it is
            hidden (and ``allow_hidden`` is false).

    """
    if not request_path or len(request_path) > _MAX_PATH or "\x00" in request_path:
        raise PathRefused(400, "'path' must be a notebook path relative to the server root")
    posix = PurePosixPath(request_path)
    if posix.is_absolute() or PureWindowsPath(request_path).drive or request_path.startswith("\\"):
        raise PathRefused(400, "'path' must be relative to the server root, not absolute")
    parts = [p for p in posix.parts if p not in ("", ".")]
    if any(p == ".." or "\\" in p for p in parts):
        raise PathRefused(400, "'path' must not contain '..' or backslashes")
    if not parts or not parts[-1].endswith(".ipynb"):
        raise PathRefused(400, "'path' must name a .ipynb notebook")
    notebook = root.joinpath(*parts)
    real = ensure_inside(root, notebook)
    hidden = any(p.startswith(".") for p in parts) or _hidden(real, root.resolve())
    if not notebook.is_file() or (hidden and not allow_hidden):
        raise PathRefused(404, f"no notebook at {'/'.join(parts)!r}")
    return notebook


def _hidden(path: Path, root: Path) -> bool:
    """jupyter_server's test (dot names, the hidden flag) on the resolved path."""
    try:
        return bool(is_hidden(str(path), str(root)))
    except OSError:
        return True
