"""File operations on POSIX systems: ``flock``, ``O_NOFOLLOW``, ``fsync``/``F_FULLFSYNC`` (store).

One implementation of :class:`~skillnb.store.fileops.FileOps`, for Linux, macOS and other
Unix systems. Imported only there (``fcntl`` does not exist on Windows).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from skillnb.errors import UnsafePath

__all__ = ["F_FULLFSYNC", "PosixFileOps"]

F_FULLFSYNC: int = getattr(fcntl, "F_FULLFSYNC", 51)
"""macOS's ``fcntl`` command that flushes the drive's cache too (51 in its headers)."""

_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO never blocks open


class PosixFileOps:
    """``flock`` locks, ``O_NOFOLLOW`` opens, ``fsync``; ``F_FULLFSYNC`` with ``full_fsync``.

    Args:
        full_fsync: flush with ``fcntl(fd, F_FULLFSYNC)`` (macOS, where ``fsync`` only hands
            the data to the drive); a file system that refuses it gets ``fsync``.

    """

    name = "posix"

    def __init__(self, *, full_fsync: bool = False, full_fsync_command: int = F_FULLFSYNC) -> None:
        self.full_fsync = full_fsync
        self._command = full_fsync_command

    def open(self, path: Path, flags: int, mode: int) -> int:
        """See :meth:`FileOps.open`."""
        try:
            fd = os.open(path, flags | _OPEN, mode)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(path, "is a symbolic link") from None
            if exc.errno in (errno.EISDIR, errno.ENXIO):
                raise UnsafePath(path, "is not a regular file") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafePath(path, "is not a regular file")
        os.set_blocking(fd, True)  # O_NONBLOCK only kept open() from waiting on a FIFO
        return fd

    def restrict(self, fd: int, path: Path, mode: int) -> None:
        """See :meth:`FileOps.restrict`."""
        os.fchmod(fd, mode)

    def lock(self, fd: int) -> None:
        """See :meth:`FileOps.lock`."""
        fcntl.flock(fd, fcntl.LOCK_EX)

    def unlock(self, fd: int) -> None:
        """See :meth:`FileOps.unlock`."""
        fcntl.flock(fd, fcntl.LOCK_UN)

    def is_locked(self, fd: int) -> bool:
        """See :meth:`FileOps.is_locked` (a shared probe: probes never exclude each other)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def flush(self, fd: int) -> None:
        """See :meth:`FileOps.flush`."""
        if self.full_fsync:
            try:
                fcntl.fcntl(fd, self._command)
            except OSError:
                pass  # a file system without it (some network mounts): fsync is what is left
            else:
                return
        os.fsync(fd)

    def flush_dir(self, path: Path) -> None:
        """See :meth:`FileOps.flush_dir`."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.flush(fd)
        finally:
            os.close(fd)

    def read_at(self, fd: int, size: int, offset: int) -> bytes:
        """See :meth:`FileOps.read_at`."""
        return os.pread(fd, size, offset)
