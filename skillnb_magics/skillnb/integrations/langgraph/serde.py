"""LangGraph values as JSON through SKILL.nb's codec, never pickle (integration layer).

LangGraph hands a checkpointer nested Python values: dicts, lists, tuples, sets, ``Send``
packets, ``Interrupt`` and other dataclasses, LangChain messages (pydantic models), bytes,
datetimes. :func:`encode_tree` walks containers and dataclasses itself and gives every other
leaf to :mod:`skillnb.store.codec.values`, so the encoders SKILL.nb uses for facts (text, JSON,
bytes, paths, datetimes, pydantic, numpy, pandas) are the ones checkpoints use too. The
result is plain JSON: containers stay containers, and anything JSON cannot hold is a small
tagged object ``{"$t": tag, ...}``:

============  ==================================================================
``tuple``     ``{"$t": "tuple", "$v": [...]}``; ``set`` and ``frozenset`` alike
``ntuple``    a ``NamedTuple`` (LangGraph's ``_DeltaSnapshot``, users' own):
              ``{"$t": "ntuple", "type": "module:Qualname", "$v": [...]}``
``map``       a dict whose keys are not all strings, or that has a ``"$t"`` key:
              ``{"$t": "map", "$v": [[key, value], ...]}``
``send``      ``{"$t": "send", "node": str, "arg": ..., "timeout": ...}``
``dc``        a dataclass: ``{"$t": "dc", "type": "module:Qualname", "$v": {field: ...}}``
``codec``     a leaf encoded by the codec: ``{"$t": "codec", "enc": name, "$v": stored}``
============  ==================================================================

An exception is stored as its ``repr``, as LangGraph's own serializer stores it (a failed
task's ``__error__`` write is shown as that text). A value the codec could only keep as its
``repr`` is refused with a ``TypeError`` naming its type: a checkpoint that cannot be
restored would break the resume it exists for. Classes
are looked up among modules already imported, never imported because stored data names
them (the codec's rule). :class:`SkillnbSerializer` wraps this as LangGraph's
``SerializerProtocol``; its ``loads_typed`` refuses pickle and every other foreign format.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from skillnb.store.codec import values as codec
from skillnb.store.codec.encoders import UnrestorableValueWarning, dumps, find_loaded_class
from skillnb.store.codec.values import BlobStore

__all__ = [
    "TYPE_NAME",
    "SkillnbSerializer",
    "decode_tree",
    "encode_tree",
    "is_immutable",
]

TYPE_NAME = "skillnb-json"
"""The type string :meth:`SkillnbSerializer.dumps_typed` writes."""

_SCALARS = (str, int, bool, type(None))
_MAX_DEPTH = 60
"""Deepest nesting accepted: tags double it at worst, and a journal line may nest 128 deep."""


class _NoBlobs:
    """A blob store that refuses: without a run, every value stays inline."""

    location = "a LangGraph value"

    def put_blob(self, data: bytes) -> str:
        raise TypeError("no store for large values")  # never reached: threshold is unbounded

    def get_blob(self, ref: str) -> bytes:
        raise KeyError(ref)


def is_immutable(value: object) -> bool:
    """True for values nobody can change in place (so an identical object means equal)."""
    kind = type(value)
    if kind in (str, int, float, bool, bytes, type(None)):
        return True
    return kind is tuple and all(is_immutable(v) for v in value)  # type: ignore[attr-defined]


def encode_tree(value: object, store: BlobStore | None = None, depth: int = 0) -> Any:
    """Return ``value`` as JSON data (see the module docstring for the tags).

    Raises:
        TypeError: some part of ``value`` has no restorable encoding.
        ValueError: the nesting is deeper than 60 levels.

    """
    if depth > _MAX_DEPTH:
        raise ValueError(f"a LangGraph value is nested more than {_MAX_DEPTH} levels deep")
    kind = type(value)
    if kind in _SCALARS or (kind is float and math.isfinite(value)):  # type: ignore[arg-type]
        return value
    if kind is list:
        return [encode_tree(v, store, depth + 1) for v in value]  # type: ignore[attr-defined]
    if kind is dict:
        return _encode_dict(value, store, depth)  # type: ignore[arg-type]
    if kind is tuple:
        items: list[Any] = list(value)  # type: ignore[call-overload]
        return {"$t": "tuple", "$v": [encode_tree(v, store, depth + 1) for v in items]}
    if kind in (set, frozenset):
        items = sorted(value, key=repr)  # type: ignore[call-overload]
        return {"$t": kind.__name__, "$v": [encode_tree(v, store, depth + 1) for v in items]}
    if isinstance(value, tuple) and _is_namedtuple(kind):
        return {
            "$t": "ntuple",
            "type": f"{kind.__module__}:{kind.__qualname__}",
            "$v": [encode_tree(v, store, depth + 1) for v in value],
        }
    if isinstance(value, BaseException):
        return repr(value)  # what LangGraph's serializer keeps of an exception
    return _encode_object(value, store, depth)


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _encode_dict(value: dict[Any, Any], store: BlobStore | None, depth: int) -> Any:
    if "$t" not in value and all(type(k) is str for k in value):
        return {k: encode_tree(v, store, depth + 1) for k, v in value.items()}
    pairs = [
        [encode_tree(k, store, depth + 1), encode_tree(v, store, depth + 1)]
        for k, v in value.items()
    ]
    return {"$t": "map", "$v": pairs}


def _encode_object(value: object, store: BlobStore | None, depth: int) -> Any:
    send = _send_class()
    if send is not None and type(value) is send:
        return {
            "$t": "send",
            "node": value.node,  # type: ignore[attr-defined]
            "arg": encode_tree(value.arg, store, depth + 1),  # type: ignore[attr-defined]
            "timeout": encode_tree(getattr(value, "timeout", None), store, depth + 1),
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        fields = {
            f.name: encode_tree(getattr(value, f.name), store, depth + 1)
            for f in dataclasses.fields(value)
        }
        return {"$t": "dc", "type": f"{cls.__module__}:{cls.__qualname__}", "$v": fields}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnrestorableValueWarning)
        if store is None:
            encoded = codec.encode(value, _NoBlobs(), blob_threshold=sys.maxsize)
        else:
            encoded = codec.encode(value, store)
    if not encoded.restorable:
        raise TypeError(
            f"a {type(value).__module__}.{type(value).__qualname__} value has no JSON encoding; "
            "a checkpoint must be restorable, so it is refused (register a skillnb encoder "
            "for it: skillnb.store.codec.values.register)"
        )
    return {"$t": "codec", "enc": encoded.encoding, "$v": encoded.value}


def _send_class() -> type | None:
    types = sys.modules.get("langgraph.types")
    return getattr(types, "Send", None) if types is not None else None


Foreign = Callable[[dict[str, Any]], Any]
"""Decodes a ``{"$t": "serde", ...}`` leaf written by another LangGraph serializer."""


def decode_tree(data: Any, store: BlobStore | None = None, foreign: Foreign | None = None) -> Any:
    """Rebuild the value :func:`encode_tree` made ``data`` from (a fresh object every call).

    Raises:
        CodecError: a tagged leaf is malformed or names an unknown encoding.

    """
    kind = type(data)
    if kind is list:
        return [decode_tree(v, store, foreign) for v in data]
    if kind is not dict:
        return data
    tag = data.get("$t")
    if tag is None:
        return {k: decode_tree(v, store, foreign) for k, v in data.items()}
    if tag == "serde" and foreign is not None:
        return foreign(data)
    return _decode_tagged(str(tag), data, store)


def _decode_tagged(tag: str, data: dict[str, Any], store: BlobStore | None) -> Any:
    if tag in ("tuple", "set", "frozenset"):
        items = [decode_tree(v, store) for v in data["$v"]]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "map":
        return {_hashable(decode_tree(k, store)): decode_tree(v, store) for k, v in data["$v"]}
    if tag == "send":
        send = _send_class()
        if send is None:
            raise codec.CodecError("a stored Send needs langgraph imported")
        return send(str(data["node"]), decode_tree(data["arg"], store))
    if tag == "dc":
        return _decode_dataclass(data, store)
    if tag == "ntuple":
        spec = str(data["type"])
        cls = find_loaded_class(spec, _is_namedtuple)
        if cls is None:
            raise codec.CodecError(f"class {spec} of a stored named tuple is not imported")
        return cls(*(decode_tree(v, store) for v in data["$v"]))
    if tag == "codec":
        return codec.decode(data["$v"], str(data["enc"]), store or _NoBlobs())
    raise codec.CodecError(f"unknown tag {tag!r} in a stored LangGraph value")


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _decode_dataclass(data: dict[str, Any], store: BlobStore | None) -> Any:
    spec = str(data["type"])
    fields = {k: decode_tree(v, store) for k, v in data["$v"].items()}
    cls = find_loaded_class(spec, dataclasses.is_dataclass)
    if cls is None:
        raise codec.CodecError(f"class {spec} of a stored dataclass is not imported")
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    obj = cls(**{k: v for k, v in fields.items() if k in init})
    for name, field_value in fields.items():
        if name not in init:
            object.__setattr__(obj, name, field_value)
    return obj


class SkillnbSerializer:
    """LangGraph's ``SerializerProtocol`` over :func:`encode_tree`: JSON, never pickle.

    Args:
        store: where large leaves go (the run's store), or ``None`` to keep them inline.

    """

    def __init__(self, store: BlobStore | None = None) -> None:
        self.store = store

    def encode(self, obj: Any) -> Any:
        """JSON data for ``obj`` (what the saver embeds in its journal events)."""
        return encode_tree(obj, self.store)

    def decode(self, data: Any) -> Any:
        """The value :meth:`encode` turned into ``data``."""
        return decode_tree(data, self.store)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """``(TYPE_NAME, JSON bytes)``; raises ``TypeError`` for a value with no encoding."""
        return TYPE_NAME, dumps(self.encode(obj)).encode("utf-8")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Rebuild a value from :meth:`dumps_typed`'s output.

        Raises:
            TypeError: ``data`` is of another type (pickle, msgpack, ...): refused.

        """
        type_, payload = data
        if type_ != TYPE_NAME:
            raise TypeError(
                f"refusing to load a {type_!r} value: SKILL.nb stores LangGraph values as "
                f"{TYPE_NAME!r} only (never pickle)"
            )
        return self.decode(json.loads(payload.decode("utf-8")))
