"""The journal line format and the scanner that validates journal and segment files (store layer).

A journal is UTF-8 JSON lines. Each line is one :class:`~skillnb.core.runstate.records.Event`
written compactly, with two journal-level fields before the closing brace::

    {"v":1,"seq":7,"type":"fact.formalized","at":"...","data":{...},"more":true,"crc":"1a2b3c4d"}

* ``crc`` (always last): CRC-32 of the line's bytes without ``,"crc":"…"``, as 8 hex digits. A
  torn or garbled line is detected without parsing JSON.
* ``more`` (only when true): more lines of the same ``append`` follow. An append is committed
  by its last line, which has no ``more``; lines of an unfinished append at the end of the file
  are not committed, so a multi-event append is all-or-nothing even if a crash tears it.

A live journal starts with a header line ``{"v":1,"base":N,"run":"ID","crc":"…"}``: the events
in it continue after version ``N`` (compaction archived 1..N), and ``run`` names the run whose
events these are (its ``run.created`` event, or the snapshot's state, gave it). Journals written
before run ids were recorded have ``{"v":1,"base":N}`` or, with ``N`` = 0, no header at all, so
an empty file is an empty run; both are still read.

Damage rules, applied by :func:`scan`:

* Only bytes after the last newline (a final unterminated fragment) are a torn write. Valid
  lines of an append whose last line is missing are not committed either. Neither was ever
  acknowledged to a writer: readers ignore them, the next writer moves them aside.
* A complete line that fails its checksum or does not parse, anywhere in the file, raises
  :class:`~skillnb.errors.StoreCorrupted` naming the file and line, as does a sequence number
  out of order: a damaged line may hold an acknowledged event, so nothing carries on past it.
* A file whose first line is not a journal header or event (``[1,2,3]``, plain text) raises
  ``StoreCorrupted("not a SKILL.nb journal")``: it is never taken for an empty run.

* A complete, checksummed line whose names break the rules of :mod:`skillnb.core.limits` is
  ``StoreCorrupted`` too, naming the file and line (see :mod:`skillnb.store.sidecar.names`).

Writer and reader agree on :data:`MAX_LINE_BYTES`, :data:`MAX_DEPTH` and the names exactly: a
line the reader would refuse is refused by :func:`encode_events` before anything is written.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from skillnb.core.gcpause import gc_paused
from skillnb.core.limits import (
    NAMED_EVENTS,
    InvalidName,
    check_run_id,
    event_problem,
)
from skillnb.core.runstate.records import RECORD_VERSION, CheckedDraft, Event, FactDraft
from skillnb.core.safejson import json_depth_exceeds, load_json
from skillnb.errors import SkillnbError, StoreCorrupted
from skillnb.store.migrations import EVENT_MIGRATIONS, upgrade
from skillnb.store.sidecar.bulklines import plain_records
from skillnb.store.sidecar.fastline import fast_event, line_event, parse_lines
from skillnb.store.sidecar.names import refuse_bad_names

try:
    import orjson
except ImportError:  # pragma: no cover - exercised by the tests that hide orjson
    orjson = None  # type: ignore[assignment]

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "BadLine",
    "EventRejected",
    "JournalHeader",
    "Scan",
    "describe_validation_error",
    "encode_events",
    "encode_header",
    "encode_one",
    "event_text",
    "looks_like_journal",
    "parse_line",
    "scan",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line written or read, newline excluded; large values belong in blobs."""
MAX_DEPTH = 128
"""The deepest nesting of arrays and objects written in a line (the event object included)."""
READ_DEPTH = 192
"""The deepest nesting read back (more than is ever written, less than the parser's limit)."""

_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_MORE = b',"more":true'
_FEW_LINES = 6  # fewer lines than this are read one by one (the whole-journal checks cost more)
_FEW_LINES_BYTES = 1 << 16  # where they are counted
_LINE_START = b'{"v":'  # every line the journal format ever had begins so
_HEADER_START = b'{"v":%d,"base":' % RECORD_VERSION


