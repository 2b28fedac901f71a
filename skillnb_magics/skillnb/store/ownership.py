"""Whose a sidecar is: a folder another user made, or anyone may write, is said so (store layer).

SKILL.nb creates its files ``0o600`` in ``0o700`` folders, so a sidecar it made is its user's
alone. A sidecar found in a shared folder may have been made by someone else (planted, or a
colleague's run), or opened to everyone (``0777``/``0666``): whoever can write there can change
the run. It is still read (refusing would break runs shared on purpose, and every line is
checked as any other), but never silently: the first read of each store warns once, with
:class:`ForeignSidecarWarning`, naming each part that is not the user's own or that others may
write, with its owner and mode. A write that the file system then refuses raises a
``PermissionError`` naming the file, its owner and its mode (:func:`permission_error`), never
a bare "Operation not permitted".
"""

from __future__ import annotations

import os
import pwd
import stat
import warnings
from pathlib import Path

from skillnb.errors import SkillnbWarning

__all__ = [
    "ForeignSidecarWarning",
    "SidecarPermissionError",
    "describe",
    "exposed_parts",
    "permission_error",
    "warn_if_exposed",
]

_OPEN_TO_OTHERS = stat.S_IWOTH
"""A part anyone on the machine may write is not private, whoever owns it."""


class ForeignSidecarWarning(SkillnbWarning):
    """A sidecar (or a file in it) belongs to another user, or anyone may write it."""


class SidecarPermissionError(PermissionError):
    """A write to a sidecar was refused; the message names the file, its owner and its mode."""


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:  # no such user on this machine: the number is all there is
        return f"uid {uid}"


def describe(path: Path) -> str | None:
    """``path``'s owner and mode when it is not private to this user, else ``None``.

    ``None`` too when it does not exist, or is a symbolic link.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None  # never followed: reading it is refused as UnsafePath, not warned about
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid == os.geteuid() and not mode & _OPEN_TO_OTHERS:
        return None
    return f"{path.name} (owner {_owner(info.st_uid)}, mode {mode:04o})"


def exposed_parts(root: Path, names: tuple[str, ...]) -> list[str]:
    """The parts of sidecar ``root`` (the folder, then ``names`` in it) not private to this user."""
    found = [describe(root), *(describe(root / name) for name in names)]
    return [part for part in found if part is not None]


def warn_if_exposed(root: Path, names: tuple[str, ...], *, stacklevel: int = 2) -> None:
    """Warn (:class:`ForeignSidecarWarning`) when a part of sidecar ``root`` is not private."""
    parts = exposed_parts(root, names)
    if parts:
        warnings.warn(
            f"{root}: this run's files are not private to you: {', '.join(parts)}; it is read "
            "as any other, but whoever can write there can change it (skillnb fork copies it "
            "into a private run)",
            ForeignSidecarWarning,
            stacklevel=stacklevel + 1,
        )


def permission_error(exc: PermissionError, path: Path) -> PermissionError:
    """``exc`` naming ``path``, its owner and its mode (an error on a descriptor names none)."""
    if isinstance(exc, SidecarPermissionError):
        return exc  # named already, where it was raised
    seen = describe(path) or describe(path.parent)  # a file not made yet: its folder's
    why = f"{exc.strerror or exc}" + (f" ({seen})" if seen is not None else "")
    return SidecarPermissionError(
        exc.errno, f"{why}; SKILL.nb keeps a run's files private to one user", str(path)
    )
