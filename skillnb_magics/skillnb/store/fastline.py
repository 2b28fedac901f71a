"""The fast path of reading a journal line: plain events of the current format (store layer).

Nearly every line of a journal is an event of the current format written by this package:
five keys, an integer version and sequence number, a type, an ISO time and a JSON object.
:func:`fast_event` parses such a line with ``orjson`` when it is installed (the ``speed``
extra; a line with a run of 19 digits, which may be an integer beyond 64 bits that orjson
would read as a float, goes to the standard library), else with the standard library,
checks exactly those shapes by hand and builds the
:class:`~skillnb.core.records.Event` without running pydantic's validator, which costs more
than the parse itself over a long replay.

Anything else (a header, an older format, a field of another type, a time in another
shape, JSON that the parser refuses, such as ``NaN`` for ``orjson``) returns ``None``, and
the caller validates the line the careful way (:func:`skillnb.store.journal.parse_line`),
which accepts and refuses exactly what it did before. So both paths give equal events, and
the choice of parser never changes what a journal means; checksums are verified before
either runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from skillnb.core.records import RECORD_VERSION, Event

__all__ = ["HAVE_ORJSON", "fast_event", "loads"]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised by the tests that hide orjson
    orjson = None  # type: ignore[assignment]

HAVE_ORJSON = orjson is not None
"""Whether the optional ``orjson`` parser is installed (``pip install skillnb[speed]``)."""

_KEYS = {"v", "seq", "type", "at", "data"}
_FIELDS_SET = frozenset(_KEYS)
_new = object.__new__
_set = object.__setattr__


def _stdlib_loads(data: bytes) -> Any:
    return json.loads(data)


_LONG = re.compile(rb"\d{19}")
"""A run of digits that may be an integer beyond 64 bits, which orjson turns into a float."""


def _orjson_loads(data: bytes) -> Any:
    if _LONG.search(data) is not None:
        return json.loads(data)  # exact integers of any size, as the careful path reads them
    return orjson.loads(data)


def _decoder(use_orjson: bool) -> Callable[[bytes], Any]:
    if use_orjson and orjson is not None:
        return _orjson_loads
    return _stdlib_loads


loads: Callable[[bytes], Any] = _decoder(True)
"""Parse JSON bytes: ``orjson.loads`` when installed, else ``json.loads``."""


def _time(text: str) -> datetime | None:
    """An RFC 3339 time as :meth:`datetime.isoformat` writes it, else ``None``."""
    if len(text) < 19 or text[10] != "T" or text[4] != "-" or text[13] != ":":
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _event(v: int, seq: int, type_: str, at: datetime, data: dict[str, Any]) -> Event:
    """Build an Event from checked fields (what ``model_construct`` does, minus its cost)."""
    event = _new(Event)
    _set(event, "__dict__", {"v": v, "seq": seq, "type": type_, "at": at, "data": data})
    _set(event, "__pydantic_fields_set__", set(_FIELDS_SET))
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


def fast_event(
    body: bytes, version: int = RECORD_VERSION, parse: Callable[[bytes], Any] | None = None
) -> Event | None:
    """The event in ``body`` (a line's JSON without journal fields), or ``None``.

    ``None`` means "not on the fast path", never "damaged": the caller then validates
    ``body`` fully. Only events of format ``version`` (the one this reader writes) take the
    fast path; ``parse`` replaces the JSON parser (tests compare the two).
    """
    try:
        obj = (parse or loads)(body)
    except ValueError:  # orjson.JSONDecodeError and json.JSONDecodeError are ValueErrors
        return None
    if type(obj) is not dict or obj.keys() != _KEYS:
        return None
    v, seq, type_, at, data = obj["v"], obj["seq"], obj["type"], obj["at"], obj["data"]
    if (
        type(v) is not int
        or v != version
        or type(seq) is not int
        or type(type_) is not str
        or type(at) is not str
        or type(data) is not dict
    ):
        return None
    when = _time(at)
    if when is None:
        return None
    return _event(v, seq, type_, when, data)
