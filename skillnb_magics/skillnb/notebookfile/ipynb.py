"""Reading and atomically rewriting ``.ipynb`` files as plain JSON (edge layer).

The mirror helpers change two kinds of keys (``metadata["skillnb"]`` and each cell's
``metadata["skillnb"]``) and nothing else, so they work on the notebook's JSON directly rather
than through an nbformat upgrade: every other byte of meaning in the file is kept, and the
file is written back the way Jupyter writes it (sorted keys, one-space indent, UTF-8, a final
newline). A write goes to a temporary file beside the target, is fsynced, then replaces the
target with :func:`os.replace`, so a crash leaves either the old or the new file, never half
of one.

Notebooks are untrusted input: nothing read here is evaluated.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from skillnb.core.safejson import json_depth_exceeds
from skillnb.errors import SkillnbError
from skillnb.store.durable import flush

__all__ = [
    "NotANotebook",
    "cell_source",
    "code_cells",
    "dump_notebook",
    "indent_of_file",
    "load_notebook",
    "replace_file",
]

_DEFAULT_INDENT = 1
_MAX_DEPTH = 500  # deeper JSON cannot be written back (json.dumps recurses) nor checked


class NotANotebook(SkillnbError):
    """The file is not nbformat 4 notebook JSON (invalid, nested too deeply, another format)."""


def load_notebook(path: str | Path) -> dict[str, Any]:
    """Read ``path`` as notebook JSON (nbformat 4).

    Raises:
        SkillnbError: the file is missing or unreadable.
        NotANotebook: it is not JSON, is nested too deeply, or is not nbformat 4.

    """
    nb_path = Path(path)
    try:
        text = nb_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillnbError(f"{nb_path}: no such notebook") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillnbError(f"{nb_path}: cannot read the notebook: {exc}") from exc
    if json_depth_exceeds(text, _MAX_DEPTH):  # measured on the text, before parsing
        raise NotANotebook(
            f"{nb_path}: not a notebook (JSON nested more than {_MAX_DEPTH} levels deep)"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotANotebook(
            f"{nb_path}:{exc.lineno}: not a notebook (invalid JSON: {exc.msg})"
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotANotebook(f"{nb_path}: not a notebook (no list of cells)")
    if data.get("nbformat") != 4:
        raise NotANotebook(
            f"{nb_path}: nbformat {data.get('nbformat')!r} is not supported; "
            "save it with a current Jupyter (nbformat 4)"
        )
    if not isinstance(data.get("metadata"), dict):
        data["metadata"] = {}
    return data


def _indent_of(text: str) -> int:
    """Return the indent the file uses (Jupyter writes 1), read from its second line."""
    lines = text.split("\n", 2)
    if len(lines) < 2:
        return _DEFAULT_INDENT
    stripped = lines[1].lstrip(" ")
    width = len(lines[1]) - len(stripped)
    return width if 0 < width <= 8 else _DEFAULT_INDENT


def dump_notebook(nb: Mapping[str, Any], *, indent: int = _DEFAULT_INDENT) -> str:
    """Serialise notebook JSON the way Jupyter does (sorted keys, UTF-8, final newline)."""
    return json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"


def replace_file(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file, fsync, ``os.replace``).

    The file keeps its permission bits when it already exists.
    """
    target = Path(path)
    folder = target.parent
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            flush(handle.fileno())
        if mode is not None:
            tmp.chmod(mode)
        else:
            tmp.chmod(0o644)
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some file systems do not open folders; the rename itself succeeded
    try:
        # Not every file system can fsync a folder (some network ones); the rename is done.
        with contextlib.suppress(OSError):
            flush(fd)
    finally:
        os.close(fd)


def indent_of_file(path: str | Path) -> int:
    """Return the JSON indent an existing notebook file uses (1 when unknown)."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            head = handle.read(256)
    except OSError:
        return _DEFAULT_INDENT
    return _indent_of(head)


def code_cells(nb: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, cell)`` for each well-formed code cell, in notebook order."""
    for index, cell in enumerate(nb.get("cells", [])):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            yield index, cell


def cell_source(cell: Mapping[str, Any]) -> str:
    """Return a cell's source as one string (nbformat allows a list of lines)."""
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def cell_tags(path: str | Path, cell_id: str | None, source: str = "") -> frozenset[str]:
    """The tags of the running cell in the notebook saved at ``path`` (best effort).

    The cell is the one with id ``cell_id`` (JupyterLab sends it), else the only code cell
    whose source is ``source`` (clients that send no id, e.g. nbclient). Empty when the file
    cannot be read or no single cell matches: the tags only refine wording (e.g.
    ``raises-exception``, for which Run All does not stop).
    """
    try:
        nb = load_notebook(path)
    except SkillnbError:
        return frozenset()
    cells = [cell for _, cell in code_cells(nb)]
    found = [c for c in cells if cell_id and c.get("id") == cell_id]
    if not found and source:
        found = [c for c in cells if cell_source(c) == source]
    if len(found) != 1:
        return frozenset()
    metadata = found[0].get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    if not isinstance(tags, list):
        return frozenset()
    return frozenset(t for t in tags if isinstance(t, str))
