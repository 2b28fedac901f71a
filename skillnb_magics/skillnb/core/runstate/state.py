"""Folding journal events into a :class:`~skillnb.core.runstate.records.RunState` (core layer).

The journal is the source of truth; the state is what :func:`apply` makes of it, one event at
a time, deterministically. Event types and their payloads:

==========================  =================================================================
type                        data
==========================  =================================================================
``run.created``             ``run_id``
``workflow.bound``          ``workflow``, ``hash``, ``initial`` (state entered when none yet),
                            ``definition`` (the workflow as plain data)
``fact.formalized``         ``fact`` (a :class:`Fact` dump, stored form)
``transition.fired``        ``trigger``, ``from``, ``to``, ``action``; optionally ``profile``,
                            and ``fallback`` (``for``, ``gate``, ``reason``) when it fired
                            because a gate of ``for`` timed out
``gate.reported``           ``key``, ``report`` (a :class:`GateReport` dump)
``approval.requested``      ``approval`` (an :class:`Approval` dump)
``approval.decided``        ``id``, ``status`` (approved/rejected), ``by``, ``note``
``approval.consumed``       ``id``
``approval.expired``        ``id``
``gate.bypassed``           ``key``, ``trigger``, ``gate``, ``profile``, ``state`` (a step ran
                            without this gate; changes nothing, kept for the audit trail)
``followup.opened``         ``follow_up`` (a :class:`FollowUp` dump)
``followup.resolved``       ``id``, ``by``, ``note``
``step.started``            ``key``, ``source_hash``, ``cell_id``, ``idempotent``, ``owner``,
                            ``claim`` (a :class:`Claim` dump, when the step was claimed)
``step.committed``          ``key``
``step.failed``             ``key``, ``error``
``step.cleared``            ``key``, ``by``
``batch.declared``          ``batch``, ``items`` (new item keys, in order)
``batch.item_done``         ``batch``, ``item``
``keyids.set``              ``ids`` (merged into ``key_ids``)
``milestone.recorded``      ``name``, ``state``, ``facts`` (key -> version)
``langgraph.*``             ``thread`` (or ``target``), ``head`` (a :class:`GraphThread` dump
                            without ``thread_id``, or ``None``); the rest is the LangGraph
                            saver's (:mod:`skillnb.integrations.langgraph.index`)
``claim.taken``             ``claim`` (a :class:`Claim` dump)
``claim.renewed``           ``key``, ``owner`` (the owner's id), ``until``
``claim.released``          ``key``
==========================  =================================================================

A step's ``step.committed``, ``step.failed`` and ``step.cleared`` also release its claim, and
``batch.item_done`` the item's (see :mod:`skillnb.core.runstate.claims`).

Unknown types are kept in the journal and ignored here, so an older reader can replay a
journal that a newer writer extended with new kinds of events. ``run.rebuilt`` (a run rebuilt
from a notebook) and ``store.lost`` (a placeholder that ``repair`` writes for a damaged line)
change nothing in the state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from skillnb.core.gcpause import gc_paused
from skillnb.core.runstate.claims import item_claim_key, step_claim_key
from skillnb.core.runstate.columnfold import fold_columns
from skillnb.core.runstate.describe import describe_event
from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import (
    Approval,
    Batch,
    Claim,
    Event,
    EventDraft,
    Fact,
    FactDraft,
    Firing,
    FollowUp,
    GateReport,
    GraphThread,
    Milestone,
    Owner,
    RunState,
    Step,
    built,
    stored_fact,
)

__all__ = ["MalformedEvent", "apply", "apply_all", "apply_written", "state_entry_seq"]


_Fold = Callable[[RunState, Event], None]


class MalformedEvent(ValueError):
    """An event's payload does not have the shape its type requires."""


def _created(state: RunState, e: Event) -> None:
    state.created_at = state.created_at or e.at


def _bound(state: RunState, e: Event) -> None:
    d = e.data
    state.workflow = str(d["workflow"])
    state.workflow_hash = str(d["hash"])
    definition = d.get("definition")
    if definition is not None and not isinstance(definition, dict):
        raise MalformedEvent("definition must be an object")
    state.workflow_definition = definition
    if state.state is None and d.get("initial") is not None:
        state.state = str(d["initial"])
        if state.state not in state.visited:
            state.visited.append(state.state)


