"""The Run: one durable instance of a workflow, bound to a notebook or a state folder.

Service layer: the one object the edges (magics, widgets, CLI, server) call. It folds the
store's journal into a :class:`~skillnb.core.records.RunState`, validates every operation
against the latest committed state under the store's lock, and appends the resulting events.
It imports nothing from Jupyter.

Reads (``run.version``, ``run.facts``, ...) first look at the journal's tail, so they see what
other processes committed; writes take the store's lock, catch up, validate, append.
"""

from __future__ import annotations

import getpass
import os
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from skillnb.core.gates import DEFAULT_PROFILE
from skillnb.core.records import Event, EventDraft, Fact, FactKind, JsonValue, RunState
from skillnb.core.state import MalformedEvent, apply, state_entry_seq
from skillnb.core.workflow import Workflow
from skillnb.errors import ConflictError, SkillnbError, StoreCorrupted
from skillnb.gating import Gating
from skillnb.store import codec
from skillnb.store.protocol import Store
from skillnb.store.sidecar import SidecarStore, sidecar_dir_for

if TYPE_CHECKING:
    from skillnb.skillmemory import SkillMemory

__all__ = ["Run", "RunListener", "open_run", "sidecar_exists"]

T = TypeVar("T")
RunListener = Callable[["Run", list[Event]], None]
"""Called after each commit of this run object with the events it appended."""

Clock = Callable[[], datetime]

_RECENT = 200
_COMPACT_AFTER = 2000


def _now() -> datetime:
    return datetime.now(UTC).astimezone()


def _default_user(env: Mapping[str, str]) -> str:
    name = env.get("SKILLNB_USER")
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class ListenerWarning(UserWarning):
    """A run listener (a view, the mirror) raised; the commit itself succeeded."""


