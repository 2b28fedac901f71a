"""A run this kernel still holds after its sidecar was deleted or replaced (edge layer).

The kernel's copy of the run (its folded state and the workflow given in this process) is
kept, nothing more is recorded, and the session refuses every use of the run until the user
chooses one of the ways on, which :meth:`HeldRun.output` lists once, in the cell:

- ``%skillnb restore``: write the kernel's copy back (a run now standing there is set aside);
- ``%resume``: go on with what stands there now, or rebuild the run from the saved notebook;
- ``%skillnb new-run``: knowingly start a new run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillnb.errors import SkillnbError

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event, RunState
    from skillnb.core.workflow.model import Workflow
    from skillnb.jupyter.display import Output

__all__ = ["HeldRun", "RunHeld"]

WAYS = "`%skillnb restore` (write it back), `%resume` or `%skillnb new-run`"


class RunHeld(SkillnbError):
    """The run's sidecar went away under this kernel, which still holds the run."""


@dataclass
class HeldRun:
    """The kernel's copy of a run whose folder was deleted or now holds another run."""

    state: RunState
    """The run as this kernel last saw it."""
    events: list[Event]
    """The run's last events, as this kernel folded them (all of them for a short run)."""
    workflow: Workflow | None
    """The workflow given in this process (trusted), put back on restore."""
    actual: str | None
    """The run standing in the folder now (``None``: the folder is gone or empty)."""
    folder: Path | None
    """Where the run lived (``None``: a team store)."""

    @property
    def run_id(self) -> str:
        """The held run's id."""
        return self.state.run_id

    def _what(self) -> str:
        where = f" ({self.folder})" if self.folder is not None else ""
        if self.actual is None:
            return f"the sidecar of run {self.run_id} was deleted{where}"
        return f"the sidecar of run {self.run_id} now holds another run, {self.actual}{where}"

    def _held(self) -> str:
        state = f", state {self.state.state}" if self.state.state else ""
        return (
            f"this kernel still holds run {self.run_id} (version {self.state.version}, "
            f"{len(self.state.facts)} facts{state})"
        )

    def output(self) -> Output:
        """What the cell shows once: what happened and the ways on."""
        from skillnb.jupyter.display import Output

        now = (
            "rebuild the run from the saved notebook"
            if self.actual is None
            else f"go on with run {self.actual}, which stands there now"
        )
        aside = "" if self.actual is None else f" (run {self.actual} is set aside first)"
        lines = [
            f"{self._held()}; nothing is recorded until you choose:",
            f"  %skillnb restore   write the kernel's copy back{aside}",
            f"  %resume            {now}",
            "  %skillnb new-run   start a new run",
        ]
        return Output("held", "warning", f"⚠ SKILL.nb · {self._what()}", lines)

    def error(self) -> RunHeld:
        """The error every use of the run raises until a way on is chosen."""
        return RunHeld(f"{self._what()}; {self._held()}: choose {WAYS}")
