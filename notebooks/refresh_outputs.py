"""Refresh the outputs the example notebooks keep for nbval (a maintenance script).

The notebooks are committed with their outputs cleared, except the cells marked
``# NBVAL_CHECK_OUTPUT`` (or tagged ``nbval-check-output``): their outputs document behaviour
and ``pytest --nbval-lax`` compares them. Cells tagged ``nbval-ignore-output`` keep theirs
too: they document a first run, and say "restored" or "already done" when the notebook runs
again in the same folder, so nbval skips them there; the repository's ``conftest.py``
compares them on the fresh runs it starts. When that behaviour changes on purpose (a reworded
message, a new line in a display), run::

    .venv/bin/python notebooks/refresh_outputs.py            # every notebook
    .venv/bin/python notebooks/refresh_outputs.py quickstart.ipynb

Each notebook is executed top to bottom in a fresh copy of this folder (a new run, a private
``SKILLNB_HOME``), as nbval will run it; then the checked cells get the new outputs without
their output metadata (where a run's ids, times and recorded events live), and every other
cell is cleared. Review the
diff before committing it.

The notebooks keep the ``language_info`` their kernel reports: JupyterLab writes the kernel's
into the notebook when the kernel starts, and a notebook that kept less would open modified
("dirty") before anyone touched it. After a Python upgrade, refresh it alone (no cell runs)::

    .venv/bin/python notebooks/refresh_outputs.py --language-info
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
SUPPORT = ("data", "resume_extractor.py")
CHECK_TAG = "nbval-check-output"
CHECK_MARKER = "NBVAL_CHECK_OUTPUT"
FIRST_RUN_TAG = "nbval-ignore-output"
"""Outputs of a first run: kept, compared on fresh runs only (see ``conftest.py``)."""


def is_checked(cell: Any) -> bool:
    """Tell whether ``cell`` keeps its outputs (compared by nbval, on fresh runs at least)."""
    tags = cell.metadata.get("tags", [])
    if CHECK_TAG in tags or FIRST_RUN_TAG in tags:
        return True
    lines = (line.strip() for line in cell.source.splitlines())
    return any(line.startswith("#") and line.lstrip("#").strip() == CHECK_MARKER for line in lines)


def _kept(output: Any) -> Any:
    """``output`` without its metadata (where a run's ids, times and events live)."""
    kept = nbformat.from_dict(dict(output))  # type: ignore[no-untyped-call]  # nbformat is untyped
    if "metadata" in kept:
        kept["metadata"] = {}
    return kept


def execute(name: str) -> Any:
    """Run notebook ``name`` on a fresh copy of this folder; return the executed notebook."""
    with tempfile.TemporaryDirectory(prefix="skillnb-refresh-") as tmp:
        work = Path(tmp)
        for item in (*SUPPORT, name):
            source = HERE / item
            if source.is_dir():
                shutil.copytree(source, work / item)
            else:
                shutil.copy2(source, work / item)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
        env["SKILLNB_HOME"] = str(work / "home")
        nb = nbformat.read(work / name, as_version=4)  # type: ignore[no-untyped-call]  # nbformat is untyped
        client = NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(work)}})
        client.execute(env=env)
        return nb


def refresh(name: str) -> int:
    """Execute ``name`` and write back the outputs of its checked cells; return their count."""
    executed = execute(name)
    path = HERE / name
    stored = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # nbformat is untyped
    if [c.source for c in stored.cells] != [c.source for c in executed.cells]:
        raise RuntimeError(f"{name} changed while it ran; run this script again")
    checked = 0
    for cell, ran in zip(stored.cells, executed.cells, strict=True):
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            cell.outputs = [_kept(o) for o in ran.outputs]
            cell.execution_count = ran.execution_count
            checked += 1
        else:
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("skillnb", None)
        cell.metadata.pop("execution", None)
    stored.metadata.pop("skillnb", None)
    stored.metadata["language_info"] = dict(executed.metadata["language_info"])
    nbformat.validate(stored)
    nbformat.write(stored, path)  # type: ignore[no-untyped-call]  # nbformat is untyped
    return checked


def kernel_language_info() -> dict[str, Any]:
    """The ``language_info`` the notebooks' kernel (``python3``) reports, as JupyterLab reads it."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.kernel_info(reply=True, timeout=60)
        info: dict[str, Any] = reply["content"]["language_info"]
        return info
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def stamp_language_info(name: str, info: dict[str, Any]) -> bool:
    """Write ``info`` as the ``language_info`` of notebook ``name``; tell whether it changed."""
    path = HERE / name
    stored = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # nbformat is untyped
    if stored.metadata.get("language_info") == info:
        return False
    stored.metadata["language_info"] = info
    nbformat.validate(stored)
    nbformat.write(stored, path)  # type: ignore[no-untyped-call]  # nbformat is untyped
    return True


def main(args: list[str]) -> int:
    """Refresh the notebooks named in ``args`` (every notebook here when none is named).

    With ``--language-info``, only their ``language_info`` is brought to the kernel's.
    """
    only_info = "--language-info" in args
    names = [a for a in args if a != "--language-info"]
    chosen = names or sorted(p.name for p in HERE.glob("*.ipynb"))
    if only_info:
        info = kernel_language_info()
        for name in chosen:
            changed = stamp_language_info(name, info)
            sys.stdout.write(f"{name}: language_info {'written' if changed else 'unchanged'}\n")
        return 0
    for name in chosen:
        count = refresh(name)
        sys.stdout.write(f"{name}: {count} checked cells refreshed\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