class Run(Gating):
    """One durable run. Build it with :func:`open_run`.

    Attributes:
        store: where the journal lives.
        workflow: the bound definition, or ``None`` for a run that only keeps facts.
        user: who approvals and milestones are attributed to by default.

    """

    def __init__(
        self,
        store: Store,
        *,
        workflow: Workflow | None = None,
        clock: Clock | None = None,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        memory: SkillMemory | bool | None = None,
        blob_threshold: int | None = None,
        notebook: Path | None = None,
        profile: str | None = None,
    ) -> None:
        self.store = store
        self.notebook = notebook
        self._env = dict(os.environ if env is None else env)
        self._clock: Clock = clock or _now
        self.user = user or _default_user(self._env)
        self.profile = profile or self._env.get("SKILLNB_PROFILE") or DEFAULT_PROFILE
        """The run profile of this session (``profile=``, ``$SKILLNB_PROFILE`` or ``default``):
        gates whose ``bypass_in`` names it are bypassed, and each bypass is recorded."""
        self._blob_threshold = blob_threshold
        self._listeners: list[RunListener] = []
        self._recent: deque[Event] = deque(maxlen=_RECENT)
        self._decoded: dict[tuple[str, int], Any] = {}
        self._tail = 0
        self._memory_option = memory
        self._memory: SkillMemory | None = None
        self.progress_factory: Callable[[str, int, int], Any] | None = None
        """Set by an edge (the notebook) to show batch progress; see :meth:`items`."""
        self._state = RunState(run_id="")
        self._reload()
        self.workflow: Workflow | None = None
        if not store.exists():
            self._create()
        if workflow is not None:
            self.bind(workflow)
        elif self._state.workflow_definition is not None:
            self.workflow = self._stored_workflow()
            if self.workflow is not None:
                self.workflow.check_profile(self.profile)

    # -- loading -------------------------------------------------------------------------
    def _reload(self) -> None:
        loaded = self.store.load()
        state = loaded.snapshot.model_copy(deep=True) if loaded.snapshot else RunState(run_id="")
        self._state = state
        self._recent.clear()
        self._fold(loaded.events)
        self._tail = len(loaded.events)

    def _fold(self, events: Iterable[Event]) -> None:
        for event in events:
            try:
                apply(self._state, event)
            except MalformedEvent as exc:
                raise StoreCorrupted(self.store.location, str(exc)) from exc
            if event.type == "run.created" and not self._state.run_id:
                self._state.run_id = str(event.data.get("run_id", ""))
            self._recent.append(event)
            self._tail += 1

    def refresh(self) -> None:
        """Catch up with what other writers committed (cheap when nothing changed)."""
        new = self.store.read_since(self._state.version)
        if new is None:
            self._reload()
        else:
            self._fold(new)

    def _create(self) -> None:
        run_id = uuid.uuid4().hex[:12]
        try:
            self._commit(lambda _s: [self._draft("run.created", run_id=run_id)])
        except ConflictError:
            self.refresh()  # another process created it first: use theirs

    def _stored_workflow(self) -> Workflow | None:
        definition = self._state.workflow_definition
        if definition is None:
            return None
        return Workflow.from_dict(definition, source=f"{self.store.location} (stored definition)")

    def bind(self, workflow: Workflow) -> None:
        """Bind ``workflow`` to this run (recorded when its definition changed).

        Raises:
            WorkflowError: the run's current state is not a state of ``workflow``, or the
                workflow does not declare the run's profile.

        """
        from skillnb.errors import WorkflowError

        workflow.check_profile(self.profile)
        self.refresh()
        current = self._state.state
        if current is not None and current not in workflow.states:
            raise WorkflowError(
                f"this run is in state {current!r}, which workflow {workflow.name!r} does not "
                "define; start a new run (%skillnb new-run) or add the state",
                source=workflow.source,
            )
        self.workflow = workflow
        if self._state.workflow_hash == workflow.hash:
            return

        def make(state: RunState) -> list[EventDraft]:
            if state.workflow_hash == workflow.hash:
                return []
            return [
                self._draft(
                    "workflow.bound",
                    workflow=workflow.name,
                    hash=workflow.hash,
                    initial=workflow.initial,
                    definition=workflow.to_dict(),
                )
            ]

        first = self._state.workflow_hash is None
        self._commit(make)
        self._memory = None
        if first:
            self._remember("run_started", f"run of {workflow.name} started in {self._state.state}")

    # -- committing ----------------------------------------------------------------------
    def _draft(self, type_: str, **data: JsonValue) -> EventDraft:
        return EventDraft(type=type_, at=self._clock(), data=data)

    def _commit(
        self,
        make: Callable[[RunState], list[EventDraft]],
        expected_version: int | None = None,
        *,
        sync: bool = True,
    ) -> list[Event]:
        """Under the lock: catch up, compare versions, build drafts, append, fold.

        ``sync=False`` only for markers (a step's start): see :meth:`Store.append`.
        """
        with self.store.lock():
            self.refresh()
            if expected_version is not None and expected_version != self._state.version:
                raise ConflictError(expected_version, self._state.version)
            drafts = make(self._state)
            if not drafts:
                return []
            events = self.store.append(drafts, expected_version=self._state.version, sync=sync)
            self._fold(events)
            if self._tail > _COMPACT_AFTER + len(self._state.facts):
                self._compact_locked()
        self._notify(events)
        return events

    def _notify(self, events: list[Event]) -> None:
        for listener in list(self._listeners):
            try:
                listener(self, events)
            except Exception as exc:  # noqa: BLE001  # a broken view must not undo a commit
                warnings.warn(f"run listener {listener!r} failed: {exc}", ListenerWarning, 2)

    def subscribe(self, listener: RunListener) -> Callable[[], None]:
        """Call ``listener(run, events)`` after each commit; return a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def append_events(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Append prepared events as they are (low level: used to rebuild a run from a notebook)."""
        return self._commit(lambda _s: list(drafts))

    # -- reading -------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The run's id."""
        return self._state.run_id

    @property
    def state(self) -> str | None:
        """The current state of the workflow (``None`` without one)."""
        self.refresh()
        return self._state.state

    @property
    def version(self) -> int:
        """The latest committed version (the journal's sequence number)."""
        self.refresh()
        return self._state.version

    @property
    def snapshot(self) -> RunState:
        """A copy of the whole current state (after catching up)."""
        self.refresh()
        return self._state.model_copy(deep=True)

    def snapshot_ref(self, refresh: bool = False) -> RunState:
        """The live state object, not a copy (read-only by contract; for the service layer)."""
        if refresh:
            self.refresh()
        return self._state

    def _decode(self, fact: Fact) -> Fact:
        cache_key = (fact.key, fact.version)
        if cache_key not in self._decoded:
            self._decoded[cache_key] = codec.decode(fact.value, fact.encoding, self.store)
        return fact.model_copy(update={"value": self._decoded[cache_key]})

    def fact(self, key: str) -> Fact | None:
        """The latest version of fact ``key`` with its value decoded, or ``None``."""
        self.refresh()
        stored = self._state.facts.get(key)
        return self._decode(stored) if stored is not None else None

    @property
    def facts(self) -> Mapping[str, Fact]:
        """Every fact's latest version, values decoded."""
        self.refresh()
        return {key: self._decode(f) for key, f in self._state.facts.items()}

    def values(self) -> Mapping[str, Any]:
        """Fact values by key, decoded lazily (what check expressions and gates read)."""
        self.refresh()
        return _FactValues(self, self._state)

    def fact_history(self, key: str) -> list[Fact]:
        """Every version of fact ``key``, oldest first."""
        found: list[Fact] = []
        for event in self.store.history():
            if event.type == "fact.formalized" and event.data["fact"].get("key") == key:
                fact = Fact.model_validate(event.data["fact"])
                fact.seq = event.seq
                found.append(self._decode(fact))
        return found

    def history(self, n: int = 20) -> list[Event]:
        """The ``n`` most recent events, oldest first.

        The last few hundred are kept in memory; after opening a compacted run they are read
        back from the archive once, not on every call.
        """
        self.refresh()
        if n <= 0:
            return []
        complete = self._state.version == 0 or (bool(self._recent) and self._recent[0].seq == 1)
        if len(self._recent) < n and not complete:
            if n > _RECENT:
                return list(deque(self.store.history(), maxlen=n))
            self._recent = deque(self.store.history(), maxlen=_RECENT)
        return list(self._recent)[-n:]

    @property
    def key_ids(self) -> Mapping[str, JsonValue]:
        """Ids worth remembering across sessions (``set_key_ids`` adds to them)."""
        self.refresh()
        return dict(self._state.key_ids)

    # -- writing facts -------------------------------------------------------------------
    def formalize(
        self,
        key: str,
        value: Any,
        kind: FactKind = "data",
        note: str | None = None,
        expected_version: int | None = None,
        *,
        cell_id: str | None = None,
        source_hash: str | None = None,
    ) -> Fact:
        """Record ``value`` as the next version of fact ``key``.

        Raises:
            ConflictError: ``expected_version`` is given and is not the latest version.

        """
        return self._formalize(
            key,
            value,
            kind=kind,
            note=note,
            expected_version=expected_version,
            cell_id=cell_id,
            source_hash=source_hash,
        )

    def _formalize(
        self,
        key: str,
        value: Any,
        *,
        kind: FactKind = "data",
        note: str | None = None,
        expected_version: int | None = None,
        cell_id: str | None = None,
        source_hash: str | None = None,
        extra: Sequence[EventDraft] = (),
    ) -> Fact:
        if not isinstance(key, str) or not key:
            raise SkillnbError(f"a fact key must be a non-empty string, not {key!r}")
        encoded = codec.encode(value, self.store, **self._codec_options())
        at = self._clock()

        def make(state: RunState) -> list[EventDraft]:
            previous = state.facts.get(key)
            fact = Fact(
                key=key,
                value=encoded.value,
                encoding=encoded.encoding,
                restorable=encoded.restorable,
                kind=kind,
                version=previous.version + 1 if previous else 1,
                at=at,
                cell_id=cell_id,
                source_hash=source_hash,
                note=note,
                preview=encoded.preview,
            )
            drafted = self._draft("fact.formalized", fact=fact.model_dump(mode="json"))
            return [drafted, *(d.model_copy(update={"at": drafted.at}) for d in extra)]

        self._commit(make, expected_version)
        fact = self._state.facts[key]
        self._decoded[(key, fact.version)] = value if encoded.restorable else encoded.value
        return self._decode(fact)

    def _codec_options(self) -> dict[str, Any]:
        if self._blob_threshold is None:
            return {}
        return {"blob_threshold": self._blob_threshold}

    def rollback(self, key: str, version: int) -> Fact:
        """Write version ``version`` of fact ``key`` again, as a new version."""
        for old in self.fact_history(key):
            if old.version == version:
                note = f"rollback to v{version}"
                return self.formalize(key, old.value, kind=old.kind, note=note)
        raise SkillnbError(f"fact {key!r} has no version {version}")

    def set_key_ids(self, ids: Mapping[str, JsonValue] | None = None, **more: JsonValue) -> None:
        """Remember ids (session ids, batch ids, ...) in the run and its skill memory."""
        merged = {**(ids or {}), **more}
        self._commit(lambda _s: [self._draft("keyids.set", ids=merged)])
        self._remember("key_ids", "ids: " + ", ".join(f"{k}={v}" for k, v in merged.items()))

    def milestone(self, name: str) -> Event:
        """Record a named checkpoint: the current version, state and fact versions."""

        def make(state: RunState) -> list[EventDraft]:
            versions = {k: f.version for k, f in state.facts.items()}
            return [self._draft("milestone.recorded", name=name, state=state.state, facts=versions)]

        event = self._commit(make)[0]
        self._remember("milestone", f"milestone {name!r} at version {event.seq}")
        return event

    def compact(self) -> None:
        """Write a snapshot so that opening the run replays only what came after."""
        with self.store.lock():
            self.refresh()
            self._compact_locked()

    def _compact_locked(self) -> None:
        self.store.compact(self._state)
        self._tail = 0

    # -- batches -------------------------------------------------------------------------
    def items(
        self,
        batch: str,
        items: Iterable[T],
        *,
        key: Callable[[T], str] | None = None,
        limit: int | None = None,
    ) -> Iterator[T]:
        """Yield the items of ``batch`` that are not done yet, across sessions.

        An item is marked done (durably) when the loop asks for the next one or ends normally.
        An item whose loop body raised, was left by ``break``, or was in flight when the
        process died stays not done and is yielded again next time. ``limit`` ends the loop
        normally after that many items (a day's share), so the last one is marked done too.
        """
        from skillnb.batches import iterate

        return iterate(self, batch, items, key=key, limit=limit)

    # -- skill memory --------------------------------------------------------------------
    @property
    def memory(self) -> SkillMemory | None:
        """The skill memory this run feeds (``None`` when turned off or without a workflow)."""
        if self._memory is None and self._memory_option is not False:
            from skillnb.skillmemory import SkillMemory

            if isinstance(self._memory_option, SkillMemory):
                self._memory = self._memory_option
            elif self.workflow is not None:
                self._memory = SkillMemory(self.workflow.skill, clock=self._clock, env=self._env)
        return self._memory

    def _remember(self, action: str, summary: str, files: list[str] | None = None) -> None:
        memory = self.memory
        if memory is None:
            return
        ids: dict[str, JsonValue] = {"last_run_id": self.id, **self._state.key_ids}
        memory.record(action, summary, ids=ids, files=files)

    # -- views ---------------------------------------------------------------------------
    def describe(self, *, evaluate_code: bool = False) -> dict[str, Any]:
        """The run at a glance as JSON-safe data (see :mod:`skillnb.view`)."""
        from skillnb.view import describe

        return describe(self, evaluate_code=evaluate_code)

    def summary(self, max_chars: int = 4000, *, stable: bool = False) -> str:
        """Deterministic Markdown for an LLM within ``max_chars`` (:mod:`skillnb.core.summary`).

        With ``stable``, what differs between two executions of the same notebook (recorded
        times, the run id, approval request ids) is left out, for notebook outputs.
        """
        from skillnb.core.summary import render_summary
        from skillnb.view import stable_view

        memory = self.memory
        view = self.describe()
        remembered = memory.to_prompt_summary(times=not stable) if memory is not None else None
        if stable and remembered is not None:
            remembered = remembered.replace(self.id, "this run")
        return render_summary(
            stable_view(view) if stable else view, max_chars=max_chars, memory=remembered
        )

    def __repr__(self) -> str:
        return f"<Run {self.id} state={self._state.state!r} v{self._state.version}>"

    def state_entry_seq(self) -> int:
        """The version at which the current state was entered."""
        return state_entry_seq(self._state)


