"""Sending the metadata mirror to the open notebook over a comm (edge layer).

The kernel never writes the open ``.ipynb``. After a cell changed the run, it sends
``{"v": 1, "notebook": <metadata["skillnb"]>, "cell_id": str | None, "cell": <cell mirror>}``
on a comm with target ``skillnb.mirror``; the JupyterLab extension registers that target on
the notebook's kernel and writes the data into the notebook model, so saving carries it.

The comm opens only when a frontend can have registered the target: the kernel was started by
a Jupyter server for a notebook session (``__session__`` / ``JPY_SESSION_NAME``), or a
frontend opened a ``skillnb.mirror`` comm to the kernel itself (a handshake). Headless
clients (nbclient, nbconvert, papermill, nbmake) would otherwise log "No handler found for
comm target" for every cell that changed the run.

The mirror's shapes are built by :mod:`skillnb.notebookfile.mirror`, shared with the
helpers that write it into notebook files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["MIRROR_TARGET", "VIEW_MIME", "VIEW_TARGET", "MirrorChannel", "cell_text", "mirrors"]

MIRROR_TARGET = "skillnb.mirror"
"""The comm target name the JupyterLab extension registers."""
VIEW_TARGET = "skillnb.view"
"""The comm target of run views' fresh fallbacks (``skillnb.jupyter.views.widgets``)."""
VIEW_MIME = "application/vnd.skillnb.view+json"
"""The marker MIME type of an output with a saved form (its data: ``{"v": 1}``)."""

CommFactory = Callable[..., Any]


def _create_comm(**kwargs: Any) -> Any:
    import comm

    return comm.create_comm(**kwargs)


class MirrorChannel:
    """The ``skillnb.mirror`` comm, opened on first use and reopened if the frontend closed it.

    Args:
        create: makes a comm (default :func:`comm.create_comm`); injectable for tests.
        listening: tells whether a frontend may have registered the target (default: always).
        target: the comm target (default ``skillnb.mirror``).

    """

    def __init__(
        self,
        create: CommFactory | None = None,
        listening: Callable[[], bool] | None = None,
        target: str = MIRROR_TARGET,
    ) -> None:
        self._create = create or _create_comm
        self.target = target
        self._listening = listening
        self._comm: Any = None
        self.sent = 0
        """How many messages were sent (for tests and diagnostics)."""

    def accept(self, comm: Any, _message: Any = None) -> None:
        """Use ``comm``, opened by a frontend to the kernel's ``skillnb.mirror`` target."""
        self._comm = comm
        self._listening = None

    def send(self, message: dict[str, Any]) -> None:
        """Send ``message``; the first one travels with the comm's opening.

        Nothing is sent while no frontend can be listening.
        """
        if self._listening is not None and not self._listening():
            return
        if self._comm is None or getattr(self._comm, "_closed", False):
            # A frontend without the target closes the comm; the next change tries again.
            self._comm = self._create(target_name=self.target, data=message)
        else:
            self._comm.send(message)
        self.sent += 1

    def close(self) -> None:
        """Close the comm, if open."""
        if self._comm is not None and not getattr(self._comm, "_closed", False):
            self._comm.close()
        self._comm = None


def cell_text(magic: str, line: str, body: str) -> str:
    """Return the full source of a magic cell, as the notebook holds it."""
    return f"%%{magic} {line}".rstrip() + "\n" + body


def mirrors(
    run: Run, cell_id: str | None, source: str | None, *, fresh: bool = True
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Return the notebook mirror of ``run`` and the cell's (``None``: not a step cell).

    ``fresh=False``: of the state this process last saw (see ``build_mirror``).
    """
    from skillnb.notebookfile.mirror import build_cell_mirror, build_mirror

    notebook = build_mirror(run, fresh=fresh)
    cell = None
    if source is not None:
        cell = build_cell_mirror(run.journal.state, {"id": cell_id, "source": source})
    return notebook, cell
