"""The sidecar store: a run kept in plain files beside its notebook (store layer).

:class:`SidecarStore` implements :class:`~skillnb.store.protocol.Store` over a folder laid out
as described in :mod:`skillnb.store.sidecar.layout`: a JSON-lines journal with a checksum per line
(:mod:`skillnb.store.sidecar.journal`), a compacted snapshot
(:mod:`skillnb.store.sidecar.snapshot`), archived
segments, content-addressed blobs (:mod:`skillnb.store.sidecar.blobs`) and a lock file
(:class:`skillnb.store.durable.FileLock`).

Durability: an append writes all its lines with one ``os.write`` on an ``O_APPEND`` descriptor
and fsyncs them before control returns to the writer, just after letting the writer lock go
(group commit, see :class:`SidecarStore`); every create and rename is followed by a folder
fsync. Reads take no lock: the journal only grows between compactions, and a compaction
replaces it atomically (see :mod:`skillnb.store.sidecar.compaction` for the crash-safe order).

Reading never writes: :meth:`~SidecarStore.exists`, :meth:`~SidecarStore.head`,
:meth:`~SidecarStore.load`, :meth:`~SidecarStore.read_since`, :meth:`~SidecarStore.history` and
:meth:`~SidecarStore.get_blob` create, change and move nothing (no folder, no lock file, no mode
change). A torn final fragment left by a crashed writer is ignored by readers with a
:class:`TornWriteWarning`; the next writer, under the lock, moves the bytes aside and warns
where they went.

Nothing is followed through a symlink: the sidecar folder, ``.skillnb/`` above it, and every
file and folder inside are checked (see :mod:`skillnb.store.sidecar.layout`); a symlink is
:class:`~skillnb.errors.UnsafePath` and nothing is read or written through it. A sidecar that
another user made, or that anyone may write, is read with one
:class:`~skillnb.store.ownership.ForeignSidecarWarning` naming owners and modes, and a write the
file system refuses raises a ``PermissionError`` naming the file (see
:mod:`skillnb.store.ownership`).

The journal is created with its first append, atomically, with a header naming the run (the
``run_id`` of a ``run.created`` event in that append, or the snapshot's), so a journal never
exists without saying whose it is.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from skillnb.core.closing import Closing
from skillnb.core.runstate.eventrecords import as_list
from skillnb.core.runstate.records import Event, EventDraft, RunState
from skillnb.errors import ConflictError, SkillnbWarning, StoreCorrupted
from skillnb.store.durable import (
    FileLock,
    PhaseHook,
    aside_path,
    atomic_write,
    check_dir,
    check_file,
    ensure_dir,
    lock_is_held,
    sweep_temp_files,
)
from skillnb.store.ownership import permission_error, warn_if_exposed
from skillnb.store.protocol import Loaded
from skillnb.store.sidecar.appender import Appender
from skillnb.store.sidecar.blobs import BlobFolder
from skillnb.store.sidecar.compaction import compact_journal, recover
from skillnb.store.sidecar.encoding import created_run, encoded, events_after
from skillnb.store.sidecar.history import read_history
from skillnb.store.sidecar.journal import encode_header
from skillnb.store.sidecar.layout import SidecarLayout, sidecar_dir_for
from skillnb.store.sidecar.packing import pack_segments
from skillnb.store.sidecar.snapshot import encode_snapshot, read_snapshot
from skillnb.store.sidecar.tail import JournalTail

__all__ = ["SidecarStore", "TornWriteWarning", "sidecar_dir_for"]


class TornWriteWarning(SkillnbWarning):
    """A crashed writer left an unfinished write at the end of a journal (never acknowledged)."""


_OWNED = ("journal.jsonl", "snapshot.json", "lock", "segments", "blobs", "compaction.json")
"""The parts of a sidecar whose owner and mode the first load looks at (besides the folder)."""


def _no_hook(phase: str) -> None:
    """Observe nothing (the default phase hook)."""


class _Held:
    """The writer lock held for a ``with`` block (a class: it is taken on every write)."""

    __slots__ = ("_store",)

    def __init__(self, store: SidecarStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        self._store._acquire()  # the store's own helper

    def __exit__(self, *exc: object) -> None:
        self._store._release()


class SidecarStore(Closing):
    """A :class:`~skillnb.store.protocol.Store` in a sidecar folder.

    Args:
        path: the sidecar folder (see :func:`~skillnb.store.sidecar.layout.sidecar_dir_for`);
        created,
            ``0o700``, on the first write.
        phase_hook: called with the name of each durable-write phase (``append.written``,
            ``append.unlocked``, ``append.synced``, ``compact.segment``, ...); crash tests end
            the process there.
        group_commit: fsync an append's lines just *after* the writer lock is let go, rather
            than while holding it (see below); ``False`` fsyncs under the lock.

    Group commit: an append's fsync runs when the outermost hold of the lock ends, after other
    processes may take it, and nothing is acknowledged before it is done (see
    :mod:`skillnb.store.sidecar.appender`, which also says why no writer fsyncs for others).

    One object may be shared by threads. Several objects, in one process or many, may share a
    folder: the lock file orders their writes and each sees the others' commits.

    """

    def __init__(
        self, path: Path, *, phase_hook: PhaseHook | None = None, group_commit: bool = True
    ) -> None:
        self._layout = SidecarLayout(Path(path))
        self._group_commit = group_commit
        self._hook = phase_hook or _no_hook
        self._mutex = threading.RLock()
        self._lock = FileLock(self._layout.lock, self._mutex)
        self._tail = JournalTail(self._layout.journal, self._layout.check_root)
        self._blobs = BlobFolder(self._layout.blobs, self._layout.check_root)
        self._appender = Appender(self._tail, phase_hook)
        self._root_ready = False
        self._closed = False
        self._torn_seen: tuple[object, ...] | None = None
        self._fresh = False  # the tail is current: refreshed while this object holds the lock
        self._snapshot_size: tuple[tuple[object, ...], int] | None = None  # see snapshot_bytes
        self._owners_seen = False  # whose the folder is: looked at on the first load
        self._held = _Held(self)

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
        return self.head() > 0 or (self._layout.check_root() and check_file(self._layout.snapshot))

    def run_id(self) -> str | None:
        """The run this folder holds now, as its journal's header (or snapshot) names it.

        ``None`` when the folder holds no run, or a journal of an older version without the
        run's id in its header. A reader only: nothing is created or changed.
        """
        with self._mutex:
            self._refresh()
            if not self._tail.missing:
                self._notice_torn()
                return self._tail.run_id
            snapshot = self._read_snapshot()
            return snapshot.run_id if snapshot is not None else None

    def lock(self) -> AbstractContextManager[None]:
        """Take the exclusive writer lock (inter-process, re-entrant for this object)."""
        return self._held  # holds no state of its own: one serves every ``with``

    def _acquire(self) -> None:
        if self._closed:
            self._check_open()
        try:
            if not self._root_ready:
                self._layout.check_root()
                ensure_dir(self._layout.root, guarded=self._layout.guarded)
                self._root_ready = True
            self._lock.acquire()
        except PermissionError as exc:
            raise self._named(exc) from None

    def _release(self) -> None:
        if self._lock.depth != 1:
            self._lock.release()
            return
        self._fresh = False  # other writers may append once we let go
        if not self._appender.owes_fsync:
            self._lock.release()
            return
        with self._mutex:  # this object's other threads wait for the fsync; processes do not
            self._lock.release()
            if self._hook is not _no_hook:  # the usual store calls no hook at all
                self._hook("append.unlocked")
            self._appender.settle()

    def _refresh(self) -> None:
        """Refuse a closed store; catch the tail up with the journal, once per hold of the lock.

        While this object holds the lock nobody else can change the journal (every writer and
        every compaction takes the lock first), so one ``lstat`` after taking it is enough for
        the whole read-validate-append sequence; without the lock, each call looks again.
        """
        if self._closed:
            self._check_open()
        if not self._fresh or self._tail.identity is None:  # None: no journal, or forgotten
            self._tail.refresh()
            self._fresh = self._lock.depth > 0  # held by this object

    def head(self) -> int:
        """Return the latest committed version: a ``stat`` of the journal, plus any new bytes."""
        with self._mutex:
            self._refresh()
            if self._tail.missing:
                return self._snapshot_version()
            self._notice_torn()
            return self._tail.last

    def load(self) -> Loaded:
        """Read the latest snapshot and every committed event after it.

        Raises:
            StoreCorrupted: a file is damaged (a torn last line is not damage).
            NewerFormatError: a file was written by a newer skillnb.

        """
        with self._mutex:
            self._check_open()
            if not self._owners_seen:
                self._warn_if_foreign()
            snapshot = self._read_snapshot()
            events = self._tail.reload()
            self._notice_torn()
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
            return Loaded(snapshot=snapshot, events=events_after(events, after))

    def read_since(self, version: int) -> list[Event] | None:
        """Return events with ``seq > version``; ``None`` when compaction archived some."""
        with self._mutex:
            self._refresh()
            if self._tail.missing:
                return [] if version >= self._snapshot_version() else None
            self._notice_torn()
            if version < self._tail.base:
                return None
            return as_list(self._tail.events_after(version))

    def catch_up(self, version: int, run_id: str | None) -> Sequence[Event] | None:
        """Events of run ``run_id`` with ``seq > version``, or ``None``: load again.

        One look at the journal answers what :meth:`read_since`, :meth:`run_id` and
        :meth:`head` would together: ``None`` when some of those events were archived by a
        compaction, when the folder now holds another run (``run_id`` given and different), or
        when the journal ends before ``version`` (another, shorter run, or none).
        """
        with self._mutex:
            self._refresh()
            tail = self._tail
            if tail.missing:
                snapshot = self._read_snapshot()
                found = snapshot.run_id if snapshot is not None else None
                head = snapshot.version if snapshot is not None else 0
                other = run_id is not None and found is not None and found != run_id
                return None if version != head or other else []
            if tail.size > tail.end:
                self._notice_torn()
            if version < tail.base or version > tail.last:
                return None
            if run_id is not None and tail.run_id is not None and tail.run_id != run_id:
                return None
            return tail.events_after(version) if version < tail.last else []

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Commit ``drafts`` durably as the next versions, all or nothing.

        With ``sync=False`` the lines are written but not fsynced: other readers see them and
        they survive a crash of this process, and the next synced append makes them durable
        against a crash of the machine too (fsync flushes the whole file).

        Raises:
            ConflictError: ``expected_version`` is not the latest committed version.
            EventRejected: a draft's data is not JSON, nests too deep, or makes a line over the
                journal's limit (a ``ValueError`` and a ``SkillnbError``; nothing is written).

        """
        events, data = encoded(drafts, expected_version)  # their seqs, if they commit at all
        if events and self._append_open(events, data, expected_version, sync):
            return events
        self._acquire()  # what ``with self.lock()`` does, on the path every commit takes
        try:
            fd = self._prepare_append()
            head = self._tail.last if fd is not None else self._snapshot_version()
            if expected_version != head:
                raise ConflictError(expected_version, head)
            if not events:
                return []
            if fd is None:
                self._create_journal(head, created_run(drafts), data)
                return events
            try:  # with group commit, fsynced once the lock is let go (see _release)
                self._appender.write(data, sync=sync, later=self._group_commit, fd=fd)
            except BaseException:
                self._fresh = False  # cut again, and the tail forgot the file
                raise
            self._tail.appended(events, data)
            return events
        finally:
            self._release()

    def append_current(
        self, drafts: Sequence[EventDraft], expected_version: int, run_id: str, *, sync: bool = True
    ) -> list[Event] | None:
        """:meth:`append` when the journal is as this object last saw it, else ``None``.

        For a writer whose state is at ``expected_version`` of run ``run_id`` (a ``run_id`` of
        ``""``: any run) and that did not catch up first: the append is made when nobody else
        wrote since, a compaction included (one ``lstat`` tells), and the journal is that
        run's at that version. ``None``: nothing was written; the usual path (catch up, then
        :meth:`append`) decides. Raises what :meth:`append` raises for such drafts.
        """
        events, data = encoded(drafts, expected_version)  # nothing written: may be asked again
        if events and self._append_open(events, data, expected_version, sync, run_id):
            return events
        return None

    def compact(self, state: RunState) -> None:
        """Write ``state`` as the snapshot, archive the live journal, start a fresh one.

        Raises:
            ConflictError: ``state.version`` is not the latest committed version.

        """
        with self.lock():
            self._fresh = False  # recovery below may replace the journal
            check_file(self._layout.snapshot)  # refuse symlinks before changing anything
            check_dir(self._layout.segments)
            sweep_temp_files(self._layout.root)
            sweep_temp_files(self._layout.segments)
            recover(self._layout, self._tail, self._hook)
            fd = self._prepare_append()
            head = self._tail.last if fd is not None else self._snapshot_version()
            if state.version != head:
                raise ConflictError(state.version, head)
            snapshot = encode_snapshot(state)
            run_id = state.run_id or self._tail.run_id or None
            if fd is None or self._tail.last == self._tail.base:
                atomic_write(
                    self._layout.snapshot, snapshot, hook=self._hook, phase="compact.snapshot"
                )
                self._hook("compact.snapshot")
                if fd is None and head:
                    self._create_journal(head, run_id, b"")
            else:
                compact_journal(self._layout, self._tail, snapshot, self._hook, run_id=run_id)
            self._snapshot_size = None

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
            self._refresh()
            return self._tail.end

    def snapshot_bytes(self) -> int:
        """Size of the snapshot file (0 when there is none yet)."""
        with self._mutex:
            self._refresh()
            return self._snapshot_bytes()

    def usage_bytes(self) -> tuple[int, int]:
        """:meth:`live_bytes` and :meth:`snapshot_bytes` in one look (what a commit asks)."""
        with self._mutex:
            self._refresh()
            return self._tail.end, self._snapshot_bytes()

    def _snapshot_bytes(self) -> int:
        """:meth:`snapshot_bytes` of the tail as last refreshed (the thread lock held)."""
        # Only a compaction writes the snapshot. When the journal holds events, a compaction
        # replaces it with a new file; so while it is the same file (kept open by the tail, its
        # inode cannot be reused), the size measured beside it still holds.
        tail = self._tail
        seen = (tail.identity, tail.base)
        if self._snapshot_size is not None and self._snapshot_size[0] == seen:
            return self._snapshot_size[1]
        try:
            size = self._layout.snapshot.stat().st_size
        except FileNotFoundError:
            size = 0
        holds_events = tail.identity is not None and tail.last > tail.base
        self._snapshot_size = (seen, size) if holds_events else None
        return size

    def pack(self) -> int:
        """Pack the archived segments into one gzip segment (:mod:`~skillnb.store.sidecar.packing`).

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
            try:
                self._appender.close()
            finally:
                self._tail.close()
                self._lock.close()

    def __repr__(self) -> str:
        return f"SidecarStore({str(self._layout.root)!r})"

    # -- writing ------------------------------------------------------------------------------

    def _append_open(
        self, events: list[Event], lines: bytes, expected: int, sync: bool, run_id: str = ""
    ) -> bool:
        """Append ``lines`` (of ``events``) to the open journal when it is as this store saw it.

        The usual append (a fact, a step's marker, a gate's firing with its step), with the
        general path's checks, bytes, phases and errors, and fewer of its steps (each runs
        just after an fsync, when little of it is in the processor's caches). ``False``:
        another case (no journal open yet, one moved or grown since, a torn tail, another
        version): nothing was written and the lock is let go; the general path looks again
        and decides.
        """
        tail = self._tail
        fd = self._appender.current(tail.identity)
        if fd is None or self._closed or not self._root_ready:
            return False
        self._lock.acquire()  # no PermissionError: the lock file is open already
        try:
            if not self._fresh:
                if not tail.unchanged():
                    return False
                self._fresh = True  # looked at under this object's hold, as _refresh does
            if tail.size != tail.end or expected != tail.last:
                return False
            if run_id and tail.run_id is not None and tail.run_id != run_id:
                return False  # looked at again just now: another run's journal stands here
            try:
                self._appender.write(lines, sync=sync, later=self._group_commit, fd=fd)
            except BaseException:
                self._fresh = False  # cut again, and the tail forgot the file
                raise
            tail.appended(events, lines)
            return True
        finally:
            self._release()

    def _prepare_append(self) -> int | None:
        """With the lock held: catch up, move a torn tail aside; the append descriptor.

        Returns ``None`` when there is no journal yet (the next append creates it). A compaction
        cut short needs no attention here: every state it can leave is one that appends continue
        correctly from (see :mod:`skillnb.store.sidecar.compaction`); the next compaction finishes
        or abandons it.
        """
        tail = self._tail
        if not self._fresh or tail.identity is None:  # else looked at under this hold
            self._refresh()
        if tail.missing:
            return None
        try:
            fd = self._appender.descriptor()
        except PermissionError as exc:
            raise self._named(exc) from None
        if tail.size > tail.end:
            self._move_torn_tail()
        return fd

    def _named(self, exc: PermissionError) -> PermissionError:
        """``exc`` naming the file refused (its owner and mode), the folder when it names none."""
        return permission_error(exc, Path(exc.filename) if exc.filename else self._layout.root)

    def _warn_if_foreign(self) -> None:
        """Warn once when the folder or a file in it is another user's, or anyone may write it."""
        self._owners_seen = True
        if self._layout.check_root():
            warn_if_exposed(self._layout.root, _OWNED, stacklevel=5)

    def _create_journal(self, base: int, run_id: str | None, lines: bytes) -> None:
        """Create the journal with its header and first lines, atomically (lock held)."""
        if run_id is None and base:
            snapshot = self._read_snapshot()
            run_id = snapshot.run_id or None if snapshot is not None else None
        header = encode_header(base, run_id) if base or run_id is not None else b""
        try:
            atomic_write(
                self._layout.journal, header + lines, hook=self._hook, phase="append.create"
            )
        except PermissionError as exc:
            raise self._named(exc) from None
        self._hook("append.synced")
        self._tail.reload()

    def _move_torn_tail(self) -> None:
        """Move what a crashed writer left after the last committed line aside, then cut it.

        Those bytes were never acknowledged (a torn final fragment, or the first lines of an
        append whose last line never came); they are kept beside the journal, never dropped
        silently, and a :class:`TornWriteWarning` names where.
        """
        torn = self._tail.uncommitted_bytes()
        kept = aside_path(self._layout.journal, "tail")
        atomic_write(kept, torn)
        self._appender.cut_to(self._tail.end)
        line = self._tail.lines + 1
        self._tail.refresh()
        warnings.warn(
            f"{self._layout.journal}:{line}: moved {len(torn)} bytes of an unfinished write (a "
            f"crash?) to {kept}; they were never acknowledged",
            TornWriteWarning,
            stacklevel=4,
        )

    def _notice_torn(self) -> None:
        """Warn, once per state, that readers ignore a torn tail no writer is finishing."""
        tail = self._tail
        if tail.size <= tail.end or self._lock.held:
            return
        seen = (tail.identity, tail.end, tail.size)
        if seen == self._torn_seen or self._writer_active():
            return
        self._torn_seen = seen
        warnings.warn(
            f"{tail.path}:{tail.lines + 1}: ignoring {tail.size - tail.end} bytes of an "
            "unfinished write (a crash?); the next write moves them aside",
            TornWriteWarning,
            stacklevel=3,
        )

    def _writer_active(self) -> bool:
        """Tell whether a writer holds the lock now (probed without creating the lock file)."""
        return lock_is_held(self._layout.lock)

    def _snapshot_version(self) -> int:
        """Read the snapshot's version (0 without one); only needed when the journal is missing."""
        snapshot = self._read_snapshot()
        return snapshot.version if snapshot is not None else 0

    def _read_snapshot(self) -> RunState | None:
        if not self._layout.check_root():
            return None
        return read_snapshot(self._layout.snapshot)

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self!r} is closed")
