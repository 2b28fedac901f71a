"""Folding the commonest events of a replay straight from a store's columns (core layer).

A long journal is mostly fact versions, steps started and committed, and batch items done.
:func:`fold_columns` folds those from the events' type and data columns
(:class:`~skillnb.core.runstate.eventrecords.EventRecords`) without building an
:class:`~skillnb.core.runstate.records.Event` or calling a fold per event:

* a fact is only noted as its key's latest (the caller folds each key's latest once); when
  its data are held unbuilt (:class:`~skillnb.core.runstate.eventrecords.HeldData`) the key
  is read from what the reader kept, so a version written over later is never built;
* a plain ``step.started`` (text key and ids, no claim) becomes its :class:`Step` directly,
  as validating it would;
* a ``step.committed`` of a step the state holds is assigned in place;
* ``batch.item_done`` events (text batch and item) are gathered per batch and marked done
  together (:meth:`~skillnb.core.runstate.records.Batch.mark_all_done`) before any other event is
  folded, and at the end.

Anything else, and any of those in another shape, goes to the caller's fold of one event
(``fold_at``), which folds it exactly as folding the events one by one does, or raises
naming it. Gathered completions commute with what is folded here meanwhile: facts and
steps touch neither batches nor item claims (a step's commit releases a ``step:`` claim
only; a start with a claim goes to ``fold_at``, after the completions before it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count
from typing import Any

from skillnb.core.runstate.claims import item_claim_key, step_claim_key
from skillnb.core.runstate.eventrecords import EventRecords, HeldData
from skillnb.core.runstate.records import Batch, RunState, Step, built

__all__ = ["fold_columns"]

FACT = "fact.formalized"
_STARTED = "step.started"
_COMMITTED = "step.committed"
_ITEM_DONE = "batch.item_done"
_STEP_V = Step.model_fields["v"].default
_STARTED_FIELDS = frozenset(
    ("key", "status", "source_hash", "cell_id", "idempotent", "owner", "started_seq")
)
"""The fields a step's start sets explicitly (those of ``state._start_step``)."""
_COMMITTED_FIELDS = ("status", "committed_seq", "error")
_TEXT = (str, type(None))


FoldAt = Callable[[int, str, dict[str, Any]], None]
"""Folds the event at an index (given with its type and data) as folding in turn does, or raises."""


def fold_columns(
    state: RunState,
    events: EventRecords,
    latest: dict[str, int],
    done: list[int],
    fold_at: FoldAt,
) -> None:
    """Fold ``events`` (numbered from ``state.version + 1`` on) into ``state``, in order.

    Args:
        state: the state (its ``version`` is left to the caller).
        events: the events, as columns.
        latest: filled with the index of each key's latest ``fact.formalized`` (first-seen
            order); those are not folded here.
        done: ``done[0]`` is set to how many events were folded, also when one raised.
        fold_at: folds the event at an index (with its type and data), or raises.

    """
    first = state.version + 1
    steps, claims = state.steps, state.claims
    pending: dict[str, list[str]] = {}  # items done, per batch, not yet marked
    column = events.data
    held: Sequence[Any] = column.held if isinstance(column, HeldData) else column
    key_of = column.key_of if isinstance(column, HeldData) else _fact_key
    at = 0
    try:
        for at, kind, data in zip(count(), events.types, held):
            if kind == FACT:
                key = _fact_key(data) if type(data) is dict else key_of(data)  # else: held
                if key is not None:
                    latest[key] = at
                    continue
            elif kind == _ITEM_DONE:
                name, item = data.get("batch"), data.get("item")
                if type(name) is str and type(item) is str:
                    if (items := pending.get(name)) is None:
                        items = pending[name] = []
                    items.append(item)
                    continue
            elif kind == _STARTED:
                if _start(steps, first + at, data):
                    continue
            elif kind == _COMMITTED and _commit(steps, claims, first + at, data):
                continue
            _mark_done(state, pending)  # the items done before it are marked first
            fold_at(at, kind, data)
        at = len(events)
    finally:
        done[0] = at
        _mark_done(state, pending)


def _fact_key(data: Any) -> str | None:
    """The key of a ``fact.formalized`` event's fact, when it is text."""
    stored = data.get("fact")
    key = stored.get("key") if type(stored) is dict else None
    return key if type(key) is str else None


def _start(steps: dict[str, Step], seq: int, d: dict[str, Any]) -> bool:
    """Fold a plain ``step.started`` (see the module); ``False``: not one, nothing done."""
    get = d.get
    key, source_hash, cell_id, owner = get("key"), get("source_hash"), get("cell_id"), get("owner")
    if (
        type(key) is not str
        or type(source_hash) not in _TEXT
        or type(cell_id) not in _TEXT
        or type(owner) not in _TEXT
        or get("claim") is not None
    ):
        return False
    values = {  # every field of a Step, in its order (the tests compare with validation's)
        "v": _STEP_V,
        "key": key,
        "status": "started",
        "source_hash": source_hash,
        "cell_id": cell_id,
        "idempotent": bool(get("idempotent", False)),
        "owner": owner,
        "started_seq": seq,
        "committed_seq": None,
        "error": None,
    }
    steps[key] = built(Step, values, _STARTED_FIELDS)
    return True


def _commit(steps: dict[str, Step], claims: dict[str, Any], seq: int, d: dict[str, Any]) -> bool:
    """Fold a ``step.committed`` of a step in ``steps``; ``False``: not one, nothing done."""
    key = d.get("key")
    step = steps.get(key) if type(key) is str else None
    if step is None:
        return False
    if claims:
        claims.pop(step_claim_key(key), None)  # type: ignore[arg-type]  # key is text here
    fields = step.__dict__
    fields["status"], fields["committed_seq"], fields["error"] = "committed", seq, None
    step.__pydantic_fields_set__.update(_COMMITTED_FIELDS)
    return True


def _mark_done(state: RunState, pending: dict[str, list[str]]) -> None:
    """Mark the gathered items done, batch by batch (first-seen order), and empty ``pending``."""
    batches, claims = state.batches, state.claims
    for name, items in pending.items():
        batch = batches.get(name)
        if batch is None:
            batch = batches[name] = Batch(name=name)
        batch.mark_all_done(items)
        if claims:
            for item in items:
                claims.pop(item_claim_key(name, item), None)
    pending.clear()