_validate_fact = Fact.__pydantic_validator__.validate_python
_validate_step = Step.__pydantic_validator__.validate_python


def _fact(state: RunState, e: Event) -> None:
    stored = e.data["fact"]
    if not isinstance(stored, dict):
        raise MalformedEvent("fact must be an object")
    fact = stored_fact(stored, e.seq)  # a writer's record, built as validating it would
    if fact is None:
        fact = _validate_fact({**stored, "seq": e.seq})  # Fact.model_validate, less overhead
    state.facts[fact.key] = fact


def _fired(state: RunState, e: Event) -> None:
    d = e.data
    firing = Firing(trigger=str(d["trigger"]), source=d.get("from"), target=str(d["to"]), seq=e.seq)
    state.firings.append(firing)
    state.state = firing.target
    if firing.target not in state.visited:
        state.visited.append(firing.target)


def _reported(state: RunState, e: Event) -> None:
    state.reports[str(e.data["key"])] = GateReport.model_validate(e.data["report"])


def _requested(state: RunState, e: Event) -> None:
    approval = Approval.model_validate(e.data["approval"])
    approval.requested_seq = e.seq
    state.approvals[approval.id] = approval


def _decided(state: RunState, e: Event) -> None:
    approval = state.approvals[str(e.data["id"])]
    approval.status = "approved" if e.data["status"] == "approved" else "rejected"
    approval.decided_by = e.data.get("by")
    approval.decided_at = e.at
    approval.note = e.data.get("note")


def _consumed(state: RunState, e: Event) -> None:
    state.approvals[str(e.data["id"])].status = "consumed"


def _expired(state: RunState, e: Event) -> None:
    state.approvals[str(e.data["id"])].status = "expired"


def _opened(state: RunState, e: Event) -> None:
    follow_up = FollowUp.model_validate(e.data["follow_up"])
    follow_up.opened_seq = e.seq
    state.follow_ups[follow_up.id] = follow_up


def _resolved(state: RunState, e: Event) -> None:
    follow_up = state.follow_ups[str(e.data["id"])]
    follow_up.status = "resolved"
    follow_up.resolved_by = e.data.get("by")
    follow_up.resolved_at = e.at
    follow_up.note = e.data.get("note")


def _started(state: RunState, e: Event) -> None:
    _start_step(state, e.seq, e.data)


def _start_step(state: RunState, seq: int, d: dict[str, Any]) -> None:
    key = str(d["key"])
    fields = {
        "key": key,
        "status": "started",
        "source_hash": d.get("source_hash"),
        "cell_id": d.get("cell_id"),
        "idempotent": bool(d.get("idempotent", False)),
        "owner": d.get("owner"),
        "started_seq": seq,
    }
    state.steps[key] = _new_step(fields) or _validate_step(fields)
    if d.get("claim") is not None:
        claim = _claim(d["claim"])
        state.claims[claim.key] = claim


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?(?:Z|[+-]\d\d:\d\d)")
"""A time as :func:`~skillnb.core.runstate.records.json_time` writes it (read alike by both
parsers)."""
_OWNER_FIELDS = frozenset(("host", "pid", "started", "session"))


def _claim(dump: Any) -> Claim:
    """``Claim.model_validate(dump)``, built directly when ``dump`` is as a claim writes it.

    As written: exact types, times as :func:`~skillnb.core.runstate.records.json_time` writes them
    (parsed by ``datetime.fromisoformat`` to the same instant pydantic reads). Anything
    else goes through validation.
    """
    owner = dump.get("owner") if type(dump) is dict else None
    if (
        type(owner) is dict
        and dump.keys() == _CLAIM_FIELDS
        and type(dump["v"]) is int
        and type(dump["key"]) is str
        and type(dump["since"]) is str
        and type(dump["until"]) is str
        and _TIME.fullmatch(dump["since"])
        and _TIME.fullmatch(dump["until"])
        and owner.keys() <= _OWNER_FIELDS
        and type(owner.get("host")) is str
        and type(owner.get("pid")) is int
        and type(owner.get("started")) is float
        and type(owner.get("session")) in _PLAIN_TEXT
    ):
        values = {
            "host": owner["host"],
            "pid": owner["pid"],
            "started": owner["started"],
            "session": owner.get("session"),
        }
        who = built(Owner, values, owner.keys())
        fields = {
            "v": dump["v"],
            "key": dump["key"],
            "owner": who,
            "since": datetime.fromisoformat(dump["since"]),
            "until": datetime.fromisoformat(dump["until"]),
        }
        return built(Claim, fields, _CLAIM_FIELDS)
    return Claim.model_validate(dump)


