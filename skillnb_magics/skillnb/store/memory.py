"""The in-memory reference backend (store layer).

It is the executable definition of :class:`~skillnb.store.protocol.Store`'s semantics, used by
tests and by runs that need no persistence. Several ``MemoryStore`` objects built over one
:class:`MemoryData` behave like several processes sharing one sidecar.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from skillnb.core.runstate.records import Event, EventDraft, RunState
from skillnb.errors import ConflictError
from skillnb.store.protocol import Loaded
from skillnb.store.sidecar.blobs import blob_ref, check_blob_ref
from skillnb.store.sidecar.journal import encode_events

__all__ = ["MemoryData", "MemoryStore"]


@dataclass
class MemoryData:
    """The shared content of one in-memory run."""

    events: list[Event] = field(default_factory=list)
    snapshot: RunState | None = None
    blobs: dict[str, bytes] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)


class MemoryStore:
    """A :class:`~skillnb.store.protocol.Store` that keeps everything in memory."""

    def __init__(self, data: MemoryData | None = None) -> None:
        self._data = data if data is not None else MemoryData()

    @property
    def data(self) -> MemoryData:
        """The shared content (another ``MemoryStore`` over it acts as a second writer)."""
        return self._data

    @property
    def location(self) -> str:
        """Describe the store."""
        return "<memory>"

    def exists(self) -> bool:
        """Tell whether something was committed."""
        return bool(self._data.events) or self._data.snapshot is not None

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Take the shared lock."""
        with self._data.lock:
            yield

    def head(self) -> int:
        """Return the latest committed version."""
        with self._data.lock:
            return self._data.events[-1].seq if self._data.events else 0

    def load(self) -> Loaded:
        """Return the snapshot and the events after it."""
        with self._data.lock:
            snap = self._data.snapshot
            after = snap.version if snap is not None else 0
            return Loaded(
                snapshot=snap.model_copy(deep=True) if snap is not None else None,
                events=_copies(e for e in self._data.events if e.seq > after),
            )

    def read_since(self, version: int) -> list[Event] | None:
        """Return the events after ``version`` (memory never drops events, so never ``None``)."""
        with self._data.lock:
            return _copies(self._data.events[max(version, 0) :])

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Commit the drafts as the next versions (``sync`` changes nothing in memory).

        Raises:
            ConflictError: ``expected_version`` is not the latest committed version.
            ValueError: a draft's data is not JSON (the sidecar could not journal it either).

        """
        with self._data.lock:
            head = self.head()
            if expected_version != head:
                raise ConflictError(expected_version, head)
            events = [
                Event(seq=head + i, type=d.type, at=d.at, data=d.data)
                for i, d in enumerate(drafts, start=1)
            ]
            encode_events(events)  # same JSON check as the sidecar's journal
            self._data.events.extend(_copies(events))
            return events

    def compact(self, state: RunState) -> None:
        """Keep ``state`` as the snapshot."""
        with self._data.lock:
            head = self.head()
            if state.version != head:
                raise ConflictError(state.version, head)
            self._data.snapshot = state.model_copy(deep=True)

    def history(self) -> Iterator[Event]:
        """Yield every event from version 1."""
        with self._data.lock:
            events = _copies(self._data.events)
        yield from events

    def put_blob(self, data: bytes) -> str:
        """Store bytes under their hash."""
        ref = blob_ref(data)
        with self._data.lock:
            self._data.blobs[ref] = bytes(data)
        return ref

    def get_blob(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``.

        Raises:
            StoreCorrupted: ``ref`` is malformed (the sidecar's rule: ``sha256:<64 hex>``).
            KeyError: no blob has that reference.

        """
        check_blob_ref(ref, self.location)
        with self._data.lock:
            return self._data.blobs[ref]

    def close(self) -> None:
        """Release nothing: there is nothing to release."""


def _copies(events: Iterable[Event]) -> list[Event]:
    """Copy events, so that a caller mutating one cannot change the history (as on disk)."""
    return [e.model_copy(deep=True) for e in events]
