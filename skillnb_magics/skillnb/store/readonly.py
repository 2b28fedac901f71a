"""A store that can only be read: what GET routes and listings open runs on (store layer).

The side panel polls ``GET /skillnb/api/version`` and reads ``GET /skillnb/api/run`` for any
notebook a user opens, including ones just cloned from someone else's repository. Those
requests must never create a run, a folder or a file, nor take the writer lock (which
creates and chmods a lock file). :class:`ReadOnlyStore` wraps the real store and refuses
every write with :class:`ReadOnlyRun`, so a GET is read-only by construction, whatever the
run object would otherwise do on open.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from skillnb.errors import SkillnbError

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event, EventDraft, RunState
    from skillnb.store.protocol import Loaded, Store

__all__ = ["ReadOnlyRun", "ReadOnlyStore"]


class ReadOnlyRun(SkillnbError):
    """A read-only request would have written to the run (it has none yet, for instance)."""

    def __init__(self, location: str) -> None:
        super().__init__(f"{location}: no SKILL.nb run to read here (reading never creates one)")


class ReadOnlyStore:
    """Every read of ``store``; every write refused with :class:`ReadOnlyRun`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def location(self) -> str:
        """Where the wrapped store lives."""
        return self._store.location

    def exists(self) -> bool:
        """Whether the wrapped store holds a run."""
        return self._store.exists()

    def lock(self) -> AbstractContextManager[None]:
        """Refuse: taking the lock is the first step of every write."""
        raise ReadOnlyRun(self.location)

    def run_id(self) -> str | None:
        """The run the wrapped store holds now, when it names it (so a replaced run shows)."""
        named = getattr(self._store, "run_id", None)
        found = named() if callable(named) else None
        return found if isinstance(found, str) else None

    def head(self) -> int:
        """The latest committed version."""
        return self._store.head()

    def load(self) -> Loaded:
        """The snapshot and the events after it."""
        return self._store.load()

    def read_since(self, version: int) -> list[Event] | None:
        """The events after ``version``."""
        return self._store.read_since(version)

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Refuse."""
        raise ReadOnlyRun(self.location)

    def compact(self, state: RunState) -> None:
        """Refuse."""
        raise ReadOnlyRun(self.location)

    def history(self) -> Iterator[Event]:
        """Every committed event."""
        return self._store.history()

    def put_blob(self, data: bytes) -> str:
        """Refuse."""
        raise ReadOnlyRun(self.location)

    def get_blob(self, ref: str) -> bytes:
        """The bytes stored under ``ref``."""
        return self._store.get_blob(ref)

    def close(self) -> None:
        """Close the wrapped store."""
        self._store.close()
