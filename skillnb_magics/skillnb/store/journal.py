"""The journal line format and the scanner that validates journal and segment files (store layer).

A journal is UTF-8 JSON lines. Each line is one :class:`~skillnb.core.records.Event` written
compactly, with two journal-level fields before the closing brace::

    {"v":1,"seq":7,"type":"fact.formalized","at":"...","data":{...},"more":true,"crc":"1a2b3c4d"}

* ``crc`` (always last): CRC-32 of the line's bytes without ``,"crc":"…"``, as 8 hex digits. A
  torn or garbled line is detected without parsing JSON.
* ``more`` (only when true): more lines of the same ``append`` follow. An append is committed
  by its last line, which has no ``more``; lines of an unfinished append at the end of the file
  are not committed, so a multi-event append is all-or-nothing even if a crash tears it.

The live journal may start with a header line ``{"v":1,"base":N,"crc":"…"}``: the events in it
continue after version ``N`` (compaction archived 1..N). Without a header, ``N`` is 0, so an
empty file is an empty run.

Damage rules, applied by :func:`scan`: bytes after the last committed line that contain no
valid line are a torn tail (a crash during a write) and are not committed; a bad line followed
by a valid line is damage in the middle and raises :class:`~skillnb.errors.StoreCorrupted`
naming the line, as does a sequence number out of order.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from skillnb.core.records import RECORD_VERSION, Event
from skillnb.errors import StoreCorrupted
from skillnb.store.migrations import EVENT_MIGRATIONS, upgrade

__all__ = [
    "MAX_LINE_BYTES",
    "BadLine",
    "JournalHeader",
    "Scan",
    "describe_validation_error",
    "encode_events",
    "encode_header",
    "event_text",
    "parse_line",
    "scan",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line written or read; large values belong in blobs (:mod:`skillnb.store.codec`)."""

_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_MORE = b',"more":true'


class JournalHeader(NamedTuple):
    """The optional first line of a live journal."""

    base: int
    """The version the journal continues from (archived events end there)."""


class BadLine(Exception):
    """A line failed validation (internal: :func:`scan` turns it into ``StoreCorrupted``)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


def _seal(content: bytes) -> bytes:
    """Close ``content`` (a JSON object without its final brace) with its checksum."""
    crc = zlib.crc32(b"}", zlib.crc32(content))
    return b'%s,"crc":"%08x"}\n' % (content, crc)


def _event_json(event: Event) -> bytes:
    try:
        text = json.dumps(
            {
                "v": event.v,
                "seq": event.seq,
                "type": event.type,
                "at": event.at.isoformat(),
                "data": event.data,
            },
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
        body = text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise ValueError(
            f"event {event.seq} ({event.type}) cannot be journaled, its data is not JSON: {exc}"
        ) from exc
    if len(body) > MAX_LINE_BYTES:
        raise ValueError(
            f"event {event.seq} ({event.type}) is {len(body)} bytes, over the journal's "
            f"{MAX_LINE_BYTES}-byte line limit; store large values as blobs"
        )
    return body


def event_text(event: Event) -> bytes:
    """The JSON of one event as a journal line holds it, without the checksum and newline.

    Raises:
        ValueError: the event's data is not JSON (NaN, a set, a lone surrogate, ...) or too big.

    """
    return _event_json(event)


def encode_events(events: Sequence[Event]) -> bytes:
    """Encode the journal lines of one append, the last one committing the group.

    Raises:
        ValueError: an event's data is not JSON (NaN, a set, a lone surrogate, ...) or too big.

    """
    last = len(events) - 1
    return b"".join(
        _seal(_event_json(e)[:-1] + (_MORE if i < last else b"")) for i, e in enumerate(events)
    )


def encode_header(base: int) -> bytes:
    """Encode the header line of a journal that continues after version ``base``."""
    return _seal(b'{"v":%d,"base":%d' % (RECORD_VERSION, base))


def describe_validation_error(error: ValidationError) -> str:
    """Describe a pydantic error in one line: where, what, and how many more."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "line"
    more = f" (and {error.error_count() - 1} more problems)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_line(raw: bytes, *, path: Path, line: int) -> tuple[Event | JournalHeader, bool]:
    """Validate one line (without its newline) and return its record and ``more`` flag.

    Raises:
        BadLine: checksum, JSON, structure or version number are wrong.
        NewerFormatError: the line was written by a newer skillnb (not damage).

    """
    if len(raw) < _CRC_TAIL + 2 or raw[-_CRC_TAIL:-10] != _CRC_KEY or raw[-2:] != b'"}':
        raise BadLine("no checksum at the end of the line (torn or garbled)")
    try:
        expected = int(raw[-10:-2], 16)
    except ValueError:
        raise BadLine("malformed checksum") from None
    content = raw[:-_CRC_TAIL]
    if zlib.crc32(b"}", zlib.crc32(content)) != expected:
        raise BadLine("checksum mismatch (the line was altered or partly written)")
    more = content.endswith(_MORE)
    body = (content[: -len(_MORE)] if more else content) + b"}"
    error: ValidationError | None = None
    try:
        event = Event.model_validate_json(body, strict=True)
    except ValidationError as exc:
        error = exc
    else:
        if event.v == RECORD_VERSION:
            return event, more
    return _parse_other(body, more, error, path=path, line=line), more


