"""``%load_ext skillnb``: wire the magics, the settings and the cell events into a shell.

Edge layer. Loading creates one :class:`~skillnb.jupyter.session.NotebookSession` for the
shell and hands it to the magics; the session is found again through IPython's registry of
magics, so there is no module-level state. Unloading (``%unload_ext``, and ``%reload_ext``
before it loads again) removes every magic, event handler and setting it added, so a reload
leaves exactly one handler per event.

Loading imports nothing heavy: the run, the records and the widgets load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillnb.jupyter.banner import startup_output
from skillnb.jupyter.config import SkillNB
from skillnb.jupyter.magics import SkillnbMagics
from skillnb.jupyter.session import NotebookSession

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["current_run", "current_session", "load_ipython_extension", "unload_ipython_extension"]

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
    """Return the run the magics of ``shell`` work on (for ``run.items(...)`` in code cells).

    Raises:
        RuntimeError: ``%load_ext skillnb`` was not run in this shell.
        NoRunLocation: the notebook's location is unknown.

    """
    session = current_session(shell)
    if session is None:
        raise RuntimeError("run %load_ext skillnb first")
    return session.run


def load_ipython_extension(shell: Any) -> None:
    """Register the magics, the ``SkillNB`` settings and the cell event handlers."""
    unload_ipython_extension(shell)  # a stale registration is replaced, never doubled
    config = SkillNB(parent=shell)
    shell.configurables.append(config)
    session = NotebookSession(shell, config)
    shell.register_magics(SkillnbMagics(shell, session))
    shell.events.register("pre_run_cell", session.pre_run_cell)
    shell.events.register("post_run_cell", session.post_run_cell)
    output = startup_output(session)
    if output is not None:
        session.show(output)


def unload_ipython_extension(shell: Any) -> None:
    """Remove what :func:`load_ipython_extension` added (nothing if it was not loaded)."""
    magics = shell.magics_manager.registry.pop(SkillnbMagics.__name__, None)
    if not isinstance(magics, SkillnbMagics):
        return
    for kind, names in magics.magics.items():
        for name in names:
            shell.magics_manager.magics[kind].pop(name, None)
    session = magics.session
    for event in _EVENTS:
        handler = getattr(session, event)
        if handler in shell.events.callbacks[event]:
            shell.events.unregister(event, handler)
    if session.config in shell.configurables:
        shell.configurables.remove(session.config)
    session.close()
