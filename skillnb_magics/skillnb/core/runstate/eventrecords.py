"""Checked journal events held as columns, each Event built only when it is read (core layer).

Replaying a long journal reads every line, but most of its events are never looked at as
:class:`~skillnb.core.runstate.records.Event` objects: a fact written over later is folded once, at
the end, and only the last few hundred events are kept for history. :class:`EventRecords`
holds what a reader has already checked as columns (the sequence numbers as a ``range``, then
the types, times and data of the events, one list each, all of format version ``v``) and
builds the ``Event`` of one of them the first time it is read.
:func:`skillnb.core.runstate.state.apply_all` folds the columns themselves and builds events only
where a fold needs one.

An event built here shares its ``data`` with its column (as an event read line by line
shares the parser's objects): nothing may change the columns once they are handed over.
A reader may hand over a data column as :class:`HeldData`: some of its objects (the values
of facts, checked already) are built only when first read, from what the reader kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, overload

from skillnb.core.runstate.records import RECORD_VERSION, Event, EventDraft

__all__ = [
    "EventRecords",
    "HeldData",
    "as_list",
    "event_from_draft",
    "event_from_record",
    "first_of_type",
]

_FIELDS_SET = {"v", "seq", "type", "at", "data"}
_new = object.__new__
_set = object.__setattr__


def event_from_record(record: dict[str, Any]) -> Event:
    """Make ``record`` (checked: the five fields, in order) an Event without validating again.

    The event takes ``record`` as its ``__dict__``: nothing else may change it afterwards.

    This is what ``Event.model_construct`` does, minus its cost. Every event built here
    shares one fields-set: all fields are set, and assigning a field adds nothing to it.
    """
    event = _new(Event)
    _set(event, "__dict__", record)
    _set(event, "__pydantic_fields_set__", _FIELDS_SET)
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


def event_from_draft(seq: int, draft: EventDraft, checked: bool) -> Event:
    """The event ``draft`` becomes at ``seq``; a checked draft's is not validated again.

    ``checked``: ``draft`` is a :class:`~skillnb.core.runstate.records.CheckedDraft`. Other drafts
    are validated anew: their data may have changed since they were made.
    """
    if checked:
        fields = {"v": RECORD_VERSION, "seq": seq, "type": draft.type, "at": draft.at}
        fields["data"] = {**draft.data}
        return event_from_record(fields)
    return Event(seq=seq, type=draft.type, at=draft.at, data=draft.data)


class HeldData(Sequence[dict[str, Any]]):
    """A column of events' data, some of them built only when first read.

    ``held[i]`` is the data of event ``i`` (a ``dict``), or what the reader kept of it when
    it checked it and left it to be built (any other object): ``build(first + i)`` builds
    it then, the same object on every later read (it takes the place of what was kept).
    Only the data of ``fact.formalized`` events whose fact's key is text are held so;
    ``key_of`` reads that key from what was kept, without building the data.
    """

    __slots__ = ("_build", "_first", "held", "key_of")

    def __init__(
        self,
        held: list[Any],
        build: Callable[[int], dict[str, Any]],
        key_of: Callable[[Any], str],
        first: int = 0,
    ) -> None:
        self.held = held
        """The data built so far, and what was kept of the others."""
        self.key_of = key_of
        """The key of a fact held unbuilt, from what was kept of it."""
        self._build = build
        self._first = first

    def __len__(self) -> int:
        """How many events' data there are."""
        return len(self.held)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | Sequence[dict[str, Any]]:
        """The data at ``index`` (built now if it was not yet), or a slice of them."""
        if isinstance(index, slice):
            start, _, step = index.indices(len(self.held))
            if step != 1:
                return [self[i] for i in range(len(self.held))[index]]
            return HeldData(self.held[index], self._build, self.key_of, self._first + start)
        data = self.held[index]
        if type(data) is not dict:  # held: built now
            at = range(len(self.held))[index]
            data = self.held[at] = self._build(self._first + at)
        return data  # type: ignore[no-any-return]  # a dict, as checked

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The data, oldest first (each built when reached)."""
        for i in range(len(self.held)):
            yield self[i]

    def __repr__(self) -> str:
        """A short description (nothing is built for it)."""
        return f"HeldData({len(self.held)} events)"


class EventRecords(Sequence[Event]):
    """A read-only sequence of events over checked columns, each event built on first read.

    Reading the same index twice gives the same ``Event`` object; a slice is a new
    ``EventRecords`` over the same values (its events are built anew).
    """

    __slots__ = ("_built", "data", "seqs", "times", "types", "v")

    def __init__(
        self,
        seqs: range,
        types: Sequence[str],
        times: Sequence[datetime],
        data: Sequence[dict[str, Any]],
        v: int = RECORD_VERSION,
    ) -> None:
        if not len(seqs) == len(types) == len(times) == len(data):
            raise ValueError("the columns of events differ in length")
        self.seqs = seqs
        """The events' sequence numbers."""
        self.types = types
        """The events' types (text)."""
        self.times = times
        """The events' times (aware datetimes)."""
        self.data = data
        """The events' data (JSON objects)."""
        self.v = v
        """The format version of every event."""
        self._built: list[Event | None] = [None] * len(seqs)

    def __len__(self) -> int:
        """How many events there are."""
        return len(self.seqs)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> EventRecords: ...

    def __getitem__(self, index: int | slice) -> Event | EventRecords:
        """The event at ``index`` (built now if it was not yet), or a slice of them."""
        if isinstance(index, slice):
            return EventRecords(
                self.seqs[index], self.types[index], self.times[index], self.data[index], self.v
            )
        event = self._built[index]
        if event is None:
            record = {
                "v": self.v,
                "seq": self.seqs[index],
                "type": self.types[index],
                "at": self.times[index],
                "data": self.data[index],
            }
            event = self._built[index] = event_from_record(record)
        return event

    def __iter__(self) -> Iterator[Event]:
        """The events, oldest first (each built when reached)."""
        for i in range(len(self.seqs)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of equal events (a list of events included)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable elements, like a list

    def __repr__(self) -> str:
        """A short description (the events are not built for it)."""
        return f"EventRecords({len(self.seqs)} events)"


def as_list(events: Sequence[Event]) -> list[Event]:
    """``events`` as a list (the same list when it is one)."""
    return events if isinstance(events, list) else list(events)


def first_of_type(events: Sequence[Event], type_: str) -> Event | None:
    """The first event of type ``type_`` among ``events``, found without building the others."""
    if isinstance(events, EventRecords):  # the columns: look the type up, build one event
        try:
            return events[events.types.index(type_)]
        except ValueError:
            return None
    return next((e for e in events if e.type == type_), None)
