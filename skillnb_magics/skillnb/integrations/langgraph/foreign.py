"""Reading values another LangGraph serializer wrote, as data only (integration layer).

A saver given ``serde=`` stores that serializer's ``(type, bytes)`` pairs. A journal may come
from anywhere (a cloned sidecar, a shared folder), so its bytes are untrusted: they are never
handed back to the serializer's own ``loads_typed``, which may unpickle
(``pickle_fallback=True``) or import and call whatever a msgpack extension names.
:class:`ForeignReader` decodes the formats LangGraph's ``JsonPlusSerializer`` writes itself:
``null``, ``bytes``, ``bytearray``, ``json`` (plain JSON) and ``msgpack``, the latter through a
``JsonPlusSerializer`` in strict mode, which builds only LangGraph's list of safe types
(datetimes, messages, ``Send``, ...) plus the classes the given serializer explicitly
allows (``allowed_msgpack_modules=[...]``), never "everything". An ``EncryptedSerializer``'s
cipher decrypts first. Any other type, ``pickle`` included, is refused on write and on read.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["DATA_TYPES", "ForeignReader", "ForeignValueRefused"]

DATA_TYPES = frozenset({"null", "bytes", "bytearray", "json", "msgpack"})
"""The stored types read back (as data); anything else is refused."""


class ForeignValueRefused(ValueError):
    """A stored value's type is one SKILL.nb never decodes (pickle, or unknown)."""


class ForeignReader:
    """Decodes ``(type, bytes)`` pairs of ``serde`` as data only (see the module docstring).

    Args:
        serde: the serializer the saver was given.

    """

    def __init__(self, serde: SerializerProtocol) -> None:
        inner = serde
        self._cipher = None
        if isinstance(serde, EncryptedSerializer):
            self._cipher, inner = serde.cipher, serde.serde
        allowed = getattr(inner, "_allowed_msgpack_modules", None)
        # "Allow everything" (JsonPlusSerializer's default) becomes LangGraph's safe list.
        self._msgpack = JsonPlusSerializer(
            allowed_msgpack_modules=None if allowed is True else allowed
        )

    def check(self, type_: str) -> None:
        """Raise :class:`ForeignValueRefused` unless values of ``type_`` can be read back."""
        base, plus, cipher = type_.partition("+")
        if base not in DATA_TYPES:
            raise ForeignValueRefused(
                f"a stored value of type {type_!r} is refused: SKILL.nb reads back only "
                f"{', '.join(sorted(DATA_TYPES))} (never pickle or other codecs that run code)"
            )
        if plus and self._cipher is None:
            raise ForeignValueRefused(
                f"a stored value is encrypted ({cipher!r}) but the saver's serializer has no cipher"
            )

    def loads(self, type_: str, payload: bytes) -> Any:
        """The data ``payload`` holds.

        Raises:
            ForeignValueRefused: ``type_`` is not one of :data:`DATA_TYPES` (+ a cipher).

        """
        self.check(type_)
        base, plus, cipher = type_.partition("+")
        if plus and self._cipher is not None:
            payload = self._cipher.decrypt(cipher, payload)
        if base == "json":
            return json.loads(payload)
        return self._msgpack.loads_typed((base, payload))