_CLAIM_FIELDS = frozenset(("v", "key", "owner", "since", "until"))


_STEP_DEFAULTS = {
    name: None if field.is_required() else field.get_default(call_default_factory=True)
    for name, field in Step.model_fields.items()
}
_PLAIN_TEXT = (type(None), str)


def _new_step(fields: dict[str, Any]) -> Step | None:
    """The Step that validating ``fields`` gives, built directly; ``None`` unless plain.

    Plain: ``source_hash``, ``cell_id`` and ``owner`` are text or ``None`` (what validation
    keeps as they are), the rest as :func:`_start_step` makes them (``key`` text,
    ``idempotent`` a bool, ``started_seq`` an int).
    """
    if (
        type(fields["source_hash"]) not in _PLAIN_TEXT
        or type(fields["cell_id"]) not in _PLAIN_TEXT
        or type(fields["owner"]) not in _PLAIN_TEXT
    ):
        return None
    values = dict(_STEP_DEFAULTS)
    values.update(fields)
    return built(Step, values, fields.keys())


def _assign(step: Step, **fields: Any) -> None:
    """``step.<name> = value`` for each field, as pydantic assigns them (no validation), cheaper."""
    step.__dict__.update(fields)
    step.__pydantic_fields_set__.update(fields)


def _step_end(status: str) -> Callable[[RunState, int, dict[str, Any]], None]:
    def fold(state: RunState, seq: int, d: dict[str, Any]) -> None:
        step = state.steps.get(str(d["key"]))
        if step is None:
            step = Step(key=str(d["key"]), started_seq=seq)
            state.steps[step.key] = step
        state.claims.pop(step_claim_key(step.key), None)
        if status == "committed":
            _assign(step, status=status, committed_seq=seq, error=None)
        elif status == "failed":
            _assign(step, status=status, error=str(d.get("error", "")))
        else:
            _assign(step, status=status)

    return fold


def _event_fold(fold: Callable[[RunState, int, dict[str, Any]], None]) -> _Fold:
    return lambda state, e: fold(state, e.seq, e.data)


def _batch(state: RunState, name: str) -> Batch:
    batch = state.batches.get(name)
    if batch is None:
        batch = state.batches[name] = Batch(name=name)
    return batch


def _declared(state: RunState, e: Event) -> None:
    batch = _batch(state, str(e.data["batch"]))
    batch.extend(str(k) for k in e.data["items"])


def _item_done(state: RunState, e: Event) -> None:
    _mark_item_done(state, e.seq, e.data)


def _mark_item_done(state: RunState, _seq: int, d: dict[str, Any]) -> None:
    name = str(d["batch"])
    batch = _batch(state, name)
    item = str(d["item"])
    batch.mark_done(item)
    if state.claims:
        state.claims.pop(item_claim_key(name, item), None)


def _keyids(state: RunState, e: Event) -> None:
    ids = e.data["ids"]
    if not isinstance(ids, dict):
        raise MalformedEvent("ids must be an object")
    state.key_ids.update(ids)


def _milestone(state: RunState, e: Event) -> None:
    d = e.data
    state.milestones.append(
        Milestone(name=str(d["name"]), seq=e.seq, state=d.get("state"), facts=d["facts"], at=e.at)
    )


# -- LangGraph threads: the saver puts the thread's new head in each event that changes it --


def _graph_head(state: RunState, e: Event) -> None:
    thread = str(e.data.get("target", e.data.get("thread")))
    if "head" not in e.data and e.type != "langgraph.deleted":
        return  # the thread's head did not change
    head = e.data.get("head")
    if head is None:
        state.graph_threads.pop(thread, None)
        return
    if not isinstance(head, dict):
        raise MalformedEvent("head must be an object or null")
    state.graph_threads[thread] = GraphThread.model_validate(
        {**head, "thread_id": thread, "updated_at": e.at}
    )


_GRAPH_EVENTS = (
    "langgraph.checkpoint",
    "langgraph.writes",
    "langgraph.pruned",
    "langgraph.deleted",
    "langgraph.copied",
)


