"""The parts of a run's state: approvals, follow-ups, steps, claims, batches, firings (core layer).

Each is a persisted record (:class:`~skillnb.core.runstate.base.Record`) that
:class:`~skillnb.core.runstate.records.RunState` holds by id or name, folded from the journal by
:mod:`skillnb.core.runstate.state`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from itertools import filterfalse, islice
from typing import Literal

from pydantic import ConfigDict, Field, PrivateAttr

from skillnb.core.runstate.base import RECORD_VERSION
from skillnb.core.runstate.base import Record as _Record

__all__ = [
    "Approval",
    "Batch",
    "Claim",
    "Firing",
    "FollowUp",
    "GraphInterrupt",
    "GraphThread",
    "Milestone",
    "Owner",
    "Step",
]


class Approval(_Record):
    """A durable request for a human decision, and the decision once made."""

    v: int = RECORD_VERSION
    id: str
    """Unique id of the request."""
    gate: str
    """The approval gate's name."""
    trigger: str | None = None
    """The trigger (or gated cell key) that asked."""
    message: str = ""
    """What the human is asked to approve."""
    state: str | None = None
    """The run's state when the request was made."""
    requested_seq: int = 0
    """The run version at which the request was recorded (approvals bind to it)."""
    requested_at: datetime
    """When the request was made."""
    status: Literal["pending", "approved", "rejected", "consumed", "expired"] = "pending"
    """Where the request stands."""
    decided_by: str | None = None
    """Who decided."""
    decided_at: datetime | None = None
    """When it was decided."""
    note: str | None = None
    """The decider's note."""


class FollowUp(_Record):
    """Something a warning gate left to do: open until a person resolves it."""

    v: int = RECORD_VERSION
    id: str
    """Unique id of the follow-up."""
    gate: str
    """The warning gate that opened it."""
    state: str | None = None
    """The run's state when the gate warned."""
    trigger: str | None = None
    """The trigger (or gated cell key) whose gates warned."""
    reason: str = ""
    """Why the gate warned (its result message)."""
    text: str = ""
    """What is to be done (the gate's ``follow_up``)."""
    opened_seq: int = 0
    """The run version at which it was opened."""
    opened_at: datetime
    """When it was opened."""
    status: Literal["open", "resolved"] = "open"
    """Where it stands."""
    resolved_by: str | None = None
    """Who resolved it."""
    resolved_at: datetime | None = None
    """When it was resolved."""
    note: str | None = None
    """The resolver's note."""


class Step(_Record):
    """A unit of durable work (a formalized or gated cell, or ``run.step``)."""

    v: int = RECORD_VERSION
    key: str
    """The step's key (``formalize:budget``, ``gate:user_request``, or the user's name)."""
    status: Literal["started", "committed", "failed", "cleared"] = "started"
    """``started`` and never ``committed`` means uncertain after a crash."""
    source_hash: str | None = None
    """Hash of the normalised cell source, when the step is a cell."""
    cell_id: str | None = None
    """The cell, when known."""
    idempotent: bool = False
    """A step declared idempotent may be re-run after an uncertain end."""
    owner: str | None = None
    """The process that started it (``host:pid:start-time``), when recorded."""
    started_seq: int = 0
    """Run version of the ``step.started`` event."""
    committed_seq: int | None = None
    """Run version of the ``step.committed`` event."""
    error: str | None = None
    """The error message of a failed step."""


class Owner(_Record):
    """A process that holds a claim: where it runs and which incarnation of its pid it is."""

    host: str
    """The machine's host name."""
    pid: int
    """The process id on that machine."""
    started: float
    """The process's start time (seconds since the epoch): a recycled pid has another one."""
    session: str | None = None
    """The kernel or session id, when known (for people reading the claim)."""

    @property
    def id(self) -> str:
        """``host:pid:start-time``, the form :attr:`Step.owner` records."""
        return f"{self.host}:{self.pid}:{self.started:.2f}"

    def describe(self) -> str:
        """The owner for a message: its id, plus the session when known."""
        return f"{self.id} ({self.session})" if self.session else self.id


class Claim(_Record):
    """A step or batch item that a process is working on (see :mod:`skillnb.core.runstate.claims`).

    A claim is taken under the run's lock before the body runs, and released by the step's
    commit or failure, the item's completion, or explicitly. While its owner lives (same
    host) or its lease has not expired (another host), no other process runs that body.
    """

    v: int = RECORD_VERSION
    key: str
    """What is claimed: ``step:<step key>`` or ``item:["<batch>","<item>"]``."""
    owner: Owner
    """Who holds it."""
    since: datetime
    """When it was taken."""
    until: datetime
    """When its lease expires unless renewed (what other hosts go by)."""