class EventRejected(SkillnbError, ValueError):
    """An event the journal cannot hold (not JSON, too large, too deep); nothing was written.

    A ``ValueError`` too, for callers that treat it as bad input.
    """


class JournalHeader(NamedTuple):
    """The first line of a live journal (optional in journals of older versions)."""

    base: int
    """The version the journal continues from (archived events end there)."""
    run_id: str | None = None
    """The run whose events the journal holds (``None`` in journals of older versions)."""


class BadLine(Exception):
    """A line failed validation (internal: :func:`scan` turns it into ``StoreCorrupted``)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


def _seal(content: bytes) -> bytes:
    """Close ``content`` (a JSON object without its final brace) with its checksum."""
    crc = zlib.crc32(b"}", zlib.crc32(content))
    return b'%s,"crc":"%08x"}\n' % (content, crc)


_LINE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""Strict, compact JSON for journal lines (built once: ``json.dumps`` builds one per call)."""


def _checked_json(event: Event) -> bytes | None:
    """The line's JSON by ``orjson`` for data known to be strict JSON; ``None``: not here.

    ``orjson`` writes NaN as ``null`` where the standard library refuses it, so it is only
    used for a :class:`~skillnb.core.runstate.records.CheckedDraft`'s data. What it cannot write the
    same way (an integer beyond 64 bits, a lone surrogate, an offset of seconds) is left to
    the standard library, which decides.
    """
    if not _orjson_writes(event.at):
        return None
    line = {"v": event.v, "seq": event.seq, "type": event.type, "at": event.at, "data": event.data}
    try:
        return orjson.dumps(line)
    except TypeError:  # orjson.JSONEncodeError is one
        return None


def _orjson_writes(at: datetime) -> bool:
    """Tell whether ``orjson`` is here and writes ``at`` as the standard library does.

    It does for an aware time whose offset is whole minutes.
    """
    offset = at.utcoffset()
    return (
        orjson is not None
        and offset is not None
        and not offset.seconds % 60
        and not offset.microseconds
    )


def _event_json(event: Event, checked: bool = False) -> bytes:
    body = _checked_json(event) if checked else None
    if body is not None:
        if body.count(b"[") + body.count(b"{") > MAX_DEPTH and json_depth_exceeds(body):
            raise EventRejected(_too_deep(event.seq, event.type))
        return body
    try:
        text = _LINE_JSON.encode(
            {
                "v": event.v,
                "seq": event.seq,
                "type": event.type,
                "at": event.at.isoformat(),
                "data": event.data,
            }
        )
        body = text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError: a ValueError
        raise EventRejected(
            f"event {event.seq} ({event.type}) cannot be journaled, its data is not JSON: {exc}"
        ) from exc
    if json_depth_exceeds(body, MAX_DEPTH):
        raise EventRejected(_too_deep(event.seq, event.type))
    return body


def _too_deep(seq: int, type_: str) -> str:
    return (
        f"event {seq} ({type_}) nests more than {MAX_DEPTH} levels deep; "
        "flatten the value or store it as text"
    )


def event_text(event: Event, checked: bool = False) -> bytes:
    """The JSON of one event as a journal line holds it, without the checksum and newline.

    ``checked``: the event was drafted as a :class:`~skillnb.core.runstate.records.CheckedDraft`.

    Raises:
        EventRejected: the event's data is not JSON (NaN, a set, a lone surrogate, ...), nests
            deeper than :data:`MAX_DEPTH`, or is longer than :data:`MAX_LINE_BYTES`.

    """
    body = _event_json(event, checked)
    if len(body) > MAX_LINE_BYTES:
        raise EventRejected(
            f"event {event.seq} ({event.type}) is {len(body)} bytes, over the journal's "
            f"{MAX_LINE_BYTES}-byte line limit; store large values as blobs"
        )
    return body


def _sealed_line(event: Event, more: bool, checked: bool) -> bytes:
    body = _event_json(event, checked)[:-1]
    line = _seal(body + _MORE if more else body)
    if len(line) - 1 > MAX_LINE_BYTES:
        raise EventRejected(_too_long(event.seq, event.type, len(line) - 1))
    return line


