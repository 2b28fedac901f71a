"""Reading a run of plain journal lines all at once (store layer).

Nearly every journal is made of plain lines only: events of the current format written by
this package, with their checksums, numbered one after the other. :func:`plain_records` reads
such a run of lines in bulk, a chunk of a few hundred whole lines at a time (so that each
check finds the chunk's bytes and parsed objects still in the processor's caches): it splits
the chunk once, looks at its line lengths and brackets in C-level passes, parses its lines
(into typed records with msgspec when it is installed, see
:mod:`~skillnb.store.sidecar.structlines`, the values of facts checked and held unbuilt, see
:mod:`~skillnb.store.sidecar.heldfacts`, else with
:func:`~skillnb.store.sidecar.fastline.parse_run`), and then checks them together, each check one
pass over them at C speed (a ``map`` of a built-in, a set, list or strided bytes
comparison), never a Python loop over the lines (the names are judged per type, grouped by
one loop):

* each line's checksum, over its bytes, against the 8 hex digits its bytes end with, and
  whether the line goes on (``more``), from its bytes;
* that each line's object has exactly the members of a line: the five fields of an event
  (``v``, ``seq``, ``type``, ``at``, ``data``), ``more`` when its bytes say so, and ``crc``;
* that the fields have their types, ``v`` the current format, ``at`` an RFC 3339 time;
* that the sequence numbers follow one another;
* that the names in the events follow the rules of :mod:`skillnb.core.limits`
  (:func:`~skillnb.core.limits.records_pass`, each distinct name judged once).

That is what :func:`skillnb.store.sidecar.journal.scan` checks line by line, and the events it
returns (as columns, see :class:`~skillnb.core.runstate.eventrecords.EventRecords`) are the ones
that :func:`~skillnb.store.sidecar.fastline.line_event` would build. When any line is anything
else (a header, an older format, damage, a gap) it returns ``None`` and the caller reads line
by line, which reads what it must and names the file and line of any damage.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import reduce
from itertools import accumulate, compress, repeat
from operator import and_, itemgetter, not_
from pathlib import Path
from sys import intern
from typing import Any, NamedTuple, cast
from zlib import crc32

from skillnb.core.limits import fact_names_pass, records_pass
from skillnb.core.runstate.eventrecords import EventRecords, HeldData
from skillnb.store.sidecar import heldfacts, structlines
from skillnb.store.sidecar.fastline import parse_run

__all__ = ["Plain", "plain_records"]

_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_MORE = b',"more":true'
_SEAL = _CRC_KEY + b'????????"}'
"""How a line ends after its content: ``?`` stands for a hex digit of its checksum."""
_SIZES = (6, 7)
"""How many members a line's object has, indexed by whether its append goes on."""
_TAIL = itemgetter(slice(-_CRC_TAIL - len(_MORE), None))
_IS = {char: bytes(int(byte == char) for byte in range(256)) for char in _MORE}
"""For each byte of ``,"more":true``, a table that makes it 1 and any other byte 0."""
_CONTENT = itemgetter(slice(None, -_CRC_TAIL))
_FIELDS = itemgetter("v", "seq", "type", "at", "data")
_SHAPE = itemgetter(4, 10, 13)
_U32 = "I" if array("I").itemsize == 4 else "L"
"""The array type code of 32-bit unsigned integers (checksums)."""
_INT, _STR, _DICT = {int}, {str}, {dict}
_OPENERS = bytes(0x7B if b == 0x5B else b for b in range(256))  # "[" counts as "{"
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"{[\n")
_plus_one = (1).__add__
_CHUNK = 1 << 18
"""About how many bytes :func:`plain_records` reads at a time (whole lines): a few hundred lines."""


class Plain(NamedTuple):
    """What :func:`plain_records` found: checked records, where their lines start, commits."""

    events: EventRecords
    """One event per line (committed or not)."""
    starts: list[int]
    """The absolute offset of each line, then of the end of the last one."""
    committed: int
    """How many of the records are committed (up to the last line without ``more``)."""


