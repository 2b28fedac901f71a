"""The run view (``describe()``) as pydantic models (pure core).

:func:`skillnb.service.view.describe` builds the view as plain JSON-safe data (it is on the
hot path of every view, so it does not construct these models); :class:`RunDescription`
states its shape and checks it where it crosses a boundary: the tests validate every view
they build against it, and :mod:`skillnb.core.contract.shapes` exports it as JSON Schema, from which
the JupyterLab extension's TypeScript types are generated. The models forbid unknown keys, so
a field added to ``describe()`` and not here fails the tests instead of drifting.

Times are ISO 8601 strings (``None`` when unknown); ``v`` is the format version.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue
from typing_extensions import TypeAliasType

__all__ = [
    "BatchView",
    "FactView",
    "FollowUp",
    "GateReportView",
    "GateView",
    "GraphInterrupt",
    "GraphThread",
    "HistoryEntry",
    "MilestoneView",
    "NextTrigger",
    "PendingApproval",
    "RunDescription",
    "TriggerStatus",
    "UncertainStep",
]

TriggerStatus = TypeAliasType("TriggerStatus", Literal["passing", "warning", "blocked", "unknown"])
"""A move's status: its gates all pass, one ``warn`` gate fails, one blocks, or some gate
would run user code and was not evaluated (``evaluate_code`` off, as in the server)."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class GateView(_Shape):
    """One gate result (``passed`` is null when the server could not run it)."""

    gate: str
    kind: str
    severity: str
    passed: bool | None
    message: str


class NextTrigger(_Shape):
    """A trigger allowed from the current state, with the status of its gates."""

    trigger: str
    to: str
    status: TriggerStatus
    gates: list[GateView]


class FactView(_Shape):
    """The latest version of one fact."""

    key: str
    kind: str
    version: int
    preview: str
    cell_id: str | None
    at: str | None
    restorable: bool


class PendingApproval(_Shape):
    """A pending approval request."""

    id: str
    gate: str
    trigger: str | None
    message: str
    state: str | None
    requested_seq: int
    requested_at: str | None


class FollowUp(_Shape):
    """Something a warning gate left to do, open until resolved."""

    id: str
    gate: str
    state: str | None
    trigger: str | None
    reason: str
    text: str
    opened_seq: int
    opened_at: str | None


class UncertainStep(_Shape):
    """A step that started and never committed."""

    key: str
    started_seq: int
    cell_id: str | None


class BatchView(_Shape):
    """Progress of one batch (``remaining``: the first items still to do)."""

    name: str
    done: int
    total: int
    remaining: list[str]


class MilestoneView(_Shape):
    """A named checkpoint."""

    name: str
    seq: int
    state: str | None
    at: str | None


class GateReportView(_Shape):
    """The last recorded gate report (``key``: the trigger or gated cell it was kept under)."""

    key: str
    version: int
    trigger: str | None
    state: str | None
    passed: bool
    results: list[GateView]


class HistoryEntry(_Shape):
    """One journal event, summarised, or a run of similar ones folded into one row."""

    seq: int
    """The (first) event's sequence number."""
    type: str
    at: str | None
    summary: str
    """What happened; for a run, ``first … last (N events)``."""
    count: int
    """How many events the row stands for (1, or the length of a folded run)."""
    last_seq: int
    """The last event's sequence number (``seq`` when ``count`` is 1)."""
    last_at: str | None
    """The last event's time (``at`` when ``count`` is 1)."""


class GraphInterrupt(_Shape):
    """An ``interrupt()`` a LangGraph thread waits on (also a pending approval)."""

    id: str
    node: str
    value: str
    """A preview of what it asks (JSON text, clipped)."""


class GraphThread(_Shape):
    """The head of a LangGraph thread whose checkpoints live in the run."""

    thread_id: str
    checkpoint: str
    step: int | None
    source: str | None
    next: list[str]
    interrupts: list[GraphInterrupt]
    checkpoints: int
    updated_at: str | None


class RunDescription(_Shape):
    """``run.describe()``: the run at a glance, what every view renders."""

    v: Literal[1]
    run_id: str
    workflow: str | None
    state: str | None
    version: int
    updated_at: str | None
    states: list[str]
    visited: list[str]
    next: list[NextTrigger]
    facts: list[FactView]
    fact_counts: dict[str, int]
    """How many facts of each kind the run holds (also those a ``facts_limit`` left out)."""
    pending: list[PendingApproval]
    uncertain: list[UncertainStep]
    batches: list[BatchView]
    key_ids: dict[str, JsonValue]
    milestones: list[MilestoneView]
    last_report: GateReportView | None
    history: list[HistoryEntry]
    profile: str
    """The run profile gates are evaluated under (``default`` unless one was chosen)."""
    follow_ups: list[FollowUp]
    mermaid: str | None
    """The workflow as a mermaid ``stateDiagram`` (``None`` without a workflow)."""
    threads: list[GraphThread]
    """LangGraph threads checkpointed in the run (empty when there are none)."""
