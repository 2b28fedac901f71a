"""The Run: one durable instance of a workflow, bound to a notebook or a state folder.

Service layer: the one object the edges (magics, widgets, CLI, server) call. It is a small
facade over the pieces in :mod:`skillnb.service`: the journal core
(:class:`~skillnb.service.journal.RunJournal`: state, refresh, commit), durable steps
(:class:`~skillnb.service.steps.Steps`), gates and transitions
(:class:`~skillnb.service.gates.Gates`), approvals, batches and the view. It imports nothing
from Jupyter.

Reads (``run.version``, ``run.facts``, ...) first look at the journal's tail, so they see what
other processes committed; writes take the store's lock, catch up, validate, append.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from skillnb.core.closing import Closing
from skillnb.core.gates.evaluate import DEFAULT_PROFILE, GateSpec
from skillnb.core.runstate.records import (
    Approval,
    Event,
    Fact,
    FactKind,
    FollowUp,
    GateReport,
    JsonValue,
    RunState,
)
from skillnb.core.workflow.model import Workflow
from skillnb.errors import SkillnbError
from skillnb.service.approvals import Approvals
from skillnb.service.batches import ProgressFactory, iterate
from skillnb.service.claims import Claims, lease_from_env
from skillnb.service.facts import write_fact
from skillnb.service.followups import FollowUps
from skillnb.service.gates import Gates
from skillnb.service.journal import Clock, ListenerWarning, RunJournal
from skillnb.service.markers import bind_workflow, record_milestone, set_key_ids
from skillnb.service.steps import Steps
from skillnb.service.view import describe, stable_view
from skillnb.store.protocol import Store
from skillnb.store.sidecar.store import SidecarStore, sidecar_dir_for

if TYPE_CHECKING:
    from skillnb.core.capacity import Limits
    from skillnb.core.suggest.pins import Extractor
    from skillnb.core.suggest.rank import Suggestion
    from skillnb.memory.archive import ArchiveReport
    from skillnb.memory.recall import Recalled
    from skillnb.skillmemory import SkillMemory

__all__ = ["ListenerWarning", "Run", "RunListener", "open_run", "sidecar_exists"]

T = TypeVar("T")
RunListener = Callable[["Run", list[Event]], None]
"""Called after each commit of this run object with the events it appended."""


class Run(Closing):
    """One durable run. Build it with :func:`open_run`.

    Attributes:
        journal: the journal core every part of the run shares (state, refresh, commit).
        claims: who runs which step or batch item (claims, leases, heartbeats).
        steps: the durable-step lifecycle (claim, run, fail, uncertain, clear).
        gates: gate evaluation, gated steps and transitions.
        approvals: approval requests and decisions.
        notebook: the notebook the run belongs to, when opened from one.
        progress_factory: set by an edge (the notebook) to show batch progress.

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
        limits: Limits | None = None,
        lease: float | None = None,
    ) -> None:
        self.notebook = notebook
        settings = os.environ if env is None else env
        self.journal = RunJournal(
            store,
            clock=clock,
            user=user,
            env=settings,
            memory=memory,
            blob_threshold=blob_threshold,
            limits=limits,
        )
        self.claims = Claims(self.journal, lease_from_env(settings, lease))
        self.steps = Steps(self.journal, self.claims)
        self.gates = Gates(self.journal, self.steps)
        self.approvals = Approvals(self.journal)
        self.progress_factory: ProgressFactory | None = None
        self.gates.profile = profile or self.journal.env.get("SKILLNB_PROFILE") or DEFAULT_PROFILE
        if workflow is not None:
            self.bind(workflow)
        elif self.journal.workflow is not None:
            self.journal.workflow.check_profile(self.profile)

    # -- identity and binding ------------------------------------------------------------
    @property
    def store(self) -> Store:
        """Where the journal lives."""
        return self.journal.store

    @property
    def user(self) -> str:
        """Who approvals and milestones are attributed to by default."""
        return self.journal.user

    @property
    def workflow(self) -> Workflow | None:
        """The bound definition, or ``None`` for a run that only keeps facts."""
        return self.journal.workflow

    @property
    def profile(self) -> str:
        """The run profile of this session (``profile=``, ``$SKILLNB_PROFILE`` or ``default``).

        Gates whose ``bypass_in`` names it are bypassed, and each bypass is recorded.
        """
        return self.gates.profile

    @profile.setter
    def profile(self, profile: str) -> None:
        if self.workflow is not None:
            self.workflow.check_profile(profile)
        self.gates.profile = profile

    @property
    def memory(self) -> SkillMemory | None:
        """The skill memory this run feeds (``None`` when turned off or without a workflow).

        Up to date with what this run remembered (queued records are written first).
        """
        self.journal.skill.flush()
        return self.journal.skill.memory

    def adopt(self) -> None:
        """Take this run as yours: from now on it writes your skill memory.

        A run opened from someone else's files (a cloned notebook, a colleague's team run)
        reads your skill memory but does not write it (see :mod:`skillnb.memory.owned`)
        until adopted; the adoption is recorded in ``$SKILLNB_HOME``, not in the run.
        """
        self.journal.skill.adopt()

    def bind(self, workflow: Workflow) -> None:
        """Bind ``workflow`` to this run (recorded when its definition changed).

        Raises:
            WorkflowError: the run's current state is not a state of ``workflow``, or the
                workflow does not declare the run's profile.

        """
        bind_workflow(self.journal, workflow, self.profile)

    def refresh(self) -> None:
        """Catch up with what other writers committed (cheap when nothing changed)."""
        self.journal.refresh()

    # -- reading -------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The run's id (a new run records it with its first write)."""
        return self.journal.run_id

    @property
    def state(self) -> str | None:
        """The current state of the workflow (``None`` without one)."""
        return self.journal.refresh().state

    @property
    def version(self) -> int:
        """The latest committed version (the journal's sequence number)."""
        return self.journal.refresh().version

    @property
    def snapshot(self) -> RunState:
        """A copy of the whole current state (after catching up)."""
        return self.journal.refresh().model_copy(deep=True)

    def fact(self, key: str) -> Fact | None:
        """The latest version of fact ``key`` with its value decoded, or ``None``."""
        stored = self.journal.refresh().facts.get(key)
        return self.journal.decode(stored) if stored is not None else None

    @property
    def facts(self) -> Mapping[str, Fact]:
        """Every fact's latest version, values decoded."""
        state = self.journal.refresh()
        return {key: self.journal.decode(f) for key, f in state.facts.items()}

    def fact_history(self, key: str) -> list[Fact]:
        """Every version of fact ``key``, oldest first."""
        return self.journal.fact_history(key)

    def history(self, n: int = 20) -> list[Event]:
        """The ``n`` most recent events, oldest first."""
        return self.journal.history(n)

    @property
    def key_ids(self) -> Mapping[str, JsonValue]:
        """Ids worth remembering across sessions (``set_key_ids`` adds to them)."""
        return dict(self.journal.refresh().key_ids)

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
        if_changed: bool = False,
    ) -> Fact:
        """Record ``value`` as the next version of fact ``key``.

        With ``if_changed``, a value, kind and note equal to the latest version's write
        nothing and that version is returned (``%formalize NAME`` and pins keep facts so,
        so that running a notebook again adds no version).

        Raises:
            ConflictError: ``expected_version`` is given and is not the latest version.

        """
        return write_fact(
            self.journal,
            key,
            value,
            kind=kind,
            note=note,
            expected_version=expected_version,
            cell_id=cell_id,
            source_hash=source_hash,
            if_changed=if_changed,
        )

    def rollback(self, key: str, version: int) -> Fact:
        """Write version ``version`` of fact ``key`` again, as a new version."""
        for old in self.fact_history(key):
            if old.version == version:
                note = f"rollback to v{version}"
                return self.formalize(key, old.value, kind=old.kind, note=note)
        raise SkillnbError(f"fact {key!r} has no version {version}")

    def set_key_ids(self, ids: Mapping[str, JsonValue] | None = None, **more: JsonValue) -> None:
        """Remember ids (session ids, batch ids, ...) in the run and its skill memory.

        The skill memory is written before this returns (not queued like a cell's records):
        the ids are what a later session needs, even if this process is killed right after.
        Ids the run already holds with the same values write nothing, neither in the run
        nor in the skill memory, so running a notebook again adds no event.
        """
        set_key_ids(self.journal, {**(ids or {}), **more})

    def milestone(self, name: str) -> Event:
        """Record a named checkpoint: the current version, state and fact versions.

        Its skill-memory record is written before this returns, like :meth:`set_key_ids`.
        """
        return record_milestone(self.journal, name)

    def compact(self) -> None:
        """Write a snapshot so that opening the run replays only what came after."""
        self.journal.compact()

    @property
    def limits(self) -> Limits:
        """How much the run keeps live before archiving old versions, and when it warns."""
        return self.journal.limits

    # -- pins and long-term memory -------------------------------------------------------
    def pin(
        self,
        text: str,
        kind: FactKind = "note",
        *,
        key: str | None = None,
        extractor: Extractor | None = None,
    ) -> tuple[Fact, list[Suggestion], dict[str, Any]]:
        """Keep ``text`` as a fact (a note by default) and offer what ``extractor`` reads in it.

        Returns:
            The pinned fact, the extractor's suggestions (best first) and their values; the
            suggestions are offered, never kept: ``run.formalize(name, values[name], kind)``
            keeps one.

        Raises:
            SkillnbError: ``text`` is empty.
            ValueError: the extractor returned something malformed.

        """
        from skillnb.core.suggest.pins import extract, pin_key

        if not isinstance(text, str) or not text.strip():
            raise SkillnbError("a pin needs some text to remember")
        fact = self.formalize(key or pin_key(text), text, kind=kind, if_changed=True)
        if extractor is None:
            return fact, [], {}
        found, values = extract(text, extractor, self.facts)
        return fact, found, values

    def archive(self, *, force: bool = False) -> ArchiveReport:
        """File this finished run in its skill's archive and recall index; shrink the sidecar.

        See :mod:`skillnb.memory.archive`.

        Raises:
            SkillnbError: the run has no workflow, or is not finished and ``force`` is false.

        """
        from skillnb.memory.archive import archive_run

        journal = self.journal
        return archive_run(self, force=force, env=journal.env, now=journal.clock())

    def recall(
        self, query: str | None = None, k: int = 5, *, state: str | None = None
    ) -> list[Recalled]:
        """Items of the skill's archived runs most relevant to ``query``, best first.

        Items recorded in ``state`` (default: this run's current state) are preferred; each
        names its run, state and date. Without a query, the run's state, workflow and
        decisions are the query.

        Raises:
            SkillnbError: the run has no workflow (so no skill to recall from).

        """
        from skillnb.memory.archive import recall_for

        return recall_for(self, query, k, state=state, env=self.journal.env)

    # -- gates, transitions, approvals, steps --------------------------------------------
    def check(self, trigger: str | None = None, *, gates: Sequence[GateSpec] = ()) -> GateReport:
        """Evaluate the gates of ``trigger`` (plus ``gates``) without firing: a dry run.

        Without a trigger, only ``gates`` are evaluated (e.g. a workflow's gates by name), and
        nothing is recorded either way.

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.

        """
        return self.gates.check(trigger, gates)

    def fire(self, trigger: str) -> Event:
        """Fire ``trigger``: evaluate its gates, run its action (called with this run), move.

        The action runs only after the step is claimed, in the append that consumes its
        approvals: one approval runs the action at most once, whatever the processes.

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.
            GateBlocked: a blocking gate failed (its report is recorded).
            StepInProgress: another live process is running this transition's action.
            UncertainStep: the action started earlier and never finished.

        """
        return self.gates.fire(trigger, self)

    def pending(self) -> list[Approval]:
        """Approval requests waiting for a decision in the current state, oldest first."""
        return self.approvals.pending()

    def approve(
        self,
        gate: str,
        by: str | None = None,
        note: str | None = None,
        *,
        request: str | None = None,
    ) -> Approval:
        """Approve the open request of approval gate ``gate``.

        Raises:
            ApprovalError: no request is waiting (early), the request is stale, or it was
                already decided (repeated).

        """
        return self.approvals.decide(gate, "approved", by, note, request)

    def reject(
        self,
        gate: str,
        by: str | None = None,
        note: str | None = None,
        *,
        request: str | None = None,
    ) -> Approval:
        """Reject the open request of approval gate ``gate`` (see :meth:`approve`)."""
        return self.approvals.decide(gate, "rejected", by, note, request)

    def follow_ups(self) -> list[FollowUp]:
        """Follow-ups left by warning gates and not resolved yet, oldest first."""
        return FollowUps(self.journal).open()

    def resolve_follow_up(
        self,
        id: str,
        by: str | None = None,
        note: str | None = None,
    ) -> FollowUp:
        """Resolve follow-up ``id`` (or the only open follow-up of the gate named ``id``).

        Raises:
            SkillnbError: no such follow-up, it is resolved already, or the gate has several.

        """
        return FollowUps(self.journal).resolve(id, by, note)

    # -- batches -------------------------------------------------------------------------
    def items(
        self,
        batch: str,
        items: Iterable[T],
        *,
        key: Callable[[T], str] | None = None,
        limit: int | None = None,
    ) -> Iterator[T]:
        """Yield the items of ``batch`` that are not done yet, across sessions and processes.

        Each item is claimed for this process before it is yielded and marked done (durably)
        when the loop asks for the next one or ends normally. Several processes may run this
        loop over one batch: each skips the items another live process holds. An item whose
        loop body raised or was left by ``break`` stays not done and is released; one in
        flight when the process died is offered again once its owner is seen dead (or its
        lease expired): at-least-once execution, exactly-once completion. ``limit`` ends the
        loop normally after that many items (a day's share), so the last one is done too.
        """
        return iterate(
            self.claims, batch, items, key=key, limit=limit, progress=self.progress_factory
        )

    # -- views ---------------------------------------------------------------------------
    def describe(
        self, *, evaluate_code: bool = False, facts_limit: int | None = None
    ) -> dict[str, Any]:
        """The run at a glance as JSON-safe data (see :mod:`skillnb.service.view`).

        ``facts_limit`` keeps, per kind, only the facts a summary could show (see
        :func:`skillnb.core.views.summary.facts_needed`); ``fact_counts`` still counts them all.
        """
        return describe(self.gates, evaluate_code=evaluate_code, facts_limit=facts_limit)

    def summary(
        self,
        max_chars: int = 4000,
        *,
        stable: bool = False,
        recall: str | bool = False,
        view: Mapping[str, Any] | None = None,
    ) -> str:
        """Deterministic Markdown for an LLM within ``max_chars`` (see :mod:`skillnb.core.views`).

        With ``stable``, what differs between two executions of the same notebook (recorded
        times, the run id, approval request ids) is left out, for notebook outputs. With
        ``recall`` (``True``, or a query), the top items recalled from the skill's archived
        runs are included, inside the data block and within the budget. ``view`` renders a
        view the caller already has (from :meth:`describe`, with a ``facts_limit`` of at
        least ``facts_needed(max_chars)`` or none) instead of describing the run again.
        """
        from skillnb.core.views.summary import facts_needed, render_summary

        memory = self.memory
        if view is None:
            view = self.describe(facts_limit=facts_needed(max_chars))
        remembered = (
            memory.to_prompt_summary(times=not stable, run_id=self.id)
            if memory is not None
            else None
        )
        if stable and remembered is not None:
            remembered = remembered.replace(self.id, "this run")
        recalled = []
        if recall and self.workflow is not None:
            from skillnb.memory.archive import recalled_lines

            query = recall if isinstance(recall, str) else None
            recalled = recalled_lines(self, query, stable=stable, env=self.journal.env)
        return render_summary(
            stable_view(view) if stable else view,
            max_chars=max_chars,
            memory=remembered,
            recalled=recalled,
            stale=[s.line() for s in self.gates.stale()],
        )

    def close(self) -> None:
        """Release the run's files and locks (idempotent); the run may not be used after."""
        self.journal.close()

    def __repr__(self) -> str:
        state = self.journal.state
        return f"<Run {self.id} state={state.state!r} v{state.version}>"


