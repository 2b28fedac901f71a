"""Skill names as safe file names (service layer, pure Python).

A skill's memory lives in ``<home>/memory/<skill_name>.json``, so the name must not be able to
reach outside that folder, hide the file, or smuggle invisible characters into a path.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

__all__ = ["MAX_SKILL_NAME_LENGTH", "check_skill_name"]

MAX_SKILL_NAME_LENGTH = 100
"""The longest skill name accepted, in characters (after NFC normalisation)."""

_PUNCTUATION = frozenset("-_.")
_SEPARATORS = frozenset("/\\")


def _empty(name: str) -> str | None:
    return "it is empty" if not name else None


def _too_long(name: str) -> str | None:
    if len(name) > MAX_SKILL_NAME_LENGTH:
        return f"it is {len(name)} characters long (at most {MAX_SKILL_NAME_LENGTH})"
    return None


def _separator(name: str) -> str | None:
    found = sorted(_SEPARATORS.intersection(name))
    return f"it contains a path separator ({found[0]!r})" if found else None


def _control(name: str) -> str | None:
    for char in name:
        if unicodedata.category(char).startswith("C"):
            return f"it contains a control or invisible character (U+{ord(char):04X})"
    return None


def _dot_dot(name: str) -> str | None:
    return "it contains '..' (a parent-directory reference)" if ".." in name else None


def _dot_edge(name: str) -> str | None:
    if name.startswith("."):
        return "it starts with a dot (a hidden file)"
    if name.endswith("."):
        return "it ends with a dot (dots are allowed only inside the name)"
    return None


def _character(name: str) -> str | None:
    for index, char in enumerate(name):
        category = unicodedata.category(char)
        allowed = (
            char in _PUNCTUATION
            or category.startswith("L")
            or category == "Nd"
            or (index > 0 and category.startswith("M"))
        )
        if not allowed:
            return f"it contains {char!r}"
    return None


# Order matters only for the message: the most specific rule is reported first.
_RULES: tuple[Callable[[str], str | None], ...] = (
    _empty,
    _too_long,
    _separator,
    _control,
    _dot_dot,
    _dot_edge,
    _character,
)


def check_skill_name(name: object) -> str:
    """Return ``name`` in Unicode NFC form if it is a safe file name, else raise.

    A safe name is 1 to 100 characters of letters (any script, with their combining marks),
    decimal digits, ``-``, ``_`` and ``.``; a dot may not start or end it and ``..`` may not
    appear. Path separators, control and invisible characters are rejected.

    Args:
        name: the skill name as given by the caller.

    Returns:
        The NFC-normalised name (so one skill maps to one file on every file system).

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: the name breaks a rule; the message names the rule.

    """
    if not isinstance(name, str):
        raise TypeError(f"skill name must be a str, not {type(name).__name__}")
    normalised = unicodedata.normalize("NFC", name)
    for rule in _RULES:
        problem = rule(normalised)
        if problem is not None:
            raise ValueError(
                f"skill name {name!r} is not a safe file name: {problem}; use 1-"
                f"{MAX_SKILL_NAME_LENGTH} letters, digits, '-', '_', and '.' inside the name"
            )
    return normalised