class _FactValues(Mapping[str, Any]):
    """A read-only mapping of fact values, decoded on first access."""

    def __init__(self, run: Run, state: RunState) -> None:
        self._run = run
        self._facts = state.facts

    def __getitem__(self, key: str) -> Any:
        return self._run._decode(self._facts[key]).value

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts)

    def __len__(self) -> int:
        return len(self._facts)


def sidecar_exists(notebook: str | Path) -> bool:
    """True when ``notebook`` has a sidecar with a journal or snapshot."""
    folder = sidecar_dir_for(Path(notebook))
    return (folder / "journal.jsonl").exists() or (folder / "snapshot.json").exists()


def open_run(
    notebook: str | Path | None = None,
    *,
    workflow: Workflow | Path | None = None,
    state_dir: str | Path | None = None,
    store: Store | None = None,
    clock: Clock | None = None,
    user: str | None = None,
    env: Mapping[str, str] | None = None,
    memory: SkillMemory | bool | None = None,
    blob_threshold: int | None = None,
    profile: str | None = None,
) -> Run:
    """Open (or create) the run of ``notebook``, of ``state_dir``, or over ``store``.

    Args:
        notebook: the notebook; its sidecar is ``.skillnb/<stem>/`` beside it.
        workflow: the definition to bind (a :class:`Workflow` or a YAML file path).
        state_dir: an explicit state folder instead of the notebook's sidecar.
        store: an explicit store (e.g. :class:`~skillnb.store.MemoryStore`).
        clock: returns the current time (timezone-aware); injectable for tests.
        user: who approvals are attributed to by default (``$SKILLNB_USER`` or the OS user).
        env: the environment to read settings from (defaults to ``os.environ``).
        memory: a :class:`~skillnb.skillmemory.SkillMemory`, ``False`` to feed none, or
            ``None`` for the workflow's skill memory.
        blob_threshold: values whose JSON is larger go to the blob folder.
        profile: the run profile (``$SKILLNB_PROFILE``, else ``default``); gates whose
            ``bypass_in`` names it are not evaluated, and each bypass is recorded.

    Raises:
        WorkflowError: the workflow does not declare ``profile`` in its ``profiles:``.

    """
    if isinstance(workflow, Path):
        workflow = Workflow.from_yaml(workflow)
    nb_path = Path(notebook) if notebook is not None else None
    if store is None:
        if state_dir is not None:
            store = SidecarStore(Path(state_dir))
        elif nb_path is not None:
            store = SidecarStore(sidecar_dir_for(nb_path))
        else:
            raise SkillnbError("open_run needs a notebook, a state_dir or a store")
    return Run(
        store,
        workflow=workflow,
        clock=clock,
        user=user,
        env=env,
        memory=memory,
        blob_threshold=blob_threshold,
        notebook=nb_path,
        profile=profile,
    )
