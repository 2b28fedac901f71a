"""What a run tells its skill memory: the last operation and key ids, across sessions (service).

A run feeds the skill memory of its workflow's skill (``$SKILLNB_HOME/memory/<skill>.json``)
only when it is this user's (:meth:`SkillFeed.belongs`): a notebook from a stranger never
writes the user's memory. Records are queued and written by another thread
(:mod:`skillnb.memory.writer`); :meth:`SkillFeed.flush` waits for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from skillnb.core.runstate.records import JsonValue, RunState
    from skillnb.core.workflow.model import Workflow
    from skillnb.memory.owned import OwnedRuns
    from skillnb.skillmemory import SkillMemory

__all__ = ["SkillFeed"]


class _Journal(Protocol):
    """What the feed reads of the run's journal."""

    @property
    def workflow(self) -> Workflow | None: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def state(self) -> RunState: ...
    @property
    def new_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...

    def create(self) -> None: ...


class SkillFeed:
    """The skill memory one run feeds, and whether it may.

    Args:
        journal: the run's journal (its workflow names the skill).
        option: ``False`` turns the memory off; ``True`` or a :class:`SkillMemory` is the
            user's word that this run may write it; ``None`` decides by who owns the run.

    """

    def __init__(self, journal: _Journal, option: SkillMemory | bool | None) -> None:
        self._journal = journal
        self._option = option
        self._memory: SkillMemory | None = None
        self._belongs: bool | None = None
        """Whether this run may write the skill memory (see :meth:`belongs`), once known."""

    @property
    def memory(self) -> SkillMemory | None:
        """The skill memory this run feeds (``None`` when turned off or without a workflow)."""
        if self._memory is None and self._option is not False:
            from skillnb.skillmemory import SkillMemory

            if isinstance(self._option, SkillMemory):
                self._memory = self._option
            elif self._journal.workflow is not None:
                self._memory = SkillMemory(
                    self._journal.workflow.skill, clock=self._journal.clock, env=self._journal.env
                )
        return self._memory

    def flush(self) -> None:
        """Wait until what :meth:`remember` queued (any run of this process) is on disk."""
        from skillnb.memory import writer as memorylog

        memorylog.flush()

    def forget(self) -> None:
        """Drop the cached skill memory (the workflow, hence the skill, changed)."""
        self._memory = None

    def remember(self, action: str, summary: str, files: list[str] | None = None) -> None:
        """Record ``action`` in the skill memory, with the run's key ids.

        Queued (see :mod:`skillnb.memory.writer`); :meth:`flush` waits for it.
        """
        memory = self.memory
        if memory is None or not self.belongs():
            return
        ids: dict[str, JsonValue] = {
            "last_run_id": self._journal.run_id,
            **self._journal.state.key_ids,
        }
        from skillnb.memory import writer as memorylog  # written by another thread: see there

        memorylog.submit(
            memory,
            action=action,
            summary=summary,
            ids=ids,
            files=files,
            run_id=self._journal.run_id,
        )

    def belongs(self) -> bool:
        """True when this run may write the user's skill memory (:mod:`skillnb.memory.owned`).

        It may when it was created by this object (its id is then recorded as this user's),
        when ``memory`` was given explicitly (``True`` or a skill memory: the user's word), or
        when its id was recorded here before (created by another process here, or adopted).
        """
        if self._belongs is None:
            run_id = self._journal.state.run_id
            if self._option is True or not isinstance(self._option, bool | None):
                self._belongs = True
            elif run_id and run_id == self._journal.new_id:
                from skillnb.memory import writer as memorylog  # queued like memory records

                memorylog.submit(self._owned(), run_id=run_id)
                self._belongs = True
            elif run_id:
                self._belongs = self._owned().holds(run_id)
            else:
                return False  # not created yet: asked again once it is
        return self._belongs

    def adopt(self) -> None:
        """Record this run as this user's (its skill-memory records are written from now on)."""
        self._journal.create()
        self._owned().add(self._journal.state.run_id)
        self._belongs = True

    def _owned(self) -> OwnedRuns:
        from skillnb.memory.home import default_home
        from skillnb.memory.owned import OwnedRuns

        return OwnedRuns(default_home(self._journal.env))
