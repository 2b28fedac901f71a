"""pytest settings for running the example notebooks with nbval (``pytest --nbval-lax notebooks/``).

Two things make a run of these notebooks repeatable (the SKILL.nb outputs themselves are
deterministic: their times, run ids and recorded events live in the output metadata, which
nbval does not compare):

* A run left beside a notebook by earlier use is set aside before the notebook runs, the way
  ``%skillnb new-run`` does it (``.skillnb/<stem>~<run id>``; ``%resume --run ID`` brings it
  back), so every run starts fresh. Its ``out/`` folder, if any, goes along with it.
* Unless ``SKILLNB_HOME`` is set, the kernels get a temporary one, so the example skills do
  not write into your own skill memory.

Cells tagged ``nbval-ignore-output`` keep the outputs of a first run, which differ when the
notebook runs again in place ("restored", "already done"): the tag lets nbval pass a second
run of a copied notebook without this file. Here every run starts fresh, so those outputs
are compared too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
OUT_FOLDERS = {"resume_batch": "out"}
"""Output folders a notebook fills, set aside together with its run."""
FIRST_RUN_TAG = "nbval-ignore-output"
"""Outputs of a first run: compared here, where every run is a first run."""


def _set_aside(notebook: Path) -> str | None:
    """Move the run recorded beside ``notebook`` out of the way; return its new name."""
    from skillnb.run import open_run, sidecar_exists
    from skillnb.store.folders.aside import set_aside
    from skillnb.store.sidecar.store import sidecar_dir_for

    if not sidecar_exists(notebook):
        return None
    run = open_run(notebook, memory=False)
    run.store.close()
    aside = set_aside(sidecar_dir_for(notebook), run.id)
    out = OUT_FOLDERS.get(notebook.stem)
    if out is not None and (notebook.parent / out).is_dir():
        shutil.move(notebook.parent / out, aside / out)
    return aside.name


def pytest_configure() -> None:
    """Give the kernels a private ``SKILLNB_HOME`` when none is set."""
    if not os.environ.get("SKILLNB_HOME"):
        os.environ["SKILLNB_HOME"] = tempfile.mkdtemp(prefix="skillnb-home-")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start each notebook of this folder from a fresh run."""
    seen: set[Path] = set()
    for item in items:
        parent = item.parent
        if getattr(parent, "skip_compare", None) is None or parent is None:
            continue  # not a notebook under nbval
        if Path(str(parent.path)).parent != HERE:
            continue  # not one of these notebooks under nbval
        _compare_first_run(item)
        path = Path(str(parent.path))
        if path in seen:
            continue
        seen.add(path)
        moved = _set_aside(path)
        if moved is not None:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    f"{path.name}: an earlier run was set aside as .skillnb/{moved}"
                )


def _compare_first_run(item: pytest.Item) -> None:
    """Compare the kept first-run outputs of a cell tagged ``nbval-ignore-output``."""
    cell = getattr(item, "cell", None)
    options = getattr(item, "options", None)
    if cell is None or options is None or not cell.get("outputs"):
        return
    if FIRST_RUN_TAG in cell.get("metadata", {}).get("tags", []):
        options["check"] = True