def _too_long(seq: int, type_: str, size: int) -> str:
    return (
        f"event {seq} ({type_}) is {size} bytes as a journal line, over the journal's "
        f"{MAX_LINE_BYTES}-byte line limit; store large values as blobs"
    )


def encode_events(events: Sequence[Event], checked: Sequence[bool] = ()) -> bytes:
    """Encode the journal lines of one append, the last one committing the group.

    ``checked[i]``: event ``i`` was drafted as a
    :class:`~skillnb.core.runstate.records.CheckedDraft`
    (missing: it was not).

    Raises:
        EventRejected: an event's data is not JSON (NaN, a set, a lone surrogate, ...), nests
            deeper than :data:`MAX_DEPTH`, or its line would be longer than
            :data:`MAX_LINE_BYTES` (newline excluded), or holds a name
            :mod:`skillnb.core.limits` refuses: exactly what :func:`scan` would refuse.

    """
    for event in events:
        problem = event_problem(event.type, event.data)
        if problem is not None:
            raise EventRejected(f"event {event.seq} cannot be journaled: {problem}")
    last = len(events) - 1
    if last == 0:  # the usual append: one event
        return _sealed_line(events[0], False, bool(checked) and checked[0])
    flags = [*checked, *[False] * (len(events) - len(checked))]
    return b"".join(_sealed_line(e, i < last, flags[i]) for i, e in enumerate(events))


def encode_one(seq: int, draft: CheckedDraft) -> bytes | None:
    """The line of an append of ``draft`` alone, committed as event ``seq``: the usual append.

    The same bytes as :func:`encode_events` gives for that event, checked the same way, made
    in one step for the append every fact write makes. ``None``: it is not made here (no
    ``orjson``, or data it would not write as the standard library does): the general path
    decides.

    Raises:
        EventRejected: what :func:`encode_events` would refuse.

    """
    at = draft.at
    if not _orjson_writes(at):
        return None
    type_, data = draft.type, draft.data
    if type_ in NAMED_EVENTS and type(draft) is not FactDraft:  # its maker checked its names
        problem = event_problem(type_, data)
        if problem is not None:
            raise EventRejected(f"event {seq} cannot be journaled: {problem}")
    try:
        body = orjson.dumps(
            {"v": RECORD_VERSION, "seq": seq, "type": type_, "at": at, "data": data}
        )
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and json_depth_exceeds(body):
        raise EventRejected(_too_deep(seq, type_))
    size = len(body) - 1 + _CRC_TAIL  # the sealed line, newline excluded
    if size > MAX_LINE_BYTES:
        raise EventRejected(_too_long(seq, type_, size))
    # The checksum covers the line without ',"crc":"…"': exactly the object orjson wrote.
    return b'%s,"crc":"%08x"}\n' % (body[:-1], zlib.crc32(body))


def encode_header(base: int, run_id: str | None = None) -> bytes:
    """Encode the header line of run ``run_id``'s journal, continuing after version ``base``.

    Raises:
        InvalidName: ``run_id`` is not a run id (:func:`~skillnb.core.limits.check_run_id`).

    """
    if run_id is not None:
        check_run_id(run_id)
    content = b'{"v":%d,"base":%d' % (RECORD_VERSION, base)
    if run_id is not None:
        content += b',"run":' + json.dumps(run_id).encode("ascii")
    return _seal(content)


