"""A sidecar's listing events, read without replaying its whole journal (store layer).

A listing row needs a run's snapshot (when there is one), the events of the types it is
folded from (:data:`skillnb.store.folders.discover.FOLDED`: transitions, requests, batches, a few
percent of a journal) and the run's head with the time of its latest event. :func:`quick_read`
reads exactly that from a healthy sidecar: one ``scandir`` and an ``lstat`` per part, the
journal's bytes once (``O_NOFOLLOW``), each line's checksum and sequence number checked, and
an :class:`~skillnb.core.runstate.records.Event` built only for the lines a row is folded from,
through :func:`skillnb.store.sidecar.journal.parse_line` (the same validation as a full load) and
:func:`~skillnb.store.sidecar.names.names_problem`.

Whatever it does not recognise as a plain, healthy, private sidecar it leaves to the full
load (``None``): a damaged line, a sequence gap, a torn or unfinished tail, a journal of an
older format or without a header, a snapshot older than the journal, a part another user owns
or anyone may write, a symbolic link. The full load then says what is wrong (or warns) as it
always does, so a listing shows the same rows and the same reasons either way. Nothing here
creates, changes or locks a file.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from skillnb.core.limits import run_id_problem
from skillnb.core.runstate.records import RECORD_VERSION, Event, RunState
from skillnb.errors import SkillnbError
from skillnb.store.durable import read_file
from skillnb.store.sidecar.fastline import fast_event, loads
from skillnb.store.sidecar.journal import BadLine, JournalHeader, parse_line
from skillnb.store.sidecar.names import names_problem
from skillnb.store.sidecar.snapshot import read_snapshot

__all__ = ["Quick", "quick_read"]

_JOURNAL, _SNAPSHOT = "journal.jsonl", "snapshot.json"
_PARTS = frozenset(
    (_JOURNAL, _SNAPSHOT, "lock", "segments", "blobs", "compaction.json")
)  # the parts whose owner and mode a full load looks at
_PREFIX = b'{"v":%d,"seq":%%d,"type":"' % RECORD_VERSION
_HEADER = b'{"v":%d,"base":' % RECORD_VERSION
_CRC_KEY = b',"crc":"'
_CRC_TAIL = len(_CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
_MORE = b',"more":true'


@dataclass
class Quick:
    """What :func:`quick_read` read of a sidecar."""

    snapshot: RunState | None
    events: list[Event]
    """The committed events after the snapshot of the types asked for, oldest first."""
    head: int | None
    """The run's version, the last committed event's number (``None``: no event after the
    snapshot, whose version and time stand)."""
    at: datetime | None
    """When that event happened."""


def _private(info: os.stat_result, uid: int) -> bool:
    return info.st_uid == uid and not stat.S_IMODE(info.st_mode) & stat.S_IWOTH


def _parts(folder: Path) -> set[str] | None:
    """The parts of sidecar ``folder``, or ``None`` when one is not this user's own or a link."""
    uid = os.geteuid()
    if not _private(os.lstat(folder), uid):
        return None
    found: set[str] = set()
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name not in _PARTS:
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode) or not _private(info, uid):
                return None
            found.add(entry.name)
    return found


def _sealed_line(raw: bytes) -> bool:
    """Whether line ``raw`` ends with its checksum, and the checksum matches."""
    return (
        raw[-_CRC_TAIL:-10] == _CRC_KEY
        and raw[-2:] == b'"}'
        and zlib.crc32(b"}", zlib.crc32(raw[:-_CRC_TAIL])) == int(raw[-10:-2], 16)
    )


def _line_type(raw: bytes, seq: int) -> bytes | None:
    """The type of event ``seq`` in line ``raw``, when the line is plain and sealed."""
    start = _PREFIX % seq
    if not raw.startswith(start) or not _sealed_line(raw):
        return None
    return raw[len(start) : raw.find(b'"', len(start))]


