"""The one file toolkit: private modes, no symlinks, fsync, atomic replace, locks (store layer).

The sidecar store and skill memory both keep their files with these functions:

* Every file created is ``0o600`` and every folder ``0o700``, set explicitly so the result does
  not depend on the process umask.
* Files are opened with ``O_NOFOLLOW`` and must be regular files: a symlink, a FIFO or a device
  where a file belongs is :class:`~skillnb.errors.UnsafePath`, and nothing is read or written
  through it. Folders we own are checked with ``lstat`` (:func:`check_dir`). The identity check
  is made once per descriptor opened, never per write.
* A file is replaced atomically by writing a temporary file in the same folder, fsyncing it,
  ``os.replace``-ing it over the target and fsyncing the folder, so that after a crash the
  target holds either the old or the new content, never a mix. Temporary files are named
  ``.tmp-<target>-<random>``; a writer holding the lock removes leftovers from crashed writers
  with :func:`sweep_temp_files`.
* :class:`FileLock` is an inter-process lock, re-entrant for its owner object;
  :func:`exclusive_lock` is the one-shot form.
* The platform is reached through one seam, :func:`file_ops` (see
  :mod:`skillnb.store.fileops`): locking (``flock``, or byte-range locks on Windows), opening
  without following links (``O_NOFOLLOW``, or an ``lstat`` and identity check) and flushing
  (``fsync``, ``F_FULLFSYNC`` on macOS). It is picked on first use, never at import.
* Damaged files are renamed aside (:func:`move_aside`), never deleted.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from skillnb.errors import UnsafePath
from skillnb.store.fileops import FileOps, native
from skillnb.store.ownership import permission_error

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "TMP_PREFIX",
    "FileLock",
    "PhaseHook",
    "aside_path",
    "atomic_write",
    "check_dir",
    "check_file",
    "ensure_dir",
    "ensure_private_dir",
    "exclusive_lock",
    "file_ops",
    "flush",
    "fsync_dir",
    "lock_is_held",
    "move_aside",
    "open_file",
    "read_at",
    "read_file",
    "read_or_none",
    "sweep_temp_files",
    "use_file_ops",
    "write_all",
]

FILE_MODE = 0o600
"""Mode of every file the store creates: readable and writable by the owner only."""
DIR_MODE = 0o700
"""Mode of every folder the store creates."""
TMP_PREFIX = ".tmp-"
"""Name prefix of temporary files; never a valid journal, segment, snapshot or blob name."""

PhaseHook = Callable[[str], None]
"""Called with the name of each durable-write phase (tests use it to simulate crashes)."""

_chosen: list[FileOps] = []  # the platform's implementation, once picked (process-wide)


def file_ops() -> FileOps:
    """The platform's file operations (:func:`skillnb.store.fileops.native`, picked once)."""
    if not _chosen:
        _chosen.append(native())
    return _chosen[-1]


@contextmanager
def use_file_ops(ops: FileOps) -> Iterator[FileOps]:
    """Use ``ops`` instead of the platform's own inside the ``with`` block (for tests).

    Locks taken keep the implementation they were made with, so none is let go by another.
    """
    _chosen.append(ops)
    try:
        yield ops
    finally:
        _chosen.remove(ops)


def flush(fd: int) -> None:
    """Make what was written to ``fd`` durable (``fsync``; ``F_FULLFSYNC`` on macOS)."""
    file_ops().flush(fd)


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes of ``fd`` at ``offset``, leaving its position alone (``pread``)."""
    return file_ops().read_at(fd, size, offset)


def open_file(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """Open the regular file ``path`` without following a symlink; return the descriptor.

    Raises:
        UnsafePath: ``path`` is a symlink, or not a regular file (a FIFO, a device, a folder).
        FileNotFoundError: it does not exist (and ``flags`` has no ``O_CREAT``).

    """
    return file_ops().open(path, flags, mode)


def read_file(path: Path) -> bytes:
    """Return the bytes of the regular file ``path`` (never through a symlink).

    Raises:
        UnsafePath: see :func:`open_file`.
        FileNotFoundError: it does not exist.

    """
    fd = open_file(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        offset = 0
        while chunk := read_at(fd, max(os.fstat(fd).st_size - offset, 1 << 16), offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_or_none(path: Path) -> bytes | None:
    """Return the file's bytes, or ``None`` when it does not exist (see :func:`read_file`)."""
    try:
        return read_file(path)
    except FileNotFoundError:
        return None


