"""Setting a run's sidecar folder aside and bringing it back (store layer).

``%skillnb new-run`` starts a fresh run beside a notebook without losing the old one: the
folder ``.skillnb/<stem>`` is renamed ``.skillnb/<stem>~<run id>``; ``%resume --run ID``
renames it back. The rename happens under the run's writer lock, so it never cuts an append
in half, and the parent folder is fsynced so the new name survives a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillnb.core.limits import check_run_id
from skillnb.errors import SkillnbError
from skillnb.store.durable import FileLock, fsync_dir
from skillnb.store.sidecar.layout import SidecarLayout

__all__ = ["aside_folder", "restore_aside", "set_aside"]


def aside_folder(folder: Path, run_id: str) -> Path:
    """Where run ``run_id`` of sidecar ``folder`` lives once set aside (beside ``folder``).

    Raises:
        InvalidName: ``run_id`` is not a run id (:func:`~skillnb.core.limits.check_run_id`).

    """
    target = folder.with_name(f"{folder.name}~{check_run_id(run_id)}")
    if target.parent != folder.parent:
        raise SkillnbError(f"not a run id: {run_id!r}")
    return target


def _rename_locked(source: Path, target: Path) -> None:
    lock = FileLock(SidecarLayout(source).lock)
    try:
        with lock.hold():
            source.rename(target)
    finally:
        lock.close()
    fsync_dir(target.parent)


def set_aside(folder: Path, run_id: str) -> Path:
    """Rename sidecar ``folder`` (holding run ``run_id``) aside; return its new path.

    Raises:
        SkillnbError: something already stands at the aside name.
    """
    target = aside_folder(folder, run_id)
    SidecarLayout(folder).check_root()
    if os.path.lexists(target):
        raise SkillnbError(f"{target.name} already exists; not overwriting it")
    _rename_locked(folder, target)
    return target


def restore_aside(folder: Path, run_id: str) -> None:
    """Bring run ``run_id`` back to sidecar ``folder`` (which must be free).

    Raises:
        SkillnbError: no such run was set aside, or ``folder`` is taken.
    """
    source = aside_folder(folder, run_id)
    if not SidecarLayout(source).check_root():
        raise SkillnbError(f"no run {run_id!r} here (looked for {source.name})")
    if os.path.lexists(folder):
        raise SkillnbError(f"{folder.name} holds another run; set it aside first")
    _rename_locked(source, folder)
