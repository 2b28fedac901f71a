"""Private, locked, atomically replaced files for skill memory (service layer, POSIX).

* The folder is created ``0o700``; files are created ``0o600`` by ``os.open`` itself, so there
  is never a moment when a file exists with wider permissions, whatever the umask.
* A write goes to a temporary sibling, is fsynced, renamed over the target with
  ``os.replace`` and the folder is fsynced: readers see the old file or the new one, never a
  mix, and an acknowledged write survives a crash.
* Read-modify-write cycles run under ``fcntl.flock`` on a sibling ``.lock`` file, which
  serialises writers across processes (and across threads, since each holder opens its own
  descriptor).
* A damaged file is renamed aside (``<name>.corrupt-<stamp>``), never deleted.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillnb.store.durable import fsync_dir

__all__ = [
    "ensure_private_dir",
    "exclusive_lock",
    "move_aside",
    "read_or_none",
    "remove_stale_temps",
    "write_atomic",
]

_FILE_MODE = 0o600
_DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and its parent as ``0o700``; narrow ``path`` to ``0o700`` if wider.

    Only ``path`` is narrowed, and only when the current user owns it: an existing parent
    (for example a home folder the user chose) is left alone.
    """
    path.parent.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    path.mkdir(mode=_DIR_MODE, exist_ok=True)
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & ~_DIR_MODE and info.st_uid == os.getuid():
        path.chmod(_DIR_MODE)


@contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``lock_path`` (created ``0o600``) while inside.

    The folder must exist. Closing the descriptor releases the lock, also when the process
    dies.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW, _FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_or_none(path: Path) -> bytes | None:
    """Return the file's bytes, or ``None`` when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _temp_name(path: Path) -> str:
    return f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the new file is ``0o600``.

    Call it under the lock of ``path``: :func:`remove_stale_temps` relies on that.
    """
    tmp = path.with_name(_temp_name(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
    fd = os.open(tmp, flags, _FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> list[Path]:
    """Delete temporary files of ``path`` left by writers that died before renaming them.

    Call it under the lock of ``path``: no live writer has a temporary file then. Only names
    of exactly the shape :func:`write_atomic` creates for ``path`` are matched, so the
    temporary files of other files in the folder are never touched. Returns what was deleted.
    """
    shape = re.compile(rf"\.{re.escape(path.name)}\.[0-9]+\.[0-9a-f]{{8}}\.tmp")
    removed = []
    for candidate in path.parent.iterdir():
        if shape.fullmatch(candidate.name):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def move_aside(path: Path, stamp: str) -> Path:
    """Rename ``path`` to ``<name>.corrupt-<stamp>`` (``-2``, ``-3``, ... if taken).

    Call it under the lock. Returns the new path.
    """
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    suffix = 2
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{suffix}")
        suffix += 1
    path.rename(target)
    fsync_dir(path.parent)
    return target
