"""The storage contract every backend implements (store layer).

A store keeps one run: an append-only journal of :class:`~skillnb.core.runstate.records.Event` s
with sequence numbers 1, 2, 3, ... (the run *version*), an optional compacted snapshot
(:class:`~skillnb.core.runstate.records.RunState`) and content-addressed blobs. The store never
interprets events; folding them into state is :func:`skillnb.core.runstate.state.apply`'s job.

Semantics every backend must keep (the conformance suite in ``tests/store`` checks them):

* **Durability.** When :meth:`Store.append` returns, the events survive a crash of the process
  (and, for file backends, of the machine: data and directory entries are fsynced). Called
  inside the caller's own hold of :meth:`Store.lock`, a backend may make them durable against
  a machine crash when that hold ends instead (the sidecar's group commit), never later.
* **Atomicity.** The events of one ``append`` call are committed all together or not at all.
* **Compare-and-swap.** ``append(..., expected_version=v)`` raises
  :class:`~skillnb.errors.ConflictError` ``(v, head)`` unless ``v`` is the latest committed
  version. Nothing is written then. No write is ever lost silently.
* **Visibility.** :meth:`Store.head` and :meth:`Store.read_since` see what other writers
  (other objects, threads or processes on the same location) committed, at a cost
  proportional to what changed, not to the size of the journal.
* **Compaction.** :meth:`Store.compact` stores a snapshot of the state at the head; after it,
  :meth:`Store.load` returns that snapshot and only the events after it. Old events remain
  readable through :meth:`Store.history`.
* **Locking.** :meth:`Store.lock` is an exclusive writer lock across processes, re-entrant for
  the same store object. ``append`` and ``compact`` take it themselves; a caller takes it
  around a read-validate-append sequence so that its validation sees the latest events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from skillnb.core.runstate.records import Event, EventDraft, RunState

__all__ = ["Loaded", "Store"]


@dataclass(frozen=True)
class Loaded:
    """What :meth:`Store.load` returns: the latest snapshot and the events after it."""

    snapshot: RunState | None
    """The compacted state, or ``None`` when the run was never compacted."""
    events: Sequence[Event] = field(default_factory=list)
    """Events with ``seq`` greater than the snapshot's version, oldest first (read-only; a
    backend may build each one only when it is read)."""


@runtime_checkable
class Store(Protocol):
    """Durable storage for one run's journal, snapshot and blobs."""

    @property
    def location(self) -> str:
        """A human-readable description of where the data lives."""
        ...

    def exists(self) -> bool:
        """True when the store holds at least one committed event or a snapshot."""
        ...

    def lock(self) -> AbstractContextManager[None]:
        """Take the exclusive writer lock (inter-process, re-entrant for this object)."""
        ...

    def head(self) -> int:
        """The latest committed version (0 for an empty store). Cheap: reads only the tail."""
        ...

    def load(self) -> Loaded:
        """Read the latest snapshot and every event after it.

        Raises:
            StoreCorrupted: a file is damaged (a torn *last* line is not damage: it is ignored).

        """
        ...

    def read_since(self, version: int) -> list[Event] | None:
        """Events with ``seq > version``, oldest first.

        Returns ``None`` when some of them are no longer in the live journal because another
        writer compacted it; the caller then calls :meth:`load` again.
        """
        ...

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Commit ``drafts`` durably as the next versions, all or nothing.

        ``sync=False`` asks for a cheaper write that survives a crash of the process but not
        necessarily of the machine until the next synced append; for markers whose loss only
        costs information (a step's start), never for acknowledged results.

        Raises:
            ConflictError: ``expected_version`` is not the latest committed version.

        """
        ...

    def compact(self, state: RunState) -> None:
        """Write ``state`` as the snapshot and start a fresh live journal.

        Raises:
            ConflictError: ``state.version`` is not the latest committed version.

        """
        ...

    def history(self) -> Iterator[Event]:
        """Every committed event from version 1, archived ones included, oldest first."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` under its content hash and return the reference (``sha256:<hex>``)."""
        ...

    def get_blob(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``.

        Raises:
            StoreCorrupted: ``ref`` is malformed, escapes the blob area, or its content no longer
                matches its hash.
            KeyError: no blob has that reference.

        """
        ...

    def close(self) -> None:
        """Release files and locks. The store may not be used afterwards."""
        ...
