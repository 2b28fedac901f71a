"""Persisted records: facts, events, gate results and the run snapshot (core layer).

Every persisted record carries a format version ``v``. Records are pydantic v2 models with
``extra="forbid"`` so that a misspelt or foreign field in a sidecar is an error, not a silent
drop. Values are JSON only: a non-JSON Python value is encoded before it reaches a record
(see :mod:`skillnb.store.codec`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import partial
from itertools import filterfalse, islice
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter

__all__ = [
    "FACT_KINDS",
    "RECORD_VERSION",
    "Approval",
    "Batch",
    "CheckedDraft",
    "Claim",
    "Event",
    "EventDraft",
    "Fact",
    "FactKind",
    "Firing",
    "FollowUp",
    "GateReport",
    "GateResult",
    "GraphInterrupt",
    "GraphThread",
    "JsonValue",
    "Milestone",
    "Owner",
    "RunState",
    "Step",
    "built",
    "json_time",
    "replaced",
]

RECORD_VERSION = 1
"""The format version written into every persisted record."""

JsonValue = Any
"""A value that ``json.dumps`` accepts (kept as ``Any`` so pydantic does not re-validate it)."""

FactKind = Literal["decision", "data", "constraint", "summary", "note"]
FACT_KINDS: tuple[str, ...] = ("decision", "data", "constraint", "summary", "note")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)


_Built = TypeVar("_Built", bound=_Record)


class Fact(_Record):
    """One version of a formalized value."""

    v: int = RECORD_VERSION
    """Format version of this record."""
    key: str
    """The fact's name (a Python identifier in practice, any string in the API)."""
    value: JsonValue = None
    """The value as stored: plain JSON when ``encoding == "json"``, else the codec's envelope.
    ``Run.fact`` returns the decoded value here."""
    encoding: str = "json"
    """Name of the codec that produced ``value`` (``json``, ``text``, ``bytes``, ``blob``, ...)."""
    restorable: bool = True
    """False when only a ``repr`` could be kept: the value cannot be restored into Python."""
    kind: FactKind = "data"
    """What the fact means for the workflow."""
    version: int
    """1 for the first write of this key, then 2, 3, ... (per key)."""
    seq: int = 0
    """The run version (journal sequence number) of the event that wrote it."""
    at: datetime
    """When it was written (timezone-aware)."""
    cell_id: str | None = None
    """The notebook cell that produced it, when known."""
    source_hash: str | None = None
    """Hash of the producing cell's normalised source, when known."""
    note: str | None = None
    """Free text from the user."""
    preview: str = ""
    """A short, single-line rendering of the value for mirrors and summaries."""


class GateResult(_Record):
    """The outcome of one gate."""

    v: int = RECORD_VERSION
    gate: str
    """The gate's name (inline gates are named after what they check)."""
    kind: Literal["state", "requires", "check", "python", "resource", "approval"]
    """Which kind of gate."""
    severity: Literal["block", "warn"] = "block"
    """``block`` stops the step; ``warn`` is reported and does not."""
    passed: bool
    """Whether the gate passed."""
    message: str = ""
    """Why it failed (or a short note when it passed)."""
    duration_ms: float = 0.0
    """How long the evaluation took."""
    attempts: int = 1
    """How many attempts were made (resource gates retry)."""
    bypassed: bool = False
    """True when the run's profile bypasses the gate: it passed without being evaluated."""
    timed_out: bool = False
    """True when the gate's last attempt timed out."""
    escalated: bool = False
    """True when a timeout handed the decision to a person (``passed``: a person approved)."""
    fallback: str | None = None
    """The trigger fired instead, when the gate timed out with ``on_timeout: {fallback}``."""
    _reason: str | None = PrivateAttr(default=None)

    @property
    def reason(self) -> str:
        """Why the gate failed, in words a person reads.

        A check's compared values (``review: 7 of 27 done``) without its expression; else
        :attr:`message`. Not persisted: a result read back from a journal gives its message.
        """
        return self._reason or self.message

    def explain(self, reason: str) -> None:
        """Set :attr:`reason` (the evaluation that made this result knows it)."""
        self._reason = reason


class GateReport(_Record):
    """The gates evaluated for one trigger (or one gated cell), in evaluation order."""

    v: int = RECORD_VERSION
    trigger: str | None = None
    """The trigger checked (``None`` for inline-only gates)."""
    state: str | None = None
    """The run's state when the gates ran."""
    version: int = 0
    """The run version the gates saw."""
    results: list[GateResult] = Field(default_factory=list)
    """One result per gate, cheapest first, approval last."""
    profile: str = "default"
    """The run profile the gates were evaluated under."""

    @property
    def passed(self) -> bool:
        """True when no blocking gate failed."""
        return all(r.passed for r in self.results if r.severity == "block")

    @property
    def blocking(self) -> list[GateResult]:
        """The blocking gates that failed."""
        return [r for r in self.results if r.severity == "block" and not r.passed]

    @property
    def warnings(self) -> list[GateResult]:
        """The warning gates that failed."""
        return [r for r in self.results if r.severity == "warn" and not r.passed]

    @property
    def bypassed(self) -> list[GateResult]:
        """The gates the run's profile bypassed."""
        return [r for r in self.results if r.bypassed]

    @property
    def fallback(self) -> GateResult | None:
        """The first blocking gate that timed out with a fallback trigger, if any."""
        return next((r for r in self.blocking if r.fallback is not None), None)


class EventDraft(_Record):
    """An event before the store assigns it a sequence number."""

    type: str
    """Dotted event type, e.g. ``fact.formalized`` (see :mod:`skillnb.core.state`)."""
    at: datetime
    """When it happened (timezone-aware)."""
    data: dict[str, JsonValue] = Field(default_factory=dict)
    """The payload, JSON only."""


