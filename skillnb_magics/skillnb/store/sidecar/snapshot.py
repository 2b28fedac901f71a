"""Reading and writing ``snapshot.json``, the compacted run state (store layer).

The snapshot is a :class:`~skillnb.core.runstate.records.RunState` as pydantic JSON (field aliases
used, so a firing reads ``"from"``/``"to"``), sealed with a checksum as every journal line is::

    {"v":2,"crc":"1a2b3c4d","state":{"v":1,"run_id":"…",…}}

``v`` is the format of the file (:data:`SNAPSHOT_FORMAT`), ``crc`` the CRC-32 of the bytes of
``state`` exactly as written, as 8 lowercase hex digits, and ``state`` the run state (its own
record format ``v``, migrated as before). One flipped bit anywhere in the state is
:class:`~skillnb.errors.StoreCorrupted` naming the file, never another value read silently;
``skillnb repair`` moves such a snapshot aside and the run is folded again from its history.

Snapshots of format 1 (a bare ``RunState``, written before the checksum) are still read, and
trusted as before: their names are checked like everything read back, and the next
compaction writes the run's snapshot sealed. Every name the state holds is checked again
(:func:`~skillnb.core.limits.state_problem`), as the journal's are.

It is only ever replaced atomically (see :func:`skillnb.store.durable.atomic_write`), so a
reader sees a whole old or a whole new one. Reading takes pydantic's strict JSON path first,
which is fast enough for ten thousand facts; an older format is migrated and a damaged file is
reported as :class:`~skillnb.errors.StoreCorrupted`.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from pydantic import ValidationError

from skillnb.core.limits import state_problem
from skillnb.core.runstate.records import RECORD_VERSION, RunState
from skillnb.core.safejson import load_json
from skillnb.errors import StoreCorrupted
from skillnb.store.durable import read_or_none
from skillnb.store.migrations import SNAPSHOT_MIGRATIONS, NewerFormatError, upgrade
from skillnb.store.sidecar.journal import describe_validation_error

__all__ = ["SNAPSHOT_FORMAT", "encode_snapshot", "read_snapshot"]

SNAPSHOT_FORMAT = 2
"""Format of ``snapshot.json`` itself: 2 seals the state with a checksum, 1 did not."""

_READ_DEPTH = 192  # as deep as the journal's lines may be, plus the run state around a value
_SEALED = re.compile(rb'\{"v":(\d+),"crc":"([0-9a-f]{8})","state":')
"""How a sealed snapshot begins: its format, then its checksum, then the state."""
_END = b"}\n"


def encode_snapshot(state: RunState) -> bytes:
    """Encode ``state`` as the bytes of ``snapshot.json`` (sealed with its checksum)."""
    body = state.model_dump_json(by_alias=True).encode("utf-8")
    head = b'{"v":%d,"crc":"%08x","state":' % (SNAPSHOT_FORMAT, zlib.crc32(body))
    return head + body + _END


def read_snapshot(path: Path) -> RunState | None:
    """Read the snapshot at ``path``; ``None`` when there is none.

    Raises:
        StoreCorrupted: the file is empty, not UTF-8 JSON, fails its checksum, is not a valid
            ``RunState``, or holds a name the run would refuse to write.
        NewerFormatError: it was written by a newer skillnb.
        UnsafePath: it is a symlink or not a regular file (nothing is read through it).

    """
    raw = read_or_none(path)
    if raw is None:
        return None
    sealed = _SEALED.match(raw)
    body = _unsealed(raw, sealed, path) if sealed is not None else raw
    state = _state(body, path)
    problem = state_problem(state)
    if problem is not None:
        raise StoreCorrupted(path, f"the run state holds {problem}")
    return state


def _unsealed(raw: bytes, sealed: re.Match[bytes], path: Path) -> bytes:
    """The state's bytes of a sealed snapshot, once its format and checksum are checked."""
    found = int(sealed[1])
    if found > SNAPSHOT_FORMAT:
        raise NewerFormatError(path, found, SNAPSHOT_FORMAT, line=None)
    if found != SNAPSHOT_FORMAT or not raw.endswith(_END):
        raise StoreCorrupted(path, f"malformed sealed snapshot (format v{found})")
    body = raw[sealed.end() : -len(_END)]
    if zlib.crc32(body) != int(sealed[2], 16):
        raise StoreCorrupted(path, "checksum mismatch (the snapshot was altered or damaged)")
    return body


def _state(raw: bytes, path: Path) -> RunState:
    """The run state in ``raw`` (a ``RunState``'s JSON, of any record format)."""
    error: ValidationError | None = None
    try:
        state = RunState.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        error = exc.with_traceback(None)  # no cycle through this frame (it holds the read)
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
    if "state" in obj and "crc" in obj:  # a sealed snapshot, but not as SKILL.nb writes one
        if type(original) is int and original > SNAPSHOT_FORMAT:
            raise NewerFormatError(path, original, SNAPSHOT_FORMAT, line=None)
        raise StoreCorrupted(path, "malformed sealed snapshot (its checksum cannot be checked)")
    obj = upgrade(obj, SNAPSHOT_MIGRATIONS, path=path, current=RECORD_VERSION)
    if original == RECORD_VERSION:
        detail = describe_validation_error(error) if error is not None else "not a run state"
        raise StoreCorrupted(path, f"not a valid run state: {detail}")
    try:
        return RunState.model_validate(obj)
    except ValidationError as exc:
        detail = describe_validation_error(exc)
        raise StoreCorrupted(path, f"after migration from v{original}: {detail}") from None
