"""The skill memory file format and the checks on what goes into it (service layer).

One UTF-8 JSON object per skill::

    {"skill_name": "doc-extract-engine", "schema_version": "1.0",
     "updated_at": "2026-02-25T11:29:09+08:00",
     "last_operation": {"action": "batch_extract", "summary": "...",
                        "timestamp": "2026-02-25T11:29:09+08:00", "files": ["a.pdf"]},
     "key_ids": {"last_session_id": 246, "last_batch_id": 374},
     "history": [{...older operation...}, {...newer operation...}]}

``history`` holds the operations recorded *before* ``last_operation``, oldest first and newest
last (the order they happened in). Timestamps are ISO 8601 with a UTC offset. A file that does
not match this shape exactly (unknown fields, wrong types, an unknown ``schema_version``) is
rejected with :class:`FormatProblem`; the caller decides what to do with it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, NoReturn, NotRequired, TypedDict

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)

__all__ = [
    "SCHEMA_VERSION",
    "FormatProblem",
    "MemoryFile",
    "Operation",
    "OperationRecord",
    "checked_files",
    "checked_ids",
    "checked_text",
    "decode",
    "encode",
]

SCHEMA_VERSION = "1.0"
"""The format version this release writes."""

_READABLE_VERSIONS = frozenset({SCHEMA_VERSION})
_MAX_DEPTH = 100


class FormatProblem(ValueError):
    """The bytes of a memory file are not a memory file this release can read."""


class Operation(TypedDict):
    """One recorded operation, as :class:`~skillnb.skillmemory.SkillMemory` returns it."""

    action: str
    summary: str
    timestamp: str
    files: list[str]
    run_id: NotRequired[str]


def _aware_timestamp(value: str) -> str:
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("timestamp has no UTC offset")
    return value


Timestamp = Annotated[str, AfterValidator(_aware_timestamp)]


class OperationRecord(BaseModel):
    """An operation as stored in the file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action: str
    """What was done, a short verb phrase such as ``batch_extract``."""
    summary: str
    """One line for a person or an LLM: what was done, to what, with which ids."""
    timestamp: Timestamp
    """When it was recorded: ISO 8601, seconds precision, with the local UTC offset."""
    files: list[str]
    """The files the operation touched (names or paths, as given)."""
    run_id: str | None = None
    """The run that recorded it, when a run did (optional: files without it stay valid)."""

    @model_serializer(mode="wrap")
    def _without_missing_run(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``run_id`` out when none was recorded, so older files keep their bytes."""
        data: dict[str, Any] = handler(self)
        if data.get("run_id") is None:
            data.pop("run_id", None)
        return data

    def as_operation(self) -> Operation:
        """Return a fresh plain-dict copy (``run_id`` only when one was recorded)."""
        operation = Operation(
            action=self.action,
            summary=self.summary,
            timestamp=self.timestamp,
            files=list(self.files),
        )
        if self.run_id is not None:
            operation["run_id"] = self.run_id
        return operation


class MemoryFile(BaseModel):
    """The whole file of one skill."""

    model_config = ConfigDict(extra="forbid", strict=True)

    skill_name: str
    """The skill this memory belongs to; it matches the file name."""
    schema_version: str
    """Format version of the file (``"1.0"``)."""
    updated_at: Timestamp
    """When the file was last written."""
    last_operation: OperationRecord | None
    """The most recent operation, ``None`` before the first one."""
    key_ids: dict[str, Any]
    """Ids worth remembering across sessions, merged over all operations (JSON values)."""
    history: list[OperationRecord]
    """Operations before ``last_operation``: oldest first, newest last, capped by the writer."""

    @field_validator("schema_version")
    @classmethod
    def _readable(cls, value: str) -> str:
        if value not in _READABLE_VERSIONS:
            raise ValueError(
                f"schema_version {value!r} is not one this release reads "
                f"({', '.join(sorted(_READABLE_VERSIONS))})"
            )
        return value


def _reject_constant(name: str) -> NoReturn:
    raise FormatProblem(f"{name} is not valid JSON")


def decode(raw: bytes, skill_name: str) -> MemoryFile:
    """Parse and validate the bytes of a memory file.

    Args:
        raw: the file content.
        skill_name: the skill the file is expected to belong to.

    Returns:
        The validated file.

    Raises:
        FormatProblem: the bytes are not UTF-8 JSON of the expected shape, the version is
            unknown, or the file belongs to another skill. The message says which.

    """
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise FormatProblem(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise FormatProblem(f"not JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError as exc:
        raise FormatProblem("JSON nested too deeply") from exc
    if not isinstance(data, dict):
        raise FormatProblem(f"a JSON {type(data).__name__}, not an object")
    try:
        memory = MemoryFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "<file>"
        raise FormatProblem(
            f"wrong shape at {where}: {first['msg']} ({exc.error_count()} problem(s))"
        ) from exc
    if memory.skill_name != skill_name:
        raise FormatProblem(f"belongs to skill {memory.skill_name!r}, not {skill_name!r}")
    return memory


def encode(memory: MemoryFile) -> bytes:
    """Serialise a memory file: UTF-8, non-ASCII kept as is, two-space indent, final newline."""
    text = json.dumps(memory.model_dump(), ensure_ascii=False, allow_nan=False, indent=2)
    return (text + "\n").encode("utf-8")


def checked_text(value: object, where: str) -> str:
    """Return ``value`` if it is a ``str`` that UTF-8 can encode (no lone surrogates).

    Raises:
        TypeError: ``value`` is not a ``str``.
        ValueError: ``value`` holds a lone surrogate, which a UTF-8 file cannot store.

    """
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{where} holds a lone surrogate at index {exc.start}; it cannot be stored as UTF-8"
        ) from exc
    return value


def _check_json(value: object, where: str, depth: int, active: set[int]) -> None:
    if isinstance(value, str):
        checked_text(value, where)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}; JSON has no NaN or Infinity")
    elif isinstance(value, (list, tuple, dict)):
        _check_container(value, where, depth, active)
    elif value is not None and not isinstance(value, (bool, int)):
        raise TypeError(f"{where} is a {type(value).__name__}, which is not a JSON value")


def _check_container(
    value: list[object] | tuple[object, ...] | dict[object, object],
    where: str,
    depth: int,
    active: set[int],
) -> None:
    if depth >= _MAX_DEPTH:
        raise ValueError(f"{where} is nested deeper than {_MAX_DEPTH} levels")
    if id(value) in active:
        raise ValueError(f"{where} contains itself (a circular reference)")
    active.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a {type(key).__name__} key {key!r}; keys must be str")
            checked_text(key, f"a key of {where}")
            _check_json(item, f"{where}[{key!r}]", depth + 1, active)
    else:
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1, active)
    active.discard(id(value))


def checked_ids(ids: Mapping[str, object] | None) -> dict[str, Any]:
    """Validate ids for recording and return a plain-JSON deep copy.

    Raises:
        TypeError: ``ids`` is not a mapping, a key is not a non-empty ``str``, or a value
            (at any depth) is not a JSON value.
        ValueError: a value is NaN/infinite, circular, nested too deeply, or holds a lone
            surrogate.

    """
    if ids is None:
        return {}
    if not isinstance(ids, Mapping):
        raise TypeError(f"ids must be a mapping of str to JSON values, not {type(ids).__name__}")
    copy: dict[str, Any] = {}
    for key, value in ids.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"ids keys must be non-empty str, got {key!r}")
        checked_text(key, f"ids key {key!r}")
        _check_json(value, f"ids[{key!r}]", 0, set())
        copy[key] = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    return copy


def checked_files(files: Iterable[object] | None) -> list[str]:
    """Validate the files of an operation and return them as a list of ``str``.

    ``os.PathLike`` objects are accepted and converted with ``os.fspath``.

    Raises:
        TypeError: ``files`` is a single string or not iterable, or an item is neither ``str``
            nor a ``str`` path.
        ValueError: a name holds a lone surrogate.

    """
    if files is None:
        return []
    if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
        raise TypeError(f"files must be a list of file names, not {type(files).__name__}")
    names: list[str] = []
    for index, item in enumerate(files):
        name = os.fspath(item) if isinstance(item, os.PathLike) else item
        if not isinstance(name, str):
            raise TypeError(f"files[{index}] is a {type(item).__name__}; file names must be str")
        names.append(checked_text(name, f"files[{index}]"))
    return names
