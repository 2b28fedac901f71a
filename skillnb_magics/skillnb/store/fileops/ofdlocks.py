"""Byte-range locks for the portable file operations on Linux: open-file-description locks.

A :class:`~skillnb.store.fileops.portable.ByteLocks` that holds as ``msvcrt.locking`` does on
Windows: an exclusive lock on byte 0 that belongs to one open file (two descriptors exclude
each other, also in one process), dropped when that file is closed or its process dies. It
lets the test suite run :class:`~skillnb.store.fileops.portable.PortableFileOps` on Linux.
"""

from __future__ import annotations

import fcntl
import os
import struct

__all__ = ["OfdLocks", "available"]

_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_SETLKW: int | None = getattr(fcntl, "F_OFD_SETLKW", None)


def available() -> bool:
    """Tell whether this system has open-file-description locks (Linux 3.15 and later)."""
    return _SETLK is not None and _SETLKW is not None


def _flock(kind: int) -> bytes:
    """A ``struct flock`` for byte 0: type, whence, start, length, pid (0 for OFD locks)."""
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, 0, 1, 0)


class OfdLocks:
    """Lock byte 0 of a file with ``F_OFD_SETLK``/``F_OFD_SETLKW``."""

    def lock(self, fd: int, *, wait: bool) -> bool:
        """See :meth:`ByteLocks.lock`."""
        command = _SETLKW if wait else _SETLK
        if command is None:
            raise OSError("open-file-description locks are not available here")
        # A descriptor open for reading only (a probe) may hold a read lock, which a writer's
        # lock excludes just the same.
        reading = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
        try:
            fcntl.fcntl(fd, command, _flock(fcntl.F_RDLCK if reading else fcntl.F_WRLCK))
        except BlockingIOError:
            return False
        except PermissionError:  # EACCES: some systems say so for a held lock
            return False
        return True

    def unlock(self, fd: int) -> None:
        """See :meth:`ByteLocks.unlock`."""
        if _SETLK is None:
            raise OSError("open-file-description locks are not available here")
        fcntl.fcntl(fd, _SETLK, _flock(fcntl.F_UNLCK))
