"""Which fact and which gate step each notebook cell recorded, by cell id (core).

A notebook cell is matched to its run by its cell id first
(:func:`skillnb.notebookfile.mirror.build_cell_mirror`): the first fact, in the order of
:attr:`~skillnb.core.runstate.records.RunState.facts`, whose ``cell_id`` is the cell's; else
the first step, in the order of :attr:`~skillnb.core.runstate.records.RunState.steps`, that is
not a ``formalize:`` step and whose ``cell_id`` is the cell's. Finding them by looking at every
fact and every step would make each cell of a long run cost more than the cell; a
:class:`CellIndex` answers in O(1).

It hangs off a :class:`~skillnb.core.runstate.records.RunState` as the view indexes do
(:mod:`skillnb.core.runstate.viewindex`): never persisted, never copied (a copy or a freshly
loaded snapshot builds its own on first use, in one pass over the facts and steps).
:func:`skillnb.core.runstate.state.apply` tells it which facts and steps each event touched;
it brings itself up to date when asked (:func:`cell_index`), from the state itself, so it
answers exactly as looking through the state does.

Facts and steps are never removed from a state, and a key written over keeps its place in
its dict: the keys that appeared since the last sync are the last ones of each dict, in
order, and only the keys an event touched can have changed cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Any

from skillnb.core.runstate.eventrecords import HeldData
from skillnb.core.runstate.records import Event, RunState, Step

__all__ = ["CellIndex", "cell_index"]

_FACT_EVENTS = frozenset({"fact.formalized"})
_STEP_EVENTS = frozenset({"step.started", "step.committed", "step.failed", "step.cleared"})
_FORMALIZE_STEP = "formalize:"
"""The prefix of the steps of ``%%formalize`` cells (matched by their fact, not by cell id)."""


class _ByCell:
    """Keys by cell id, each cell id's keys answered in the order the keys first appeared."""

    __slots__ = ("_cell", "_keys", "_place")

    def __init__(self) -> None:
        self._place: dict[str, int] = {}  # each key's place among the keys (first seen first)
        self._cell: dict[str, str] = {}  # each key's cell id, for the keys that have one
        self._keys: dict[str, list[str]] = {}  # the keys of each cell id

    def put(self, key: str, cell_id: str | None) -> None:
        """``key`` is now recorded by ``cell_id`` (a new key goes after every known one)."""
        if key not in self._place:
            self._place[key] = len(self._place)
        old = self._cell.get(key)
        if old == cell_id:
            return
        if old is not None:
            del self._cell[key]
            keys = self._keys[old]
            keys.remove(key)  # a cell id records a key or two: O(1) in practice
            if not keys:
                del self._keys[old]
        if cell_id:  # an empty or missing cell id matches no cell
            self._cell[key] = cell_id
            self._keys.setdefault(cell_id, []).append(key)

    def first(self, cell_id: str) -> str | None:
        """The first key (in order of appearance) recorded by ``cell_id``, if any."""
        keys = self._keys.get(cell_id)
        if not keys:
            return None
        return keys[0] if len(keys) == 1 else min(keys, key=self._place.__getitem__)

    def snapshot(self) -> dict[str, list[str]]:
        """Each cell id's keys, in order of appearance (for comparing two indexes)."""
        return {
            cell_id: sorted(keys, key=self._place.__getitem__)
            for cell_id, keys in sorted(self._keys.items())
        }


