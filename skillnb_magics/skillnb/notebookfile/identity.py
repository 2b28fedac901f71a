"""A notebook's run follows the notebook: renames, moves and copies (edge layer).

The run id in the notebook's metadata mirror (``metadata["skillnb"]["run_id"]``) is the
notebook's identity; the sidecar folder is found by the notebook's name
(``.skillnb/<stem>/``). When the two disagree, :func:`follow` settles it before a run is
opened:

- **renamed or moved**: the notebook has no sidecar of its own, and one sidecar *within
  reach* holds the run it names while the notebook that sidecar is named after is gone. The
  sidecar is moved to the notebook's name (under its writer lock, the folder fsynced) and a
  :class:`Binding` says so in one line.
- **copied**: that notebook is still there and names the same run (a file browser's
  *Duplicate*, ``cp``). Nothing is opened, rebuilt or written, in the copy's folder or the
  original's: :class:`NotebookCopied` says so and names the two ways on, a copy of the
  original's run (``skillnb fork`` / ``%skillnb fork-from``) or a new run
  (``%skillnb new-run`` / ``skillnb run --new-run``). A copy never re-does the original's
  work, nor takes its run, without being told to.
- **ambiguous**: several sidecars hold the run, or the notebook's own sidecar holds another
  run while the one it names sits under a missing notebook's name, or the sidecar's notebook
  is there but names another run. Nothing is chosen: :class:`AmbiguousIdentity` names both
  notebooks and the commands that settle it.

*Within reach*: ``.skillnb/*/`` in the notebook's folder, in its parent, in the parent's
other subfolders and in the notebook folder's subfolders (a notebook moved one folder up,
down or sideways). Folders set aside (``<stem>~<run id>``, see :mod:`skillnb.store.folders.aside`)
never count, and a symbolic link is never followed.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from skillnb.errors import SkillnbError, SkillnbWarning

if TYPE_CHECKING:
    from skillnb.core.contract.shapes import CopyOf

__all__ = [
    "NEW_RUN_ENV",
    "AmbiguousIdentity",
    "Binding",
    "NotebookCopied",
    "copy_of",
    "follow",
    "move_sidecar",
    "notebook_run_id",
    "recorded_elsewhere",
    "sidecar_run_id",
]

NEW_RUN_ENV = "SKILLNB_NEW_RUN"
"""Set (by ``skillnb run --new-run``): a notebook naming another notebook's run starts its own."""

