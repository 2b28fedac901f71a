"""Persisted records: facts, events, gate results and the run snapshot (core layer).

Every persisted record carries a format version ``v``. Records are pydantic v2 models with
``extra="forbid"`` so that a misspelt or foreign field in a sidecar is an error, not a silent
drop. Values are JSON only: a non-JSON Python value is encoded before it reaches a record
(see :mod:`skillnb.store.codec.values`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import Any, Literal, TypeVar

from pydantic import Field, PrivateAttr, TypeAdapter

try:
    import orjson
except ImportError:  # pragma: no cover - exercised by the tests that hide orjson
    orjson = None  # type: ignore[assignment]

from skillnb.core.runstate.base import FACT_KINDS, RECORD_VERSION, FactKind, JsonValue
from skillnb.core.runstate.base import Record as _Record
from skillnb.core.runstate.parts import (
    Approval,
    Batch,
    Claim,
    Firing,
    FollowUp,
    GraphInterrupt,
    GraphThread,
    Milestone,
    Owner,
    Step,
)

__all__ = [
    "CHECKED_DRAFTS",
    "FACT_KINDS",
    "RECORD_VERSION",
    "Approval",
    "Batch",
    "CheckedDraft",
    "Claim",
    "Event",
    "EventDraft",
    "Fact",
    "FactDraft",
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
    "stored_fact",
]

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
    """Dotted event type, e.g. ``fact.formalized`` (see :mod:`skillnb.core.runstate.state`)."""
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


class FactDraft(CheckedDraft):
    """The ``fact.formalized`` draft of one fact, holding that :class:`Fact` as folded.

    :func:`skillnb.service.facts.write_fact` makes these, so that its journal folds the fact
    it holds instead of reading it back from the record (each step right after the fsync runs
    cold). Encoded as any :class:`CheckedDraft` is.
    """

    _fact: Fact | None = PrivateAttr(default=None)

    @classmethod
    def of_fact(cls, at: datetime, record: dict[str, Any], seq: int) -> FactDraft:
        """The draft of fact ``record`` committed as event ``seq``, and that fact.

        ``record`` is what ``Fact(...).model_dump(mode="json")`` gives, every field of its
        exact type, its key and note what ``check_event`` accepts (its writer checked them:
        a store does not look again): the fact is then what :func:`stored_fact` of the
        record builds, time included (parsed from the record, as a reader parses it).
        """
        data = {"fact": record}
        draft = built(cls, {"type": "fact.formalized", "at": at, "data": data}, _DRAFT_FIELDS)
        fields = record.copy()
        fields["seq"] = seq
        fields["at"] = _parse_time(record["at"])
        _set(draft, "__pydantic_private__", {"_fact": built(Fact, fields, _FACT_FIELDS)})
        return draft

    def fact_as(self, seq: int) -> Fact | None:
        """The fact this draft holds, if made for event ``seq`` (``None``: fold the record)."""
        private = self.__pydantic_private__
        fact = private.get("_fact") if private else None
        return fact if fact is not None and fact.seq == seq else None


CHECKED_DRAFTS = frozenset((CheckedDraft, FactDraft))
"""The draft classes whose data is strict JSON (a store asks ``type(draft) in CHECKED_DRAFTS``)."""
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


_FACT_FIELDS = (
    *("v", "key", "value", "encoding", "restorable", "kind", "version", "seq", "at"),
    *("cell_id", "source_hash", "note", "preview"),
)
_OPTIONAL_TEXT = (str, type(None))
_parse_time = TypeAdapter(datetime).validator.validate_python


def stored_fact(stored: dict[str, Any], seq: int) -> Fact | None:
    """``Fact.model_validate({**stored, "seq": seq})``, built directly when it surely agrees.

    ``stored`` is what a writer writes (a ``Fact`` dump, as a ``fact.formalized`` event
    holds it): every field, in the model's order, each of its exact type. Then the fact is
    built without validating, its time parsed as validation parses it (a fold right after a
    commit runs cold, and the full validator touches more than this); otherwise ``None``,
    and the caller validates (and reports what is wrong).
    """
    if tuple(stored) != _FACT_FIELDS:
        return None
    at, kind = stored["at"], stored["kind"]
    if not (
        type(at) is str
        and type(stored["key"]) is str
        and type(stored["version"]) is int
        and type(stored["v"]) is int
        and type(stored["restorable"]) is bool
        and type(stored["encoding"]) is str
        and type(stored["preview"]) is str
        and type(kind) is str
        and kind in FACT_KINDS
        and isinstance(stored["note"], _OPTIONAL_TEXT)
        and isinstance(stored["cell_id"], _OPTIONAL_TEXT)
        and isinstance(stored["source_hash"], _OPTIONAL_TEXT)
    ):
        return None
    try:
        when = _parse_time(at)
    except ValueError:  # pydantic's ValidationError is one: validating reports it
        return None
    fields = stored.copy()
    fields["seq"] = seq
    fields["at"] = when
    return built(Fact, fields, _FACT_FIELDS)


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
    if orjson is not None and type(at) is datetime:  # the same text, a few times faster
        try:
            return orjson.dumps(at, option=orjson.OPT_UTC_Z)[1:-1].decode("ascii")
        except TypeError:  # a time zone orjson cannot read (orjson.JSONEncodeError is one)
            pass
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


class RunState(_Record):
    """Everything a run knows at one version: the snapshot that compaction writes.

    It is derived from the journal by :func:`skillnb.core.runstate.state.apply`; the snapshot is an
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
    """Indexes the views keep current (:mod:`skillnb.core.runstate.viewindex`): never persisted,
    never copied (a copy builds its own when asked)."""
    _cells: Any = PrivateAttr(default=None)
    """The facts and steps by cell id (:mod:`skillnb.core.runstate.cellindex`): like ``_views``."""

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are: the derived private indexes are caches, not data."""
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__
