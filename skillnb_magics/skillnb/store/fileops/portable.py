"""File operations with no POSIX-only call: for Windows, and tested on Linux (store layer).

One implementation of :class:`~skillnb.store.fileops.FileOps`. It uses only what Python offers
on every desktop: ``lstat``/``fstat`` instead of ``O_NOFOLLOW``, byte-range locks through a
:class:`~skillnb.store.fileops.ByteLocks`, ``lseek`` and ``read`` under a thread lock instead
of ``pread``, ``os.chmod`` instead of ``fchmod``, and no folder fsync (Windows cannot open a
folder; NTFS journals its entries).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Protocol

from skillnb.errors import UnsafePath

__all__ = ["ByteLocks", "PortableFileOps"]


class ByteLocks(Protocol):
    """Exclusive locks on the first byte of a file, per open file (the portable form)."""

    def lock(self, fd: int, *, wait: bool) -> bool:
        """Lock byte 0 of ``fd``; with ``wait``, until it is free, else return False if held."""

    def unlock(self, fd: int) -> None:
        """Unlock byte 0 of ``fd``."""


def _no_inherit() -> int:
    """The flag that keeps a descriptor from child processes here (0 where none exists)."""
    return getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)


_OPEN = _no_inherit() | getattr(os, "O_BINARY", 0)  # O_BINARY: Windows would translate \n


class PortableFileOps:
    """Portable file operations over the byte-range ``locks`` given.

    Opening checks the path with ``lstat`` (no symlink, a regular file), opens it, and checks
    that the file opened is the one looked at (same device and inode), so a symlink swapped in
    between is refused too.
    """

    name = "portable"

    def __init__(self, locks: ByteLocks) -> None:
        self.locks = locks
        self._seeking = threading.Lock()

    def open(self, path: Path, flags: int, mode: int) -> int:
        """See :meth:`FileOps.open`."""
        before = _regular_or_none(path)
        if before is None and not flags & os.O_CREAT:
            raise FileNotFoundError(path)
        fd = os.open(path, flags | _OPEN, mode)
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise UnsafePath(path, "is not a regular file")
            seen = before if before is not None else _regular_or_none(path)
            if seen is None or (seen.st_dev, seen.st_ino) != (opened.st_dev, opened.st_ino):
                raise UnsafePath(path, "changed while it was being opened")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def restrict(self, fd: int, path: Path, mode: int) -> None:
        """See :meth:`FileOps.restrict` (on Windows only the read-only bit exists)."""
        path.chmod(mode)

    def lock(self, fd: int) -> None:
        """See :meth:`FileOps.lock`."""
        self.locks.lock(fd, wait=True)

    def unlock(self, fd: int) -> None:
        """See :meth:`FileOps.unlock`."""
        self.locks.unlock(fd)

    def is_locked(self, fd: int) -> bool:
        """See :meth:`FileOps.is_locked` (takes the lock for an instant when it is free)."""
        if not self.locks.lock(fd, wait=False):
            return True
        self.locks.unlock(fd)
        return False

    def flush(self, fd: int) -> None:
        """See :meth:`FileOps.flush` (``_commit`` on Windows)."""
        os.fsync(fd)

    def flush_dir(self, path: Path) -> None:
        """See :meth:`FileOps.flush_dir`: nothing to do where folders cannot be opened."""

    def read_at(self, fd: int, size: int, offset: int) -> bytes:
        """See :meth:`FileOps.read_at`."""
        with self._seeking:  # the file position is shared by the threads using fd
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)


def _regular_or_none(path: Path) -> os.stat_result | None:
    """``lstat`` of ``path``, or ``None`` when absent; refuse a symlink or a non-regular file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(path, "is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(path, "is not a regular file")
    return info