class _Part(NamedTuple):
    """The checked columns of a chunk of lines."""

    types: Sequence[str]
    times: list[datetime]
    data: Sequence[Any]
    mores: list[int]
    lengths: list[int]
    held: list[bool] | None = None
    """Whether each line's data are held unbuilt (``None``: none are)."""
    keys: list[str] = []  # noqa: RUF012  # a NamedTuple's default, never changed
    """The keys of the facts whose data are held unbuilt, in their order."""
    notes: list[Any] = []  # noqa: RUF012  # a NamedTuple's default, never changed
    """The notes of those facts, in their order."""


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
    path: Path = Path("journal.jsonl"),
    parse: Callable[[bytes], Any] | None = None,
) -> Plain | None:
    """Check and read the lines of ``data[pos:end]`` (``end`` just past a newline) at once.

    The lines are read a chunk of :data:`_CHUNK` bytes at a time (whole lines): each check
    of a chunk finds its bytes and the objects parsed from them still in the processor's
    caches, where checking the whole journal at once would fetch them from memory again
    for each check.

    Args:
        data: journal bytes.
        pos: where the first line starts (a line boundary).
        end: just past the last newline to read (``pos`` when there is nothing to read).
        start: the absolute offset of ``data[0]`` in its file.
        first_seq: the sequence number the first line must have.
        version: the only format version read here (the current one).
        max_bytes: lines longer than this are left to the careful reader.
        depth: lines with more brackets than this are left to the careful reader.
        path: the journal (named if a fact's data, held unbuilt, cannot be built later).
        parse: replaces the JSON parser (tests compare the two).

    Returns:
        The records, or ``None`` when a line is not a plain event of ``version`` numbered
        ``first_seq``, ``first_seq + 1``, ..., or holds a name the rules refuse (those of
        uncommitted lines too): read line by line then.

    """
    types: list[str] = []
    times: list[datetime] = []
    values: list[Any] = []  # dicts, and what is kept of held facts' data
    mores: list[int] = []
    lengths: list[int] = []
    held = False  # whether some facts' data are held unbuilt
    at, seq = pos, first_seq
    passed: dict[object, set[Any]] = {}  # the names found good so far, per rule
    while at < end:
        stop = data.find(b"\n", at + _CHUNK, end) + 1 or end
        part = _read_part(data[at:stop], seq, version, max_bytes, depth, parse)
        if part is None or not _names_pass(part, passed):
            return None
        types += part.types  # while the chunk's objects are still in the caches
        times += part.times
        values += part.data
        mores += part.mores
        lengths += part.lengths
        held = held or part.held is not None
        at, seq = stop, seq + len(part.lengths)
    try:
        committed = len(mores) - mores[::-1].index(0)  # up to the last line without more
    except ValueError:  # every line goes on (or there is none): nothing is committed yet
        committed = 0
    starts = list(accumulate(map(_plus_one, lengths), initial=start + pos))
    column: Sequence[dict[str, Any]] = values  # none held: all dicts
    if held:
        build = heldfacts.held_builder(data, start, starts, lengths, path)
        column = HeldData(values, build, heldfacts.fact_key)
    events = EventRecords(range(first_seq, seq), types, times, column, version)
    return Plain(events, starts, committed)


def _names_pass(part: _Part, passed: dict[object, set[Any]]) -> bool:
    """Whether the names in ``part`` follow the rules (those of held facts from their columns)."""
    data = cast("Sequence[dict[str, Any]]", part.data)  # held facts' are not dicts
    if part.held is None:
        return records_pass(part.types, data, passed)
    if len(part.keys) < len(data):  # some data were built: judged as they are
        built = list(map(not_, part.held))
        types = list(compress(part.types, built))
        if not records_pass(types, list(compress(data, built)), passed):
            return False
    return fact_names_pass(part.keys, part.notes, passed)


def _read_part(
    chunk: bytes,
    seq: int,
    version: int,
    max_bytes: int,
    depth: int,
    parse: Callable[[bytes], Any] | None,
) -> _Part | None:
    """Check and read ``chunk`` (whole lines, each with its newline), numbered from ``seq``."""
    # Keep only brackets (as "{") and newlines: a line with too many is a long run of them.
    if b"{" * (depth + 1) in chunk.translate(_OPENERS, _NOT_OPENERS):
        return None
    lines = chunk.split(b"\n")
    lines.pop()  # after the last newline
    lengths = list(map(len, lines))
    if max(lengths) > max_bytes:
        return None
    mores = _sealed(lines)  # 1: the line goes on
    if mores is None:
        return None
    try:
        if parse is None and structlines.decode_line is not None:  # reads any integer exactly
            held = heldfacts.held_columns(chunk, lines, mores, seq, version)
            if held is not None:  # the facts' data held unbuilt, their names kept
                found = _timed(*held[:3], mores)
                if found is not None:
                    found = found._replace(held=held[3], keys=held[4], notes=held[5])
            else:
                columns = structlines.struct_columns(lines, mores, seq, version)
                found = None if columns is None else _timed(*columns, mores)
        else:
            found = _check(parse_run(chunk, lines, parse), mores, seq, version)
    except (TypeError, ValueError, KeyError):  # a missing field, a time that is not one
        return None
    return None if found is None else found._replace(lengths=lengths)