class CellIndex:
    """The facts and gate steps of one state by cell id, kept current by apply."""

    def __init__(self, state: RunState) -> None:
        self.version = state.version
        self._facts = _ByCell()
        self._steps = _ByCell()
        self._known = (0, 0)  # how many facts and steps of the state are placed
        self._dirty_facts: set[str] = set()
        self._dirty_steps: set[str] = set()
        self._place_new(state)

    def __copy__(self) -> None:
        """A copied state builds its own index (see :attr:`RunState._cells`)."""
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        """A copied state builds its own index (see :attr:`RunState._cells`)."""
        return None

    def note(self, event: Event) -> None:
        """Remember what ``event`` touched (called by apply after folding it; O(1))."""
        self._note(event.type, event.data)

    def note_columns(self, types: Sequence[str], data: Sequence[dict[str, Any]]) -> None:
        """Remember what the events of these types and data touched (:meth:`note` of each).

        Noting an event that was not folded (the fold of an earlier one raised) is harmless:
        :meth:`sync` reads each noted key's fact or step from the state. A
        :class:`~skillnb.core.runstate.eventrecords.HeldData` column is read without building
        the data it holds.
        """
        if not isinstance(data, HeldData):
            for kind, payload in zip(types, data, strict=True):
                self._note(kind, payload)
            return
        for kind, payload in zip(types, data.held, strict=True):  # held data stay unbuilt
            if type(payload) is dict:
                self._note(kind, payload)
            else:  # a fact's data, held unbuilt: its key is read from what was kept
                self._dirty_facts.add(data.key_of(payload))

    def _note(self, kind: str, payload: dict[str, Any]) -> None:
        if kind in _FACT_EVENTS:
            fact = payload.get("fact")
            if isinstance(fact, dict):
                self._dirty_facts.add(str(fact.get("key")))
        elif kind in _STEP_EVENTS:
            self._dirty_steps.add(str(payload.get("key")))

    def sync(self, state: RunState) -> CellIndex:
        """Bring the index up to ``state`` (O(changes since the last sync))."""
        self._place_new(state)
        facts, steps = state.facts, state.steps
        for key in self._dirty_facts:
            if (fact := facts.get(key)) is not None:
                self._facts.put(key, fact.cell_id)
        for key in self._dirty_steps:
            if (step := steps.get(key)) is not None:
                self._put_step(key, step)
        self._dirty_facts.clear()
        self._dirty_steps.clear()
        self.version = state.version
        return self

    def _place_new(self, state: RunState) -> None:
        """Place the facts and steps that appeared since: the last ones of each dict, in order."""
        known_facts, known_steps = self._known
        for key in _added(state.facts, known_facts):
            self._facts.put(key, state.facts[key].cell_id)
        for key in _added(state.steps, known_steps):
            self._put_step(key, state.steps[key])
        self._known = (len(state.facts), len(state.steps))

    def _put_step(self, key: str, step: Step) -> None:
        """Index step ``key`` unless it is a ``formalize:`` step (by its own key, as a scan)."""
        self._steps.put(key, None if step.key.startswith(_FORMALIZE_STEP) else step.cell_id)

    def fact_key(self, cell_id: str) -> str | None:
        """The key of the first fact (in the order of the state's facts) ``cell_id`` recorded."""
        return self._facts.first(cell_id)

    def step_key(self, cell_id: str) -> str | None:
        """The first step, not a ``formalize:`` one, ``cell_id`` recorded (its key in the steps)."""
        return self._steps.first(cell_id)

    def shrunk(self, state: RunState) -> bool:
        """Whether ``state`` holds fewer facts or steps than placed (changed behind apply)."""
        return len(state.facts) < self._known[0] or len(state.steps) < self._known[1]

    def snapshot(self) -> dict[str, Any]:
        """Everything the index holds, as plain data (for comparing two indexes)."""
        return {"facts": self._facts.snapshot(), "steps": self._steps.snapshot()}


def _added(keys: dict[str, Any], known: int) -> list[str]:
    """The keys after the first ``known`` (a dict keeps a key's place when written over)."""
    new = len(keys) - known
    if new <= 0:
        return []
    if known == 0:
        return list(keys)
    added = list(islice(reversed(keys), new))
    added.reverse()
    return added


def cell_index(state: RunState) -> CellIndex:
    """The cell index of ``state``, built on first use, then kept current (O(changes))."""
    private = state.__pydantic_private__  # attribute access to it goes through __getattr__
    index = private.get("_cells") if private else None
    if not isinstance(index, CellIndex):
        index = CellIndex(state)
        state._cells = index
        return index
    if index.shrunk(state):  # changed other than by apply (nothing does): built again
        index = state._cells = CellIndex(state)
        return index
    return index.sync(state)
