"""Values whose JSON form would lose their type: sets, tuples, keyed dicts, decimals, UUIDs.

Store layer. Plain JSON turns a tuple into a list and has no set, no ``Decimal``, no ``UUID``
and no dict key other than text. The ``typed`` encoding keeps them by value, as tagged JSON
(never pickle): a container is ``{"$set": [...]}``, ``{"$frozenset": [...]}``,
``{"$tuple": [...]}`` or ``{"$dict": [[key, value], ...]}``; a scalar ``{"$decimal": "1.10"}``,
``{"$uuid": "..."}``, ``{"$datetime": "..."}``, ``{"$date": "..."}`` or ``{"$path": "..."}``;
lists, text, numbers, booleans and ``None`` are themselves. Decoding builds only these types.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any
from uuid import UUID

from skillnb.store.codec.encoders import Encoder, clip_preview

__all__ = ["TypedEncoder"]

_MAX_DEPTH = 200
_SCALARS: dict[type, str] = {Decimal: "$decimal", UUID: "$uuid"}


def _needs_types(value: object, depth: int = 0) -> bool:
    """Tell whether plain JSON would lose something of ``value``'s types."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, set | frozenset | tuple | Decimal | UUID):
        return True
    if depth and isinstance(value, date | PurePath):  # alone, their own encoders keep them
        return True
    if isinstance(value, dict):
        return any(not isinstance(k, str) or _needs_types(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_needs_types(v, depth + 1) for v in value)
    return False


def _encode(value: object, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, bool):
        return value if value is None else bool(value)
    for plain in (str, int):  # subclasses (an IntEnum, a str Enum) are stored as their base
        if isinstance(value, plain):
            return plain(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not JSON")
        return float(value)
    tagged = _encode_scalar(value)
    return tagged if tagged is not None else _encode_container(value, depth)


def _encode_scalar(value: object) -> dict[str, str] | None:
    if isinstance(value, Decimal | UUID):
        return {"$decimal" if isinstance(value, Decimal) else "$uuid": str(value)}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, PurePath):
        return {"$path": str(value)}
    return None


def _encode_container(value: object, depth: int) -> Any:
    if isinstance(value, list):
        return [_encode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in value.items()]}
    for kind, tag in ((frozenset, "$frozenset"), (set, "$set"), (tuple, "$tuple")):
        if isinstance(value, kind):
            items = [_encode(v, depth + 1) for v in value]
            if kind is not tuple:
                items.sort(key=repr)  # a stable order, so equal sets store equally
            return {tag: items}
    raise TypeError(f"a {type(value).__qualname__} has no typed JSON form")


_BUILD: dict[str, Any] = {
    "$decimal": Decimal,
    "$uuid": UUID,
    "$datetime": datetime.fromisoformat,
    "$date": date.fromisoformat,
    "$path": Path,
}


def _decode(stored: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(stored, list):
        return [_decode(v, depth + 1) for v in stored]
    if not isinstance(stored, dict):
        return stored
    if len(stored) != 1:
        raise ValueError(f"not a typed value: {sorted(stored)!r}")
    ((tag, data),) = stored.items()
    if tag in _BUILD:
        if not isinstance(data, str):
            raise TypeError(f"{tag} is stored as text, not {data!r}")
        return _BUILD[tag](data)
    if not isinstance(data, list):
        raise TypeError(f"{tag} holds a list, not {data!r}")
    items = [_decode(v, depth + 1) for v in data]
    if tag == "$dict":
        return {_hashable(k): v for k, v in (tuple(pair) for pair in items)}
    containers: dict[str, Any] = {"$set": set, "$frozenset": frozenset, "$tuple": tuple}
    if tag not in containers:
        raise ValueError(f"unknown typed tag {tag!r}")
    return containers[tag](_hashable(i) for i in items) if tag != "$tuple" else tuple(items)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):  # a stored list can only have been a list: not a key
        raise TypeError("a list cannot be a set member or a dict key")
    return value


class TypedEncoder(Encoder):
    """Sets, frozensets, tuples, dicts with non-text keys, ``Decimal`` and ``UUID``, by value."""

    name = "typed"

    def accepts(self, value: object) -> bool:
        """Values plain JSON would change: a set, a tuple, a non-text key, a decimal, ..."""
        return _needs_types(value)

    def encode(self, value: object) -> Any:
        """Return the tagged JSON form (see the module docs)."""
        return _encode(value, 0)

    def decode(self, stored: Any) -> object:
        """Rebuild the value from its tagged JSON form (only the types listed above)."""
        return _decode(stored)

    def preview(self, value: object, stored: Any) -> str:
        """The value's ``repr`` on one line, clipped."""
        return clip_preview(" ".join(repr(value).split()))
