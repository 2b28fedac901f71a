"""Byte-range locks for the portable file operations on Windows: ``msvcrt.locking`` (store).

A :class:`~skillnb.store.fileops.portable.ByteLocks`. ``msvcrt.locking`` locks bytes from the file's
current position, per open file; Windows drops the lock when the handle is closed or the
process ends. Its blocking mode gives up after ten seconds, so waiting polls the non-blocking
mode instead, with a short backoff. Imported only on Windows.
"""

from __future__ import annotations

import os
import sys
import time

if sys.platform != "win32":  # also tells the type checker that what follows is Windows' own
    raise ImportError("msvcrt locks exist on Windows only")

import msvcrt

__all__ = ["MsvcrtLocks"]


class MsvcrtLocks:
    """Lock byte 0 of a file with ``msvcrt.locking``."""

    def lock(self, fd: int, *, wait: bool) -> bool:
        """See :meth:`ByteLocks.lock`."""
        pause = 0.001
        while True:
            os.lseek(fd, 0, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                if not wait:
                    return False
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            else:
                return True

    def unlock(self, fd: int) -> None:
        """See :meth:`ByteLocks.unlock`."""
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
