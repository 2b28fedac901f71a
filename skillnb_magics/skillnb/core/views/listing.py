"""A run's row in a listing and its inbox items, made from its state (pure core).

:func:`run_row` and :func:`inbox_items` turn a folded
:class:`~skillnb.core.runstate.records.RunState`
into the shapes of :mod:`skillnb.core.contract.listing`. Whatever reads the runs (every event
of a sidecar, or only the events a team store indexes for listings, see
:data:`LISTING_TYPES`) folds them with :mod:`skillnb.core.runstate.state`, so a listing applies the
same rules as the run itself: a request is waiting when it is pending in the current state
entry (:func:`skillnb.service.approvals.pending_in` says the same), a follow-up while it is open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from skillnb.core.contract.listing import BatchProgress, InboxItem, RunRow, RunSource
from skillnb.core.runstate.records import Event, RunState
from skillnb.core.runstate.state import apply_all, state_entry_seq
from skillnb.core.shell import cli_command

__all__ = [
    "LISTING_TYPES",
    "Listed",
    "fold_listing",
    "inbox_items",
    "problem_row",
    "run_row",
]

LISTING_TYPES = (
    "run.created",
    "workflow.bound",
    "transition.fired",
    "gate.reported",
    "approval.requested",
    "approval.decided",
    "approval.consumed",
    "approval.expired",
    "followup.opened",
    "followup.resolved",
    "batch.declared",
)
"""The event types a listing row depends on (batch completions are counted apart)."""


def fold_listing(
    state: RunState, events: Iterable[Event], version: int, updated_at: datetime | None
) -> RunState:
    """Fold some of a run's events (those of :data:`LISTING_TYPES`, say) into ``state``.

    The events are in order but their numbers may have gaps (the others were left out), so
    each is folded on its own; the state then says ``version`` and ``updated_at``, the run's
    head and the time of its latest event.

    Raises:
        MalformedEvent: an event lacks a field its type needs.
        KeyError: an event answers a request the events given do not hold.

    """
    fields = state.__dict__  # assigned as pydantic would (no validation), without its cost
    for event in events:
        fields["version"] = event.seq - 1
        apply_all(state, [event])
    state.version = version
    state.updated_at = updated_at
    return state


@dataclass(frozen=True)
class Listed:
    """Where a listed run is and how a command line names it."""

    name: str
    """What the listing shows (a path relative to the listed folder, or a run name)."""
    source: RunSource
    target: tuple[str, ...]
    """The positional command-line words naming the run (``NB``, ``NAME``, or none)."""
    options: tuple[str, ...] = ()
    """The options that go with them (``--state-dir D``, ``--store URL``), after the rest."""

    @property
    def words(self) -> list[str]:
        """All the words, positional first."""
        return [*self.target, *self.options]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def _blocked(state: RunState, waiting: list[str]) -> list[str]:
    """The failing blocking gates of this state's reports (an approval asked: not blocked)."""
    entry = state_entry_seq(state)
    names: list[str] = []
    for report in state.reports.values():
        if report.version < entry:
            continue
        names.extend(r.gate for r in report.blocking if r.gate not in names)
    return [name for name in names if name not in waiting]


def _pending(state: RunState) -> list[str]:
    entry = state_entry_seq(state)
    return [
        a.gate
        for a in state.approvals.values()
        if a.status == "pending" and a.requested_seq > entry
    ]


def run_row(
    listed: Listed,
    state: RunState,
    version: int,
    updated_at: datetime | None,
    done: dict[str, int] | None = None,
) -> RunRow:
    """The row of a run in ``state`` at ``version``.

    Args:
        listed: where the run is.
        state: the run's state (folded from all its events, or from :data:`LISTING_TYPES`).
        version: the run's head.
        updated_at: when its latest event happened.
        done: completed items per batch, when ``state`` was folded without completions.

    """
    batches = [
        BatchProgress(
            name=name,
            done=done.get(name, 0) if done is not None else len(batch.done),
            total=batch.total,
        )
        for name, batch in state.batches.items()
    ]
    waiting = _pending(state)
    return RunRow(
        name=listed.name,
        source=listed.source,
        target=listed.words,
        workflow=state.workflow,
        state=state.state,
        version=version,
        updated_at=_iso(updated_at),
        waiting=waiting,
        follow_ups=sum(1 for f in state.follow_ups.values() if f.status == "open"),
        blocked=_blocked(state, waiting),
        batches=batches,
    )


def problem_row(listed: Listed, reason: str) -> RunRow:
    """The row of a run (or place) that could not be read, saying why."""
    return RunRow(
        name=listed.name,
        source=listed.source,
        target=listed.words,
        problem=" ".join(reason.split()) or "unreadable",
    )


def _commands(verbs: Sequence[str], listed: Listed, what: str, user: str) -> list[str]:
    return [
        cli_command(verb, *listed.target, what, "--by", user, *listed.options) for verb in verbs
    ]


def inbox_items(listed: Listed, state: RunState, user: str = "NAME") -> list[InboxItem]:
    """The open approval requests and follow-ups of a run, oldest first.

    Args:
        listed: where the run is.
        state: its state.
        user: who decides (the ``--by`` of the suggested commands).

    """
    entry = state_entry_seq(state)
    items: list[tuple[int, InboxItem]] = []
    for a in state.approvals.values():
        if a.status != "pending" or a.requested_seq <= entry:
            continue
        item = InboxItem(
            kind="approval",
            run=listed.name,
            source=listed.source,
            id=a.id,
            gate=a.gate,
            message=a.message,
            asked_by=a.trigger,
            state=a.state,
            since=_iso(a.requested_at),
            commands=_commands(("approve", "reject"), listed, a.gate, user),
        )
        items.append((a.requested_seq, item))
    for f in state.follow_ups.values():
        if f.status != "open":
            continue
        item = InboxItem(
            kind="follow_up",
            run=listed.name,
            source=listed.source,
            id=f.id,
            gate=f.gate,
            message=f.text or f.reason,
            asked_by=f.trigger,
            state=f.state,
            since=_iso(f.opened_at),
            commands=_commands(("resolve",), listed, f.id, user),
        )
        items.append((f.opened_seq, item))
    return [item for _seq, item in sorted(items, key=lambda pair: pair[0])]
