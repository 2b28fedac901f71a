"""Indexes that keep the run's views O(budget + changes) instead of O(facts + history) (core).

A :class:`ViewIndex` hangs off a :class:`~skillnb.core.runstate.records.RunState` (never persisted,
never copied: a copy or a freshly loaded snapshot builds its own on first use, in one pass).
:func:`skillnb.core.runstate.state.apply` tells it which facts and steps each event touched; the
index brings itself up to date when a view asks (:func:`view_index`), so replaying a journal
pays nothing for it.

What it keeps:

* the facts of each kind in two orders: newest first (by recorded time, then key) and by key,
  so a summary takes the few lines its budget holds without sorting every fact;
* one view row per fact (the dict :func:`skillnb.service.view.describe` lists), rebuilt only
  for facts that changed, in the order of :attr:`RunState.facts`;
* the keys of the steps that started and never ended (uncertain candidates).

:meth:`ViewIndex.snapshot` returns all of it as plain data, so a test can compare an index
kept current event by event with one built from scratch.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from datetime import UTC, datetime
from typing import Any

from skillnb.core.runstate.records import FACT_KINDS, Event, Fact, RunState

__all__ = ["FactOrder", "ViewIndex", "fact_row", "fact_time", "iso", "view_index"]

FactOrder = tuple[float, str]
"""A fact's place in the newest-first order: (minus its time in seconds, its key)."""

_FACT_EVENTS = frozenset({"fact.formalized"})
_STEP_EVENTS = frozenset({"step.started", "step.committed", "step.failed", "step.cleared"})


def fact_time(at: datetime | None) -> float:
    """Seconds since the epoch of a recorded time (naive means UTC, as the summary reads it)."""
    if at is None:
        return float("-inf")
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def iso(value: datetime | None) -> str | None:
    """``value.isoformat()``, or ``None`` for no time (the view's form of a time)."""
    return value.isoformat() if value is not None else None


def fact_row(fact: Fact) -> dict[str, Any]:
    """The view's row for ``fact`` (see :func:`skillnb.service.view.describe`)."""
    return {
        "key": fact.key,
        "kind": fact.kind,
        "version": fact.version,
        "preview": fact.preview,
        "cell_id": fact.cell_id,
        "at": iso(fact.at),
        "restorable": fact.restorable,
    }


class ViewIndex:
    """Per-kind fact orders, fact rows and open steps of one state, kept current by apply."""

    def __init__(self, state: RunState) -> None:
        self.version = state.version
        self._by_time: dict[str, list[FactOrder]] = {kind: [] for kind in FACT_KINDS}
        self._by_key: dict[str, list[str]] = {kind: [] for kind in FACT_KINDS}
        self._placed: dict[str, tuple[str, FactOrder]] = {}
        self._rows: dict[str, dict[str, Any]] = {}
        self._dirty_facts: dict[str, None] = {}  # in event order: new rows go in that order
        self._dirty_steps: set[str] = set()
        for fact in state.facts.values():
            kind, order = self._place(fact)
            self._by_time[kind].append(order)
            self._by_key[kind].append(fact.key)
            self._rows[fact.key] = fact_row(fact)
        for kind in FACT_KINDS:
            self._by_time[kind].sort()
            self._by_key[kind].sort()
        self._started = {k for k, s in state.steps.items() if s.status == "started"}

    def __copy__(self) -> None:
        """A copied state builds its own index (see :attr:`RunState._views`)."""
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        """A copied state builds its own index (see :attr:`RunState._views`)."""
        return None

    # -- keeping current ----------------------------------------------------------------------
    def note(self, event: Event) -> None:
        """Remember what ``event`` touched (called by apply after folding it; O(1))."""
        if event.type in _FACT_EVENTS:
            fact = event.data.get("fact")
            if isinstance(fact, dict):
                self._dirty_facts[str(fact.get("key"))] = None
        elif event.type in _STEP_EVENTS:
            self._dirty_steps.add(str(event.data.get("key")))

    def sync(self, state: RunState) -> ViewIndex:
        """Bring the index up to ``state`` (O(changes since the last sync))."""
        for key in self._dirty_facts:
            self._unplace(key)
            fact = state.facts.get(key)
            if fact is None:
                self._rows.pop(key, None)
                continue
            kind, order = self._place(fact)
            insort(self._by_time[kind], order)
            insort(self._by_key[kind], key)
            self._rows[key] = fact_row(fact)  # an existing key keeps its place, as in facts
        for key in self._dirty_steps:
            step = state.steps.get(key)
            if step is not None and step.status == "started":
                self._started.add(key)
            else:
                self._started.discard(key)
        self._dirty_facts.clear()
        self._dirty_steps.clear()
        self.version = state.version
        return self

    def _place(self, fact: Fact) -> tuple[str, FactOrder]:
        kind = fact.kind if fact.kind in self._by_time else "data"
        order = (-fact_time(fact.at), fact.key)
        self._placed[fact.key] = (kind, order)
        return kind, order

    def _unplace(self, key: str) -> None:
        placed = self._placed.pop(key, None)
        if placed is None:
            return
        kind, order = placed
        by_time, by_key = self._by_time[kind], self._by_key[kind]
        del by_time[bisect_left(by_time, order)]
        del by_key[bisect_left(by_key, key)]

    # -- reading --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """How many facts of each kind the run holds."""
        return {kind: len(keys) for kind, keys in self._by_key.items()}

    def rows(self) -> list[dict[str, Any]]:
        """Every fact's view row, in the order of :attr:`RunState.facts` (shared: read only)."""
        return list(self._rows.values())

    def top_rows(self, limit: int) -> list[dict[str, Any]]:
        """Per kind, the rows of the ``limit`` newest facts and of the ``limit`` first by key.

        Whatever order a summary keeps facts in (newest first, or by key when times are left
        out), the lines a budget of ``12 * limit`` characters can hold are among these.
        """
        keys: dict[str, None] = {}
        for kind in FACT_KINDS:
            keys.update(dict.fromkeys(key for _, key in self._by_time[kind][:limit]))
            keys.update(dict.fromkeys(self._by_key[kind][:limit]))
        return [self._rows[key] for key in keys]

    def started(self) -> set[str]:
        """Keys of the steps that started and have not ended (uncertain once their owner died)."""
        return set(self._started)

    def snapshot(self) -> dict[str, Any]:
        """Everything the index holds, as plain data (for comparing two indexes)."""
        return {
            "by_time": {k: list(v) for k, v in self._by_time.items()},
            "by_key": {k: list(v) for k, v in self._by_key.items()},
            "rows": [dict(r) for r in self._rows.values()],
            "started": sorted(self._started),
        }


def view_index(state: RunState) -> ViewIndex:
    """The index of ``state``, built on first use, then kept current (O(changes))."""
    index = state._views  # the state's own derived data, see RunState._views
    if not isinstance(index, ViewIndex):
        index = ViewIndex(state)
        state._views = index
        return index
    return index.sync(state)
