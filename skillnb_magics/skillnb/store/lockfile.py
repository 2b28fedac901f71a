"""An inter-process writer lock on a file, re-entrant for its owner (store layer).

``fcntl.flock`` locks belong to an open file description: two ``FileLock`` objects (in one
process or in two) exclude each other, and the kernel drops the lock when the holding process
dies, so a crashed writer never leaves the sidecar locked. Within one object, the lock is
re-entrant (a depth count) and guarded by a thread lock, so two threads sharing one store
object also take turns.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillnb.store.durable import FILE_MODE, fsync_dir

__all__ = ["FileLock"]


class FileLock:
    """An exclusive, re-entrant lock held through ``flock`` on ``path``.

    Args:
        path: the lock file; created ``0o600`` on first use, never removed (removing a lock
            file while another process waits on it would let two writers in).
        mutex: the thread lock taken first; pass the owner's own so that its other methods can
            synchronise on it too.

    """

    def __init__(self, path: Path, mutex: threading.RLock | None = None) -> None:
        self._path = path
        self._mutex = mutex if mutex is not None else threading.RLock()
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        """True while this object holds the lock (in any thread)."""
        return self._depth > 0

    def acquire(self) -> None:
        """Take the lock, waiting for other holders; nested calls only count depth."""
        self._mutex.acquire()
        try:
            if self._depth == 0:
                if self._fd is None:
                    self._fd = self._open()
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth += 1
        except BaseException:
            self._mutex.release()
            raise

    def release(self) -> None:
        """Undo one :meth:`acquire`; the outermost release lets other writers in."""
        if self._depth == 0:
            raise RuntimeError("release of a lock that is not held")
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
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
        """Close the lock file; closing it releases the ``flock`` even inside a ``with`` block."""
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> int:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fsync_dir(self._path.parent)
        except BaseException:
            os.close(fd)
            raise
        return fd
