"""``skillnb fork SRC.ipynb DST.ipynb``: give a copy of a notebook a copy of its run (edge).

A duplicated notebook has no run of its own (its sidecar is named after it) and refuses to
take, or redo, the original's until told which (see :mod:`skillnb.notebookfile.identity`). When
the copy should go on from where the original stands, ``fork`` copies the original's sidecar
folder beside the copy (:mod:`skillnb.store.folders.fork`: under the original's lock, whole or not
at all), and the notebook itself when ``DST`` does not exist yet. The copy keeps the run's
history and id; from then on the two runs go their own ways. Nothing is overwritten: a
``DST`` that already has a run is refused, and so is a sidecar holding a symbolic link
(nothing is read through one).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError, clean, command_path

__all__ = ["add_commands", "fork_command"]


def fork_command(args: argparse.Namespace) -> int:
    """Copy the run (and the notebook, when ``DST`` is missing) from ``SRC`` to ``DST``."""
    from skillnb.store.folders.fork import fork_sidecar, holds_run
    from skillnb.store.sidecar.layout import sidecar_dir_for

    source: Path = args.source
    target: Path = args.target
    if source.suffix != ".ipynb" or target.suffix != ".ipynb":
        raise UsageError("give two notebooks: skillnb fork SRC.ipynb DST.ipynb")
    origin = sidecar_dir_for(source)
    if not holds_run(origin):
        raise UsageError(f"{source}: no run to fork (nothing in {origin})")
    copy = sidecar_dir_for(target)
    if copy.exists():
        raise UsageError(f"{target}: it has a run already ({copy}); nothing was copied")
    if not target.parent.is_dir():
        raise UsageError(f"{target.parent}: no such folder")
    fork_sidecar(origin, copy)
    copied_notebook = not target.exists() and source.is_file()
    if copied_notebook:
        shutil.copy2(source, target)
    emit(f"forked the run of {clean(source.name)} into {clean(copy)}")
    if copied_notebook:
        emit(f"copied the notebook to {clean(target)}")
    emit(f"continue with: skillnb status {command_path(target)}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``fork`` on the ``skillnb`` command's subparsers."""
    fork = subparsers.add_parser(
        "fork",
        help="give a copy of a notebook a copy of its run",
        description="Copy SRC's run to DST (and SRC itself when DST does not exist).",
    )
    fork.add_argument("source", type=Path, metavar="SRC.ipynb")
    fork.add_argument("target", type=Path, metavar="DST.ipynb")
    fork.set_defaults(handler=fork_command)