def _parse_other(
    body: bytes, more: bool, error: ValidationError | None, *, path: Path, line: int
) -> Event | JournalHeader:
    """Parse a header or an older format, or explain the error (the slow path)."""
    try:
        obj = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise BadLine(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise BadLine(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BadLine(f"a JSON {type(obj).__name__}, not an object")
    original = obj.get("v")
    try:
        obj = upgrade(obj, EVENT_MIGRATIONS, path=path, line=line, current=RECORD_VERSION)
    except StoreCorrupted as exc:
        raise BadLine(exc.detail) from None
    if set(obj) == {"v", "base"}:
        base = obj["base"]
        if type(base) is not int or base < 0 or more:
            raise BadLine(f"malformed journal header {obj!r}")
        return JournalHeader(base)
    if original == RECORD_VERSION:
        raise BadLine(describe_validation_error(error) if error is not None else "not an event")
    try:
        return Event.model_validate(obj)
    except ValidationError as exc:
        raise BadLine(
            f"after migration from v{original}: {describe_validation_error(exc)}"
        ) from None


@dataclass
class Scan:
    """What :func:`scan` found in a run of journal bytes."""

    events: list[Event]
    """The committed events, oldest first."""
    offsets: list[int]
    """Absolute byte offset of each committed event's line."""
    base: int | None
    """The header's base, when the bytes began with a header line."""
    end: int
    """Absolute byte offset just past the last committed line."""
    lines: int
    """How many committed lines were read (a header included)."""
    tail: int
    """Bytes after ``end`` that are not committed (a torn line, an unfinished append)."""
    tail_lines: int
    """Newline-terminated lines inside that tail (0 for a plain torn write)."""


def scan(
    data: bytes,
    *,
    path: Path,
    start: int = 0,
    first_line: int = 1,
    next_seq: int = 1,
    header_allowed: bool = False,
) -> Scan:
    """Validate journal bytes and return the committed events.

    Args:
        data: the bytes, starting at a line boundary.
        path: the file they come from (named in errors).
        start: the absolute offset of ``data[0]`` in the file.
        first_line: the 1-based line number of the first line in ``data``.
        next_seq: the sequence number the first event must have (a header overrides it).
        header_allowed: whether the first line may be a journal header.

    Raises:
        StoreCorrupted: a bad line is followed by a valid one, a sequence number is out of
            order, or a header appears where it may not.
        NewerFormatError: a line was written by a newer skillnb.

    """
    events: list[Event] = []
    offsets: list[int] = []
    base: int | None = None
    committed = end = lines = 0
    bad: tuple[int, str] | None = None
    pos, lineno, expect = 0, first_line, next_seq
    while (nl := data.find(b"\n", pos)) >= 0:
        try:
            if nl - pos > MAX_LINE_BYTES:
                raise BadLine(f"line of {nl - pos} bytes, over the {MAX_LINE_BYTES}-byte limit")
            item, more = parse_line(data[pos:nl], path=path, line=lineno)
        except BadLine as exc:
            bad = bad or (lineno, exc.detail)
            pos, lineno = nl + 1, lineno + 1
            continue
        if bad is not None:
            raise StoreCorrupted(path, f"{bad[1]}; valid lines follow it", line=bad[0])
        if isinstance(item, JournalHeader):
            if not (header_allowed and pos == 0):
                raise StoreCorrupted(path, "a journal header where events belong", line=lineno)
            base, expect = item.base, item.base + 1
        elif item.seq != expect:
            kind = "gap" if item.seq > expect else "duplicate or out of order"
            raise StoreCorrupted(
                path,
                f"sequence number {item.seq} where {expect} was expected ({kind})",
                line=lineno,
            )
        else:
            events.append(item)
            offsets.append(start + pos)
            expect += 1
        if not more:
            committed, end, lines = len(events), nl + 1, lineno - first_line + 1
        pos, lineno = nl + 1, lineno + 1
    del events[committed:], offsets[committed:]
    return Scan(
        events=events,
        offsets=offsets,
        base=base,
        end=start + end,
        lines=lines,
        tail=len(data) - end,
        tail_lines=data.count(b"\n", end),
    )
