"""Folding the steps and batch items of a long replay at once (core layer).

Replaying a journal folds each event in turn (:mod:`skillnb.core.state`). Most of a long
journal is steps started and committed and batch items done, and when no claim is involved
(the state holds none and no event takes one), those folds touch nothing but the run's steps
and batches: they can be folded apart from the other events, and all at once.

* Steps: a ``step.started`` replaces the step of its key, so only the last one of each key
  counts, with the ``step.committed`` that follows it. :func:`fold_steps` builds that one
  :class:`~skillnb.core.records.Step` per key (the fields as validation would make them) and
  never the ones written over.
* Batches: :func:`fold_batches` gathers each batch's declarations and items done, in order,
  and hands each run of items done to :meth:`~skillnb.core.records.Batch.mark_all_done`.

:func:`later_events` decides up front which events can be folded so (their payloads have
what the folds read, so folding them cannot fail); anything else is folded in its turn.
Each pass goes over all the events at C speed (``map``, ``compress``, sets); the Python
loops run once per step key and once per batch event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import gt, is_not, itemgetter, not_
from typing import Any, NamedTuple

from skillnb.core.records import RECORD_VERSION, Batch, RunState, Step

__all__ = ["STEP_TYPES", "Later", "fold_batches", "fold_later", "fold_steps", "later_events"]

STEP_TYPES = frozenset({"step.started", "step.committed"})
"""The step events folded at once (a failed or cleared step is folded in its turn)."""
BATCH_TYPES = frozenset({"batch.declared", "batch.item_done"})
_ALL_STEP_TYPES = STEP_TYPES | {"step.failed", "step.cleared"}
_CLAIM_TYPES = frozenset({"claim.taken", "claim.renewed"})
_STARTED, _DONE = "step.started", "batch.item_done"
_PLAIN = frozenset({type(None), str})
_KEY, _BATCH, _ITEM, _ITEMS = map(itemgetter, ("key", "batch", "item", "items"))
_STARTED_SET = frozenset(
    {"key", "status", "source_hash", "cell_id", "idempotent", "owner", "started_seq"}
)
_COMMITTED_SET = _STARTED_SET | {"committed_seq", "error"}
_new = object.__new__
_set = object.__setattr__
_get: Callable[[dict[str, Any], str], Any] = dict.get

RecordFold = Callable[[RunState, int, dict[str, Any]], None]


class Later(NamedTuple):
    """Which events :func:`fold_later` folds: a flag per event, for steps and for batches."""

    steps: list[bool] | None
    """The step events (``None``: none are folded later)."""
    batches: list[bool] | None
    """The batch events (``None``: none are folded later)."""

    def prefix(self, end: int) -> Later:
        """The same for the events before ``end`` only."""
        return Later(*(None if mask is None else mask[:end] for mask in self))


def later_events(
    state: RunState, kinds: set[str], types: Sequence[str], data: Sequence[dict[str, Any]]
) -> Later:
    """Which events :func:`fold_later` can fold (nothing is changed).

    Steps qualify when every step event is started or committed, has a ``key``, and each
    started step has text or nothing as its ``source_hash``, ``cell_id`` and ``owner`` and no
    claim; batch events when each names its ``batch`` and its ``item`` (or lists its
    ``items``). Neither qualifies while a claim may exist.
    """
    steps = batches = None
    if state.claims or kinds & _CLAIM_TYPES:
        return Later(steps, batches)
    if kinds & STEP_TYPES and kinds & _ALL_STEP_TYPES <= STEP_TYPES:
        steps = list(map(STEP_TYPES.__contains__, types))
        if not _plain_steps(types, data, steps):
            steps = None
    if kinds & BATCH_TYPES:
        batches = list(map(BATCH_TYPES.__contains__, types))
        if not _plain_batch_events(types, data, batches):
            batches = None
    return Later(steps, batches)


def _plain_steps(types: Sequence[str], data: Sequence[dict[str, Any]], mask: list[bool]) -> bool:
    started = list(compress(data, map(_STARTED.__eq__, types)))
    try:
        deque(map(_KEY, compress(data, mask)), maxlen=0)
    except KeyError:
        return False
    texts: set[type] = set()
    for name in ("source_hash", "cell_id", "owner"):
        texts.update(map(type, map(_get, started, repeat(name))))
    claims = map(_get, started, repeat("claim"))
    return texts <= _PLAIN and not any(map(is_not, claims, repeat(None)))


def _plain_batch_events(
    types: Sequence[str], data: Sequence[dict[str, Any]], mask: list[bool]
) -> bool:
    picked = list(compress(data, mask))
    done = list(map(_DONE.__eq__, compress(types, mask)))
    try:
        deque(map(_BATCH, picked), maxlen=0)
        deque(map(_ITEM, compress(picked, done)), maxlen=0)
        lists = set(map(type, map(_ITEMS, compress(picked, map(not_, done)))))
    except KeyError:
        return False
    return lists <= {list}


def fold_later(
    state: RunState,
    first: int,
    types: Sequence[str],
    data: Sequence[dict[str, Any]],
    later: Later,
    folds: dict[str, RecordFold],
) -> None:
    """Fold the events :func:`later_events` (or a prefix of its answer) picked.

    ``first`` is the sequence number of event 0. Steps are folded at once when each key's
    last ``step.started`` is followed by at most one ``step.committed``; else each step event
    is folded in turn with ``folds`` (the folds from sequence number and data).
    """
    if later.steps is not None and not fold_steps(state, first, types, data, later.steps):
        for i in compress(range(len(later.steps)), later.steps):
            folds[types[i]](state, first + i, data[i])
    if later.batches is not None:
        fold_batches(state, types, data, later.batches)


def fold_steps(
    state: RunState,
    first: int,
    types: Sequence[str],
    data: Sequence[dict[str, Any]],
    mask: list[bool],
) -> bool:
    """Fold the step events ``mask`` flags at once; ``False`` (nothing changed): not in one go."""
    where = list(compress(range(len(mask)), mask))
    keys = list(map(str, map(_KEY, compress(data, mask))))
    starts = list(map(_STARTED.__eq__, compress(types, mask)))
    last = dict(zip(compress(keys, starts), compress(where, starts), strict=False))
    if len(last) != len(set(keys)):
        return False  # a step committed but never started here: folded in turn
    ends = list(map(not_, starts))  # the commits
    end_keys, end_at = list(compress(keys, ends)), list(compress(where, ends))
    after = list(map(gt, end_at, map(last.__getitem__, end_keys)))
    committed = dict(zip(compress(end_keys, after), compress(end_at, after), strict=False))
    if len(committed) != sum(after):
        return False  # two commits of one start: folded in turn
    built = state.steps
    for key in dict.fromkeys(keys):  # first seen first, as folding in turn inserts them
        i = last[key]
        d = data[i]
        done = committed.get(key)
        values = {
            "v": RECORD_VERSION,
            "key": key,
            "status": "started" if done is None else "committed",
            "source_hash": d.get("source_hash"),
            "cell_id": d.get("cell_id"),
            "idempotent": bool(d.get("idempotent", False)),
            "owner": d.get("owner"),
            "started_seq": first + i,
            "committed_seq": None if done is None else first + done,
            "error": None,
        }
        step = _new(Step)
        _set(step, "__dict__", values)
        _set(step, "__pydantic_fields_set__", set(_STARTED_SET if done is None else _COMMITTED_SET))
        _set(step, "__pydantic_extra__", None)
        _set(step, "__pydantic_private__", None)
        built[key] = step
    return True


def fold_batches(
    state: RunState, types: Sequence[str], data: Sequence[dict[str, Any]], mask: list[bool]
) -> None:
    """Fold the batch events ``mask`` flags: each batch's own events, in order, runs at once."""
    plan: dict[str, list[list[str] | tuple[str, ...]]] = {}
    for kind, d in zip(compress(types, mask), compress(data, mask), strict=False):
        ops = plan.setdefault(str(d["batch"]), [])
        if kind != _DONE:
            ops.append(tuple(map(str, d["items"])))
        elif ops and type(ops[-1]) is list:
            ops[-1].append(str(d["item"]))
        else:
            ops.append([str(d["item"])])
    batches = state.batches
    for name, ops in plan.items():
        batch = batches.get(name)
        if batch is None:
            batch = batches[name] = Batch(name=name)
        for op in ops:
            if isinstance(op, tuple):
                batch.extend(op)
            else:
                batch.mark_all_done(op)
