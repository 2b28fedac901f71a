"""A copy of a run's sidecar folder for a copy of its notebook (store layer).

``skillnb fork SRC DST`` and ``%skillnb fork-from SRC`` give a duplicated notebook a copy of
the original's run, so the copy goes on from where the original stands instead of starting
again. The original is only read: its files are copied under its writer lock (so no append
is cut in half; a lock file is never created there), into a temporary folder that is renamed
into place once every file is on disk, so a crash leaves either no sidecar for the copy or a
whole one. The copy keeps the run's history and id; from then on the two go their own ways.
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from pathlib import Path

from skillnb.errors import SkillnbError, UnsafePath
from skillnb.store.durable import FileLock, ensure_dir, fsync_dir
from skillnb.store.sidecar.layout import SidecarLayout

__all__ = ["fork_sidecar", "holds_run"]

_LEFT_BEHIND = ("lock",)
"""Files that belong to the processes holding the original, not to the run."""


def holds_run(folder: Path) -> bool:
    """True when sidecar ``folder`` holds a run (a journal or a snapshot)."""
    return (folder / "journal.jsonl").is_file() or (folder / "snapshot.json").is_file()


def _refuse_links(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_symlink():
            raise UnsafePath(path, "a symbolic link inside a sidecar is never followed")


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        else:
            fsync_dir(path)
    fsync_dir(folder)


def fork_sidecar(origin: Path, target: Path) -> None:
    """Copy the run in sidecar ``origin`` to the free sidecar folder ``target``.

    Raises:
        SkillnbError: ``origin`` holds no run, or ``target`` exists already.
        UnsafePath: a symbolic link stands in either sidecar (nothing is read through one).

    """
    SidecarLayout(origin).check_root()
    if not holds_run(origin):
        raise SkillnbError(f"no run to fork in {origin}")
    if os.path.lexists(target):
        raise SkillnbError(f"{target} already exists; nothing was copied")
    ensure_dir(target.parent)
    SidecarLayout(target).check_root()  # refuses a linked .skillnb/ at the target
    partial = target.with_name(f"{target.name}~.forking-{os.getpid()}")
    if os.path.lexists(partial):
        shutil.rmtree(partial)  # left by a fork that died in this process id's past
    lock = SidecarLayout(origin).lock
    with ExitStack() as stack:
        if lock.is_file() and not lock.is_symlink():  # never created in the original
            held = FileLock(lock)
            stack.callback(held.close)
            stack.enter_context(held.hold())
        _refuse_links(origin)
        shutil.copytree(origin, partial, ignore=shutil.ignore_patterns(*_LEFT_BEHIND))
    try:
        partial.chmod(0o700)
        _fsync_tree(partial)
        partial.rename(target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    fsync_dir(target.parent)