def sidecar_exists(notebook: str | Path) -> bool:
    """True when ``notebook`` has a sidecar with a journal or snapshot."""
    folder = sidecar_dir_for(Path(notebook))
    return (folder / "journal.jsonl").exists() or (folder / "snapshot.json").exists()


def open_run(
    notebook: str | Path | None = None,
    *,
    workflow: Workflow | Path | None = None,
    state_dir: str | Path | None = None,
    store: Store | str | None = None,
    name: str | None = None,
    clock: Clock | None = None,
    user: str | None = None,
    env: Mapping[str, str] | None = None,
    memory: SkillMemory | bool | None = None,
    blob_threshold: int | None = None,
    profile: str | None = None,
    limits: Limits | None = None,
    lease: float | None = None,
) -> Run:
    """Open (or create) the run of ``notebook``, of ``state_dir``, or over ``store``.

    Args:
        notebook: the notebook; its sidecar is ``.skillnb/<stem>/`` beside it.
        workflow: the definition to bind (a :class:`Workflow` or a YAML file path).
        state_dir: an explicit state folder instead of the notebook's sidecar.
        store: an explicit store (e.g. :class:`~skillnb.store.MemoryStore`), or the URL of a
            team store (``postgresql://user@host/db``) holding runs by name.
        name: the run's name in a team store (default: the notebook's path, as given).
        clock: returns the current time (timezone-aware); injectable for tests.
        user: who approvals are attributed to by default (``$SKILLNB_USER`` or the OS user).
        env: the environment to read settings from (defaults to ``os.environ``).
        memory: a :class:`~skillnb.skillmemory.SkillMemory`, ``False`` to feed none, or
            ``None`` for the workflow's skill memory, written only when the run belongs to
            this user here (created here or adopted: :mod:`skillnb.memory.owned`); ``True``
            (or a memory given) writes it for this opened run whoever created it.
        blob_threshold: values whose JSON is larger go to the blob folder.
        profile: the run profile (``$SKILLNB_PROFILE``, else ``default``); gates whose
            ``bypass_in`` names it are not evaluated, and each bypass is recorded.
        limits: per-run limits (default from ``SKILLNB_MAX_FACTS`` / ``SKILLNB_MAX_BYTES``).
        lease: seconds a claim binds processes on other hosts unless renewed (default:
            ``$SKILLNB_LEASE_SECONDS`` or 60).

    Raises:
        WorkflowError: the workflow does not declare ``profile`` in its ``profiles:``.

    """
    if isinstance(workflow, Path):
        workflow = Workflow.from_yaml(workflow)
    nb_path = Path(notebook) if notebook is not None else None
    if isinstance(store, str):
        from skillnb.store.choose import open_store

        run_name = name if name is not None else (nb_path.as_posix() if nb_path else None)
        if run_name is None:
            raise SkillnbError("open_run(store=URL) needs the run's name=")
        store = open_store(store, run_name)
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
        limits=limits,
        lease=lease,
    )
