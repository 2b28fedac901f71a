"""``skillnb fork SRC.ipynb DST.ipynb``: give a copy of a notebook a copy of its run (edge).

A duplicated notebook starts its own run (its sidecar is named after it). When the copy
should go on from where the original stands instead, ``fork`` copies the original's sidecar
folder beside the copy, and the notebook itself when ``DST`` does not exist yet. The copy
keeps the run's history and id; from then on the two runs go their own ways. Nothing is
overwritten: a ``DST`` that already has a run is refused, and so is a sidecar holding a
symbolic link (nothing is read through one).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError, clean, command_path
from skillnb.errors import UnsafePath

__all__ = ["add_commands", "fork_command"]

_LEFT_BEHIND = ("lock",)
"""Files that belong to the process holding the original, not to the run."""


def _refuse_links(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_symlink():
            raise UnsafePath(path, "a symbolic link inside a sidecar is never followed")


def fork_command(args: argparse.Namespace) -> int:
    """Copy the run (and the notebook, when ``DST`` is missing) from ``SRC`` to ``DST``."""
    from skillnb.store.layout import sidecar_dir_for

    source: Path = args.source
    target: Path = args.target
    if source.suffix != ".ipynb" or target.suffix != ".ipynb":
        raise UsageError("give two notebooks: skillnb fork SRC.ipynb DST.ipynb")
    origin = sidecar_dir_for(source)
    if not (origin / "journal.jsonl").is_file() and not (origin / "snapshot.json").is_file():
        raise UsageError(f"{source}: no run to fork (nothing in {origin})")
    copy = sidecar_dir_for(target)
    if copy.exists():
        raise UsageError(f"{target}: it has a run already ({copy}); nothing was copied")
    if not target.parent.is_dir():
        raise UsageError(f"{target.parent}: no such folder")
    _refuse_links(origin)
    copy.parent.mkdir(mode=0o700, exist_ok=True)
    shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(*_LEFT_BEHIND))
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
