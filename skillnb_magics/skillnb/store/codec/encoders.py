"""The encoder base class and the built-in encoders for standard Python values (store layer).

See :mod:`skillnb.store.codec.values` for how encoders are chosen and what each encoding stores.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import sys
import warnings
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path, PurePath
from typing import Any, ClassVar

from pydantic import BaseModel

from skillnb.core.safejson import load_json
from skillnb.errors import SkillnbWarning

__all__ = [
    "PREVIEW_CHARS",
    "Encoder",
    "UnrestorableValueWarning",
    "clip_preview",
    "dumps",
    "find_loaded_class",
    "plain_json",
    "std_encoders",
]

PREVIEW_CHARS = 80
"""The longest preview."""

_MAX_DEPTH = 200


_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Serialise strict JSON (no NaN) compactly, keeping non-ASCII text readable."""
    return _STRICT.encode(value)


def clip_preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """Make ``text`` one line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Encoder:
    """One way of storing values. Subclass it and set :attr:`name`.

    ``encode`` may raise ``TypeError`` or ``ValueError`` to decline a value it accepted at
    first sight (the next encoder is then tried).
    """

    name: ClassVar[str] = ""
    """The encoding's name, stored with each value; never reuse one for another format."""

    def accepts(self, value: object) -> bool:
        """Tell whether this encoder handles ``value`` (cheap: a type check)."""
        raise NotImplementedError

    def encode(self, value: object) -> Any:
        """Return the JSON form of ``value``."""
        raise NotImplementedError

    def decode(self, stored: Any) -> object:
        """Rebuild the value from its JSON form."""
        return stored

    def preview(self, value: object, stored: Any) -> str:
        """Return a short rendering (clipped by the codec)."""
        return dumps(stored)

    def to_blob(self, stored: Any) -> bytes:
        """Return the bytes to keep in a blob when the JSON form is too large."""
        return dumps(stored).encode("utf-8")

    def from_blob(self, payload: bytes) -> Any:
        """Return the JSON form back from a blob's bytes."""
        return load_json(payload)


def plain_json(value: object, depth: int = 0) -> Any:
    """Return ``value`` as plain JSON data (tuples become lists, number subclasses their base).

    Raises:
        TypeError: something in ``value`` is not JSON (a set, a non-string key, an object).
        ValueError: a float is NaN or infinite, or the nesting is deeper than 200.

    """
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a dict key is not a string")
        return {str(k): plain_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v, depth + 1) for v in value]
    return _plain_scalar(value)


def _plain_scalar(value: object) -> Any:
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not JSON")
        return float(value)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
        return _plain_scalar(value.item())
    raise TypeError(f"a {type(value).__qualname__} is not JSON")


def find_loaded_class(spec: str, check: Callable[[type], bool]) -> type | None:
    """Find the class named ``module:qualname`` among already imported modules.

    Nothing is imported: data read from a file must not choose which code runs.
    """
    module_name, _, qualname = spec.partition(":")
    target: object = sys.modules.get(module_name)
    parts = qualname.split(".")
    if target is None or not all(p.isidentifier() for p in parts):
        return None
    for part in parts:
        target = getattr(target, part, None)
    return target if isinstance(target, type) and check(target) else None


def _class_spec(value: object) -> str:
    cls = type(value)
    return f"{cls.__module__}:{cls.__qualname__}"


def _unrestored(spec: str, data: Any) -> Any:
    warnings.warn(
        f"class {spec} is not imported (or no longer matches the data); returning its data",
        UnrestorableValueWarning,
        stacklevel=4,
    )
    return data


class UnrestorableValueWarning(SkillnbWarning):
    """A value was stored as its ``repr`` (or restored as plain data): not the original object."""


class _TextEncoder(Encoder):
    """``str`` values, stored as JSON strings."""

    name = "text"

    def accepts(self, value: object) -> bool:
        return isinstance(value, str)

    def encode(self, value: object) -> Any:
        return str(value)

    def preview(self, value: object, stored: Any) -> str:
        return str(stored)


class _JsonEncoder(Encoder):
    """Dicts with string keys, lists, tuples, finite numbers, bools and None."""

    name = "json"

    def accepts(self, value: object) -> bool:
        return value is None or isinstance(value, dict | list | tuple | int | float)

    def encode(self, value: object) -> Any:
        return plain_json(value)


