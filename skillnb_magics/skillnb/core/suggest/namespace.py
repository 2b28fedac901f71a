"""Which names a cell created or changed, from two cheap looks at the namespace.

Core layer: pure (it reads a mapping; the kernel passes the shell's user namespace).
:meth:`NamespaceWatch.before` takes a fingerprint of every name (the value's ``id``, plus
the length and last item of mutable built-in containers and the ``shape`` of numpy/pandas
arrays, so in-place appends count as changes); :meth:`NamespaceWatch.changed` returns the
visible names whose fingerprint differs. Nothing is copied and no user code runs: only
built-in containers and arrays are measured, other objects only by identity.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["NamespaceWatch"]

_MUTABLE = frozenset({list, dict, set, bytearray})
_ARRAY_MODULES = ("numpy", "pandas")


def _is_array_type(kind: type) -> bool:
    return kind.__module__.split(".")[0] in _ARRAY_MODULES


def _contents(value: Any) -> tuple[Any, ...]:
    """Size (and last item) of a mutable built-in container, or an array's shape."""
    kind = type(value)
    size = len(value)
    if not size or kind is set:
        return (size,)
    if kind is list:
        return (size, id(value[-1]))
    if kind is dict:
        last = next(reversed(value))
        return (size, last if isinstance(last, int | str) else id(last))
    return (size, id(value[-1]) if kind is bytearray else None)


class NamespaceWatch:
    """Tells which names of a namespace a cell created or changed.

    Two passes per cell, both linear in the namespace but cheap per name: the identity of
    every value, and the size of the mutable containers and arrays (types are classified
    once and cached).

    Args:
        hidden: names never reported (e.g. IPython's own ``In``, ``Out``, ``exit``).

    """

    def __init__(self, hidden: Collection[str] = ()) -> None:
        self._hidden = hidden
        self._ids: dict[str, int] | None = None
        self._sizes: dict[str, tuple[Any, ...]] = {}
        self._arrays: dict[type, bool] = {}

    def _visible(self, name: str) -> bool:
        return not name.startswith("_") and name not in self._hidden

    def _measured(self, value: Any) -> bool:
        kind = type(value)
        if kind in _MUTABLE:
            return True
        known = self._arrays.get(kind)
        if known is None:
            known = self._arrays[kind] = _is_array_type(kind)
        return known

    def _size(self, value: Any) -> tuple[Any, ...]:
        if type(value) in _MUTABLE:
            return _contents(value)
        return (getattr(value, "shape", None),)

    def before(self, namespace: Mapping[str, Any]) -> None:
        """Fingerprint ``namespace`` before the cell runs."""
        visible = self._visible
        self._ids = {k: id(v) for k, v in namespace.items() if visible(k)}
        measured = self._measured
        ids = self._ids
        self._sizes = {k: self._size(v) for k, v in namespace.items() if k in ids and measured(v)}

    def forget(self) -> None:
        """Drop the fingerprint (a cell that reports nothing): :meth:`changed` finds nothing."""
        self._ids = None
        self._sizes = {}

    def changed(self, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """The names created or changed since :meth:`before`, with their values.

        Without a :meth:`before` (the watch started mid-cell), nothing is reported.
        """
        ids, self._ids = self._ids, None
        if ids is None:
            return {}
        sizes = self._sizes
        visible = self._visible
        found = {k: v for k, v in namespace.items() if ids.get(k) != id(v) and visible(k)}
        for k, size in sizes.items():
            if k not in found and k in namespace and self._size(namespace[k]) != size:
                found[k] = namespace[k]
        return found
