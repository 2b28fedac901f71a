"""Decoding the team store's rows into records (store layer).

An event row's ``line`` and a snapshot row's ``body`` hold the same JSON a sidecar journal
line and ``snapshot.json`` hold (without the line's ``crc``: the database is trusted, see
:mod:`skillnb.store.postgres.schema`), so the same rules apply: the fast strict path for the current
format, migrations for older ones, :class:`~skillnb.store.migrations.NewerFormatError` for
newer ones, and :class:`~skillnb.errors.StoreCorrupted` for anything else, a ``run.created``
after event 1 included (the schema refuses to write one too).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from skillnb.core.runstate.records import RECORD_VERSION, Event, RunState
from skillnb.errors import StoreCorrupted
from skillnb.store.migrations import EVENT_MIGRATIONS, SNAPSHOT_MIGRATIONS, upgrade
from skillnb.store.sidecar.journal import describe_validation_error

__all__ = ["decode_event", "decode_snapshot"]


def decode_event(location: str, seq: int, line: str) -> Event:
    """The event stored as ``line`` under sequence number ``seq``.

    Raises:
        StoreCorrupted: the text is not a valid event, or not event ``seq``.
        NewerFormatError: a newer skillnb wrote it.

    """
    error: ValidationError | None = None
    try:
        event = Event.model_validate_json(line, strict=True)
    except ValidationError as exc:
        error = exc.with_traceback(None)  # no cycle through this frame (it holds the read)
    else:
        if event.v == RECORD_VERSION and event.seq == seq:
            return _first_creates(location, event)
    try:
        record = upgrade(json.loads(line), EVENT_MIGRATIONS, path=Path(location), line=seq)
        event = Event.model_validate(record)
    except (ValueError, ValidationError) as exc:
        detail = describe_validation_error(error) if error is not None else str(exc)
        raise StoreCorrupted(location, f"event {seq}: {detail}") from None
    if event.seq != seq:
        raise StoreCorrupted(location, f"event {seq} says it is event {event.seq}")
    return _first_creates(location, event)


def _first_creates(location: str, event: Event) -> Event:
    """``event``, unless it is a ``run.created`` after event 1 (a run is created once)."""
    if event.type == "run.created" and event.seq != 1:
        raise StoreCorrupted(
            location,
            f"event {event.seq} creates the run again (run id {str(event.data.get('run_id'))!r}); "
            "a run is created by its event 1 only",
        )
    return event


def decode_snapshot(location: str, body: str) -> RunState:
    """The run state stored as ``body``.

    Raises:
        StoreCorrupted: the text is not a valid run state.
        NewerFormatError: a newer skillnb wrote it.

    """
    try:
        state = RunState.model_validate_json(body, strict=True)
    except ValidationError:
        pass
    else:
        if state.v == RECORD_VERSION:
            return state
    try:
        record = upgrade(json.loads(body), SNAPSHOT_MIGRATIONS, path=Path(location))
        return RunState.model_validate(record)
    except (ValueError, ValidationError) as exc:
        raise StoreCorrupted(location, f"snapshot: {exc}") from None
