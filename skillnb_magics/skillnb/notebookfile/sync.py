"""Notebook files and SKILL.nb: read and write the metadata mirror, rebuild a run (edge layer).

These helpers work on ``.ipynb`` files *that no editor has open* (after ``skillnb run``, in
scripts, in CI): with a notebook open in JupyterLab the labextension writes the mirror into
the live model instead, because the kernel never rewrites an open notebook (saving would
overwrite it, or JupyterLab would report the file changed on disk).

* :func:`read_mirror` returns the validated ``metadata["skillnb"]`` (``None`` when absent or
  malformed; malformed gives a :class:`MirrorWarning`).
* :func:`write_mirror` writes ``metadata["skillnb"]`` and each step cell's
  ``cell.metadata["skillnb"]`` for a run, atomically, leaving everything else as it was.
* :func:`rebuild_run` rebuilds the run from the notebook's outputs and mirror when the sidecar
  is gone (see :mod:`skillnb.notebookfile.rebuild` for what is kept and how).
* :func:`recover` lists what a notebook holds about its run, without writing anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillnb.notebookfile.ipynb import (
    code_cells,
    dump_notebook,
    indent_of_file,
    load_notebook,
    replace_file,
)
from skillnb.notebookfile.mirror import (
    MirrorWarning,
    build_cell_mirror,
    build_mirror,
    validate_mirror,
)
from skillnb.notebookfile.rebuild import rebuild_run
from skillnb.notebookfile.recover import BUNDLE_MIME, recover

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from skillnb.run import Run

__all__ = [
    "BUNDLE_MIME",
    "MirrorWarning",
    "apply_mirror",
    "build_mirror",
    "read_mirror",
    "rebuild_run",
    "recover",
    "write_mirror",
]


def read_mirror(path: str | Path) -> dict[str, Any] | None:
    """Return the notebook's validated ``metadata["skillnb"]``, or ``None``.

    A malformed or hostile mirror (wrong types, oversized strings, active markup, a newer
    format) is ignored with a :class:`MirrorWarning`; nothing in it is evaluated.

    Raises:
        SkillnbError: the file is missing or is not an nbformat 4 notebook.

    """
    nb = load_notebook(path)
    return validate_mirror(nb["metadata"].get("skillnb"), origin=str(path))


def apply_mirror(nb: MutableMapping[str, Any], run: Run) -> int:
    """Write the run's mirror into notebook JSON ``nb`` in memory; return the step cells marked.

    Cells that are not step cells of this run keep their metadata untouched.
    """
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        metadata = nb["metadata"] = {}
    metadata["skillnb"] = build_mirror(run)
    state = run.journal.state
    marked = 0
    for _, cell in code_cells(nb):
        mirror = build_cell_mirror(state, cell)
        if mirror is None:
            continue
        cell_meta = cell.get("metadata")
        if not isinstance(cell_meta, dict):
            cell_meta = cell["metadata"] = {}
        cell_meta["skillnb"] = mirror
        marked += 1
    return marked


def write_mirror(path: str | Path, run: Run) -> int:
    """Write ``run``'s mirror into the notebook file ``path``; return the step cells marked.

    The file is rewritten atomically (temp file, fsync, rename) with only the ``skillnb``
    metadata keys changed. Only call it on a notebook that no editor has open.

    Raises:
        SkillnbError: the file is missing or is not an nbformat 4 notebook.

    """
    nb_path = Path(path)
    nb = load_notebook(nb_path)
    marked = apply_mirror(nb, run)
    replace_file(nb_path, dump_notebook(nb, indent=indent_of_file(nb_path)))
    return marked