def _check(path: Path, is_kind: Callable[[int], bool], what: str) -> bool:
    """Tell whether ``path`` exists with ``lstat``; raise unless it is ``what`` (no symlink)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise UnsafePath(path, "is a symbolic link")
    if not is_kind(mode):
        raise UnsafePath(path, f"is not {what}")
    return True


def check_file(path: Path) -> bool:
    """Tell whether ``path`` exists, with ``lstat``: a file that is not a symlink.

    Raises:
        UnsafePath: it is a symlink or not a regular file.

    """
    return _check(path, stat.S_ISREG, "a regular file")


def check_dir(path: Path) -> bool:
    """Tell whether folder ``path`` exists, with ``lstat``: a folder that is not a symlink.

    Raises:
        UnsafePath: it is a symlink, or something other than a folder.

    """
    return _check(path, stat.S_ISDIR, "a folder")


def fsync_dir(path: Path) -> None:
    """Make the entries of folder ``path`` (creations, renames, removals) durable."""
    file_ops().flush_dir(path)


def ensure_dir(path: Path, *, guarded: int = 1) -> None:
    """Create ``path`` and its missing parents as ``0o700`` folders, durably.

    Args:
        path: the folder.
        guarded: how many levels, from ``path`` up, belong to us and must not be symlinks
            (checked with ``lstat``). Folders above are the user's: followed, left as they are.

    Raises:
        UnsafePath: a guarded level is a symlink or not a folder.

    """
    if check_dir(path) if guarded > 0 else path.is_dir():
        return
    ensure_dir(path.parent, guarded=guarded - 1)
    try:
        path.mkdir(DIR_MODE)
    except FileExistsError:
        if not check_dir(path):
            raise
        return  # another process created it first
    path.chmod(DIR_MODE)
    fsync_dir(path.parent)


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and its parent) ``0o700``; narrow an existing ``path`` we own to it.

    Only ``path`` is narrowed, and only when the current user owns it: an existing parent
    (for example a home folder the user chose) is left alone.

    Raises:
        UnsafePath: ``path`` is a symlink or not a folder.

    """
    ensure_dir(path)
    info = os.lstat(path)
    owner = getattr(os, "getuid", None)  # none on Windows, whose folders have no mode bits
    if owner is not None and stat.S_IMODE(info.st_mode) & ~DIR_MODE and info.st_uid == owner():
        path.chmod(DIR_MODE)


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``: one ``os.write`` in practice, looping only on a short write."""
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _temp_name(path: Path) -> Path:
    return path.with_name(f"{TMP_PREFIX}{path.name}-{secrets.token_hex(6)}")


def atomic_write(
    path: Path, data: bytes, *, hook: PhaseHook | None = None, phase: str = "write"
) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the new file is ``0o600``.

    Args:
        path: the file to create or replace; its folder must exist.
        data: the complete new content.
        hook: called with ``f"{phase}.tmp"`` once the temporary file is written and fsynced but
            not yet renamed over ``path``.
        phase: the name of this write in ``hook`` calls.

    Raises:
        UnsafePath: ``path`` is a symlink or not a regular file (it is left alone).

    """
    check_file(path)
    tmp = _temp_name(path)
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        file_ops().restrict(fd, tmp, FILE_MODE)
        write_all(fd, data)
        flush(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    if hook is not None:
        hook(f"{phase}.tmp")
    tmp.replace(path)
    fsync_dir(path.parent)


def sweep_temp_files(folder: Path, *, of: str | None = None) -> int:
    """Remove temporary files left in ``folder`` by crashed writers; return how many.

    Args:
        folder: where to look.
        of: only the temporary files of the file of that name (default: every one).

    Call it only while holding the lock of what it sweeps: a live writer's temporary file would
    go too.
    """
    shape = re.compile(
        re.escape(TMP_PREFIX) + (re.escape(of) + r"-[0-9a-f]{12}" if of is not None else ".*")
    )
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if shape.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
            removed += 1
    if removed:
        fsync_dir(folder)
    return removed


def aside_path(path: Path, label: str, now: datetime | None = None) -> Path:
    """Pick a free name beside ``path`` for a kept copy: ``<name>.<label>-<UTC time>``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    return _free_name(path, f"{label}-{stamp}")


def _free_name(path: Path, suffix: str) -> Path:
    candidate = path.with_name(f"{path.name}.{suffix}")
    n = 1
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.{suffix}-{n}")
    return candidate


def move_aside(path: Path, label: str, stamp: str) -> Path:
    """Rename ``path`` to ``<name>.<label>-<stamp>`` (``-2``, ``-3``, ... if taken), durably.

    Call it under the lock. Returns the new path.
    """
    target = _free_name(path, f"{label}-{stamp}")
    path.rename(target)
    fsync_dir(path.parent)
    return target


def lock_is_held(path: Path) -> bool:
    """Tell whether someone holds the lock file ``path`` now (probed; nothing is created)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        return file_ops().is_locked(fd)
    finally:
        os.close(fd)


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``path`` (created ``0o600``) while inside.

    The folder must exist. Closing the descriptor releases the lock, also when the process dies.
    """
    lock = FileLock(path)
    try:
        with lock.hold():
            yield
    finally:
        lock.close()


class FileLock:
    """An exclusive, re-entrant lock held on the lock file ``path`` (``flock`` on POSIX).

    The locks (see :meth:`FileOps.lock <skillnb.store.fileops.FileOps.lock>`) belong to an open
    file: two ``FileLock`` objects (in one process or in two) exclude each other, and the
    system drops the lock when the holding process dies, so a crashed writer never leaves the
    file locked. Within one object, the lock is re-entrant
    (a depth count) and guarded by a thread lock, so two threads sharing one object take turns.

    Args:
        path: the lock file; created ``0o600`` on first use (never through a symlink), never
            removed (removing a lock file while another process waits on it would let two
            writers in).
        mutex: the thread lock taken first; pass the owner's own so that its other methods can
            synchronise on it too.

    """

    def __init__(self, path: Path, mutex: threading.RLock | None = None) -> None:
        self._path = path
        self._mutex = mutex if mutex is not None else threading.RLock()
        self._fd: int | None = None
        self._ops = file_ops()
        self.depth = 0
        """How many nested holds are open (0: not held); read it while holding the lock."""

    @property
    def held(self) -> bool:
        """True while this object holds the lock (in any thread)."""
        return self.depth > 0

    def acquire(self) -> None:
        """Take the lock, waiting for other holders; nested calls only count depth.

        Raises:
            UnsafePath: the lock file is a symlink or not a regular file.

        """
        self._mutex.acquire()
        try:
            if self.depth == 0:
                if self._fd is None:
                    self._fd = self._open()
                self._ops.lock(self._fd)
            self.depth += 1
        except BaseException:
            self._mutex.release()
            raise

    def release(self) -> None:
        """Undo one :meth:`acquire`; the outermost release lets other writers in."""
        if self.depth == 0:
            raise RuntimeError("release of a lock that is not held")
        self.depth -= 1
        try:
            if self.depth == 0 and self._fd is not None:
                self._ops.unlock(self._fd)
        finally:
            self._mutex.release()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def close(self) -> None:
        """Close the lock file; closing it releases the lock even inside a ``with`` block."""
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> int:
        fd = self._ops.open(self._path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            self._ops.restrict(fd, self._path, FILE_MODE)  # a regular file, no link followed
            fsync_dir(self._path.parent)
        except PermissionError as exc:  # another user's lock file: say whose, and where
            os.close(fd)
            raise permission_error(exc, self._path) from None
        except BaseException:
            os.close(fd)
            raise
        return fd
