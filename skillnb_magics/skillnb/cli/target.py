"""Which run a ``skillnb`` command acts on: a sidecar, a folder or a named run (edge layer).

Commands that read or change a run take the notebook first (``skillnb status NB``) or
``--state-dir DIR``. With a team store (``--store URL`` or ``SKILLNB_STORE``) the first
argument is the run's name instead (``skillnb status market/weekly --store URL``). Opening
never creates a run as a side effect: a notebook without a sidecar, or a name without a run,
is an error that says how to get one.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from skillnb.errors import SkillnbError

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = [
    "UsageError",
    "add_target",
    "clean",
    "command_path",
    "open_target",
    "store_url",
    "target_folder",
]

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class UsageError(SkillnbError):
    """The command line names something that does not exist or does not fit (exit 2)."""


def add_target(parser: argparse.ArgumentParser) -> None:
    """Add the ``NOTEBOOK`` positional and the ``--state-dir`` option to ``parser``."""
    parser.add_argument(
        "notebook",
        nargs="?",
        type=Path,
        metavar="NOTEBOOK",
        help="the notebook (.ipynb); with --store, the run's name",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="an explicit state folder instead of the notebook's .skillnb/<stem>/ sidecar",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="a team store (postgresql://...; default $SKILLNB_STORE): NOTEBOOK names a run",
    )


def store_url(args: argparse.Namespace) -> str | None:
    """The team store the command addresses (``--store`` or ``SKILLNB_STORE``), if any.

    ``--state-dir`` always means a folder, whatever ``SKILLNB_STORE`` says.
    """
    from skillnb.store.choose import store_from_env

    given: str | None = getattr(args, "store", None)
    if given:
        return given
    if getattr(args, "state_dir", None) is not None:
        return None
    return store_from_env(os.environ)


def _open_named(args: argparse.Namespace, url: str) -> Run:
    from skillnb.run import open_run
    from skillnb.store.choose import open_store

    if args.state_dir is not None:
        raise UsageError("give --store or --state-dir, not both")
    if args.notebook is None:
        raise UsageError("give the run's NAME (with --store URL)")
    name = args.notebook.as_posix()
    store = open_store(url, name)
    if not store.exists():
        store.close()
        raise SkillnbError(f"no run named {name!r} in {store.location.rsplit(' run ', 1)[0]}")
    return open_run(store=store)


def _has_run(folder: Path) -> bool:
    return (folder / "journal.jsonl").exists() or (folder / "snapshot.json").exists()


def target_folder(args: argparse.Namespace) -> Path:
    """Return the state folder named by ``args.notebook`` / ``args.state_dir`` (it may hold no run).

    Raises:
        UsageError: neither was given, or the notebook or folder does not exist.

    """
    from skillnb.store import sidecar_dir_for

    notebook: Path | None = args.notebook
    state_dir: Path | None = args.state_dir
    if getattr(args, "store", None):
        raise UsageError("this command works on a sidecar folder, not on --store")
    if state_dir is not None:
        if not state_dir.is_dir():
            raise UsageError(f"{state_dir}: no such folder")
        return state_dir
    if notebook is None:
        raise UsageError("give a NOTEBOOK or --state-dir DIR")
    folder = sidecar_dir_for(notebook)
    if not notebook.is_file() and not _has_run(folder):  # a sidecar alone is enough
        raise UsageError(f"{notebook}: no such notebook")
    return folder


def open_target(args: argparse.Namespace) -> Run:
    """Open the existing run named by ``args.notebook`` / ``args.state_dir``.

    Raises:
        UsageError: neither was given, or the notebook or folder does not exist.
        SkillnbError: there is no run there yet (the message says how to make one).
        StoreUnavailable: the team store cannot be reached (password redacted).
        StoreCorrupted: a sidecar file is damaged (the message names the file and line).

    """
    from skillnb.run import open_run

    url = store_url(args)
    if url is not None:
        return _open_named(args, url)
    folder = target_folder(args)
    notebook: Path | None = args.notebook
    if not _has_run(folder):
        if args.state_dir is not None or notebook is None:
            raise SkillnbError(f"{folder}: no run here (no journal.jsonl or snapshot.json)")
        _recorded_elsewhere(notebook)
        raise SkillnbError(
            f"{notebook}: no run yet (nothing in {folder}); run the notebook, or rebuild the run "
            f"from its saved outputs with `skillnb rebuild {command_path(notebook)}`"
        )
    if args.state_dir is not None:
        return open_run(notebook, state_dir=folder)
    return open_run(notebook)


def _recorded_elsewhere(notebook: Path) -> None:
    """Refuse with the way on when the notebook's run sits under its old name (renamed).

    Raises:
        SkillnbError: it does (the message names the sidecar and ``skillnb mv``).

    """
    from skillnb.notebookfile.identity import owner_of, recorded_elsewhere

    holder = recorded_elsewhere(notebook)
    if holder is None:
        return
    old, holder = Path(os.path.relpath(owner_of(holder))), Path(os.path.relpath(holder))
    if not old.exists():
        raise SkillnbError(
            f"{notebook}: no run under its name yet, but its metadata names the run recorded in "
            f"{holder} for {old.name} (gone); "
            f"`skillnb mv {command_path(old)} {command_path(notebook)}` binds it"
        )
    raise SkillnbError(
        f"{notebook} is a copy of {old} (both name the run recorded in {holder}) and has no run "
        f"of its own yet. Go on with a copy of its run: `skillnb fork {command_path(old)} "
        f"{command_path(notebook)}`, or start fresh: `skillnb run {command_path(notebook)} "
        "--new-run`"
    )


def command_path(path: Path | str) -> str:
    """``path`` quoted for a shell command the user can copy."""
    return shlex.quote(str(path))


def clean(text: object) -> str:
    """``text`` without terminal control characters (facts can hold LLM output)."""
    return _UNSAFE.sub("?", str(text))
