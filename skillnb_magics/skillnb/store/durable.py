"""Durable file primitives for the sidecar: private modes, fsync, atomic replace (store layer).

Every file the sidecar creates is ``0o600`` and every folder ``0o700``, set explicitly with
``fchmod``/``chmod`` so the result does not depend on the process umask. A file is replaced
atomically by writing a temporary file in the same folder, fsyncing it, ``os.replace``-ing it
over the target and fsyncing the folder, so that after a crash the target holds either the old
or the new content, never a mix. Temporary files start with :data:`TMP_PREFIX`; a writer
holding the lock removes leftovers from crashed writers with :func:`sweep_temp_files`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "TMP_PREFIX",
    "PhaseHook",
    "aside_path",
    "atomic_write",
    "ensure_dir",
    "fsync_dir",
    "sweep_temp_files",
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


def fsync_dir(path: Path) -> None:
    """Make the entries of folder ``path`` (creations, renames, removals) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> None:
    """Create ``path`` and its missing parents as ``0o700`` folders, durably.

    Existing folders are left as they are (the notebook's own folder is not ours to change).
    """
    if path.is_dir():
        return
    ensure_dir(path.parent)
    try:
        path.mkdir(DIR_MODE)
    except FileExistsError:
        if not path.is_dir():
            raise
        return  # another process created it first
    path.chmod(DIR_MODE)
    fsync_dir(path.parent)


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``: one ``os.write`` in practice, looping only on a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(
    path: Path, data: bytes, *, hook: PhaseHook | None = None, phase: str = "write"
) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    Args:
        path: the file to create or replace; its folder must exist.
        data: the complete new content.
        hook: called with ``f"{phase}.tmp"`` once the temporary file is written and fsynced but
            not yet renamed over ``path``.
        phase: the name of this write in ``hook`` calls.

    """
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}-{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    if hook is not None:
        hook(f"{phase}.tmp")
    tmp.replace(path)
    fsync_dir(path.parent)


def sweep_temp_files(folder: Path) -> int:
    """Remove temporary files left in ``folder`` by crashed writers; return how many.

    Call it only while holding the store lock: a live writer's temporary file would go too.
    """
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if entry.name.startswith(TMP_PREFIX) and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
            removed += 1
    if removed:
        fsync_dir(folder)
    return removed


def aside_path(path: Path, label: str, now: datetime | None = None) -> Path:
    """Pick a free name beside ``path`` for a kept copy: ``<name>.<label>-<UTC time>``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    candidate = path.with_name(f"{path.name}.{label}-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{label}-{stamp}-{n}")
    return candidate
