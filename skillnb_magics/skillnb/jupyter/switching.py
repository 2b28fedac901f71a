"""Changing which run a notebook's kernel works on (edge layer).

The ways on that ``%skillnb`` and ``%resume`` offer: a new run (the current one set aside as
``<folder>~<run id>``), a copy of another notebook's run (``fork-from``), a run set aside
earlier, the held run written back after its sidecar went away, or a run rebuilt from the
saved notebook's outputs. Each works on the kernel's
:class:`~skillnb.jupyter.session.NotebookSession` through the members :class:`_Session` names.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from skillnb.errors import SkillnbError
from skillnb.jupyter.discovery import resolve_use

if TYPE_CHECKING:
    from skillnb.jupyter.config import SkillNB
    from skillnb.jupyter.discovery import NotebookLocation
    from skillnb.jupyter.held import HeldRun
    from skillnb.run import Run

__all__ = ["fork_from", "move_aside", "new_run", "restore_held", "resume", "switch_to"]


class _Session(Protocol):
    """What switching runs uses of the notebook session."""

    location: NotebookLocation | None
    config: SkillNB
    env: dict[str, str]
    held: HeldRun | None
    followed: Path | None

    @property
    def run(self) -> Run: ...
    def existing_run(self) -> Run | None: ...
    def adopt(self, run: Run) -> None: ...
    def close_run(self) -> None: ...
    def folder(self) -> Path: ...
    def team(self) -> tuple[str, str] | None: ...
    def run_exists(self) -> bool: ...
    def warnings_shown(self) -> AbstractContextManager[None]: ...


def restore_held(session: _Session) -> tuple[Run, list[str]]:
    """Write the held run back into its folder (setting aside a run standing there).

    Returns:
        The run, open again, and the facts whose values were kept by reference and went
        with the folder.

    Raises:
        SkillnbError: no run is held, or it lived in a team store.

    """
    held = session.held
    if held is None:
        raise SkillnbError("nothing to restore: the run's sidecar is in place")
    if held.folder is None:
        raise SkillnbError("a run in a team store cannot be written back from a kernel")
    from skillnb.notebookfile.identity import sidecar_run_id
    from skillnb.store.folders.aside import set_aside
    from skillnb.store.folders.writeback import lost_values, write_back

    standing = sidecar_run_id(held.folder)
    if standing != held.run_id:
        if standing is not None:
            set_aside(held.folder, standing)
        write_back(held.folder, held.state, held.events)
    lost = lost_values(held.state, held.folder)
    session.held = None
    run = session.run
    if held.workflow is not None:
        run.bind(held.workflow)
    return run, lost


def new_run(session: _Session) -> Run:
    """Move the current run's folder aside (``<folder>~<run id>``) and start a fresh run.

    Asked for by name, so a notebook whose identity is ambiguous (see
    :mod:`skillnb.notebookfile.identity`) starts its own run here too.
    """
    if session.location is not None:
        session.followed = session.location.path
    session.held = None  # the user's word: a new run
    old = session.existing_run()
    if old is not None:
        move_aside(session, old.id)
    run = session.run
    run.journal.create()  # asked for by name: recorded now, not at its first write
    return run


def fork_from(session: _Session, source: str) -> tuple[Run, Path]:
    """Give this notebook a copy of the run of notebook ``source`` and open it.

    ``source`` is read from this notebook's folder. The original is only read (see
    :mod:`skillnb.store.folders.fork`); the copy keeps the run's history and id.

    Returns:
        The run, now this notebook's own, and the original notebook's path.

    Raises:
        SkillnbError: this kernel works on no notebook (or on a state folder or a team
            store), ``source`` is no notebook with a run, or this notebook has a run
            already.

    """
    from skillnb.store.folders.fork import fork_sidecar, holds_run
    from skillnb.store.sidecar.layout import sidecar_dir_for

    if session.location is None or session.team() is not None or session.config.state_dir:
        raise SkillnbError(
            "fork-from gives a notebook's own sidecar a copy of a run: "
            "this kernel works on no notebook's sidecar"
        )
    here = session.location.path
    try:
        original = resolve_use(source, here.parent)
    except FileNotFoundError as exc:
        raise SkillnbError(str(exc)) from None
    if original is None:
        raise SkillnbError(f"{source}: give the notebook (.ipynb) whose run to copy")
    own = sidecar_dir_for(here)
    if holds_run(own):
        raise SkillnbError(
            f"{here.name} has a run of its own already ({own}); nothing was copied "
            "(`%skillnb new-run` sets it aside first)"
        )
    fork_sidecar(sidecar_dir_for(original), own)
    session.close_run()
    session.held = None  # the user's word: this run
    session.followed = here
    return session.run, original


def switch_to(session: _Session, run_id: str) -> Run:
    """Make run ``run_id`` (current, or moved aside by ``new-run``) the current one.

    Raises:
        SkillnbError: no such run here.

    """
    current = session.existing_run()
    if current is not None and current.id == run_id:
        return current
    from skillnb.store.folders.aside import aside_folder, restore_aside

    folder = session.folder()
    if not aside_folder(folder, run_id).is_dir():
        raise SkillnbError(
            f"no run {run_id!r} here (looked for {aside_folder(folder, run_id).name})"
        )
    if current is not None:
        move_aside(session, current.id)
    restore_aside(folder, run_id)
    return session.run


def resume(session: _Session, run_id: str | None = None) -> tuple[Run, bool]:
    """Return the run to resume and whether it was rebuilt from the notebook's outputs.

    Raises:
        SkillnbError: no run here, and no saved notebook to rebuild one from.

    """
    held, session.held = session.held, None  # the user's word: what stands there, or rebuild
    try:
        return _resume(session, run_id)
    except SkillnbError:
        session.held = held  # nothing to go on with: the kernel still holds its run
        raise


def _resume(session: _Session, run_id: str | None) -> tuple[Run, bool]:
    if run_id is not None:
        return switch_to(session, run_id), False
    run = session.existing_run()
    if run is not None:
        return run, False
    notebook = session.location.path if session.location is not None else None
    if notebook is None or not notebook.exists():
        raise SkillnbError("no run is recorded here yet, and no saved notebook to rebuild from")
    from skillnb.notebookfile.sync import rebuild_run

    state_dir = session.folder() if session.config.state_dir else None
    memory = None if session.config.memory else False
    with session.warnings_shown():
        run = rebuild_run(notebook, state_dir=state_dir, env=session.env, memory=memory)
    if session.config.profile and run.workflow is not None:
        run.profile = run.workflow.check_profile(session.config.profile)
    session.adopt(run)
    return run, True


def move_aside(session: _Session, run_id: str) -> None:
    """Close the run and set its folder aside as ``<folder>~<run id>`` (if it has one)."""
    from skillnb.store.folders.aside import set_aside

    folder = session.folder()
    session.close_run()
    if session.run_exists():  # a run opened but never written holds no folder to move
        set_aside(folder, run_id)
