"""Which names a cell created or changed, from two cheap looks at the namespace.

Core layer: pure (it reads a mapping; the kernel passes the shell's user namespace).
:meth:`NamespaceWatch.before` takes a fingerprint of every visible name (the value's ``id``
and type, plus the length and last item of built-in containers and the ``shape`` of arrays
and frames, so in-place appends count as changes); :meth:`NamespaceWatch.changed` returns the
names whose fingerprint differs. Nothing is copied and no user code runs: only built-in
containers are measured, and other objects only by identity.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["NamespaceWatch", "fingerprint"]

_MEASURED = (list, dict, set, tuple, str, bytes, bytearray)
_ARRAY_MODULES = ("numpy", "pandas")


def fingerprint(value: Any) -> tuple[Any, ...]:
    """A cheap fingerprint of ``value``: identity, type, and size for containers."""
    kind = type(value)
    if kind in _MEASURED:
        size = len(value)
        last: Any = None
        if size and kind is list:
            last = id(value[-1])
        elif size and kind is dict:
            last = next(reversed(value))
        return (id(value), kind, size, last if isinstance(last, int | str) else id(last))
    if kind.__module__.split(".")[0] in _ARRAY_MODULES:
        return (id(value), kind, getattr(value, "shape", None))
    return (id(value), kind)


class NamespaceWatch:
    """Tells which names of a namespace a cell created or changed.

    Args:
        hidden: names never reported (e.g. IPython's own ``In``, ``Out``, ``exit``).

    """

    def __init__(self, hidden: Collection[str] = ()) -> None:
        self._hidden = hidden
        self._seen: dict[str, tuple[Any, ...]] | None = None

    def _visible(self, name: str) -> bool:
        return not name.startswith("_") and name not in self._hidden

    def before(self, namespace: Mapping[str, Any]) -> None:
        """Fingerprint ``namespace`` before the cell runs."""
        self._seen = {k: fingerprint(v) for k, v in namespace.items() if self._visible(k)}

    def changed(self, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """The names created or changed since :meth:`before`, with their values.

        Without a :meth:`before` (the watch started mid-cell), nothing is reported.
        """
        seen, self._seen = self._seen, None
        if seen is None:
            return {}
        return {
            k: v for k, v in namespace.items() if self._visible(k) and seen.get(k) != fingerprint(v)
        }
