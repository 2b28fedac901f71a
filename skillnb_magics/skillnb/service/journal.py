"""The run's journal core: state, refresh, commit, drafts, decoding (service layer).

:class:`RunJournal` is the one object that talks to a run's :class:`~skillnb.store.Store`.
It folds the journal into a :class:`~skillnb.core.runstate.records.RunState`, catches up with what
other processes committed (:meth:`RunJournal.refresh`), and commits new events under the
store's lock after validating them against the latest state (:meth:`RunJournal.commit`,
with an optional ``expected_version`` compare-and-swap). Steps, gates, batches and the view
receive it; none of them knows about :class:`skillnb.run.Run`.
"""

from __future__ import annotations

import secrets
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from skillnb.core.capacity import CapacityWarning, Limits, due, well_within
from skillnb.core.gcpause import gc_paused
from skillnb.core.limits import check_event
from skillnb.core.runstate.eventrecords import first_of_type
from skillnb.core.runstate.records import Event, EventDraft, Fact, JsonValue, RunState, replaced
from skillnb.core.runstate.state import MalformedEvent, apply_all, apply_written
from skillnb.core.workflow.model import Workflow
from skillnb.errors import (
    ConflictError,
    RunReplaced,
    SkillnbError,
    SkillnbWarning,
    StateNotWritable,
    StoreCorrupted,
    not_writable,
)
from skillnb.service.clock import default_user, now
from skillnb.service.factvalues import FactValues
from skillnb.service.skillfeed import SkillFeed
from skillnb.store.codec import values as codec
from skillnb.store.protocol import Store

if TYPE_CHECKING:
    from skillnb.skillmemory import SkillMemory

__all__ = ["Clock", "JournalListener", "ListenerWarning", "RunJournal"]

Clock = Callable[[], datetime]
JournalListener = Callable[[list[Event]], None]
"""Called after each commit through this journal with the events it appended."""

RECENT = 200
"""How many recent events are kept in memory for :meth:`RunJournal.history`."""
_COMPACT_AFTER = 2000
_SPECULATIONS = 3
"""Tries of a speculative commit before it waits for the lock (see :meth:`RunJournal.commit`)."""


def _offered(store: Store, name: str) -> Any:
    """The store's optional method ``name``, or ``None`` when it offers none."""
    method = getattr(store, name, None)
    return method if callable(method) else None


class ListenerWarning(SkillnbWarning):
    """A run listener (a view, the mirror) raised; the commit itself succeeded."""


