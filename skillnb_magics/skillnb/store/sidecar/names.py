"""Names read back: the rules of :mod:`skillnb.core.limits` applied to journal events (store layer).

What was valid on write is checked again on read, since a journal may have been written by
someone else: a run id with ``/``, a fact key of millions of characters, a NUL or ``<script>``
in a committed event is :class:`~skillnb.errors.StoreCorrupted`, naming the file and the line.
:func:`refuse_bad_names` judges a whole run of events at once in the usual case (each distinct
name once) and reads them one by one only to name the line of the first that breaks a rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillnb.core.limits import event_problem, records_pass
from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import Event
from skillnb.errors import StoreCorrupted

__all__ = ["names_problem", "refuse_bad_names"]


def names_problem(event: Event) -> str | None:
    """Why ``event``'s names break the rules of :mod:`skillnb.core.limits` (``None``: none)."""
    return event_problem(event.type, event.data)


def refuse_bad_names(events: Sequence[Event], *, path: Path, line: int) -> None:
    """Check the names of ``events`` again, as they were checked on write.

    ``line`` is the line number of the first event (the file and line are named in the error).

    Raises:
        StoreCorrupted: naming the file and the line of the first event that breaks a rule.

    """
    if isinstance(events, EventRecords):  # the columns: no Event built for the check
        if records_pass(events.types, events.data):  # each distinct name judged once
            return
        pairs: Any = zip(events.types, events.data, strict=True)
    else:
        pairs = ((e.type, e.data) for e in events)
    accepted: set[str] = set()  # fact keys found good already (a long run writes them again)
    for i, (type_, data) in enumerate(pairs):
        key = None
        if type_ == "fact.formalized":  # its names: the fact's key, and its note if any
            fact = data.get("fact")
            if type(fact) is dict and fact.get("note") is None and type(fact.get("key")) is str:
                key = fact["key"]
                if key in accepted:
                    continue  # the same key, no note: exactly what passed before
        problem = event_problem(type_, data)
        if problem is not None:
            raise StoreCorrupted(path, problem, line=line + i)
        if key is not None:
            accepted.add(key)
