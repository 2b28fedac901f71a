"""``skillnb mv OLD NEW``: rename or move a notebook together with its run (edge layer).

The notebook's run lives in ``.skillnb/<stem>/`` beside it, so a plain ``mv`` leaves the run
under the old name (the next run binds it again by the run id in the notebook's metadata, see
:mod:`skillnb.notebookfile.identity`). ``skillnb mv`` does it explicitly:

- ``OLD`` exists: the notebook moves to ``NEW`` (a folder keeps its file name), then its
  sidecar, and the runs set aside beside it (``<stem>~<run id>``), move to ``NEW``'s name;
- ``OLD`` is gone and ``NEW`` exists (it was moved already): only the sidecar follows.

Nothing is overwritten: a ``NEW`` that exists (when ``OLD`` does too) or already has a run is
refused; the run id, and so the notebook's metadata, stays as it is.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError, clean, command_path

__all__ = ["add_commands", "move_command"]


def _target(old: Path, new: Path) -> Path:
    if new.is_dir():
        new = new / old.name
    if old.suffix != ".ipynb" or new.suffix != ".ipynb":
        raise UsageError("give two notebooks: skillnb mv OLD.ipynb NEW.ipynb (or a folder)")
    if not new.parent.is_dir():
        raise UsageError(f"{new.parent}: no such folder")
    return new


def _check(old: Path, new: Path, origin: Path, copy: Path) -> None:
    if old.exists() and new.exists():
        raise UsageError(
            f"{new} exists already; nothing was moved (a copy that goes on from {old.name}'s "
            f"run: skillnb fork {command_path(old)} NEW.ipynb)"
        )
    if not old.exists() and not new.exists():
        raise UsageError(f"{old}: no such notebook (and no {new} either)")
    if not old.exists() and not origin.exists():
        raise UsageError(f"{old}: no such notebook, and no run under its name ({origin})")
    if copy.exists() or copy.is_symlink():
        raise UsageError(f"{new}: it has a run already ({copy}); nothing was moved")


def _aside(origin: Path) -> list[Path]:
    """The runs set aside beside sidecar ``origin`` (``<stem>~<run id>``)."""
    if not origin.parent.is_dir():
        return []
    return sorted(p for p in origin.parent.glob(f"{origin.name}~*") if not p.is_symlink())


def move_command(args: argparse.Namespace) -> int:
    """Move notebook ``OLD`` (when it is there) and its run to ``NEW``."""
    from skillnb.notebookfile.identity import move_sidecar, sidecar_run_id
    from skillnb.store.sidecar.layout import sidecar_dir_for

    old: Path = args.old
    new = _target(old, args.new)
    origin, copy = sidecar_dir_for(old), sidecar_dir_for(new)
    _check(old, new, origin, copy)
    if old.exists():
        shutil.move(old, new)  # first: cut short here, the next run binds the run by its id
        emit(f"moved {clean(old)} to {clean(new)}")
    if origin.exists():
        run_id = sidecar_run_id(origin)
        move_sidecar(origin, copy)
        emit(f"moved its run {clean(run_id or '(empty)')} from {clean(origin)} to {clean(copy)}")
    for aside in _aside(origin):
        moved = copy.with_name(copy.name + aside.name[len(origin.name) :])
        if not moved.exists():
            move_sidecar(aside, moved)
            emit(f"moved the run set aside in {clean(aside)} to {clean(moved)}")
    emit(f"continue with: skillnb status {command_path(new)}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``mv`` on the ``skillnb`` command's subparsers."""
    move = subparsers.add_parser(
        "mv",
        help="rename or move a notebook together with its run",
        description=(
            "Move notebook OLD to NEW (a notebook or a folder) with its sidecar; when OLD was "
            "moved already, move only its sidecar to NEW's name."
        ),
    )
    move.add_argument("old", type=Path, metavar="OLD.ipynb")
    move.add_argument("new", type=Path, metavar="NEW")
    move.set_defaults(handler=move_command)
