"""The fast path of reading a journal line: plain events of the current format (store layer).

Nearly every line of a journal is an event of the current format written by this package:
five keys, an integer version and sequence number, a type, an ISO time and a JSON object.
:func:`fast_event` parses such a line with ``orjson`` when it is installed (the ``speed``
extra; a line with a run of 19 digits, which may be an integer beyond 64 bits that orjson
would read as a float, goes to the standard library), else with the standard library,
checks exactly those shapes by hand and builds the
:class:`~skillnb.core.runstate.records.Event` without running pydantic's validator, which costs more
than the parse itself over a long replay.

Anything else (a header, an older format, a field of another type, a time in another
shape, JSON that the parser refuses, such as ``NaN`` for ``orjson``) returns ``None``, and
the caller validates the line the careful way (:func:`skillnb.store.sidecar.journal.parse_line`),
which accepts and refuses exactly what it did before. So both paths give equal events, and
the choice of parser never changes what a journal means; checksums are verified before
either runs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from skillnb.core.runstate.eventrecords import event_from_record
from skillnb.core.runstate.records import RECORD_VERSION, Event

__all__ = [
    "HAVE_ORJSON",
    "beyond_64_bits",
    "fast_event",
    "line_event",
    "loads",
    "parse_joined",
    "parse_lines",
    "parse_run",
]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised by the tests that hide orjson
    orjson = None  # type: ignore[assignment]

HAVE_ORJSON = orjson is not None
"""Whether the optional ``orjson`` parser is installed (``pip install skillnb[speed]``)."""

_ORDER = ("v", "seq", "type", "at", "data")


def _stdlib_loads(data: bytes) -> Any:
    return json.loads(data)


_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG = b"0" * 19
"""A run of digits that may be an integer beyond 64 bits, which orjson turns into a float
(found in the line with its digits mapped to ``0``: much cheaper than a regular expression)."""


def _orjson_loads(data: bytes) -> Any:
    if _LONG in data.translate(_DIGITS):
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


def shallow(raw: bytes, depth: int) -> bool:
    """True when ``raw`` cannot nest deeper than ``depth`` (it has no more brackets)."""
    return raw.count(b"{") + raw.count(b"[") <= depth


def _checked(obj: Any, version: int) -> Event | None:
    """The event ``obj`` holds when it is a plain event of format ``version``, else ``None``."""
    if type(obj) is not dict or tuple(obj) != _ORDER:
        return None
    v, seq, type_, at, data = obj.values()
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
    obj["at"] = when
    return event_from_record(obj)


def fast_event(
    body: bytes,
    version: int = RECORD_VERSION,
    parse: Callable[[bytes], Any] | None = None,
    depth: int = 192,
) -> Event | None:
    """The event in ``body`` (a line's JSON without journal fields), or ``None``.

    ``None`` means "not on the fast path", never "damaged": the caller then validates
    ``body`` fully. Only events of format ``version`` (the one this reader writes) take the
    fast path, and only lines with at most ``depth`` brackets (deeper ones are the careful
    path's to refuse); ``parse`` replaces the JSON parser (tests compare the two).
    """
    if not shallow(body, depth):
        return None  # the careful path measures and reports the depth
    try:
        obj = (parse or loads)(body)
    except (ValueError, RecursionError):  # orjson's and json's decode errors are ValueErrors
        return None
    return _checked(obj, version)


# -- a whole journal at once ----------------------------------------------------------------------
_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_MORE = b',"more":true'
_LINE = (*_ORDER, "crc")
_LINE_MORE = (*_ORDER, "more", "crc")


def parse_lines(data: bytes, end: int, parse: Callable[[bytes], Any] | None = None) -> list[Any]:
    """Parse the lines of ``data[:end]`` (``end`` just past a newline) in one call.

    A journal line is a JSON object, so the lines joined by commas are one JSON array: one
    parser call instead of one per line, and no copy of each line's body. Returns one object
    per line, or an empty list when that does not hold (a damaged line, a blank one); the
    caller then reads each line on its own. Nothing is checked here: see :func:`line_event`.
    """
    if end <= 0:
        return []
    return parse_joined(data[: end - 1], parse)


def parse_joined(
    head: bytes, parse: Callable[[bytes], Any] | None = None, lines: list[bytes] | None = None
) -> list[Any]:
    """Parse ``head`` (whole lines, without the last one's newline) as :func:`parse_lines` does.

    With ``lines`` (``head`` split at newlines) and orjson, each line is parsed on its own:
    orjson is faster so on long inputs, the standard library with one array.
    """
    if parse is None:  # orjson unless absent, or unless a number may be beyond 64 bits
        exact = loads is not _orjson_loads or _LONG in head.translate(_DIGITS)
        parse = _stdlib_loads if exact else orjson.loads
    if lines is not None and orjson is not None and parse is orjson.loads:
        try:
            return list(map(parse, lines))
        except ValueError:  # orjson's decode error is a ValueError
            return []
    try:
        objs = parse(b"[%b]" % head.replace(b"\n", b","))
    except (ValueError, RecursionError):
        return []
    if type(objs) is not list or len(objs) != head.count(b"\n") + 1:
        return []
    return objs


def beyond_64_bits(raw: bytes) -> bool:
    """Whether ``raw`` has a run of 19 digits: an integer that orjson may read as a float."""
    return _LONG in raw.translate(_DIGITS)


def parse_run(
    chunk: bytes, lines: list[bytes], parse: Callable[[bytes], Any] | None = None
) -> list[Any]:
    """:func:`parse_joined` of ``chunk``: whole lines, each ending with a newline.

    ``lines`` is ``chunk`` split already: with orjson, each line is parsed on its own.
    """
    if parse is None:  # orjson unless absent, or unless a number may be beyond 64 bits
        exact = loads is not _orjson_loads or beyond_64_bits(chunk)
        parse = _stdlib_loads if exact else orjson.loads
    if orjson is not None and parse is orjson.loads:
        try:
            return list(map(parse, lines))
        except ValueError:  # orjson's decode error is a ValueError
            return []
    return parse_joined(chunk[:-1], parse)


def line_event(
    obj: Any, raw: bytes, version: int, *, max_bytes: int, depth: int
) -> tuple[Event, bool] | None:
    """The event of journal line ``raw`` (parsed as ``obj``) and its ``more`` flag, or ``None``.

    Checks what :func:`skillnb.store.sidecar.journal.parse_line` checks on its fast path: the line's
    checksum (over its bytes), that the parsed checksum and ``more`` flag are the ones the bytes
    end with, and that the rest is a plain event of format ``version``; lines longer than
    ``max_bytes`` or with more than ``depth`` brackets are left to the careful path too.
    ``None``: read the line the careful way (which also reports damage).
    """
    n = len(raw)
    if n > max_bytes or not shallow(raw, depth):
        return None
    if n < _CRC_TAIL + 2 or raw[n - _CRC_TAIL : n - 10] != _CRC_KEY or raw[n - 2 :] != b'"}':
        return None
    if type(obj) is not dict or obj.get("crc") != raw[n - 10 : n - 2].decode("latin-1"):
        return None
    try:
        expected = int(raw[n - 10 : n - 2], 16)
    except ValueError:
        return None
    content = raw[: n - _CRC_TAIL]
    if zlib.crc32(b"}", zlib.crc32(content)) != expected:
        return None
    more = content.endswith(_MORE)
    keys = tuple(obj)
    if keys != (_LINE_MORE if more else _LINE) or (more and obj["more"] is not True):
        return None
    del obj["crc"]
    if more:
        del obj["more"]
    event = _checked(obj, version)
    return None if event is None else (event, more)