class CheckedDraft(EventDraft):
    """A draft whose data its maker knows to be strict JSON.

    Only exact JSON types (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``bool``,
    finite ``float``, ``None``): no NaN, no tuple, no other object. A store may then encode it
    with a faster encoder that would not refuse what is not JSON; every other draft is checked
    by the strict encoder. :func:`skillnb.service.facts.write_fact` makes these.
    """

    @classmethod
    def of(cls, type_: str, at: datetime, data: dict[str, JsonValue]) -> CheckedDraft:
        """The draft ``CheckedDraft(type=type_, at=at, data=data)`` gives, without validating.

        For a maker that already holds what validation checks: ``type_`` a ``str``, ``at`` a
        ``datetime``, ``data`` a ``dict`` with ``str`` keys (it becomes the draft's own).
        """
        return built(cls, {"type": type_, "at": at, "data": data}, _DRAFT_FIELDS)


_DRAFT_FIELDS = frozenset(("type", "at", "data"))
_new = object.__new__
_set = object.__setattr__


def built(cls: type[_Built], fields: dict[str, Any], given: Iterable[str]) -> _Built:
    """An instance of record class ``cls`` over ``fields``, which it takes as its own.

    What ``cls.model_construct`` does, at a fraction of its cost, for callers whose fields
    are already what validation would keep: every field of ``cls`` present (defaults too),
    each of its declared type. ``given`` are the fields counted as set explicitly (copied).
    """
    record = _new(cls)
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(given))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


def replaced(record: _Built, **changes: Any) -> _Built:
    """A shallow copy of ``record`` with ``changes`` (``model_copy(update=...)``, cheaper).

    Only for records without private attributes, and ``changes`` of the fields' own types.
    """
    fields = record.__dict__.copy()
    fields.update(changes)
    return built(type(record), fields, record.__pydantic_fields_set__ | changes.keys())


_pydantic_json_time = partial(TypeAdapter(datetime).serializer.to_python, mode="json")


def json_time(at: datetime) -> str:
    """``at`` as a record's ``model_dump(mode="json")`` writes it (``...Z`` for UTC).

    That is ``isoformat()`` with ``Z`` for a zero offset, for every offset of whole minutes
    (and none); pydantic itself writes an offset with seconds, which no real zone has had
    since 1972.
    """
    offset = at.utcoffset()
    if offset is not None and (offset.seconds % 60 or offset.microseconds):
        return str(_pydantic_json_time(at))
    text = at.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class Event(_Record):
    """One committed entry of the run's journal."""

    v: int = RECORD_VERSION
    """Format version of this record."""
    seq: int
    """The run version this event created: 1, 2, 3, ... strictly increasing, no gaps."""
    type: str
    """Dotted event type, e.g. ``fact.formalized``."""
    at: datetime
    """When it happened (timezone-aware)."""
    data: dict[str, JsonValue] = Field(default_factory=dict)
    """The payload, JSON only."""


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
    """A step or batch item that a process is working on (see :mod:`skillnb.core.claims`).

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


class RunState(_Record):
    """Everything a run knows at one version: the snapshot that compaction writes.

    It is derived from the journal by :func:`skillnb.core.state.apply`; the snapshot is an
    optimisation, never a second source of truth.
    """

    v: int = RECORD_VERSION
    """Format version of this record."""
    run_id: str
    """The run's id."""
    version: int = 0
    """The journal sequence number this state includes."""
    created_at: datetime | None = None
    """When the run was created."""
    updated_at: datetime | None = None
    """When the last event was recorded."""
    workflow: str | None = None
    """The workflow's name, when the run has one."""
    workflow_hash: str | None = None
    """Hash of the workflow definition the run was last bound to."""
    workflow_definition: dict[str, JsonValue] | None = None
    """The definition itself (plain data), so tools can show the machine without the source."""
    state: str | None = None
    """The current state (``None`` for a run without a workflow)."""
    visited: list[str] = Field(default_factory=list)
    """States entered, in first-visit order."""
    facts: dict[str, Fact] = Field(default_factory=dict)
    """The latest version of each fact (stored form)."""
    firings: list[Firing] = Field(default_factory=list)
    """Transitions fired, oldest first."""
    approvals: dict[str, Approval] = Field(default_factory=dict)
    """Approval requests by id."""
    follow_ups: dict[str, FollowUp] = Field(default_factory=dict)
    """Follow-ups left by warning gates, by id (open and resolved)."""
    steps: dict[str, Step] = Field(default_factory=dict)
    """Steps by key (latest attempt)."""
    batches: dict[str, Batch] = Field(default_factory=dict)
    """Batches by name."""
    key_ids: dict[str, JsonValue] = Field(default_factory=dict)
    """Ids worth remembering (session ids, batch ids, ...)."""
    reports: dict[str, GateReport] = Field(default_factory=dict)
    """The last recorded gate report per trigger or gated cell."""
    milestones: list[Milestone] = Field(default_factory=list)
    """Named checkpoints, oldest first."""
    claims: dict[str, Claim] = Field(default_factory=dict)
    """Steps and batch items held by a process, by claim key."""
    last_operation: str | None = None
    """A one-line description of the last event."""
    graph_threads: dict[str, GraphThread] = Field(default_factory=dict)
    """LangGraph threads checkpointed in this run, by thread id (heads only)."""

    _views: Any = PrivateAttr(default=None)
    """Indexes the views keep current (:mod:`skillnb.core.viewindex`): never persisted, never
    copied (a copy builds its own when asked)."""

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are: the derived private indexes are caches, not data."""
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__
