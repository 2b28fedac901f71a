"""Reading and writing ``snapshot.json``, the compacted run state (store layer).

The snapshot is a :class:`~skillnb.core.records.RunState` as pydantic JSON (field aliases
used, so a firing reads ``"from"``/``"to"``). It is only ever replaced atomically (see
:func:`skillnb.store.durable.atomic_write`), so a reader sees a whole old or a whole new one.
Reading takes pydantic's strict JSON path first, which is fast enough for ten thousand facts;
an older format is migrated and a damaged file is reported as
:class:`~skillnb.errors.StoreCorrupted`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from skillnb.core.records import RECORD_VERSION, RunState
from skillnb.core.safejson import load_json
from skillnb.errors import StoreCorrupted
from skillnb.store.durable import read_or_none
from skillnb.store.journal import describe_validation_error
from skillnb.store.migrations import SNAPSHOT_MIGRATIONS, upgrade

__all__ = ["encode_snapshot", "read_snapshot"]

_READ_DEPTH = 192  # as deep as the journal's lines may be, plus the run state around a value


def encode_snapshot(state: RunState) -> bytes:
    """Encode ``state`` as the bytes of ``snapshot.json``."""
    return state.model_dump_json(by_alias=True).encode("utf-8") + b"\n"


def read_snapshot(path: Path) -> RunState | None:
    """Read the snapshot at ``path``; ``None`` when there is none.

    Raises:
        StoreCorrupted: the file is empty, not UTF-8 JSON, or not a valid ``RunState``.
        NewerFormatError: it was written by a newer skillnb.
        UnsafePath: it is a symlink or not a regular file (nothing is read through it).

    """
    raw = read_or_none(path)
    if raw is None:
        return None
    error: ValidationError | None = None
    try:
        state = RunState.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        error = exc
    else:
        if state.v == RECORD_VERSION:
            return state
    return _read_other(raw, error, path)


def _read_other(raw: bytes, error: ValidationError | None, path: Path) -> RunState:
    """Migrate an older format, or explain the error (the slow path)."""
    if not raw.strip():
        raise StoreCorrupted(path, "empty snapshot file")
    try:
        obj = load_json(raw, max_depth=_READ_DEPTH)
    except UnicodeDecodeError as exc:
        raise StoreCorrupted(path, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise StoreCorrupted(path, f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise StoreCorrupted(path, f"a JSON {type(obj).__name__}, not a run state object")
    original = obj.get("v")
    obj = upgrade(obj, SNAPSHOT_MIGRATIONS, path=path, current=RECORD_VERSION)
    if original == RECORD_VERSION:
        detail = describe_validation_error(error) if error is not None else "not a run state"
        raise StoreCorrupted(path, f"not a valid run state: {detail}")
    try:
        return RunState.model_validate(obj)
    except ValidationError as exc:
        detail = describe_validation_error(exc)
        raise StoreCorrupted(path, f"after migration from v{original}: {detail}") from None