class _FloatEncoder(Encoder):
    """NaN and the infinities, stored as ``"nan"``, ``"inf"``, ``"-inf"``."""

    name = "float"

    def accepts(self, value: object) -> bool:
        return isinstance(value, float) and not math.isfinite(value)

    def encode(self, value: object) -> Any:
        if not isinstance(value, float):
            raise TypeError("not a float")
        return repr(float(value))

    def preview(self, value: object, stored: Any) -> str:
        return str(stored)

    def decode(self, stored: Any) -> object:
        if stored not in ("nan", "inf", "-inf"):
            raise ValueError(f"not a non-finite float: {stored!r}")
        return float(stored)


class _BytesEncoder(Encoder):
    """Binary data, base64 in the fact and raw bytes in a blob."""

    name = "bytes"

    def accepts(self, value: object) -> bool:
        return isinstance(value, bytes | bytearray | memoryview)

    def encode(self, value: object) -> Any:
        return base64.b64encode(_as_bytes(value)).decode("ascii")

    def decode(self, stored: Any) -> object:
        try:
            return base64.b64decode(stored, validate=True)
        except binascii.Error as exc:
            raise ValueError(str(exc)) from None

    def preview(self, value: object, stored: Any) -> str:
        return f"<{len(_as_bytes(value))} bytes>"

    def to_blob(self, stored: Any) -> bytes:
        return base64.b64decode(stored)

    def from_blob(self, payload: bytes) -> Any:
        return base64.b64encode(payload).decode("ascii")


class _PathEncoder(Encoder):
    """File-system paths, restored as :class:`pathlib.Path`."""

    name = "path"

    def accepts(self, value: object) -> bool:
        return isinstance(value, PurePath)

    def encode(self, value: object) -> Any:
        return str(value)

    def decode(self, stored: Any) -> object:
        if not isinstance(stored, str):
            raise TypeError(f"a path is stored as a string, not {stored!r}")
        return Path(stored)

    def preview(self, value: object, stored: Any) -> str:
        return str(stored)


class _DateTimeEncoder(Encoder):
    """Datetimes and dates, as ISO 8601 text (a datetime's always holds a ``T``)."""

    name = "datetime"

    def accepts(self, value: object) -> bool:
        return isinstance(value, date)

    def encode(self, value: object) -> Any:
        if not isinstance(value, date):
            raise TypeError("not a date")
        return value.isoformat()

    def decode(self, stored: Any) -> object:
        if not isinstance(stored, str):
            raise TypeError(f"a date is stored as text, not {stored!r}")
        return datetime.fromisoformat(stored) if "T" in stored else date.fromisoformat(stored)

    def preview(self, value: object, stored: Any) -> str:
        return str(stored)


class _PydanticEncoder(Encoder):
    """Pydantic models: their class and ``model_dump(mode="json")``."""

    name = "pydantic"

    def accepts(self, value: object) -> bool:
        return isinstance(value, BaseModel)

    def encode(self, value: object) -> Any:
        if not isinstance(value, BaseModel):
            raise TypeError("not a pydantic model")
        return {"type": _class_spec(value), "data": plain_json(value.model_dump(mode="json"))}

    def decode(self, stored: Any) -> object:
        spec, data = stored["type"], stored["data"]
        cls = find_loaded_class(spec, lambda c: issubclass(c, BaseModel))
        if cls is None or not issubclass(cls, BaseModel):
            return _unrestored(spec, data)
        return cls.model_validate(data)

    def preview(self, value: object, stored: Any) -> str:
        return f"{type(value).__name__}({dumps(stored['data'])})"


class _DataclassEncoder(Encoder):
    """Dataclass instances whose fields are JSON (nested dataclasses come back as dicts)."""

    name = "dataclass"

    def accepts(self, value: object) -> bool:
        return dataclasses.is_dataclass(value) and not isinstance(value, type)

    def encode(self, value: object) -> Any:
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            raise TypeError("not a dataclass instance")
        data = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"type": _class_spec(value), "data": plain_json(data)}

    def decode(self, stored: Any) -> object:
        spec, data = stored["type"], stored["data"]
        cls = find_loaded_class(spec, dataclasses.is_dataclass)
        if cls is None:
            return _unrestored(spec, data)
        try:
            return cls(**data)
        except TypeError:
            return _unrestored(spec, data)

    def preview(self, value: object, stored: Any) -> str:
        return f"{type(value).__name__}({dumps(stored['data'])})"


def std_encoders() -> list[Encoder]:
    """Return fresh instances of the encoders for standard values, in the order they are tried."""
    return [
        _TextEncoder(),
        _JsonEncoder(),
        _FloatEncoder(),
        _BytesEncoder(),
        _PathEncoder(),
        _DateTimeEncoder(),
        _PydanticEncoder(),
        _DataclassEncoder(),
    ]


def _as_bytes(value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError("not binary data")
    return bytes(value)