def describe_validation_error(error: ValidationError) -> str:
    """Describe a pydantic error in one line: where, what, and how many more."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "line"
    more = f" (and {error.error_count() - 1} more problems)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def parse_line(raw: bytes, *, path: Path, line: int) -> tuple[Event | JournalHeader, bool]:
    """Validate one line (without its newline) and return its record and ``more`` flag.

    Raises:
        BadLine: checksum, JSON, structure or version number are wrong.
        NewerFormatError: the line was written by a newer skillnb (not damage).

    """
    if len(raw) > MAX_LINE_BYTES:
        raise BadLine(f"line of {len(raw)} bytes, over the {MAX_LINE_BYTES}-byte limit")
    if len(raw) < _CRC_TAIL + 2 or raw[-_CRC_TAIL:-10] != _CRC_KEY or raw[-2:] != b'"}':
        raise BadLine("no checksum at the end of the line (garbled or cut)")
    try:
        expected = int(raw[-10:-2], 16)
    except ValueError:
        raise BadLine("malformed checksum") from None
    content = raw[:-_CRC_TAIL]
    if zlib.crc32(b"}", zlib.crc32(content)) != expected:
        raise BadLine("checksum mismatch (the line was altered)")
    more = content.endswith(_MORE)
    body = (content[: -len(_MORE)] if more else content) + b"}"
    fast = fast_event(body, RECORD_VERSION, depth=READ_DEPTH)  # None: not a plain event
    if fast is not None:
        return fast, more
    error: ValidationError | None = None
    try:
        event = Event.model_validate_json(body, strict=True)
    except ValidationError as exc:
        error = exc.with_traceback(None)  # no cycle through this frame (it holds the scan)
    else:
        if event.v == RECORD_VERSION:
            return event, more
    return _parse_other(body, more, error, path=path, line=line), more


def _header(obj: dict[str, Any], more: bool) -> JournalHeader:
    base, run_id = obj["base"], obj.get("run")
    if type(base) is not int or base < 0 or more or not (run_id is None or type(run_id) is str):
        raise BadLine(f"malformed journal header {obj!r:.200}")
    if run_id is not None:
        try:
            check_run_id(run_id, "the journal header's run id")
        except InvalidName as exc:
            raise BadLine(str(exc)) from None
    return JournalHeader(base, run_id)


def _parse_other(
    body: bytes, more: bool, error: ValidationError | None, *, path: Path, line: int
) -> Event | JournalHeader:
    """Parse a header or an older format, or explain the error (the slow path)."""
    try:
        obj = load_json(body, max_depth=READ_DEPTH)
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
    if set(obj) in ({"v", "base"}, {"v", "base", "run"}):
        return _header(obj, more)
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

    events: Sequence[Event]
    """The committed events, oldest first (built when read: see
    :class:`~skillnb.core.runstate.eventrecords.EventRecords`)."""
    offsets: list[int]
    """Absolute byte offset of each committed event's line."""
    header: JournalHeader | None
    """The header, when the bytes began with a header line."""
    end: int
    """Absolute byte offset just past the last committed line."""
    lines: int
    """How many committed lines were read (a header included)."""
    tail: int
    """Bytes after ``end`` that are not committed (an unfinished append, a torn fragment)."""
    tail_lines: int
    """Valid lines inside that tail: an append whose last line never came."""
    names_checked: bool = False
    """Whether the events' names were checked (:mod:`skillnb.core.limits`) as they were read."""

    @property
    def base(self) -> int | None:
        """The header's base, when the bytes began with a header line."""
        return self.header.base if self.header is not None else None


def looks_like_journal(data: bytes) -> bool:
    """Tell whether ``data`` begins as every journal line does (an empty file does too)."""
    return _LINE_START.startswith(data[: len(_LINE_START)])


def _not_a_journal(path: Path, data: bytes, first: BadLine | None) -> StoreCorrupted:
    why = f"it begins {data[:20]!r}" + (f": {first.detail}" if first is not None else "")
    return StoreCorrupted(
        path,
        f"not a SKILL.nb journal: its first line is not a journal header or event ({why}); "
        "SKILL.nb never replaces a file it did not write",
        line=1,
    )


def _check_first_fragment(data: bytes, path: Path) -> None:
    """A journal whose only bytes lack a newline: a torn first event, or a cut header.

    The header is written atomically with the journal, so a header without its newline is
    damage (repair restores it), not a torn write.
    """
    try:
        item, _ = parse_line(data, path=path, line=1)
    except BadLine:
        return
    if isinstance(item, JournalHeader):
        raise StoreCorrupted(path, "the journal header has no newline (the file was cut)", line=1)


