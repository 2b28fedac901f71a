"""Turning Python values into JSON for facts, and back (store layer).

:func:`encode` asks each registered :class:`Encoder` in turn whether it takes a value; the first
that does turns it into JSON. The result, :class:`Encoded`, says which encoding was used (it is
stored in :attr:`Fact.encoding <skillnb.core.runstate.records.Fact.encoding>`), whether the value
can be restored, and a one-line preview. Built-in encodings:

============  ===============================================================================
``text``      ``str``
``json``      dicts with string keys, lists, tuples (restored as lists), numbers, bools, None
``float``     NaN and the infinities, which JSON cannot hold
``bytes``     ``bytes``, ``bytearray``, ``memoryview`` (base64)
``path``      :class:`pathlib.PurePath` (restored as :class:`pathlib.Path`)
``datetime``  :class:`datetime.datetime` and ``date`` (ISO 8601)
``pydantic``  pydantic models (``model_dump``); ``dataclass`` dataclass instances
``numpy``     arrays and scalars, ``pandas`` DataFrames and Series: only when that library is
              already imported by the program (it is never imported to *encode*)
``blob``      any of the above whose JSON exceeds the blob threshold (default 64 KiB): the
              payload goes to the store's blobs and the fact holds ``{"$blob": "sha256:…"}``
``repr``      the fallback: the value's ``repr``, ``restorable=False``, and an
              :class:`UnrestorableValueWarning`
============  ===============================================================================

Nothing is pickled and nothing read back is evaluated. A model or dataclass is rebuilt only if
its class is already imported (looked up in ``sys.modules``, never imported by name from the
data); otherwise its plain data is returned with a warning.

Extend with :meth:`Codec.register` on a :class:`Codec` you pass around, or with the module-level
:func:`register`, which adds to the codec that :func:`encode` and :func:`decode` use by default.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

try:
    import orjson
except ImportError:  # pragma: no cover - exercised by the tests that hide orjson
    orjson = None  # type: ignore[assignment]

from skillnb.errors import SkillnbError
from skillnb.store.codec.arrays import array_encoders
from skillnb.store.codec.encoders import (
    Encoder,
    UnrestorableValueWarning,
    clip_preview,
    dumps,
    std_encoders,
)
from skillnb.store.codec.typed import TypedEncoder

__all__ = [
    "DEFAULT_BLOB_THRESHOLD",
    "BlobStore",
    "Codec",
    "CodecError",
    "Encoded",
    "Encoder",
    "UnrestorableValueWarning",
    "clip_preview",
    "decode",
    "dumps",
    "encode",
    "register",
]

DEFAULT_BLOB_THRESHOLD = 64 * 1024
"""Encoded JSON larger than this many bytes is stored as a blob."""


class CodecError(SkillnbError):
    """A stored value cannot be decoded: unknown encoding, or malformed for its encoding."""


class BlobStore(Protocol):
    """What the codec needs from a store: blobs and a name for messages."""

    @property
    def location(self) -> str:
        """Where the store lives."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store bytes, return their reference."""
        ...

    def get_blob(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``."""
        ...


@dataclass(frozen=True)
class Encoded:
    """A value ready to be stored in a fact."""

    value: Any
    """JSON: the encoding's representation, or a ``{"$blob": ...}`` envelope."""
    encoding: str
    """The encoding's name."""
    restorable: bool
    """False when only a ``repr`` was kept."""
    preview: str
    """One line of at most 80 characters."""
    plain: bool = field(default=False, compare=False)
    """True when ``value`` is made only of exact JSON types (``dict`` with ``str`` keys,
    ``list``, ``str``, ``int``, ``bool``, finite ``float``, ``None``): it needs no conversion
    to be written as JSON."""


class Codec:
    """An ordered set of encoders (the first that accepts a value wins).

    Args:
        encoders: the encoders to use; default: the built-in ones.

    """

    def __init__(self, encoders: list[Encoder] | None = None) -> None:
        self._builtin = encoders is None  # only the built-in encoders: the plain fast path holds
        if encoders is None:
            encoders = [TypedEncoder(), *std_encoders(), *array_encoders()]
        self._encoders = list(encoders)

    def register(self, encoder: Encoder) -> None:
        """Add ``encoder`` before the others, so it takes precedence (even over a built-in)."""
        if not encoder.name or encoder.name in ("blob", "repr"):
            raise ValueError(f"invalid encoding name {encoder.name!r}")
        self._encoders.insert(0, encoder)
        self._builtin = False

    def encoder(self, name: str) -> Encoder | None:
        """Return the encoder that writes encoding ``name``, if any."""
        return next((e for e in self._encoders if e.name == name), None)

    def encode(
        self, value: object, store: BlobStore, *, blob_threshold: int = DEFAULT_BLOB_THRESHOLD
    ) -> Encoded:
        """Encode ``value``, putting it in a blob when its JSON exceeds ``blob_threshold`` bytes.

        Warns:
            UnrestorableValueWarning: no encoder took the value; its ``repr`` was kept.

        """
        floats: list[float] = []
        plain = _plain(value, 0, floats) if self._builtin else _NOT_PLAIN
        if plain is not _NOT_PLAIN:  # what the built-in text or json encoder would store
            fast = self._encode_plain(plain, store, blob_threshold, bool(floats))
            if fast is not None:
                return fast
        for encoder in self._encoders:
            if not encoder.accepts(value):
                continue
            try:
                stored = encoder.encode(value)
                text = dumps(stored)
                size = len(text.encode("utf-8"))
            except (TypeError, ValueError, OverflowError, RecursionError):
                continue
            # The default preview is that same JSON text: reuse it rather than dump again.
            own = type(encoder).preview is not Encoder.preview
            preview = clip_preview(encoder.preview(value, stored) if own else text)
            if size > blob_threshold:
                return _to_blob(encoder, stored, store, preview)
            return Encoded(stored, encoder.name, True, preview)
        text = _safe_repr(value)
        warnings.warn(
            f"a {type(value).__qualname__} value has no JSON encoding; its repr was stored and "
            "it cannot be restored (register an encoder for it, or convert it first)",
            UnrestorableValueWarning,
            stacklevel=2,
        )
        if len(text.encode("utf-8", "replace")) > blob_threshold:
            ref = store.put_blob(text.encode("utf-8", "replace"))
            envelope = {"$blob": ref, "encoding": "repr", "size": len(text)}
            return Encoded(envelope, "blob", False, clip_preview(text))
        return Encoded(text, "repr", False, clip_preview(text), plain=True)

    def _encode_plain(
        self, plain: Any, store: BlobStore, blob_threshold: int, floats: bool
    ) -> Encoded | None:
        """Encode a value :func:`_plain` copied; ``None``: it is not UTF-8 (a lone surrogate).

        ``floats``: the value holds a float. Without any, ``orjson`` (when installed) writes
        the very text :func:`~skillnb.store.codec.encoders.dumps` does, faster; it spells some
        floats differently (``1e-05`` as ``0.00001``), so those keep the standard library.
        """
        name = "text" if isinstance(plain, str) else "json"
        utf8 = _orjson_text(plain) if not floats else None
        if utf8 is not None:
            text, size = utf8.decode("utf-8"), len(utf8)
        else:
            text = dumps(plain)
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:
                return None  # the encoders' own path tells what to do with it
        preview = clip_preview(plain if isinstance(plain, str) else text)
        if size > blob_threshold:
            return _to_blob(_builtin(self, name), plain, store, preview)
        # Encoded(plain, name, True, preview, plain=True), without the frozen class's setattrs
        encoded = _new(Encoded)
        fields = {"value": plain, "encoding": name, "restorable": True, "preview": preview}
        fields["plain"] = True
        _set(encoded, "__dict__", fields)
        return encoded

    def decode(self, stored: Any, encoding: str, store: BlobStore) -> Any:
        """Rebuild the value stored as ``stored`` with ``encoding``.

        Raises:
            CodecError: unknown encoding, or ``stored`` is malformed for it.
            StoreCorrupted: a blob it refers to is damaged.
            KeyError: a blob it refers to is missing.

        """
        if encoding == "repr":
            return stored
        if encoding == "blob":
            return self._decode_blob(stored, store)
        encoder = self.encoder(encoding)
        if encoder is None:
            raise CodecError(
                f"{store.location}: unknown value encoding {encoding!r} (a newer skillnb, or a "
                "custom encoder that is not registered in this process)"
            )
        try:
            return encoder.decode(stored)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise CodecError(
                f"{store.location}: malformed {encoding!r} value ({exc.__class__.__name__}: {exc})"
            ) from exc

    def _decode_blob(self, stored: Any, store: BlobStore) -> Any:
        ref = stored.get("$blob") if isinstance(stored, dict) else None
        if not isinstance(ref, str) or not isinstance(stored.get("encoding"), str):
            raise CodecError(f"{store.location}: malformed blob envelope {stored!r:.200}")
        payload = store.get_blob(ref)
        inner = stored["encoding"]
        if inner == "repr":
            return payload.decode("utf-8", "replace")
        encoder = self.encoder(inner)
        if encoder is None:
            raise CodecError(f"{store.location}: unknown value encoding {inner!r} in a blob")
        try:
            return self.decode(encoder.from_blob(payload), inner, store)
        except (UnicodeDecodeError, ValueError) as exc:
            raise CodecError(f"{store.location}: malformed {inner!r} blob: {exc}") from exc


_NOT_PLAIN: Any = object()
_new = object.__new__
_set = object.__setattr__
_SCALARS = (str, int, bool)
_MAX_DEPTH = 200


def _orjson_text(value: Any) -> bytes | None:
    """``dumps(value)`` as UTF-8 by ``orjson``; ``None``: not installed, or it declines.

    Only for a plain value without floats: orjson then writes what the standard library's
    compact, non-ASCII encoder writes, and declines (an integer beyond 64 bits, a lone
    surrogate) what it cannot write the same way.
    """
    if orjson is None:
        return None
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is one
        return None


def _plain(value: Any, depth: int, floats: list[float]) -> Any:
    """A copy of ``value`` when it is made only of exact JSON types, else ``_NOT_PLAIN``.

    Exact types only (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``bool``, finite
    ``float``, ``None``), at most 200 levels deep: for such a value the built-in encoders agree
    that it is ``text`` (a string) or ``json`` stored as it is. Anything else (a tuple, a
    subclass, a set, ...) takes the encoders' own path.
    """
    kind = type(value)
    if value is None or kind in _SCALARS:
        return value
    if kind is float:
        floats.append(value)
        return value if value - value == 0 else _NOT_PLAIN  # NaN and infinities are not JSON
    if depth >= _MAX_DEPTH:
        return _NOT_PLAIN
    if kind is dict:
        copy = {}
        for k, v in value.items():
            if type(k) is not str:
                return _NOT_PLAIN
            if v is None or type(v) in _SCALARS:  # kept as it is: no call needed
                copy[k] = v
                continue
            item = _plain(v, depth + 1, floats)
            if item is _NOT_PLAIN:
                return _NOT_PLAIN
            copy[k] = item
        return copy
    if kind is list:
        items = [_plain(v, depth + 1, floats) for v in value]
        return _NOT_PLAIN if any(i is _NOT_PLAIN for i in items) else items
    return _NOT_PLAIN


def _builtin(codec: Codec, name: str) -> Encoder:
    encoder = codec.encoder(name)
    if encoder is None:  # pragma: no cover - the built-in codec always has both
        raise CodecError(f"no built-in {name!r} encoder")
    return encoder


def _to_blob(encoder: Encoder, stored: Any, store: BlobStore, preview: str) -> Encoded:
    payload = encoder.to_blob(stored)
    envelope = {"$blob": store.put_blob(payload), "encoding": encoder.name, "size": len(payload)}
    return Encoded(envelope, "blob", True, preview)


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as exc:  # noqa: BLE001 - any failure of a user's __repr__ is reported
        return f"<{type(value).__qualname__} object; repr() failed: {exc!r}>"


_default: Codec | None = None


def _default_codec() -> Codec:
    global _default  # the process-wide registry, built on first use
    if _default is None:
        _default = Codec()
    return _default


def register(encoder: Encoder) -> None:
    """Add ``encoder`` to the default codec used by :func:`encode` and :func:`decode`."""
    _default_codec().register(encoder)


def encode(
    value: object,
    store: BlobStore,
    *,
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
    codec: Codec | None = None,
) -> Encoded:
    """Encode ``value`` with ``codec`` (default: the process-wide one). See :meth:`Codec.encode`."""
    chosen = codec or _default or _default_codec()  # built once: no call on every write
    return chosen.encode(value, store, blob_threshold=blob_threshold)


def decode(stored: Any, encoding: str, store: BlobStore, *, codec: Codec | None = None) -> Any:
    """Decode with ``codec`` (default: the process-wide one). See :meth:`Codec.decode`."""
    return (codec or _default_codec()).decode(stored, encoding, store)
