"""The sidecar store: a run kept in plain files beside its notebook (store layer).

:class:`SidecarStore` implements :class:`~skillnb.store.protocol.Store` over a folder laid out
as described in :mod:`skillnb.store.layout`: a JSON-lines journal with a checksum per line
(:mod:`skillnb.store.journal`), a compacted snapshot (:mod:`skillnb.store.snapshot`), archived
segments, content-addressed blobs (:mod:`skillnb.store.blobs`) and a lock file
(:mod:`skillnb.store.lockfile`).

Durability: an append writes all its lines with one ``os.write`` on an ``O_APPEND`` descriptor
and fsyncs before returning; every create and rename is followed by a folder fsync. Reads take
no lock: the journal only grows between compactions, and a compaction replaces it atomically
(see :mod:`skillnb.store.compaction` for the crash-safe order). Reading creates no file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType

from skillnb.core.records import Event, EventDraft, RunState
from skillnb.errors import ConflictError, StoreCorrupted
from skillnb.store.blobs import BlobFolder
from skillnb.store.compaction import compact_journal, recover
from skillnb.store.durable import (
    PhaseHook,
    aside_path,
    atomic_write,
    ensure_dir,
    sweep_temp_files,
    write_all,
)
from skillnb.store.history import read_history
from skillnb.store.journal import encode_events, encode_header
from skillnb.store.layout import SidecarLayout, sidecar_dir_for
from skillnb.store.lockfile import FileLock
from skillnb.store.packing import pack_segments
from skillnb.store.protocol import Loaded
from skillnb.store.snapshot import encode_snapshot, read_snapshot
from skillnb.store.tail import JournalTail

__all__ = ["SidecarStore", "sidecar_dir_for"]


def _no_hook(phase: str) -> None:
    """Observe nothing (the default phase hook)."""


class SidecarStore:
    """A :class:`~skillnb.store.protocol.Store` in a sidecar folder.

    Args:
        path: the sidecar folder (see :func:`~skillnb.store.layout.sidecar_dir_for`); created,
            ``0o700``, on the first write.
        phase_hook: called with the name of each durable-write phase (``append.written``,
            ``append.synced``, ``compact.segment``, ...); crash tests end the process there.

    One object may be shared by threads. Several objects, in one process or many, may share a
    folder: the lock file orders their writes and each sees the others' commits.

    """

    def __init__(self, path: Path, *, phase_hook: PhaseHook | None = None) -> None:
        self._layout = SidecarLayout(Path(path))
        self._hook = phase_hook or _no_hook
        self._mutex = threading.RLock()
        self._lock = FileLock(self._layout.lock, self._mutex)
        self._tail = JournalTail(self._layout.journal)
        self._blobs = BlobFolder(self._layout.blobs)
        self._wfd: int | None = None
        self._wfd_identity: tuple[int, int] | None = None
        self._root_ready = False
        self._closed = False

    # -- protocol -----------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The sidecar folder."""
        return str(self._layout.root)

    @property
    def path(self) -> Path:
        """The sidecar folder."""
        return self._layout.root

    def exists(self) -> bool:
        """Tell whether the journal holds an event or a snapshot exists."""
        return self.head() > 0 or self._layout.snapshot.exists()

    def lock(self) -> AbstractContextManager[None]:
        """Take the exclusive writer lock (inter-process, re-entrant for this object)."""
        return self._locked()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._check_open()
        if not self._root_ready:
            ensure_dir(self._layout.root)
            self._root_ready = True
        with self._lock.hold():
            yield

    def head(self) -> int:
        """Return the latest committed version: a ``stat`` of the journal, plus any new bytes."""
        with self._mutex:
            self._check_open()
            self._tail.refresh()
            if self._tail.missing:
                return self._snapshot_version()
            return self._tail.last

    def load(self) -> Loaded:
        """Read the latest snapshot and every committed event after it.

        Raises:
            StoreCorrupted: a file is damaged (a torn last line is not damage).
            NewerFormatError: a file was written by a newer skillnb.

        """
        with self._mutex:
            self._check_open()
            snapshot = read_snapshot(self._layout.snapshot)
            events = self._tail.reload()
            after = snapshot.version if snapshot is not None else 0
            if after > self._tail.last and not self._tail.missing:
                raise StoreCorrupted(
                    self._layout.snapshot,
                    f"snapshot at version {after} but the journal ends at {self._tail.last}",
                )
            if after < self._tail.base:
                # The snapshot is older than the journal (missing, or replaced meanwhile):
                # the events in between are in the segments.
                events = list(self.history())
            return Loaded(snapshot=snapshot, events=[e for e in events if e.seq > after])

    def read_since(self, version: int) -> list[Event] | None:
        """Return events with ``seq > version``; ``None`` when compaction archived some."""
        with self._mutex:
            self._check_open()
            self._tail.refresh()
            if self._tail.missing:
                return [] if version >= self._snapshot_version() else None
            if version < self._tail.base:
                return None
            return self._tail.events_after(version)

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Commit ``drafts`` durably as the next versions, all or nothing.

        With ``sync=False`` the lines are written but not fsynced: other readers see them and
        they survive a crash of this process, and the next synced append makes them durable
        against a crash of the machine too (fsync flushes the whole file).

        Raises:
            ConflictError: ``expected_version`` is not the latest committed version.
            ValueError: a draft's data is not JSON (nothing is written).

        """
        with self.lock():
            fd = self._prepare_append()
            head = self._tail.last
            if expected_version != head:
                raise ConflictError(expected_version, head)
            if not drafts:
                return []
            events = [
                Event(seq=head + i, type=d.type, at=d.at, data=d.data)
                for i, d in enumerate(drafts, start=1)
            ]
            data = encode_events(events)
            try:
                write_all(fd, data)
                self._hook("append.written")
                if sync:
                    os.fsync(fd)
            except BaseException:
                self._undo_write()
                raise
            self._hook("append.synced")
            self._tail.appended(events, data)
            return events

    def compact(self, state: RunState) -> None:
        """Write ``state`` as the snapshot, archive the live journal, start a fresh one.

        Raises:
            ConflictError: ``state.version`` is not the latest committed version.

        """
        with self.lock():
            sweep_temp_files(self._layout.root)
            sweep_temp_files(self._layout.segments)
            recover(self._layout, self._tail, self._hook)
            self._prepare_append()
            head = self._tail.last
            if state.version != head:
                raise ConflictError(state.version, head)
            snapshot = encode_snapshot(state)
            if self._tail.last == self._tail.base:
                atomic_write(
                    self._layout.snapshot, snapshot, hook=self._hook, phase="compact.snapshot"
                )
                self._hook("compact.snapshot")
            else:
                compact_journal(self._layout, self._tail, snapshot, self._hook)

    def history(self) -> Iterator[Event]:
        """Every committed event from version 1: the archived segments, then the live journal.

        Raises:
            StoreCorrupted: a file is damaged, or segments are missing.

        """
        self._check_open()
        return read_history(self._layout)

    def live_bytes(self) -> int:
        """Bytes of committed lines in the live journal (what compaction would archive)."""
        with self._mutex:
            self._check_open()
            self._tail.refresh()
            return self._tail.end

    def snapshot_bytes(self) -> int:
        """Size of the snapshot file (0 when there is none yet)."""
        try:
            return self._layout.snapshot.stat().st_size
        except FileNotFoundError:
            return 0

    def pack(self) -> int:
        """Pack the archived segments into one gzip segment (see :mod:`skillnb.store.packing`).

        Returns:
            How many segment files the packed one replaced (0 when there was nothing to do).

        """
        with self.lock():
            sweep_temp_files(self._layout.segments)
            return pack_segments(self._layout)

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` under its content hash and return ``sha256:<hex>``."""
        self._check_open()
        return self._blobs.put(data)

    def get_blob(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``, checked against their hash.

        Raises:
            StoreCorrupted: ``ref`` is malformed or escapes ``blobs/``, or the content is damaged.
            KeyError: no blob has that reference.

        """
        self._check_open()
        return self._blobs.get(ref)

    def close(self) -> None:
        """Close the files and release the lock; the store may not be used afterwards."""
        with self._mutex:
            self._closed = True
            self._close_writer()
            self._tail.close()
            self._lock.close()

    def __enter__(self) -> SidecarStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SidecarStore({str(self._layout.root)!r})"

    # -- writing ------------------------------------------------------------------------------

    def _prepare_append(self) -> int:
        """With the lock held: catch up, drop a torn tail; return the append descriptor.

        A compaction cut short needs no attention here: every state it can leave is one that
        appends continue correctly from (see :mod:`skillnb.store.compaction`); the next
        compaction finishes or abandons it.
        """
        self._tail.refresh()
        if self._tail.missing:
            base = self._snapshot_version()
            atomic_write(self._layout.journal, encode_header(base) if base else b"")
            self._tail.reload()
        fd = self._writer()
        if self._tail.size > self._tail.end:
            self._drop_torn_tail(fd)
        return fd

    def _writer(self) -> int:
        if self._wfd is None or self._wfd_identity != self._tail.identity:
            self._close_writer()
            fd = os.open(self._layout.journal, os.O_WRONLY | os.O_APPEND)
            st = os.fstat(fd)
            self._wfd, self._wfd_identity = fd, (st.st_dev, st.st_ino)
            if self._wfd_identity != self._tail.identity:  # replaced between two syscalls
                self._tail.reload()
                return self._writer()
        return self._wfd

    def _close_writer(self) -> None:
        if self._wfd is not None:
            os.close(self._wfd)
            self._wfd = self._wfd_identity = None

    def _drop_torn_tail(self, fd: int) -> None:
        """Cut what a crashed writer left after the last committed line.

        Damaged complete lines (not a plain torn write) are copied aside first, never dropped
        silently.
        """
        if self._tail.tail_lines:
            kept = aside_path(self._layout.journal, "tail")
            atomic_write(kept, self._tail.uncommitted_bytes())
        os.ftruncate(fd, self._tail.end)
        os.fsync(fd)
        self._tail.refresh()

    def _undo_write(self) -> None:
        """After a failed write or fsync: cut the partial lines, forget the file position."""
        if self._wfd is not None:
            try:
                os.ftruncate(self._wfd, self._tail.end)
            finally:
                self._close_writer()
                self._tail.close()

    def _snapshot_version(self) -> int:
        """Read the snapshot's version (0 without one); only needed when the journal is missing."""
        snapshot = read_snapshot(self._layout.snapshot)
        return snapshot.version if snapshot is not None else 0

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self!r} is closed")