class Batch(_Record):
    """A named set of items, each completed once across sessions and processes.

    Execution is at least once (an item in flight when its process dies is offered again);
    completion is exactly once (an item is marked done once).
    """

    v: int = RECORD_VERSION
    name: str
    """The batch's name."""
    items: list[str] = Field(default_factory=list)
    """Every item key ever declared for this batch, in first-seen order."""
    done: list[str] = Field(default_factory=list)
    """The keys of the items that are done, in completion order."""

    _sets: _BatchSets | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are: the derived private indexes are caches, not data."""
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    @property
    def total(self) -> int:
        """How many items the batch holds."""
        return len(self.items)

    def _index(self) -> _BatchSets:
        """The item and done sets (kept in step with the lists, rebuilt when they shrank)."""
        private = self.__pydantic_private__ or {}
        sets: _BatchSets | None = private.get("_sets")
        if sets is None:
            sets = self._sets = _BatchSets()
        sets.sync(self.items, self.done)
        return sets

    def extend(self, keys: Iterable[str]) -> None:
        """Append declared item keys, as recorded (a fold step: O(len(keys)))."""
        sets = self._index()
        before = len(self.items)
        self.items.extend(keys)
        sets.seen.update(self.items[before:])
        sets.seen_n = len(self.items)

    def mark_done(self, key: str) -> None:
        """Record ``key`` as done, declaring it first when it is new (O(1))."""
        sets = self._index()
        if key not in sets.seen:
            sets.seen.add(key)
            self.items.append(key)
            sets.seen_n += 1
        self.done.append(key)
        sets.finished.add(key)
        sets.done_n += 1

    def mark_all_done(self, keys: list[str]) -> None:
        """:meth:`mark_done` of each of ``keys`` in turn, in a few C-level passes (O(len(keys)))."""
        sets = self._index()
        new = list(filterfalse(sets.seen.__contains__, dict.fromkeys(keys)))  # first-seen order
        self.items.extend(new)
        sets.seen.update(new)
        sets.seen_n += len(new)
        self.done.extend(keys)
        sets.finished.update(keys)
        sets.done_n += len(keys)

    def is_done(self, key: str) -> bool:
        """True when ``key`` is done (O(1))."""
        return key in self._index().finished

    @property
    def done_count(self) -> int:
        """How many distinct items are done."""
        return len(self._index().finished)

    def remaining(self, limit: int | None = None) -> list[str]:
        """Item keys not yet done, in declared order (only the first ``limit`` when given).

        With a limit this costs O(limit) plus the done items met on the way, not O(items).
        """
        if limit is not None and limit <= 0:
            return []
        sets = self._index()
        items, finished, start = self.items, sets.finished, sets.open_from
        while start < len(items) and items[start] in finished:
            start += 1
        sets.open_from = start
        out: list[str] = []
        for key in islice(items, start, None):
            if key not in finished:
                out.append(key)
                if limit is not None and len(out) >= limit:
                    break
        return out


class _BatchSets:
    """A batch's items and done items as sets, and where its first open item may be."""

    __slots__ = ("done_n", "finished", "open_from", "seen", "seen_n")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.seen_n = -1
        self.finished: set[str] = set()
        self.done_n = -1
        self.open_from = 0

    def sync(self, items: list[str], done: list[str]) -> None:
        """Catch up with the lists (appends are cheap; anything else rebuilds)."""
        if self.seen_n != len(items):
            self.seen, self.seen_n, self.open_from = set(items), len(items), 0
        if self.done_n > len(done) or self.done_n < 0:
            self.finished, self.open_from = set(done), 0
        elif self.done_n < len(done):
            self.finished.update(done[self.done_n :])
        self.done_n = len(done)


class Firing(_Record):
    """One transition that fired."""

    v: int = RECORD_VERSION
    trigger: str
    source: str | None = Field(default=None, alias="from")
    target: str = Field(alias="to")
    seq: int
    """Run version of the ``transition.fired`` event."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Milestone(_Record):
    """A named checkpoint of the run."""

    v: int = RECORD_VERSION
    name: str
    seq: int
    state: str | None = None
    facts: dict[str, int] = Field(default_factory=dict)
    """Each fact key and the version it had at the milestone."""
    at: datetime


# -- LangGraph threads kept in the run (see skillnb.integrations.langgraph) ---------------------


class GraphInterrupt(_Record):
    """An ``interrupt()`` a LangGraph thread waits on."""

    id: str
    """LangGraph's interrupt id (also the id of the approval request it opened)."""
    node: str = ""
    """The node that raised it."""
    value: str = ""
    """A preview of what it asks (JSON text, clipped)."""


class GraphThread(_Record):
    """The head of a LangGraph thread whose checkpoints live in this run."""

    v: int = RECORD_VERSION
    thread_id: str
    """LangGraph's ``thread_id``."""
    checkpoint: str
    """The id of the latest checkpoint (root namespace)."""
    step: int | None = None
    """Its ``metadata["step"]``."""
    source: str | None = None
    """Its ``metadata["source"]`` (``input``, ``loop``, ``update``, ``fork``)."""
    next: list[str] = Field(default_factory=list)
    """The nodes it schedules next."""
    interrupts: list[GraphInterrupt] = Field(default_factory=list)
    """Interrupts raised at the latest checkpoint and not resumed yet."""
    checkpoints: int = 0
    """How many checkpoints the thread holds (root namespace)."""
    updated_at: datetime | None = None
    """When the thread last changed."""
