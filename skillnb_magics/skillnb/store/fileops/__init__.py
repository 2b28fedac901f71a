"""The store's one seam to the operating system: locks, safe opening, flushing (store layer).

Everything the sidecar store and skill memory ask of the platform goes through one
:class:`FileOps` object, which :func:`skillnb.store.durable.file_ops` picks once, on first use
(never at import, so ``import skillnb`` needs neither ``fcntl`` nor ``msvcrt``):

* :class:`~skillnb.store.fileops.posix.PosixFileOps` (Linux, macOS, other Unix): ``flock``
  locks, ``O_NOFOLLOW`` opens, ``fsync`` of files and folders, and on macOS ``F_FULLFSYNC``,
  without which ``fsync`` leaves the data in the drive's cache;
* :class:`~skillnb.store.fileops.portable.PortableFileOps` (Windows): byte-range locks
  through its ``ByteLocks`` (``msvcrt.locking`` on Windows; Linux's open-file-description
  locks, which behave alike, when the suite runs it on Linux), an ``lstat`` check before opening and
  an identity check after, ``fsync`` of files (a folder's entries are the file system's to
  keep), reads at an offset under a lock instead of ``pread``.

Only the modules of this package import ``fcntl`` or ``msvcrt``, and only inside the
implementation that needs them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol

__all__ = ["FileOps", "native"]


class FileOps(Protocol):
    """What the store needs from the platform's files. Implementations are thread-safe."""

    name: str
    """A short name for messages and test ids (``posix``, ``portable``)."""

    def open(self, path: Path, flags: int, mode: int) -> int:
        """Open the regular file ``path`` without following a symlink; return the descriptor.

        The descriptor is blocking, not inherited by child processes, and binary.

        Raises:
            UnsafePath: ``path`` is a symlink, or not a regular file.
            FileNotFoundError: it does not exist and ``flags`` has no ``O_CREAT``.

        """

    def restrict(self, fd: int, path: Path, mode: int) -> None:
        """Give the open file ``fd`` (at ``path``) the permission bits ``mode``."""

    def lock(self, fd: int) -> None:
        """Take the exclusive inter-process lock of the lock file ``fd``, waiting for it.

        The lock belongs to this open file: another descriptor, in this process or another,
        waits for it; closing ``fd`` or the death of the process drops it.
        """

    def unlock(self, fd: int) -> None:
        """Let go of the lock taken with :meth:`lock` on ``fd``."""

    def is_locked(self, fd: int) -> bool:
        """Tell whether someone holds the lock of the lock file ``fd`` now (``fd`` takes none)."""

    def flush(self, fd: int) -> None:
        """Make what was written to ``fd`` durable: on the disk, not in a cache."""

    def flush_dir(self, path: Path) -> None:
        """Make the entries of folder ``path`` (creations, renames, removals) durable."""

    def read_at(self, fd: int, size: int, offset: int) -> bytes:
        """Read up to ``size`` bytes of ``fd`` at ``offset`` (fewer at the end of the file)."""


def native(platform: str = sys.platform) -> FileOps:
    """The implementation for ``platform`` (default: this one)."""
    if platform == "win32":
        from skillnb.store.fileops.portable import PortableFileOps
        from skillnb.store.fileops.winlocks import MsvcrtLocks

        return PortableFileOps(MsvcrtLocks())
    from skillnb.store.fileops.posix import PosixFileOps

    return PosixFileOps(full_fsync=platform == "darwin")
