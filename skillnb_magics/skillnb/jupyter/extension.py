"""``%load_ext skillnb``: wire the magics, the settings and the cell events into a shell.

Edge layer. Loading creates one :class:`~skillnb.jupyter.session.NotebookSession` for the
shell and hands it to the magics; the session is found again through IPython's registry of
magics, so there is no module-level state. Unloading (``%unload_ext``, and ``%reload_ext``
before it loads again) removes every magic, event handler and setting it added, so a reload
leaves exactly one handler per event.

Loading imports nothing heavy: the run, the records and the widgets load on first use.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from skillnb.errors import SkillnbError
from skillnb.jupyter.banner import startup_output
from skillnb.jupyter.cells import transform as celltransform
from skillnb.jupyter.config import SkillNB
from skillnb.jupyter.magics import SkillnbMagics
from skillnb.jupyter.session import NotebookSession
from skillnb.jupyter.suggest.cells import CellSuggestions, current_suggestions
from skillnb.jupyter.suggest.magics import SuggestMagics

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = [
    "current_run",
    "current_session",
    "current_suggestions",
    "load_ipython_extension",
    "unload_ipython_extension",
]

_EVENTS = ("pre_run_cell", "post_run_cell")


def current_session(shell: Any = None) -> NotebookSession | None:
    """Return the session of ``shell`` (default: the running one), or ``None``."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        return None
    magics = shell.magics_manager.registry.get(SkillnbMagics.__name__)
    return magics.session if isinstance(magics, SkillnbMagics) else None


def current_run(shell: Any = None) -> Run:
    """Return the notebook's run, the one the magics of ``shell`` work on.

    For code cells: ``run = skillnb.current_run()`` then ``run.items(...)``,
    ``run.formalize(...)``. The run is opened on first use (and created if none was
    recorded yet), exactly as the first magic would; batch loops get progress bars.

    Args:
        shell: the IPython shell (default: the running one).

    Raises:
        SkillnbError: ``%load_ext skillnb`` was not run in this shell (or there is no IPython
            shell at all), or the notebook's location is unknown
            (:class:`~skillnb.jupyter.session.NoRunLocation`, a ``SkillnbError``).

    """
    session = current_session(shell)
    if session is None:
        raise SkillnbError(
            "no SKILL.nb session here: run `%load_ext skillnb` in this notebook first "
            "(outside IPython, use skillnb.open_run(PATH) instead)"
        )
    return session.run


def load_ipython_extension(shell: Any) -> None:
    """Register the magics, the ``SkillNB`` settings and the cell event handlers."""
    unload_ipython_extension(shell)  # a stale registration is replaced, never doubled
    config = SkillNB(parent=shell)
    shell.configurables.append(config)
    session = NotebookSession(shell, config)
    shell.register_magics(SkillnbMagics(shell, session))
    watcher = CellSuggestions(session)
    shell.register_magics(SuggestMagics(shell, session, watcher))
    shell.events.register("pre_run_cell", session.pre_run_cell)
    shell.events.register("post_run_cell", session.post_run_cell)
    shell.events.register("pre_run_cell", watcher.pre_run_cell)
    shell.events.register("post_run_cell", watcher.post_run_cell)
    celltransform.install(shell)
    _handshake(session, register=True)
    output = startup_output(session)
    if output is not None:
        session.show(output)


def _unload_suggestions(shell: Any) -> None:
    magics = shell.magics_manager.registry.pop(SuggestMagics.__name__, None)
    if not isinstance(magics, SuggestMagics):
        return
    for kind, names in magics.magics.items():
        for name in names:
            shell.magics_manager.magics[kind].pop(name, None)
    for event in _EVENTS:
        handler = getattr(magics.watcher, event)
        if handler in shell.events.callbacks[event]:
            shell.events.unregister(event, handler)


def unload_ipython_extension(shell: Any) -> None:
    """Remove what :func:`load_ipython_extension` added (nothing if it was not loaded)."""
    celltransform.uninstall(shell)
    _unload_suggestions(shell)
    magics = shell.magics_manager.registry.pop(SkillnbMagics.__name__, None)
    if not isinstance(magics, SkillnbMagics):
        return
    for kind, names in magics.magics.items():
        for name in names:
            shell.magics_manager.magics[kind].pop(name, None)
    session = magics.session
    _handshake(session, register=False)
    for event in _EVENTS:
        handler = getattr(session, event)
        if handler in shell.events.callbacks[event]:
            shell.events.unregister(event, handler)
    if session.config in shell.configurables:
        shell.configurables.remove(session.config)
    session.close()


def _handshake(session: NotebookSession, *, register: bool) -> None:
    """Let a frontend open ``skillnb.mirror`` to the kernel: the mirror then uses that comm.

    Only where ``comm`` is imported already: a kernel a frontend talks to (ipykernel) imports
    it, and a bare IPython shell has nobody to hear from (importing it there costs ~15 ms).
    """
    from skillnb.jupyter.mirror import MIRROR_TARGET

    comm = sys.modules.get("comm")
    if comm is None:
        return
    try:
        manager = comm.get_comm_manager()
        if register:
            manager.register_target(MIRROR_TARGET, session.channel.accept)
        else:
            manager.unregister_target(MIRROR_TARGET, session.channel.accept)
    except (KeyError, AttributeError):  # no comm support here: nothing to hear
        return