def _check(objs: list[Any], mores: list[int], seq: int, version: int) -> _Part | None:
    """Check each line's parsed object; gather the events' fields as columns.

    ``mores``: for each line, 1 when its bytes say it goes on. Returns the events' columns
    (``lengths`` left empty), or ``None`` when a line is not a plain event numbered ``seq``,
    ``seq + 1``, ...

    Each check is one pass over all the lines at C speed (``map`` of a built-in, a set, a
    list or a strided bytes comparison) rather than a Python loop over the lines: the same
    checks as :func:`~skillnb.store.sidecar.fastline.line_event` makes on one line. No pass is made
    that another one implies: a line that is not an object, or a time that is not text,
    fails ``len``, the fields' ``itemgetter``, the join of the times or ``fromisoformat``
    with a ``TypeError``.
    """
    # A line's bytes end with ``,"crc":"…"}`` (and ``,"more":true`` before it, when it goes
    # on): those are members of the line's object, so an object with the five fields of an
    # event and one member more (two with "more") has exactly the fields of a line.
    if not objs or list(map(len, objs)) != list(map(_SIZES.__getitem__, mores)):
        return None
    vs, seqs, types, ats, data = zip(*map(_FIELDS, objs), strict=True)
    if (
        set(vs) != {version}
        or set(map(type, vs)) != _INT
        or set(map(type, seqs)) != _INT
        or seqs != tuple(range(seq, seq + len(seqs)))
        or set(map(type, types)) != _STR
        or set(map(type, data)) != _DICT
    ):
        return None
    return _timed(list(map(intern, types)), ats, data, mores)  # one object per type


def _timed(
    types: Sequence[str],
    ats: Sequence[str],
    data: Sequence[Any],
    mores: list[int],
) -> _Part | None:
    """The columns of checked lines, once each time is an RFC 3339 time; else ``None``.

    Raises:
        ValueError: a time is shaped as one but is not one.

    """
    if not _rfc3339_shaped(ats):
        return None
    times = list(map(datetime.fromisoformat, ats))  # ValueError: not a time
    return _Part(types, times, data, mores, [])


def _sealed(lines: list[bytes]) -> list[int] | None:
    """Whether each line goes on (``more``: 1, else 0), when each ends with its own checksum.

    ``None`` when a line does not end with ``,"crc":"`` and the checksum of what precedes
    it, as 8 lowercase hex digits, then ``"}`` (one written otherwise, in capitals say, is
    then read line by line). The last bytes of every line are joined once and compared
    column by column: byte ``i`` of every line's tail in one strided slice.
    """
    crcs = array(_U32, map(crc32, repeat(b"}"), map(crc32, map(_CONTENT, lines))))
    if sys.byteorder == "little":
        crcs.byteswap()
    hexes = crcs.tobytes().hex().encode("ascii")  # 8 digits a line, as the lines write them
    tails = b"".join(map(_TAIL, lines))  # the place of ,"more":true then ,"crc":"01234567"}
    n, width = len(lines), len(_MORE) + _CRC_TAIL
    if len(tails) != n * width or any(
        tails[len(_MORE) + i :: width] != expected
        for i, expected in enumerate(_tail_columns(hexes, n))
    ):
        return None
    # A line goes on when each of the 12 bytes before its checksum is the byte of ,"more":true
    columns = (tails[i::width].translate(_IS[char]) for i, char in enumerate(_MORE))
    flags = reduce(and_, (int.from_bytes(column, "big") for column in columns))
    return list(flags.to_bytes(n, "big"))


def _tail_columns(hexes: bytes, n: int) -> Iterator[bytes]:
    """Byte ``i`` of every line's expected tail, for each ``i`` of ``,"crc":"01234567"}``."""
    for i, char in enumerate(_SEAL):
        yield bytes((char,)) * n if char != 0x3F else hexes[i - len(_CRC_KEY) :: 8]


def _rfc3339_shaped(ats: Sequence[str]) -> bool:
    """Whether each text is shaped as :meth:`datetime.isoformat` writes a time with a date.

    At least 19 characters, ``-`` at 4, ``T`` at 10, ``:`` at 13 (what
    :func:`~skillnb.store.sidecar.fastline.fast_event` asks before parsing a time). Times of one
    length, as a run mostly writes them, are checked by slicing their concatenation.
    """
    lengths = set(map(len, ats))
    if min(lengths) < 19:
        return False
    if len(lengths) > 1:
        return set(map(_SHAPE, ats)) == {("-", "T", ":")}
    joined, n, step = "".join(ats), len(ats), lengths.pop()
    return (
        joined[4::step] == "-" * n and joined[10::step] == "T" * n and joined[13::step] == ":" * n
    )