def _claimed(state: RunState, e: Event) -> None:
    claim = _claim(e.data["claim"])
    state.claims[claim.key] = claim


def _renewed(state: RunState, e: Event) -> None:
    claim = state.claims.get(str(e.data["key"]))
    if claim is None or claim.owner.id != e.data["owner"]:
        return  # released or taken over meanwhile: the renewal came too late
    renewed = Claim.model_validate({**claim.model_dump(), "until": e.data["until"]})
    state.claims[claim.key] = renewed


def _released(state: RunState, e: Event) -> None:
    state.claims.pop(str(e.data["key"]), None)


_RECORD_FOLDS: dict[str, Callable[[RunState, int, dict[str, Any]], None]] = {
    "step.started": _start_step,
    "step.committed": _step_end("committed"),
    "step.failed": _step_end("failed"),
    "step.cleared": _step_end("cleared"),
    "batch.item_done": _mark_item_done,
}
"""Folds of the commonest types from an event's sequence number and data alone (no Event)."""

_FOLDS: dict[str, _Fold] = {
    "run.created": _created,
    "workflow.bound": _bound,
    "fact.formalized": _fact,
    "transition.fired": _fired,
    "gate.reported": _reported,
    "approval.requested": _requested,
    "approval.decided": _decided,
    "approval.consumed": _consumed,
    "approval.expired": _expired,
    "followup.opened": _opened,
    "followup.resolved": _resolved,
    "step.started": _started,
    "step.committed": _event_fold(_RECORD_FOLDS["step.committed"]),
    "step.failed": _event_fold(_RECORD_FOLDS["step.failed"]),
    "step.cleared": _event_fold(_RECORD_FOLDS["step.cleared"]),
    "batch.declared": _declared,
    "batch.item_done": _item_done,
    "keyids.set": _keyids,
    "milestone.recorded": _milestone,
    **dict.fromkeys(_GRAPH_EVENTS, _graph_head),
    "claim.taken": _claimed,
    "claim.renewed": _renewed,
    "claim.released": _released,
}


def apply(state: RunState, event: Event) -> RunState:
    """Fold ``event`` into ``state`` (in place) and return it.

    Raises:
        MalformedEvent: the payload lacks a field its type needs, or has the wrong type.

    """
    return apply_all(state, (event,))


def apply_all(state: RunState, events: Iterable[Event]) -> RunState:
    """Fold ``events`` into ``state`` in order (in place) and return it.

    The same as :func:`apply` for each event in turn, but what only the last event decides
    is done once, at the end: ``version``, ``updated_at``, ``last_operation`` (replaying a
    long journal describes one event, not every one), and each fact's latest version is
    validated into a :class:`Fact` once (a version written over later in the same call is
    never read from the state; :meth:`~skillnb.service.journal.RunJournal.fact_history`
    validates old versions when it reads them).

    Raises:
        MalformedEvent: an event does not follow the state's version, or its payload lacks a
            field its type needs. The state then includes every event before that one.

    """
    if type(events) is list and len(events) == 1:  # one commit's event: nothing to defer
        return _apply_one(state, events[0])
    indexes = _indexes(state)  # the derived indexes are told what changed, if built
    facts: dict[str, Event] = {}  # the latest fact.formalized of each key, in first-seen order
    last: Event | None = None
    version = state.version
    done = [0]
    try:
        with gc_paused():  # many objects that stay alive: no cycles to collect
            if isinstance(events, EventRecords) and state._views is None and events.seqs.step == 1:
                _fold_records(state, events, facts, done)  # builds only the events folds read
            else:
                for event in events:
                    if event.seq != version + 1:
                        raise MalformedEvent(f"event {event.seq} follows version {version}")
                    if not _defer_fact(facts, event):
                        _fold_one(state, event)
                    for index in indexes:
                        index.note(event)
                    version, last = event.seq, event
    finally:
        if done[0] and isinstance(events, EventRecords):
            last = events[done[0] - 1]
        try:
            for event in facts.values():
                _fold_one(state, event)
        finally:
            if last is not None:
                state.version = last.seq
                state.updated_at = last.at
                state.last_operation = describe_event(last)
    return state