_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a run id looks like (anything else in a notebook's metadata names no run)."""

_MAX_SIDECARS = 200
"""At most this many sidecar folders are looked at (a huge tree is not walked)."""


class AmbiguousIdentity(SkillnbError):
    """Two notebooks (or sidecars) may own one run: nothing is opened until it is settled."""

    def __init__(self, message: str, notebook: Path, others: list[Path]) -> None:
        super().__init__(message)
        self.notebook = notebook
        """The notebook being opened."""
        self.others = others
        """The other notebooks (or sidecar folders) the run could belong to."""


class NotebookCopied(AmbiguousIdentity):
    """The notebook is a copy of another one that still holds the run both name."""

    def __init__(self, notebook: Path, original: Path, run_id: str) -> None:
        self.notebook = notebook
        self.original = original
        """The notebook the copy was made from (its sidecar holds the run)."""
        self.run_id = run_id
        """The run both notebooks name."""
        super().__init__(self._text(), notebook, [original])

    def what(self, base: Path | None = None, *, run: bool = True) -> str:
        """``copy.ipynb is a copy of report.ipynb (run X)``, paths shown from ``base``."""
        here = self.notebook.parent if base is None else base
        which = f" (run {self.run_id})" if run else ""
        return f"{_shown(self.notebook, here)} is a copy of {_shown(self.original, here)}{which}"

    def _text(self) -> str:
        original = _shown(self.original, self.notebook.parent)
        return (
            f"{self.what()}; nothing is recorded until you choose: go on with a copy of its "
            f"run, `%skillnb fork-from {original}` (as `skillnb fork {original} "
            f"{self.notebook.name}`), or start fresh, `%skillnb new-run`"
        )

    def original_as(self, notebook: Path) -> Path:
        """The original's path written as the user wrote ``notebook`` (the copy's path)."""
        beside = os.path.relpath(self.original, self.notebook.parent)
        return Path(os.path.normpath(notebook.parent / beside))

    def commands(self, notebook: Path) -> str:
        """The two ways on from a shell, the copy's path written as the user gave it."""
        from skillnb.core.shell import quoted

        copy, original = quoted(str(notebook)), quoted(str(self.original_as(notebook)))
        return (
            f"Go on with a copy of its run: `skillnb fork {original} {copy}`, or start fresh: "
            f"`skillnb run {copy} --new-run`"
        )

    def ways_on(self) -> CopyOf:
        """What a view of the copy says: what it is and the ways on (the server's answer).

        The commands name the original as seen from the copy's folder (the kernel's working
        folder, and the shell's in the ``skillnb fork`` line).
        """
        from skillnb.core.contract.shapes import CopyOf
        from skillnb.core.shell import magic_command, quoted

        original = _shown(self.original, self.notebook.parent)
        return CopyOf(
            text=f"This notebook is a copy of {original}; the run shown is the original's",
            original=original,
            run_id=self.run_id,
            fork_from=magic_command("fork-from", original),
            fork=f"skillnb fork {quoted(original)} {quoted(self.notebook.name)}",
            new_run=magic_command("new-run"),
        )


@dataclass(frozen=True)
class Binding:
    """What :func:`follow` did (or found) for one notebook."""

    kind: Literal["moved"]
    """``moved``: the sidecar was moved to the notebook's name."""
    run_id: str
    """The run the notebook names."""
    notebook: Path
    """The notebook being opened."""
    old_notebook: Path
    """The notebook the run's sidecar was named after."""
    sidecar: Path
    """Where the run's sidecar is now."""

    @property
    def line(self) -> str:
        """The one line that says what happened."""
        old = _shown(self.old_notebook, self.notebook.parent)
        return (
            f"bound to run {self.run_id} of {old} (renamed or moved): its sidecar moved to "
            f"{_shown(self.sidecar, self.notebook.parent)}; completed work is not redone"
        )


def _shown(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it is below or beside it, else absolute."""
    try:
        return os.path.relpath(path, base)
    except ValueError:  # another drive (Windows)
        return str(path)


def notebook_run_id(notebook: Path) -> str | None:
    """The run id the notebook's saved metadata mirror names (``None``: none, or unreadable).

    Only the id is read (the whole mirror is validated where it is shown): a short string of
    letters, digits, ``-`` and ``_``, as run ids are; anything else names no run.
    """
    from skillnb.notebookfile.ipynb import load_notebook

    try:
        metadata = load_notebook(notebook).get("metadata")
    except SkillnbError:
        return None
    mirror = metadata.get("skillnb") if isinstance(metadata, dict) else None
    run_id = mirror.get("run_id") if isinstance(mirror, dict) else None
    if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id):
        return run_id
    return None


def sidecar_run_id(folder: Path) -> str | None:
    """The run sidecar ``folder`` holds (``None``: no run there, or it cannot be read)."""
    from skillnb.store.sidecar.store import SidecarStore

    if folder.is_symlink() or not folder.is_dir():
        return None
    try:
        store = SidecarStore(folder)
    except (SkillnbError, OSError):
        return None
    try:
        with warnings.catch_warnings():  # a look at a neighbour: its torn tail is not news here
            warnings.simplefilter("ignore", SkillnbWarning)
            return store.run_id()
    except (SkillnbError, OSError):
        return None
    finally:
        store.close()


def _holds_run(folder: Path) -> bool:
    return (folder / "journal.jsonl").is_file() or (folder / "snapshot.json").is_file()


def _folders_in_reach(folder: Path) -> list[Path]:
    """The notebook's folder, its parent, and both folders' subfolders (one level)."""
    seen: dict[Path, None] = {}
    for base in (folder, folder.parent):
        seen.setdefault(base)
        try:
            subfolders = sorted(p for p in base.iterdir() if p.name != ".skillnb")
        except OSError:
            continue
        for sub in subfolders:
            if not sub.name.startswith(".") and sub.is_dir() and not sub.is_symlink():
                seen.setdefault(sub)
    return list(seen)


def _sidecars_in_reach(notebook: Path) -> list[Path]:
    found: list[Path] = []
    for base in _folders_in_reach(notebook.parent):
        root = base / ".skillnb"
        if root.is_symlink() or not root.is_dir():
            continue
        try:
            entries = sorted(root.iterdir())
        except OSError:
            continue
        for entry in entries:
            if "~" in entry.name or entry.is_symlink() or not entry.is_dir():
                continue
            found.append(entry)
            if len(found) >= _MAX_SIDECARS:
                return found
    return found


def owner_of(sidecar: Path) -> Path:
    """The notebook a sidecar folder is named after (``.skillnb/<stem>`` → ``<stem>.ipynb``)."""
    return sidecar.parent.parent / f"{sidecar.name}.ipynb"


def _holding(run_id: str, notebook: Path, own: Path) -> list[Path]:
    return [
        s
        for s in _sidecars_in_reach(notebook)
        if s != own and _holds_run(s) and sidecar_run_id(s) == run_id
    ]


def follow(notebook: Path) -> Binding | None:
    """Bind ``notebook`` to the run it names when it was renamed or moved (see module docs).

    Returns:
        What was done or found (``None``: nothing to do, the usual case).

    Raises:
        NotebookCopied: the notebook is a copy of one that still holds the run; nothing was
            changed.
        AmbiguousIdentity: the run could belong to two notebooks; nothing was changed.

    """
    from skillnb.store.sidecar.layout import sidecar_dir_for

    notebook = notebook.resolve()
    if not notebook.is_file():
        return None
    run_id = notebook_run_id(notebook)
    if run_id is None:
        return None
    own = sidecar_dir_for(notebook)
    if _holds_run(own):
        present = sidecar_run_id(own)
        if present is None or present == run_id:
            return None
        orphans = [s for s in _holding(run_id, notebook, own) if not owner_of(s).exists()]
        if orphans:
            raise _own_taken(notebook, run_id, present, orphans[0])
        return None
    holders = _holding(run_id, notebook, own)
    if not holders:
        return None
    orphans = [s for s in holders if not owner_of(s).exists()]
    if len(holders) == 1 and not orphans and notebook_run_id(owner_of(holders[0])) == run_id:
        raise NotebookCopied(notebook, owner_of(holders[0]), run_id)
    if len(holders) == 1 and orphans:
        move_sidecar(holders[0], own)
        return Binding("moved", run_id, notebook, owner_of(holders[0]), own)
    raise _many(notebook, run_id, holders)


def copy_of(notebook: Path) -> NotebookCopied | None:
    """Tell, reading only, whether ``notebook`` is a copy of one holding the run it names.

    Returns:
        The reason (as :func:`follow` would raise it), or ``None``: not a copy.

    """
    from skillnb.store.sidecar.layout import sidecar_dir_for

    notebook = notebook.resolve()
    run_id = notebook_run_id(notebook) if notebook.is_file() else None
    own = sidecar_dir_for(notebook)
    if run_id is None or _holds_run(own):
        return None
    holders = _holding(run_id, notebook, own)
    if len(holders) != 1 or not owner_of(holders[0]).exists():
        return None
    if notebook_run_id(owner_of(holders[0])) != run_id:
        return None
    return NotebookCopied(notebook, owner_of(holders[0]), run_id)


def recorded_elsewhere(notebook: Path) -> Path | None:
    """The one sidecar, under another notebook's name, holding the run ``notebook`` names.

    A reader only (nothing is moved): for messages about a notebook that has no run of its
    own yet.
    """
    from skillnb.store.sidecar.layout import sidecar_dir_for

    notebook = notebook.resolve()
    run_id = notebook_run_id(notebook) if notebook.is_file() else None
    if run_id is None:
        return None
    holders = _holding(run_id, notebook, sidecar_dir_for(notebook))
    return holders[0] if len(holders) == 1 else None


def _own_taken(notebook: Path, run_id: str, present: str, orphan: Path) -> AmbiguousIdentity:
    here = notebook.parent
    old = _shown(owner_of(orphan), here)
    own = _shown(notebook.parent / ".skillnb" / notebook.stem, here)
    return AmbiguousIdentity(
        f"{notebook.name} names run {run_id}, recorded in {_shown(orphan, here)} under {old} "
        f"(gone), but its own sidecar {own} holds run {present}; nothing was opened. To go on "
        f"with run {run_id}: `mv {own} {own}~{present}` (sets run {present} aside) then "
        f"`skillnb mv {old} {notebook.name}`; to go on with run {present}: "
        f"`mv {_shown(orphan, here)} {_shown(orphan, here)}~{run_id}`",
        notebook,
        [owner_of(orphan)],
    )


def _many(notebook: Path, run_id: str, holders: list[Path]) -> AmbiguousIdentity:
    here = notebook.parent
    names = [_shown(owner_of(s), here) for s in holders]
    described = "; ".join(
        f"{_shown(s, here)} ({name}{'' if owner_of(s).exists() else ', gone'})"
        for s, name in zip(holders, names, strict=True)
    )
    commands = [f"`skillnb mv {n} {notebook.name}`" for n in names if not Path(here, n).exists()]
    commands += [f"`skillnb fork {n} {notebook.name}`" for n in names if Path(here, n).exists()]
    return AmbiguousIdentity(
        f"{notebook.name} names run {run_id}, which is recorded for another notebook too: "
        f"{described}; nothing was opened. Settle it with one of "
        + ", ".join(commands)
        + f", or start a new run: `skillnb run {notebook.name} --new-run` (in a kernel: "
        "`%skillnb new-run`)",
        notebook,
        [owner_of(s) for s in holders],
    )


def move_sidecar(source: Path, target: Path) -> None:
    """Move sidecar folder ``source`` to ``target`` (free), under the run's writer lock.

    Both parent folders are fsynced, so the new name survives a crash. Across file systems
    the folder is copied, then the original removed.

    Raises:
        SkillnbError: ``target`` is taken.
        UnsafePath: a symbolic link stands in either place.

    """
    from skillnb.store.durable import FileLock, fsync_dir
    from skillnb.store.sidecar.layout import SidecarLayout

    SidecarLayout(source).check_root()
    if os.path.lexists(target):
        raise SkillnbError(f"{target} already exists; not overwriting it")
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    SidecarLayout(target).check_root()  # refuses a linked .skillnb/ at the target
    lock = FileLock(SidecarLayout(source).lock)
    try:
        with lock.hold():
            try:
                source.rename(target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:  # another file system: copy instead
                    raise
                shutil.copytree(source, target, symlinks=True)
                shutil.rmtree(source)
    finally:
        lock.close()
    fsync_dir(target.parent)
    if source.parent != target.parent:
        fsync_dir(source.parent)
