"""Reading typed fields out of plain data, with positioned problems (core layer).

:class:`FieldChecker` is the toolkit the workflow validator is built on: each method reads
one kind of value (a mapping, a non-empty string, a list of names, a number of seconds, ...)
from data loaded by :mod:`skillnb.core.workflow.yamlsafe` or given as a dict, and on a mismatch
records a :class:`~skillnb.errors.WorkflowError` at that value's position and path instead of
raising, so one pass reports every problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from skillnb.core.workflow.yamlsafe import DocPath, SourceMap, suggest
from skillnb.errors import WorkflowError

__all__ = ["FieldChecker", "kind_of"]


def kind_of(value: Any) -> str:
    """Describe the type of a loaded value in words (``a list``, ``a string``, ...)."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if value is None:
        return "empty (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return names.get(type(value), type(value).__name__)


class FieldChecker:
    """Reads fields and collects problems in :attr:`errors`."""

    def __init__(self, smap: SourceMap) -> None:
        self.smap = smap
        self.errors: list[WorkflowError] = []
        self._sets: dict[int, tuple[tuple[str, ...], frozenset[str]]] = {}
        """Each ``known`` tuple as a set, by identity: a lookup costs O(1), not O(len)."""

    def err(self, path: DocPath, problem: str, *, key: bool = False) -> None:
        """Record a problem at ``path`` (at its key when ``key``)."""
        self.errors.append(self.smap.error(path, problem, key=key))

    def mapping(self, value: Any, path: DocPath, what: str) -> dict[Any, Any] | None:
        """Read a mapping (``None`` after a problem)."""
        if isinstance(value, dict):
            return value
        self.err(path, f"{what} must be a mapping (key: value), not {kind_of(value)}")
        return None

    def keys(
        self,
        body: dict[Any, Any],
        path: DocPath,
        allowed: tuple[str, ...],
        required: tuple[str, ...] = (),
        elsewhere: Mapping[str, str] | None = None,
    ) -> None:
        """Report unknown keys (with the closest valid one) and missing required keys.

        ``elsewhere`` maps keys that belong to another kind of entry to an explanation.
        """
        typos: set[str] = set()
        for key in body:
            if key in allowed:
                continue
            where = (*path, key)
            if elsewhere and key in elsewhere:
                self.err(where, f"key {key!r} {elsewhere[key]}", key=True)
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            typos.update(close)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(allowed)})"
            self.err(where, f"unknown key {key!r}{hint}", key=True)
        for key in required:
            if key not in body and key not in typos:  # a typo of it was reported already
                self.err(path, f"missing required key {key!r}")

    def text(self, value: Any, path: DocPath, what: str) -> str | None:
        """Read a non-empty string (``None`` after a problem)."""
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, str):
            self.err(path, f"{what} must not be empty")
            return None
        hint = ""
        if isinstance(value, bool):
            hint = " (YAML reads yes/no/on/off/true/false as booleans: put it in quotes)"
        self.err(path, f"{what} must be a string, not {kind_of(value)}{hint}")
        return None

    def names(self, value: Any, path: DocPath, what: str) -> tuple[str, ...] | None:
        """Read a string or a list of strings as a tuple (``None`` after a problem)."""
        if isinstance(value, str):
            return (value,) if self.text(value, path, what) else None
        if not isinstance(value, list):
            self.err(path, f"{what} must be a string or a list of strings, not {kind_of(value)}")
            return None
        items = [self.text(item, (*path, i), what) for i, item in enumerate(value)]
        return tuple(item for item in items if item is not None)

    def known(self, name: str, path: DocPath, known: tuple[str, ...], what: str) -> None:
        """Check that ``name`` is one of ``known`` (suggesting the closest one)."""
        cached = self._sets.get(id(known))
        if cached is None or cached[0] is not known:
            cached = self._sets[id(known)] = (known, frozenset(known))
        if name not in cached[1]:
            hint = suggest(name, known) or f" (known {what}s: {', '.join(known) or 'none'})"
            self.err(path, f"unknown {what} {name!r}{hint}")

    def optional(self, body: dict[Any, Any], key: str, path: DocPath) -> str | None:
        """Read an optional string (absent and null both mean ``None``)."""
        value = body.get(key)
        return None if value is None else self.text(value, (*path, key), key)

    def members(
        self,
        body: dict[Any, Any],
        key: str,
        path: DocPath,
        known: tuple[str, ...] | None,
        what: str,
        *,
        single: bool = False,
    ) -> tuple[str, ...] | None:
        """Read names (one when ``single``) that must each be one of ``known``."""
        if key not in body:
            return None
        value, at = body[key], (*path, key)
        if single:
            one = self.text(value, at, key)
            names: tuple[str, ...] | None = None if one is None else (one,)
        else:
            names = self.names(value, at, f"a {what} name")
        for i, name in enumerate(names or ()):
            if known is not None:
                self.known(name, (*at, i) if isinstance(value, list) else at, known, what)
        return names

    def seconds(
        self, value: Any, path: DocPath, what: str, limits: tuple[float, float]
    ) -> float | None:
        """Read a number of seconds within ``limits`` (the low limit excluded for a timeout)."""
        low, high = limits
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.err(path, f"{what} must be a number of seconds, not {kind_of(value)}")
            return None
        exclusive = what == "timeout"
        if not low <= value <= high or (exclusive and value == low):
            bounds = f"more than {low:g} and at most" if exclusive else f"from {low:g} to"
            self.err(path, f"{what} must be {bounds} {high:g} seconds")
            return None
        return float(value)
