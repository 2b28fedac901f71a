"""A cursor that follows the live journal cheaply (store layer).

:class:`JournalTail` remembers, for one store object, which journal file it read (kept open,
so its inode cannot be reused by a new file while we compare identities), where the last
committed line ends, the base and last sequence numbers, and where each event's line starts.
:meth:`JournalTail.refresh` then costs one ``stat`` when nothing changed and reads only the new
bytes when something was appended; when another process replaced the journal (compaction or
repair) it re-reads the new, short file.

Events another process appended are parsed once, when they are read, and kept only until a
reader takes them (:meth:`JournalTail.events_after`): the reader that catches up gets those
very objects, without a copy, and nothing in the tail holds them afterwards, so what a reader
does with its events never shows in another's. A reader further behind, or a second one, gets
its events parsed again from the file (from the page cache: a few microseconds a line).

The file is checked with ``lstat`` at each refresh (the ``stat`` it needs anyway) and opened with
``O_NOFOLLOW``: a symlink in its place is :class:`~skillnb.errors.UnsafePath`, and ``guard`` (the
store's check of its folders) runs each time a descriptor is opened, not at each read.
"""

from __future__ import annotations

import os
import stat
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path

from skillnb.core.runstate.records import Event
from skillnb.errors import UnsafePath
from skillnb.store.durable import open_file, read_at
from skillnb.store.sidecar.journal import scan

__all__ = ["JournalTail"]

_CHAINED = 256  # unread events kept across two reads (more: the older are read again if asked)


def _read_from(fd: int, offset: int) -> bytes:
    """Everything from ``offset`` to the end of the file, including bytes appended meanwhile."""
    chunks: list[bytes] = []
    while chunk := read_at(fd, max(os.fstat(fd).st_size - offset, 1 << 16), offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class JournalTail:
    """What one store object knows of the live journal ``path``."""

    def __init__(self, path: Path, guard: Callable[[], object] | None = None) -> None:
        self.path = path
        self.name = os.fspath(path)
        """The journal's path as text (what ``lstat`` takes without converting it each time)."""
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
        self._unread: Sequence[Event] = ()
        """The events last read from the file that no reader took yet (the newest ones)."""

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

    def unchanged(self) -> bool:
        """Tell, with one ``lstat``, whether :meth:`refresh` would find nothing to do.

        ``True``: the path is still the regular file this tail has open, of the size it read,
        all of it committed. ``False`` for anything else (gone, replaced, a symlink, grown, cut,
        a torn tail): :meth:`refresh` says what.
        """
        if self._fd is None:
            return False
        try:
            st = os.lstat(self.name)
        except FileNotFoundError:
            return False
        return (
            (st.st_dev, st.st_ino) == self.identity
            and stat.S_ISREG(st.st_mode)
            and st.st_size == self.size == self.end
        )

    def refresh(self) -> None:
        """Catch up with the file: one ``stat``, plus reading whatever is new."""
        try:
            st = os.lstat(self.name)
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
        self._unread = ()  # the caller takes these events
        return found.events

    def _forget(self) -> None:
        self.close()
        self.missing = True
        self.run_id = None
        self.base = self.last = self.end = self.size = self.tail_lines = 0
        self._header = self._lines = 0
        self._offsets = array("q")
        self._unread = ()

    def _file(self) -> int:
        if self._fd is None:
            raise RuntimeError("the journal is not open; call refresh() first")
        return self._fd

    def _read_new(self) -> None:
        data = _read_from(self._file(), self.end)
        found = scan(
            data, path=self.path, start=self.end, first_line=self._lines + 1, next_seq=self.last + 1
        )
        events = found.events
        if events:
            # Appended to what no reader took yet, when they follow it (a refresh between
            # two reads); otherwise the older ones are read from the file again if asked for.
            unread = self._unread
            together = len(unread) + len(events) <= _CHAINED
            self._unread = [*unread, *events] if unread and together else events
            self._extend(len(events), found.offsets)
        self.end, self.size, self.tail_lines = found.end, self.end + len(data), found.tail_lines
        self._lines += found.lines

    def _extend(self, count: int, offsets: list[int]) -> None:
        self._offsets.extend(offsets)
        self.last += count

    def appended(self, events: list[Event], data: bytes) -> None:
        """Record that this process appended ``events`` as ``data`` at :attr:`end`."""
        self._unread = ()  # no reader needs them: it would catch up from its own append
        if len(events) == 1:  # the usual append: one line
            end = self.end
            self._offsets.append(end)
            self.last += 1
            self.end = self.size = end + len(data)
            self._lines += 1
            return
        offsets, pos = [], self.end
        while pos < self.end + len(data):
            offsets.append(pos)
            pos = self.end + data.index(b"\n", pos - self.end) + 1
        self._extend(len(events), offsets)
        self.end = self.size = self.end + len(data)
        self._lines += len(events)

    def events_after(self, version: int) -> Sequence[Event]:
        """Return committed events with ``seq > version`` (``base <= version`` required).

        The reader owns them: they are the events last read from the file, when they are what
        it asks for and no reader took them yet, else parsed again from the file.
        """
        if version >= self.last:
            return []
        unread, self._unread = self._unread, ()
        if unread and unread[0].seq <= version + 1:
            return unread[version + 1 - unread[0].seq :]
        found = scan(
            self.committed_bytes(version + 1),
            path=self.path,
            start=self._offsets[version - self.base],
            first_line=version - self.base + 1 + self._header,
            next_seq=version + 1,
        )
        return found.events

    def committed_bytes(self, first: int) -> bytes:
        """Read the committed lines from event ``first`` (``base < first <= last``) on."""
        start = self._offsets[first - self.base - 1]
        return read_at(self._file(), self.end - start, start)

    def uncommitted_bytes(self) -> bytes:
        """Read the torn or unfinished tail after the last committed line."""
        if self._fd is None or self.size <= self.end:
            return b""
        return read_at(self._fd, self.size - self.end, self.end)