def _event(raw: bytes, path: Path, line: int) -> Event | None:
    body = (
        raw[: -(_CRC_TAIL + len(_MORE))] if raw.endswith(_MORE, 0, -_CRC_TAIL) else raw[:-_CRC_TAIL]
    )
    event = fast_event(body + b"}", RECORD_VERSION)
    if event is None:  # not on the fast path: validated fully
        try:
            found, _more = parse_line(raw, path=path, line=line)
        except (BadLine, SkillnbError):  # damage, newer formats: the full load says what
            return None
        event = found if isinstance(found, Event) else None
    if event is None or names_problem(event) is not None:
        return None
    return event


def _header(raw: bytes) -> JournalHeader | None:
    """The header in line ``raw`` when it is sealed and plain (``base``, ``run``), else ``None``."""
    if not _sealed_line(raw):
        return None
    try:
        obj = loads(raw[:-_CRC_TAIL] + b"}")
    except ValueError:
        return None
    if type(obj) is not dict or tuple(obj) != ("v", "base", "run"):
        return None
    base, run_id = obj["base"], obj["run"]
    if type(base) is not int or base < 0 or run_id_problem(run_id) is not None:
        return None
    return JournalHeader(base, run_id)


@dataclass
class _Lines:
    """The committed lines of a journal, as :func:`_scan` finds them."""

    base: int
    events: list[Event]
    last: int
    last_line: tuple[bytes, int] | None
    """The last committed event's line and its number (its time is read from it)."""


def _scan(data: bytes, path: Path, types: Collection[str], after: int) -> _Lines | None:
    """Check every line of ``data`` cheaply; build the events of ``types`` after ``after``."""
    if not data.startswith(_HEADER) or not data.endswith(b"\n"):
        return None  # no header (an older journal), or a torn or unfinished last line
    end = data.index(b"\n")
    header = _header(data[:end])
    if header is None:
        return None
    found = _Lines(header.base, [], header.base, None)
    group: list[Event] = []
    seq = header.base + 1
    wanted = {kind.encode() for kind in types}
    for line, raw in enumerate(data[end + 1 :].split(b"\n")[:-1], 2):
        kind = _line_type(raw, seq)
        if kind is None:
            return None
        if seq > after and kind in wanted:
            event = _event(raw, path, line)
            if event is None or event.seq != seq:
                return None
            group.append(event)
        if not raw.endswith(_MORE, 0, -_CRC_TAIL):  # the last line of an append
            found.events.extend(group)
            found.last, found.last_line = seq, (raw, line)
            group = []
        seq += 1
    return found if seq == found.last + 1 else None  # else: an append's last line never came


def _time(lines: _Lines, path: Path) -> datetime | None:
    if lines.last_line is None:
        return None
    if lines.events and lines.events[-1].seq == lines.last:
        return lines.events[-1].at
    event = _event(lines.last_line[0], path, lines.last_line[1])
    return event.at if event is not None else None


def quick_read(folder: Path, types: Collection[str]) -> Quick | None:
    """The snapshot and the events of ``types`` of the healthy sidecar ``folder``.

    Args:
        folder: the sidecar (or state folder).
        types: the event types to build (every other line is checked, not built).

    Returns:
        What it read, or ``None`` when the sidecar is not plainly healthy and private: the
        full load reads it (and says what is wrong).

    """
    try:
        parts = _parts(folder)
        if parts is None or _JOURNAL not in parts:
            return None
        snapshot = read_snapshot(folder / _SNAPSHOT) if _SNAPSHOT in parts else None
        path = folder / _JOURNAL
        after = snapshot.version if snapshot is not None else 0
        lines = _scan(read_file(path), path, types, after)
    except (OSError, ValueError, BadLine, SkillnbError):  # damage, links, races: the full load says
        return None
    if lines is None or not lines.base <= after <= lines.last:
        return None
    if lines.last == after:
        return Quick(snapshot, [], None, None)
    at = _time(lines, path)
    return Quick(snapshot, lines.events, lines.last, at) if at is not None else None
