"""Reading a run of plain journal lines all at once (store layer).

Nearly every journal is made of plain lines only: events of the current format written by
this package, with their checksums, numbered one after the other. :func:`plain_records` reads
such a run of lines in bulk: it splits the bytes once, measures line lengths and bracket
depth over the whole run in a few C-level passes, parses every line in one parser call
(:func:`~skillnb.store.fastline.parse_joined`), and then checks each line in one tight loop:

* its checksum, over its bytes, and that the parsed ``crc`` and ``more`` are the ones the bytes
  end with;
* that it holds exactly the fields of an event (``v``, ``seq``, ``type``, ``at``, ``data``, then
  ``more`` when true, then ``crc``), of the expected types, ``v`` the current format, ``at`` an
  RFC 3339 time;
* that its sequence number is the next one.

That is what :func:`skillnb.store.journal.scan` checks line by line, and the records it returns
are the events that :func:`~skillnb.store.fastline.line_event` would build, as plain dicts
(see :class:`~skillnb.core.eventrecords.EventRecords`). On the first line that is anything else
(a header, an older format, damage, a gap) it returns ``None`` and the caller reads line by
line, which reads what it must and names the file and line of any damage.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime
from itertools import accumulate
from typing import Any, NamedTuple

from skillnb.store.fastline import parse_joined

__all__ = ["Plain", "plain_records"]

_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_HEX_AT = len(_CRC_KEY)  # where the 8 hex digits start, counted from the checksum's start
_MORE = b',"more":true'
_KEYS = (
    ("v", "seq", "type", "at", "data", "crc"),
    ("v", "seq", "type", "at", "data", "more", "crc"),
)
"""The fields of a line, in order, indexed by whether its append goes on (``more``)."""
_OPENERS = bytes(0x7B if b == 0x5B else b for b in range(256))  # "[" counts as "{"
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"{[\n")
_plus_one = (1).__add__


class Plain(NamedTuple):
    """What :func:`plain_records` found: checked records, where their lines start, commits."""

    records: list[dict[str, Any]]
    """One record per line: an event's five fields, ``at`` parsed (committed or not)."""
    starts: list[int]
    """The absolute offset of each line, then of the end of the last one."""
    committed: int
    """How many of the records are committed (up to the last line without ``more``)."""


def _too_long_or_deep(head: bytes, lines: list[bytes], max_bytes: int, depth: int) -> bool:
    """True when a line is longer than ``max_bytes`` or has more than ``depth`` brackets."""
    if len(head) > max_bytes and max(map(len, lines)) > max_bytes:
        return True
    # Keep only brackets (as "{") and newlines: a line with too many brackets is a long run.
    return b"{" * (depth + 1) in head.translate(_OPENERS, _NOT_OPENERS)


def plain_records(
    data: bytes,
    pos: int,
    end: int,
    *,
    start: int,
    first_seq: int,
    version: int,
    max_bytes: int,
    depth: int,
    parse: Callable[[bytes], Any] | None = None,
) -> Plain | None:
    """Check and read the lines of ``data[pos:end]`` (``end`` just past a newline) at once.

    Args:
        data: journal bytes.
        pos: where the first line starts (a line boundary).
        end: just past the last newline to read (``pos`` when there is nothing to read).
        start: the absolute offset of ``data[0]`` in its file.
        first_seq: the sequence number the first line must have.
        version: the only format version read here (the current one).
        max_bytes: lines longer than this are left to the careful reader.
        depth: lines with more brackets than this are left to the careful reader.
        parse: replaces the JSON parser (tests compare the two).

    Returns:
        The records, or ``None`` when a line is not a plain event of ``version`` numbered
        ``first_seq``, ``first_seq + 1``, ...: read line by line then.

    """
    if end <= pos:
        return Plain([], [start + pos], 0)
    head = data[pos : end - 1]
    lines = head.split(b"\n")
    if _too_long_or_deep(head, lines, max_bytes, depth):
        return None
    objs = parse_joined(head, parse, lines)
    if not objs:
        return None
    try:
        committed = _check(objs, lines, first_seq, version)
    except (TypeError, ValueError, KeyError):  # a malformed checksum, time or shape
        return None
    if committed is None:
        return None
    starts = list(accumulate(map(_plus_one, map(len, lines)), initial=start + pos))
    return Plain(objs, starts, committed)


def _check(objs: list[Any], lines: list[bytes], seq: int, version: int) -> int | None:
    """Check each line against its parsed object; make each object an event's record.

    Returns how many lines are committed, or ``None`` at the first line that is not a plain
    event numbered ``seq``, ``seq + 1``, ... (some objects may then be changed already).

    The parsed ``crc`` is not compared with the bytes: a JSON object whose bytes end with
    ``,"crc":"…"}`` has exactly that last member, and the checksum is checked on the bytes,
    as :func:`skillnb.store.journal.parse_line` checks it.
    """
    crc32 = zlib.crc32
    iso = datetime.fromisoformat
    first = seq
    committed = 0
    for obj, raw in zip(objs, lines, strict=True):
        if type(obj) is not dict:
            return None
        size = len(raw) - _CRC_TAIL  # where the checksum begins
        content = raw[:size]
        more = content.endswith(_MORE)
        if (  # the bytes end with the checksum of the rest, the object has the fields they say
            tuple(obj) != _KEYS[more]
            or not raw.startswith(_CRC_KEY, size)
            or not raw.endswith(b'"}')
            or crc32(b"}", crc32(content)) != int(raw[size + _HEX_AT : -2], 16)
        ):
            return None
        del obj["crc"]
        if more and obj.pop("more") is not True:
            return None
        v, number, kind, at, payload = obj.values()
        if (
            type(v) is not int
            or v != version
            or type(number) is not int
            or number != seq
            or type(kind) is not str
            or type(payload) is not dict
            or type(at) is not str
            or len(at) < 19  # an RFC 3339 time as datetime.isoformat writes it
            or at[10] != "T"
            or at[4] != "-"
            or at[13] != ":"
        ):
            return None
        obj["at"] = iso(at)  # ValueError: not a time
        seq += 1
        if not more:
            committed = seq - first
    return committed
