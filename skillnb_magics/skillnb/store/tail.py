"""A cursor that follows the live journal cheaply (store layer).

:class:`JournalTail` remembers, for one store object, which journal file it read (kept open,
so its inode cannot be reused by a new file while we compare identities), where the last
committed line ends, the base and last sequence numbers, and where each event's line starts.
:meth:`JournalTail.refresh` then costs one ``stat`` when nothing changed and reads only the new
bytes when something was appended; when another process replaced the journal (compaction or
repair) it re-reads the new, short file.

The file is checked with ``lstat`` at each refresh (the ``stat`` it needs anyway) and opened with
``O_NOFOLLOW``: a symlink in its place is :class:`~skillnb.errors.UnsafePath`, and ``guard`` (the
store's check of its folders) runs each time a descriptor is opened, not at each read.
"""

from __future__ import annotations

import copy
import os
import stat
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from skillnb.core.records import Event
from skillnb.errors import UnsafePath
from skillnb.store.durable import open_file
from skillnb.store.journal import scan

__all__ = ["JournalTail"]

_RECENT = 1024  # events kept in memory for read_since callers that are a little behind


def _read_from(fd: int, offset: int) -> bytes:
    """Everything from ``offset`` to the end of the file, including bytes appended meanwhile."""
    chunks: list[bytes] = []
    while chunk := os.pread(fd, max(os.fstat(fd).st_size - offset, 1 << 16), offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class JournalTail:
    """What one store object knows of the live journal ``path``."""

    def __init__(self, path: Path, guard: Callable[[], object] | None = None) -> None:
        self.path = path
        self._guard = guard
        self.missing = True
        """True when there is no journal file."""
        self.base = 0
        """The version the journal continues from (its header's base, else 0)."""
        self.last = 0
        """The last committed sequence number (``base`` when the journal holds no event)."""
        self.end = 0
        """Byte offset just past the last committed line."""
        self.size = 0
        """The file size at the last refresh (``size > end``: a torn or unfinished tail)."""
        self.tail_lines = 0
        """Valid lines inside that tail: an append whose last line never came."""
        self.identity: tuple[int, int] | None = None
        """``(st_dev, st_ino)`` of the file read."""
        self.run_id: str | None = None
        """The run named by the journal's header (``None``: no header, or an older one)."""
        self._fd: int | None = None
        self._header = 0
        self._lines = 0
        self._offsets = array("q")
        self._recent: deque[Event] = deque(maxlen=_RECENT)

    @property
    def lines(self) -> int:
        """How many committed lines the journal holds (its header included)."""
        return self._lines

    def close(self) -> None:
        """Close the journal file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.identity = None

    def refresh(self) -> None:
        """Catch up with the file: one ``stat``, plus reading whatever is new."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            self._forget()
            return
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(self.path, "is a symbolic link")
        if self._fd is None or (st.st_dev, st.st_ino) != self.identity or st.st_size < self.end:
            self.reload()
        elif st.st_size != self.size or self.size > self.end:
            self._read_new()

    def reload(self) -> Sequence[Event]:
        """Re-read the whole journal and return its committed events (built when read)."""
        self.close()
        if self._guard is not None:
            self._guard()
        try:
            fd = open_file(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._forget()
            return []
        self._fd = fd
        st = os.fstat(fd)
        self.identity = (st.st_dev, st.st_ino)
        try:
            found = scan(_read_from(fd, 0), path=self.path, header_allowed=True)
        except BaseException:
            self.close()  # the next refresh reads the whole file again
            raise
        self.missing = False
        self._header = 1 if found.header is not None else 0
        self.run_id = found.header.run_id if found.header is not None else None
        self.base = found.base or 0
        self.last = self.base + len(found.events)
        self.end, self.size, self.tail_lines = found.end, found.end + found.tail, found.tail_lines
        self._lines = found.lines
        self._offsets = array("q", found.offsets)
        self._recent = deque(found.events[-_RECENT:], maxlen=_RECENT)
        return found.events

    def _forget(self) -> None:
        self.close()
        self.missing = True
        self.run_id = None
        self.base = self.last = self.end = self.size = self.tail_lines = 0
        self._header = self._lines = 0
        self._offsets = array("q")
        self._recent.clear()

    def _file(self) -> int:
        if self._fd is None:
            raise RuntimeError("the journal is not open; call refresh() first")
        return self._fd

    def _read_new(self) -> None:
        data = _read_from(self._file(), self.end)
        found = scan(
            data, path=self.path, start=self.end, first_line=self._lines + 1, next_seq=self.last + 1
        )
        self._extend(found.events, found.offsets, cache=True)
        self.end, self.size, self.tail_lines = found.end, self.end + len(data), found.tail_lines
        self._lines += found.lines

    def _extend(self, events: Sequence[Event], offsets: list[int], *, cache: bool) -> None:
        if events:
            self._offsets.extend(offsets)
            self.last = events[-1].seq
            if cache:
                self._recent.extend(events)
            else:
                self._recent.clear()

    def appended(self, events: list[Event], data: bytes) -> None:
        """Record that this process appended ``events`` as ``data`` at :attr:`end`."""
        if len(events) == 1:  # the usual append: one line
            self._extend(events, [self.end], cache=False)
            self.end = self.size = self.end + len(data)
            self._lines += 1
            return
        offsets, pos = [], self.end
        while pos < self.end + len(data):
            offsets.append(pos)
            pos = self.end + data.index(b"\n", pos - self.end) + 1
        self._extend(events, offsets, cache=False)  # the caller holds these objects
        self.end = self.size = self.end + len(data)
        self._lines += len(events)

    def events_after(self, version: int) -> list[Event]:
        """Return committed events with ``seq > version`` (``base <= version`` required)."""
        if version >= self.last:
            return []
        if self._recent and self._recent[0].seq <= version + 1:
            start = version + 1 - self._recent[0].seq
            return [_copied(e) for e in islice(self._recent, start, None)]
        found = scan(
            self.committed_bytes(version + 1),
            path=self.path,
            start=self._offsets[version - self.base],
            first_line=version - self.base + 1 + self._header,
            next_seq=version + 1,
        )
        return list(found.events)

    def committed_bytes(self, first: int) -> bytes:
        """Read the committed lines from event ``first`` (``base < first <= last``) on."""
        start = self._offsets[first - self.base - 1]
        return os.pread(self._file(), self.end - start, start)

    def uncommitted_bytes(self) -> bytes:
        """Read the torn or unfinished tail after the last committed line."""
        if self._fd is None or self.size <= self.end:
            return b""
        return os.pread(self._fd, self.size - self.end, self.end)


_IMMUTABLE = (str, int, float, bool, type(None))


def _copied(event: Event) -> Event:
    """A copy of a cached event that its reader may change without changing the cache.

    An event's data is JSON (it was written as such), so copying its dicts and lists is a
    deep copy, at a fifth of what ``copy.deepcopy`` costs; anything else is deep-copied.
    """
    return event.model_copy(update={"data": _copy_json(event.data)})


def _copy_json(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _copy_json(item) for key, item in value.items()}
    if kind is list:
        return [_copy_json(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)