def _indexes(state: RunState) -> list[Any]:
    """The indexes built on ``state`` (:attr:`RunState._views`, :attr:`RunState._cells`)."""
    private = state.__pydantic_private__  # attribute access to it goes through __getattr__
    if not private:
        return []
    return [index for index in (private.get("_views"), private.get("_cells")) if index is not None]


def _fold_records(
    state: RunState, events: EventRecords, facts: dict[str, Event], done: list[int]
) -> None:
    """:func:`apply_all`'s loop over checked columns; ``done[0]``: how many were folded.

    The same as folding ``events`` (numbered one after the other) one by one, but an event
    is built only when a fold reads it: a fact's latest version, an event of a type that
    changes the state and is not folded from its data alone. The commonest events are
    folded straight from the columns (:func:`~skillnb.core.runstate.columnfold.fold_columns`); the
    rest here, one at a time. A cell index reads what changed from the columns.
    """
    first = state.version
    if events and events.seqs[0] != first + 1:
        raise MalformedEvent(f"event {events.seqs[0]} follows version {first}")
    latest: dict[str, int] = {}  # the index of each key's latest fact, in first-seen order
    folds = _RECORD_FOLDS

    def fold_at(at: int, kind: str, data: dict[str, Any]) -> None:
        if (fold := folds.get(kind)) is not None:
            try:
                fold(state, first + 1 + at, data)
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                raise MalformedEvent(f"event {first + 1 + at} ({kind}): {exc}") from exc
        elif kind in _FOLDS:
            _fold_one(state, events[at])

    try:
        fold_columns(state, events, latest, done, fold_at)
    finally:
        facts.update((key, events[i]) for key, i in latest.items())
        if (cells := state._cells) is not None:  # noting one not folded is harmless: see sync
            cells.note_columns(events.types, events.data)


def _apply_one(state: RunState, event: Event) -> RunState:
    """:func:`apply_all` for a single event (the common commit), without its bookkeeping."""
    if event.seq != state.version + 1:
        raise MalformedEvent(f"event {event.seq} follows version {state.version}")
    _fold_one(state, event)  # raises before anything below: the state stays as it was
    return _applied(state, event)


def apply_written(state: RunState, events: Sequence[Event], drafts: Sequence[EventDraft]) -> bool:
    """:func:`apply_all` of ``events`` for their writer, when they are one fact's event.

    That is one ``fact.formalized`` event committed from a
    :class:`~skillnb.core.runstate.records.FactDraft`, which holds the :class:`Fact` folding
    its record builds: the same state, without reading the record back. ``False``: not such
    a commit, nothing folded (fold them with :func:`apply_all`).
    """
    if len(events) != 1 or len(drafts) != 1 or not state.run_id:
        return False
    draft, event = drafts[0], events[0]
    fact = draft.fact_as(event.seq) if type(draft) is FactDraft else None
    if fact is None or event.seq != state.version + 1:
        return False
    state.facts[fact.key] = fact
    _applied(state, event)
    return True


def _applied(state: RunState, event: Event) -> RunState:
    """What folding ``event`` (just folded) changes besides its own fold: indexes, version."""
    private = state.__pydantic_private__  # attribute access to it goes through __getattr__
    if private:
        if (views := private.get("_views")) is not None:
            views.note(event)
        if (cells := private.get("_cells")) is not None:
            cells.note(event)
    changed = {
        "version": event.seq,
        "updated_at": event.at,
        "last_operation": describe_event(event),
    }
    state.__dict__.update(changed)  # as assigning each field does, at a third of the cost
    state.__pydantic_fields_set__.update(changed)
    return state


def _defer_fact(facts: dict[str, Event], event: Event) -> bool:
    """Keep a well-keyed ``fact.formalized`` for the end of :func:`apply_all`."""
    if event.type != "fact.formalized":
        return False
    stored = event.data.get("fact")
    key = stored.get("key") if isinstance(stored, dict) else None
    if type(key) is not str:
        return False  # folded now: the error names this event
    facts[key] = event
    return True


def _fold_one(state: RunState, event: Event) -> None:
    fold = _FOLDS.get(event.type)
    if fold is None:
        return
    try:
        fold(state, event)
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise MalformedEvent(f"event {event.seq} ({event.type}): {exc}") from exc


def state_entry_seq(state: RunState) -> int:
    """The version at which the current state was entered (0 if never by a transition)."""
    return state.firings[-1].seq if state.firings else 0