class RunJournal:
    """State, catch-up and commits of one run over one store.

    Attributes:
        store: where the journal lives.
        workflow: the bound definition, or ``None`` for a run that only keeps facts.
        clock: returns the current time (timezone-aware).
        user: who approvals and milestones are attributed to by default.
        env: the environment settings are read from.

    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        user: str | None = None,
        env: Mapping[str, str],
        memory: SkillMemory | bool | None = None,
        blob_threshold: int | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.store = store
        self.env = dict(env)
        self.limits = limits or Limits.from_env(self.env)
        """How much the run keeps live before archiving old versions, and when it warns."""
        self._warned: set[str] = set()
        self._shared = False
        """Whether the last commit found others' events under the lock: the next one then
        catches up before taking it, so the lock is held for the append, not the reading."""
        self.clock: Clock = clock or now
        self.user = user or default_user(self.env)
        self.workflow: Workflow | None = None
        self._blob_threshold = blob_threshold
        self._listeners: list[JournalListener] = []
        self._recent: deque[Event] = deque(maxlen=RECENT)
        self._decoded: dict[str, tuple[int, Any]] = {}  # key -> (version, its value)
        self._tail = 0
        self.skill = SkillFeed(self, memory)
        """What the run tells its skill memory (:class:`~skillnb.service.skillfeed.SkillFeed`)."""
        self._mutex = threading.RLock()  # the heartbeat thread commits renewals too
        self._closed = False
        self._replaced: RunReplaced | None = None
        # From the OS, not uuid4: code that mocks uuid4 (tests do) must not see a draw here.
        self.new_id = secrets.token_hex(6)
        """The id this object gives the run if it creates it."""
        self._speculate: Callable[[], AbstractContextManager[None]] | None = _offered(
            store, "speculate"
        )
        self._catch_up: Callable[[int, str | None], Sequence[Event] | None] | None = _offered(
            store, "catch_up"
        )
        self._sizes = (_offered(store, "live_bytes"), _offered(store, "snapshot_bytes"))
        self._usage: Callable[[], tuple[int, int]] | None = _offered(store, "usage_bytes")
        self._append_current: Callable[..., list[Event] | None] | None = _offered(
            store, "append_current"
        )
        self.state = RunState(run_id="")
        """The live folded state (read-only by contract; call :meth:`refresh` first)."""
        self.reload()
        if self.state.workflow_definition is not None:
            self.workflow = self.stored_workflow()

    # -- loading -------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the snapshot and the journal after it again, from scratch."""
        with self._mutex, gc_paused():  # many objects that stay alive: nothing to collect
            self._check_usable()
            loaded = self.store.load()
            snapshot = loaded.snapshot
            ours, recent, tail = self.state, self._recent.copy(), self._tail
            self.state = snapshot.model_copy(deep=True) if snapshot else RunState(run_id="")
            self._recent.clear()
            self._tail = 0
            try:
                self._fold(loaded.events)
            finally:
                if ours.run_id and self.state.run_id != ours.run_id:
                    # Another run (or none) stands here now: keep ours, never mix the two.
                    self._replaced = RunReplaced(ours.run_id, self.state.run_id or None)
                    self.state, self._recent, self._tail = ours, recent, tail
            if self._replaced is not None:
                raise self._replaced

    def _fold(self, events: Iterable[Event]) -> None:
        if type(events) is list and len(events) == 1 and self.state.run_id:  # one commit's
            try:
                apply_all(self.state, events)
            except MalformedEvent as exc:  # nothing was folded
                raise StoreCorrupted(self.store.location, str(exc)) from exc
            self._recent.append(events[0])
            self._tail += 1
            return
        batch = events if type(events) is list or isinstance(events, Sequence) else list(events)
        folded = batch
        try:
            apply_all(self.state, batch)  # describes the last event only
        except MalformedEvent as exc:
            folded = [e for e in batch if e.seq <= self.state.version]
            raise StoreCorrupted(self.store.location, str(exc)) from exc
        finally:
            if not self.state.run_id:
                created = first_of_type(folded, "run.created")
                if created is not None:
                    self.state.run_id = str(created.data.get("run_id", ""))
            self._recent.extend(folded[-RECENT:])
            self._tail += len(folded)

    def refresh(self) -> RunState:
        """Catch up with what other writers committed (cheap when nothing changed).

        Returns:
            The live state (read-only by contract).

        """
        with self._mutex:
            if self._closed or self._replaced is not None:
                self._check_usable()
            self._fold_news()
            return self.state

    def _fold_news(self) -> None:
        """Fold what others committed after our version (mutex held, run usable)."""
        new = self._changes()
        if new is None:
            self.reload()  # raises RunReplaced when another run (or none) is there now
        elif new:
            self._fold(new)

    def _changes(self) -> Sequence[Event] | None:
        """What others committed after our version; ``None`` when we must load again.

        A store that offers ``catch_up(version, run_id)`` answers in one look (the sidecar);
        otherwise :meth:`Store.read_since`, the run the store names, and its head are asked.
        """
        version = self.state.version
        if self._catch_up is not None:
            return self._catch_up(version, self.state.run_id or None)
        new = self.store.read_since(version)
        if new is None or self._other_run_here():
            return None
        if not new and version and self.store.head() < version:  # gone, or a shorter run
            return None
        return new

    def _other_run_here(self) -> bool:
        """True when the store names a run other than ours (stores that name their run)."""
        named = getattr(self.store, "run_id", None)
        if not self.state.run_id or not callable(named):
            return False
        found = named()
        return isinstance(found, str) and found != self.state.run_id

    def _check_usable(self) -> None:
        if self._closed:
            raise SkillnbError(f"this run ({self.store.location}) is closed; open it again")
        if self._replaced is not None:
            raise self._replaced

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def run_id(self) -> str:
        """The run's id (chosen at open, recorded by the first write when the run is new)."""
        return self.state.run_id or self.new_id

    def close(self) -> None:
        """Release the store's files and locks; the journal may not be used afterwards."""
        with self._mutex:
            if not self._closed:
                self._closed = True
                self._listeners.clear()
                self.store.close()
        self.skill.flush()  # what this run remembered is on disk when it is closed

    def stored_workflow(self) -> Workflow | None:
        """The workflow definition recorded in the run, rebuilt as plain data."""
        definition = self.state.workflow_definition
        if definition is None:
            return None
        where = f"{self.store.location} (stored definition)"
        return Workflow.from_dict(definition, source=where, trusted=False)  # never imports

    # -- committing ----------------------------------------------------------------------
    def draft(self, type_: str, **data: JsonValue) -> EventDraft:
        """A new event of ``type_`` stamped with the clock's time."""
        check_event(type_, data)  # names, keys and notes within their limits, before any write
        return EventDraft(type=type_, at=self.clock(), data=data)

    def commit(
        self,
        make: Callable[[RunState], list[EventDraft]],
        expected_version: int | None = None,
        *,
        sync: bool = True,
        speculative: bool = False,
    ) -> list[Event]:
        """Under the lock: catch up, compare versions, build drafts, append, fold.

        ``make`` receives the latest state and returns the events to append (none: nothing
        is written); it may raise to refuse the operation. ``sync=False`` only for markers
        whose loss costs information, not results (see :meth:`Store.append`).

        ``speculative=True`` (for a ``make`` without side effects, which may be called twice)
        lets a store that offers ``speculate()`` skip the lock and the catch-up when it
        believes it saw the head last: the append's compare-and-swap checks that belief, and
        when it was wrong nothing is written and the commit runs again the usual way. A store
        that offers ``append_current`` (the sidecar) skips the catch-up alone: ``make`` sees
        the state as last folded, and the append is made only if nothing changed since.

        Raises:
            ConflictError: ``expected_version`` is given and is not the latest version.

        """
        with self._mutex:
            try:
                if speculative and self._append_current is not None and not self._shared:
                    current = self._commit_current(make, expected_version, sync)
                    if current is not None:
                        return current
                return self._commit(make, expected_version, sync, speculative)
            except StateNotWritable:
                raise
            except PermissionError as exc:
                raise not_writable(exc, self.store.location) from exc

    def _commit(
        self,
        make: Callable[[RunState], list[EventDraft]],
        expected_version: int | None,
        sync: bool,
        speculative: bool,
    ) -> list[Event]:
        """:meth:`commit` inside the mutex (a folder not writable is named by the caller)."""
        if speculative and self._speculate is not None:
            for _ in range(_SPECULATIONS):
                done = self._commit_speculative(make, expected_version, sync)
                if isinstance(done, list):
                    return done
                if done != "retry":
                    break
                # Another writer moved the run; the refusal brought what it wrote: try again.
        if self._shared:  # others wrote lately: catch up before the lock, not holding it
            self.refresh()
        if self._closed or self._replaced is not None:
            self._check_usable()  # a run set aside or replaced is found under the lock
        try:
            return self._commit_locked(make, expected_version, sync)
        except FileNotFoundError:
            self.refresh()  # the folder went away meanwhile: RunReplaced, not a raw error
            raise

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a folder the user may not write into a message saying how to move the run."""
        try:
            yield
        except StateNotWritable:
            raise
        except PermissionError as exc:
            raise not_writable(exc, self.store.location) from exc

    def create(self) -> None:
        """Record the run now (its ``run.created`` event) if nothing was written yet."""
        with self._mutex, self._writing(), self.store.lock():
            if self.refresh().version == 0:
                events = self.store.append(
                    [self.draft("run.created", run_id=self.new_id)], expected_version=0
                )
                self._fold(events)

    def _commit_locked(
        self,
        make: Callable[[RunState], list[EventDraft]],
        expected_version: int | None,
        sync: bool,
    ) -> list[Event]:
        with self.store.lock():
            before = self.state.version
            self._fold_news()  # the caller holds the mutex and found the run usable
            version = self.state.version
            self._shared = version != before
            if expected_version is not None and expected_version != version:
                raise ConflictError(expected_version, version)
            drafts = make(self.state)
            if not drafts:
                return []
            created = version == 0  # a new run is created by its first write
            if created:
                drafts = [self.draft("run.created", run_id=self.new_id), *drafts]
            events = self.store.append(drafts, expected_version=version, sync=sync)
            due = self._folded(events, sync, drafts)
        if due:  # asked here, not inside: each call runs cold after the fsync
            self._warn(due)
        mine = events[1:] if created else events  # the implicit run.created is nobody's news
        if self._listeners:
            self._notify(mine)
        return mine

    def _commit_current(
        self, make: Callable[[RunState], list[EventDraft]], expected_version: int | None, sync: bool
    ) -> list[Event] | None:
        """:meth:`commit` on the state as last folded, no catch-up first; ``None``: not done.

        The store's ``append_current`` finds, under the lock, whether anything changed since
        (another writer, a compaction): then nothing is written and the usual path catches up
        and asks ``make`` again, as it does when ``make`` writes nothing or refuses here.
        """
        state, append = self.state, self._append_current
        version = state.version
        if not version or append is None or self._closed or self._replaced is not None:
            return None  # a run to create, or one to find unusable: the usual path
        if expected_version is not None and expected_version != version:
            return None  # perhaps only our view is old: the usual path decides
        try:
            drafts = make(state)
        except Exception:  # noqa: BLE001  # refused on what may be old news: asked again
            return None
        if not drafts:
            return None  # nothing to write, by the latest state only: the usual path looks
        with self.store.lock():
            events = append(drafts, version, state.run_id, sync=sync)
            if events is None:
                return None
            due = self._folded(events, sync, drafts)
        if due:
            self._warn(due)
        if self._listeners:
            self._notify(events)
        return events

    def _folded(
        self, events: list[Event], sync: bool, drafts: Sequence[EventDraft]
    ) -> Mapping[str, str]:
        """Fold this commit's ``events``, compact if due; the capacity warnings due (lock held)."""
        if apply_written(self.state, events, drafts):  # a fact write's fact, folded as it is
            self._recent.append(events[0])
            self._tail += 1
        else:
            self._fold(events)
        due: Mapping[str, str] = {}
        if sync:  # a marker's few bytes are counted with the durable append after it
            compact, due = self._capacity()
            if compact or self._tail > _COMPACT_AFTER + len(self.state.facts):
                self.compact_locked()
        return due

    def _commit_speculative(
        self,
        make: Callable[[RunState], list[EventDraft]],
        expected_version: int | None,
        sync: bool,
    ) -> list[Event] | Literal["retry", "lock"]:
        """:meth:`commit` on the store's last seen head, or why nothing was written.

        ``"retry"``: another writer moved the run (worth another try); ``"lock"``: the store
        cannot speculate, or the outcome depends on state only the lock makes sure of.
        """
        speculate = self._speculate
        if speculate is None:
            return "lock"
        self._check_usable()
        with speculate():
            try:
                self.refresh()
                if expected_version is not None and expected_version != self.state.version:
                    return "lock"  # perhaps only our view is old: the usual path decides
                drafts = make(self.state)
                if not drafts:
                    return "lock"
                created = []
                if self.state.version == 0:
                    created = [self.draft("run.created", run_id=self.new_id)]
                events = self.store.append(
                    [*created, *drafts], expected_version=self.state.version, sync=sync
                )
            except ConflictError:
                return "retry"  # nothing was written
        self._fold(events)
        compact, due = self._capacity()
        if compact or self._tail > _COMPACT_AFTER + len(self.state.facts):
            self.compact()  # under the lock, as a commit's compaction always is
        if due:
            self._warn(due)
        mine = events[len(created) :]
        if self._listeners:
            self._notify(mine)
        return mine

    def _capacity(self) -> tuple[bool, dict[str, str]]:
        """Whether the live journal is past the byte cap, and the warnings due (lock held)."""
        facts = len(self.state.facts)
        live_bytes: int | None
        if self._usage is not None:  # both in one call (the sidecar)
            live_bytes, snapshot_bytes = self._usage()
        else:
            live, snap = self._sizes
            live_bytes = live() if live is not None else None
            snapshot_bytes = snap() if snap is not None else 0
        if well_within(self.limits, facts, live_bytes, snapshot_bytes):
            return False, {}  # the usual answer, without due's own look at it
        return due(self.limits, facts, live_bytes, snapshot_bytes, self._warned)

    def _warn(self, due: Mapping[str, str]) -> None:
        """Warn once per limit (:class:`~skillnb.core.capacity.CapacityWarning`)."""
        for limit, message in due.items():
            if limit not in self._warned:
                self._warned.add(limit)
                warnings.warn(message, CapacityWarning, stacklevel=5)

    def _notify(self, events: list[Event]) -> None:
        """Tell each listener of ``events`` (the caller found some listening)."""
        for listener in list(self._listeners):
            try:
                listener(events)
            except Exception as exc:  # noqa: BLE001  # a broken view must not undo a commit
                warnings.warn(f"run listener {listener!r} failed: {exc}", ListenerWarning, 3)

    def subscribe(self, listener: JournalListener) -> Callable[[], None]:
        """Call ``listener(events)`` after each commit; return a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def compact(self) -> None:
        """Write a snapshot so that opening the run replays only what came after."""
        with self.store.lock():
            self.refresh()
            self.compact_locked()

    def compact_locked(self) -> None:
        """:meth:`compact` for a caller that already holds the lock and caught up."""
        self.store.compact(self.state)
        self._tail = 0

    # -- reading -------------------------------------------------------------------------
    def decode(self, fact: Fact) -> Fact:
        """``fact`` with its value decoded (kept for each key's newest version only)."""
        kept = self._decoded.get(fact.key)
        if kept is not None and kept[0] == fact.version:
            return replaced(fact, value=kept[1])
        value = codec.decode(fact.value, fact.encoding, self.store)
        if kept is None or kept[0] < fact.version:
            self._decoded[fact.key] = (fact.version, value)
        return replaced(fact, value=value)

    def remember_decoded(self, key: str, version: int, value: Any) -> None:
        """Keep the Python value of fact ``key`` v``version`` (its writer had it) if newest."""
        kept = self._decoded.get(key)
        if kept is None or kept[0] <= version:
            self._decoded[key] = (version, value)

    def codec_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`skillnb.store.codec.values.encode`."""
        threshold = self._blob_threshold
        return {} if threshold is None else {"blob_threshold": threshold}

    def values(self) -> Mapping[str, Any]:
        """Fact values by key, decoded lazily (what check expressions and gates read)."""
        return FactValues(self.decode, self.refresh())

    def folded_after(self, version: int) -> list[Event] | None:
        """The events after ``version`` folded into :attr:`state`, from memory, no catch-up.

        ``None`` when they are not all kept in memory (more than the last few hundred, or a
        version the state does not follow from).
        """
        with self._mutex:
            recent, head = self._recent, self.state.version
            if version == head:
                return []
            if not recent or version > head or recent[-1].seq != head:
                return None
            first = recent[0].seq
            if version + 1 < first:
                return None
            # The last few only, read from the deque's end (not a copy of all it keeps).
            return [recent[index] for index in range(version - head, 0)]

    def history(self, n: int) -> list[Event]:
        """The ``n`` most recent events, oldest first.

        The last few hundred are kept in memory; after opening a compacted run they are read
        back from the archive once, not on every call.
        """
        self.refresh()
        if n <= 0:
            return []
        complete = self.state.version == 0 or (bool(self._recent) and self._recent[0].seq == 1)
        if len(self._recent) < n and not complete:
            if n > RECENT:
                return list(deque(self.store.history(), maxlen=n))
            self._recent = deque(self.store.history(), maxlen=RECENT)
        return list(self._recent)[-n:]

    def recent_in_memory(self) -> list[Event]:
        """The last events this object folded (up to ``RECENT``), without reading the store.

        What a kernel still has of a run whose folder went away (see
        :mod:`skillnb.store.folders.writeback`).
        """
        with self._mutex:
            return list(self._recent)

    def fact_history(self, key: str) -> list[Fact]:
        """Every version of fact ``key``, oldest first, values decoded."""
        found: list[Fact] = []
        for event in self.store.history():
            if event.type == "fact.formalized" and event.data["fact"].get("key") == key:
                fact = Fact.model_validate(event.data["fact"])
                fact.seq = event.seq
                found.append(self.decode(fact))
        return found

    def append_drafts(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Append prepared events as they are (low level: rebuilding a run from a notebook)."""
        return self.commit(lambda _s: list(drafts))
