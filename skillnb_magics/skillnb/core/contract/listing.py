"""The shapes of run listings and the inbox, as pydantic models (pure core).

``skillnb runs`` lists :class:`RunRow` rows, ``skillnb inbox`` and the panel's "Waiting for
you" section list :class:`InboxItem` items; both print these models with ``--json``, and the
server answers ``GET /skillnb/api/inbox`` with an :class:`InboxView`. A run that could not be
read is still a row (or an item): ``problem`` says why, and its other fields stay empty, so one
damaged sidecar, an unreadable folder or an unreachable store never ends the listing.

Times are ISO 8601 strings (``None`` when unknown). They are part of the contract exported by
:mod:`skillnb.core.contract.shapes`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

__all__ = [
    "BatchProgress",
    "InboxItem",
    "InboxView",
    "RunRow",
    "RunSource",
]

RunSource = TypeAliasType("RunSource", Literal["folder", "store"])
"""Where a listed run lives: a sidecar or state folder, or a team store."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class BatchProgress(_Shape):
    """How far one batch of a run is."""

    name: str
    done: int
    total: int


class RunRow(_Shape):
    """One run in a listing, or one place that could not be read (``problem`` set)."""

    name: str
    """The notebook or state folder (relative to the listed folder), or the store's run name."""
    source: RunSource
    """Where the run lives."""
    target: list[str]
    """The words that name this run on a ``skillnb`` command line (``NB``, ``--state-dir D``,
    or ``NAME --store URL``)."""
    workflow: str | None = None
    state: str | None = None
    version: int = 0
    updated_at: str | None = None
    """When the run last changed (its latest event)."""
    waiting: list[str] = Field(default_factory=list)
    """The approval gates with a pending request in the current state."""
    follow_ups: int = 0
    """How many follow-ups are open."""
    blocked: list[str] = Field(default_factory=list)
    """The blocking gates that failed in the latest report of each trigger, in this state."""
    batches: list[BatchProgress] = Field(default_factory=list)
    problem: str | None = None
    """Why this run could not be read (the row is shown as ``?``)."""


class InboxItem(_Shape):
    """One open approval request or follow-up, with the commands that answer it."""

    kind: Literal["approval", "follow_up"]
    run: str
    """The run's name, as :attr:`RunRow.name`."""
    source: RunSource
    id: str
    """The request's or follow-up's id."""
    gate: str
    message: str
    """What the person is asked (an approval) or what is to be done (a follow-up)."""
    asked_by: str | None
    """The trigger or gated cell that asked."""
    state: str | None
    since: str | None
    """When it was asked."""
    commands: list[str]
    """The exact ``skillnb`` commands that approve and reject it, or resolve it."""


class InboxView(_Shape):
    """``GET /skillnb/api/inbox``: what waits across the server's root and its team store."""

    items: list[InboxItem]
    """Oldest first."""
    problems: list[RunRow]
    """The runs or places that could not be read (each with its ``problem``)."""