def _scan_plain(data: bytes, *, path: Path, start: int, next_seq: int, header: bool) -> Scan | None:
    """:func:`scan` of a journal of plain lines, all at once; ``None``: read line by line."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return None  # no whole line: a torn first event, or a cut header (see scan)
    pos, found, expect = 0, None, next_seq
    if header and data.startswith(_HEADER_START):
        pos = data.index(b"\n") + 1
        try:
            first, _ = parse_line(data[: pos - 1], path=path, line=1)
        except BadLine:
            return None
        if not isinstance(first, JournalHeader):
            return None
        found, expect = first, first.base + 1
    plain = plain_records(
        data,
        pos,
        end,
        start=start,
        first_seq=expect,
        version=RECORD_VERSION,
        max_bytes=MAX_LINE_BYTES,
        depth=READ_DEPTH,
        path=path,
    )
    if plain is None:
        return None
    done, events, offsets = plain.committed, plain.events, plain.starts
    committed_end = offsets[done] - start
    del offsets[done:]  # in place: a copy would touch each of a long journal's offsets again
    return Scan(
        events=events if done == len(events) else events[:done],
        offsets=offsets,
        header=found,
        end=start + committed_end,
        lines=done + (found is not None),
        tail=len(data) - committed_end,
        tail_lines=data.count(b"\n", committed_end),
        names_checked=True,
    )


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
        header_allowed: whether the first line may be a journal header (the bytes are then
            the start of a live journal, and must look like one).

    Raises:
        StoreCorrupted: a complete line is damaged, a sequence number is out of order, a header
            appears where it may not, or the file is not a SKILL.nb journal at all.
        NewerFormatError: a line was written by a newer skillnb.

    """
    if header_allowed and not looks_like_journal(data):
        raise _not_a_journal(path, data, None)
    many = data.count(b"\n", 0, _FEW_LINES_BYTES) >= _FEW_LINES  # few: one by one is faster
    # A long journal builds many events that stay alive: no cycles to collect meanwhile.
    with gc_paused(promote=True) if many else nullcontext():
        found = None
        if many:
            found = _scan_plain(
                data, path=path, start=start, next_seq=next_seq, header=header_allowed
            )
        if found is None:
            found = _scan_lines(
                data,
                path=path,
                start=start,
                first_line=first_line,
                next_seq=next_seq,
                header_allowed=header_allowed,
            )
    if not found.names_checked:  # the bulk reader checks them as it reads
        refuse_bad_names(found.events, path=path, line=first_line + (found.header is not None))
    return found


def _scan_lines(
    data: bytes, *, path: Path, start: int, first_line: int, next_seq: int, header_allowed: bool
) -> Scan:
    """:func:`scan` line by line: reads every line it must, names the line of any damage."""
    events: list[Event] = []
    offsets: list[int] = []
    header: JournalHeader | None = None
    committed = end = lines = 0
    pos, lineno, expect = 0, first_line, next_seq
    parsed = iter(parse_lines(data, data.rfind(b"\n") + 1))  # all lines at once, if it can
    while (nl := data.find(b"\n", pos)) >= 0:
        raw = data[pos:nl]
        try:
            fast = line_event(
                next(parsed, None),
                raw,
                RECORD_VERSION,
                max_bytes=MAX_LINE_BYTES,
                depth=READ_DEPTH,
            )
            item, more = fast if fast is not None else parse_line(raw, path=path, line=lineno)
        except BadLine as exc:
            if header_allowed and pos == 0 and not data.startswith(_LINE_START):
                raise _not_a_journal(path, data, exc) from None
            raise StoreCorrupted(path, exc.detail, line=lineno) from None
        if isinstance(item, JournalHeader):
            if not (header_allowed and pos == 0):
                raise StoreCorrupted(path, "a journal header where events belong", line=lineno)
            header, expect = item, item.base + 1
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
    if header_allowed and pos == 0 and data:
        _check_first_fragment(data, path)
    return Scan(
        events=events,
        offsets=offsets,
        header=header,
        end=start + end,
        lines=lines,
        tail=len(data) - end,
        tail_lines=data.count(b"\n", end),
    )
