"""Gates, transitions, approvals and durable steps of a run (service layer).

A mixin of :class:`skillnb.run.Run`, kept apart so each module stays small. Every rule about
when a step may run lives here, not in the magics, widgets or the JupyterLab extension.

Approvals are durable events: a blocked approval gate records a *request* bound to the state
entry it was asked in (the version at which the run entered its current state); approving
answers that request; the next passing evaluation *consumes* it. A request made before the
run left its state is stale and can no longer be approved; an approval with no request
(early) or for a request already answered (repeated) is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from skillnb.core import bending
from skillnb.core import gates as gate_eval
from skillnb.core.gates import DEFAULT_PROFILE, GateContext, GateSpec
from skillnb.core.records import Approval, Event, EventDraft, FollowUp, GateReport, RunState
from skillnb.core.registry import Registry, default_registry
from skillnb.core.state import state_entry_seq
from skillnb.errors import (
    ApprovalError,
    GateBlocked,
    SkillnbError,
    TransitionNotAllowed,
    UncertainStep,
)
from skillnb.owner import current_owner, is_uncertain

if TYPE_CHECKING:
    from skillnb.core.workflow import Transition
    from skillnb.run import Run

__all__ = ["Gating", "StepOutcome"]


@dataclass
class StepOutcome:
    """What happened to a gated step (a ``%%gate`` cell or :meth:`Gating.run_gated`)."""

    status: Literal["ran", "done", "blocked", "fallback"]
    """``ran``: gates passed and the body ran; ``done``: already completed in this run and
    not run again; ``blocked``: a blocking gate failed (only with ``on_block="skip"``);
    ``fallback``: a gate timed out with ``on_timeout: {fallback}``, the body did not run and
    the fallback trigger fired instead (its events are :attr:`events`)."""
    report: GateReport | None = None
    """The gate report (``None`` when the step was already done; for a fallback, the report
    that timed out)."""
    result: Any = None
    """What the body returned."""
    events: list[Event] = field(default_factory=list)
    """The events the step committed."""


def _open_request(state: RunState, gate: str) -> Approval | None:
    """The latest request for ``gate`` that is still answerable in the current state entry."""
    entry = state_entry_seq(state)
    for approval in reversed(state.approvals.values()):
        if approval.gate == gate and approval.requested_seq > entry:
            return approval if approval.status in ("pending", "approved", "rejected") else None
    return None


class Gating:
    """Gate evaluation, transitions, approvals and steps for :class:`~skillnb.run.Run`."""

    registry: Registry = default_registry
    """Where python/resource gates and actions are looked up."""
    profile: str = DEFAULT_PROFILE
    """The run profile: gates whose ``bypass_in`` names it are bypassed (and audited)."""

    # -- gates ---------------------------------------------------------------------------
    def _run(self) -> Run:
        from skillnb.run import Run

        assert isinstance(self, Run)  # noqa: S101  # the mixin is only used by Run
        return self

    def _transition(self, trigger: str) -> Transition:
        run = self._run()
        state = run.snapshot_ref()
        workflow = run.workflow
        if workflow is None:
            raise TransitionNotAllowed(trigger, state.state, [])
        transition = workflow.find(state.state, trigger) if state.state is not None else None
        if transition is None:
            raise TransitionNotAllowed(trigger, state.state, workflow.triggers_from(state.state))
        return transition

    def _specs(self, trigger: str | None, inline: Sequence[GateSpec]) -> list[GateSpec]:
        run = self._run()
        specs: list[GateSpec] = []
        if trigger is not None:
            transition = self._transition(trigger)  # raises when there is no workflow
            assert run.workflow is not None  # noqa: S101  # _transition checked it
            specs = [run.workflow.gates[name] for name in transition.gates]
        return [*specs, *inline]

    def _evaluate(self, specs: Sequence[GateSpec], trigger: str | None) -> GateReport:
        run = self._run()
        state = run.snapshot_ref()
        ctx = GateContext(
            state=state.state,
            version=state.version,
            trigger=trigger,
            facts=run.values(),
            registry=self.registry,
            approval=lambda spec: self._approval_status(spec),
            profile=self.profile,
        )
        return gate_eval.evaluate(specs, ctx)

    def _approval_status(self, spec: GateSpec) -> tuple[bool, str]:
        state = self._run().snapshot_ref()
        request = _open_request(state, spec.name)
        how = (
            f"approve with `%skillnb approve {spec.name}` "
            f"or `skillnb approve NOTEBOOK {spec.name} --by NAME`"
        )
        message = _approval_message(spec)
        if request is None:
            return False, f"needs approval: {message}; {how}"
        if request.status == "approved":
            return True, f"approved by {request.decided_by}"
        if request.status == "rejected":
            note = f": {request.note}" if request.note else ""
            return False, f"rejected by {request.decided_by}{note}; run the step again to ask anew"
        return False, f"waiting for approval ({message}); {how}"

    def check(self, trigger: str, *, gates: Sequence[GateSpec] = ()) -> GateReport:
        """Evaluate the gates of ``trigger`` (plus ``gates``) without firing: a dry run.

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.

        """
        self._run().refresh()
        return self._evaluate(self._specs(trigger, gates), trigger)

    def check_gates(self, gates: Sequence[GateSpec]) -> GateReport:
        """Evaluate inline ``gates`` (no trigger) without recording anything."""
        self._run().refresh()
        return self._evaluate(gates, None)

    def _record_block(
        self, key: str, report: GateReport, specs: Sequence[GateSpec], trigger: str | None
    ) -> None:
        run = self._run()
        approvals = {s.name: s for s in specs if s.kind == "approval" or s.escalate}

        def make(state: RunState) -> list[EventDraft]:
            drafts = [run._draft("gate.reported", key=key, report=report.model_dump(mode="json"))]
            for result in report.results:
                spec = approvals.get(result.gate)
                asks = result.kind == "approval" or result.escalated
                if spec is None or result.passed or not asks:
                    continue
                request = _open_request(state, spec.name)
                if request is not None and request.status != "rejected":
                    continue
                approval = Approval(
                    id=uuid.uuid4().hex[:10],
                    gate=spec.name,
                    trigger=trigger or key,
                    message=_approval_message(spec),
                    state=state.state,
                    requested_at=run._clock(),
                )
                drafts.append(
                    run._draft("approval.requested", approval=approval.model_dump(mode="json"))
                )
            return drafts

        run._commit(make)
        for result in report.blocking:
            if result.kind == "approval" or result.escalated:
                run._remember("approval_requested", f"{key}: {result.gate} waits for approval")

    # -- firing --------------------------------------------------------------------------
    def fire(self, trigger: str) -> Event:
        """Fire ``trigger``: evaluate its gates, run its action, enter the target state.

        The action (a callable registered with :func:`skillnb.action` or named
        ``module:function``; a name registered nowhere is only a label) is called with the run.

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.
            GateBlocked: a blocking gate failed (its report is recorded).
            UncertainStep: the action started earlier and never finished.

        """
        run = self._run()
        transition = self._transition(trigger)
        action: Callable[[], Any] | None = None
        if transition.action is not None:
            fn = _find_action(self.registry, transition.action)
            if fn is not None:
                action = lambda: fn(run)  # noqa: E731  # bind the run for the step body
        outcome = self.run_gated(
            trigger, body=action, key=f"transition:{trigger}", idempotent=transition.idempotent
        )
        return next(e for e in outcome.events if e.type == "transition.fired")

    def run_gated(
        self,
        trigger: str | None,
        body: Callable[[], Any] | None = None,
        *,
        gates: Sequence[GateSpec] = (),
        key: str | None = None,
        source_hash: str | None = None,
        cell_id: str | None = None,
        idempotent: bool = False,
        on_block: Literal["raise", "skip"] = "raise",
        skip_done: bool = False,
        _falling_back: dict[str, str] | None = None,
    ) -> StepOutcome:
        """Run ``body`` as a durable step once the gates of ``trigger`` and ``gates`` pass.

        With ``skip_done``, a step already committed with the same ``source_hash`` is reported
        as ``done`` and not run again, unless the workflow is back in a state where
        ``trigger`` applies again.

        When a blocking gate timed out with ``on_timeout: {fallback: OTHER}``, the body does
        not run: the transition ``OTHER`` fires instead (its own gates and action apply; a
        fallback does not fall back again) and the outcome's status is ``fallback``. After
        the step commits, the corrective actions of the warning gates run, each as a step.

        Raises:
            GateBlocked: a blocking gate failed and ``on_block`` is ``"raise"``.
            TransitionNotAllowed: ``trigger`` does not apply in the current state.
            UncertainStep: the step started earlier and never committed.

        """
        run = self._run()
        run.refresh()
        step_key = key or (f"gate:{trigger}" if trigger else "gate")
        if skip_done and self._done_before(step_key, trigger, source_hash):
            return StepOutcome(status="done")
        specs = self._specs(trigger, gates)
        report = self._evaluate(specs, trigger)
        if not report.passed:
            self._record_block(step_key, report, specs, trigger)
            fallback = report.fallback
            if fallback is not None and trigger is not None and not _falling_back:
                outcome = self._fall_back(trigger, fallback.gate, fallback.message, report)
                if source_hash is not None:  # the cell is done in this run: it fell back
                    marker = self._started_draft(step_key, source_hash, cell_id, idempotent)
                    done = run._draft("step.committed", key=step_key)
                    run.append_events([marker, done])
                return outcome
            if on_block == "skip":
                return StepOutcome(status="blocked", report=report)
            raise GateBlocked(report, state=report.state, trigger=trigger)
        started = self._start_step(step_key, source_hash, cell_id, idempotent, body is not None)
        try:
            result = body() if body is not None else None
        except BaseException as exc:
            self._fail_step(step_key, exc)
            raise
        events = self._finish(step_key, trigger, report, started, source_hash, _falling_back)
        self._correct(report)
        return StepOutcome(status="ran", report=report, result=result, events=events)

    def _fall_back(self, trigger: str, gate: str, reason: str, report: GateReport) -> StepOutcome:
        """Fire the fallback transition of ``trigger``'s gate ``gate``, which timed out."""
        target = next(r.fallback for r in report.results if r.gate == gate and r.fallback)
        transition = self._transition(target)
        action: Callable[[], Any] | None = None
        if transition.action is not None:
            fn = _find_action(self.registry, transition.action)
            if fn is not None:
                run = self._run()
                action = lambda: fn(run)  # noqa: E731  # bind the run for the step body
        why = {"for": trigger, "gate": gate, "reason": reason}
        outcome = self.run_gated(
            target,
            body=action,
            key=f"transition:{target}",
            idempotent=transition.idempotent,
            _falling_back=why,
        )
        return StepOutcome(status="fallback", report=report, events=outcome.events)

    def _correct(self, report: GateReport) -> None:
        """Run the corrective action of each warning gate of ``report``, each a durable step."""
        run = self._run()
        if run.workflow is None:
            return
        for gate, ref in bending.corrective_actions(report, run.workflow.gates):
            fn = self.registry.resolve_action(ref)
            key = f"corrective:{gate}"
            self._start_step(key, None, None, False, True)
            try:
                fn(run)
            except BaseException as exc:
                self._fail_step(key, exc)
                raise
            run.append_events([run._draft("step.committed", key=key)])
            run._remember("corrective_action", f"{gate} warned: ran {ref}")

    def _done_before(self, key: str, trigger: str | None, source_hash: str | None) -> bool:
        run = self._run()
        state = run.snapshot_ref()
        step = state.steps.get(key)
        if step is None or step.status != "committed" or step.source_hash != source_hash:
            return False
        if trigger is None or run.workflow is None or state.state is None:
            return True
        return run.workflow.find(state.state, trigger) is None

    def _start_step(
        self, key: str, source_hash: str | None, cell_id: str | None, idempotent: bool, real: bool
    ) -> bool:
        """Record that step ``key`` starts (when ``real``); refuse an uncertain one.

        Raises:
            UncertainStep: the step started earlier, never ended, and its process is gone.
        """
        run = self._run()
        step = run.snapshot_ref().steps.get(key)
        if step is not None and is_uncertain(step) and not (idempotent or step.idempotent):
            raise UncertainStep(key)
        if not real:
            return False
        # Not fsynced: the marker survives a crash of this process (the case it is for), and
        # the step's commit, which is fsynced, makes it durable with the result.
        run._commit(
            lambda _s: [self._started_draft(key, source_hash, cell_id, idempotent)], sync=False
        )
        return True

    def _started_draft(
        self, key: str, source_hash: str | None, cell_id: str | None, idempotent: bool
    ) -> EventDraft:
        return self._run()._draft(
            "step.started",
            key=key,
            source_hash=source_hash,
            cell_id=cell_id,
            idempotent=idempotent,
            owner=current_owner(),
        )

    def _fail_step(self, key: str, exc: BaseException) -> None:
        run = self._run()
        message = f"{type(exc).__name__}: {exc}"
        run._commit(lambda _s: [run._draft("step.failed", key=key, error=message)])

    def _finish(
        self,
        key: str,
        trigger: str | None,
        report: GateReport,
        started: bool,
        source_hash: str | None,
        fallback: dict[str, str] | None = None,
    ) -> list[Event]:
        run = self._run()
        used = [
            r.gate for r in report.results if r.passed and (r.kind == "approval" or r.escalated)
        ]
        gates = run.workflow.gates if run.workflow is not None else {}

        def make(state: RunState) -> list[EventDraft]:
            drafts: list[EventDraft] = []
            if not started and source_hash is not None:  # a body-less step, recorded at once
                drafts.append(self._started_draft(key, source_hash, None, False))
            if report.results:  # keeps the last report current: a passed step is not "blocked"
                drafts.append(
                    run._draft("gate.reported", key=key, report=report.model_dump(mode="json"))
                )
            for gate in used:
                request = _open_request(state, gate)
                if request is None or request.status != "approved":
                    raise SkillnbError(f"the approval for {gate!r} changed while the step ran")
                drafts.append(run._draft("approval.consumed", id=request.id))
            drafts.extend(bending.step_drafts(state, report, gates, key, run._clock()))
            if trigger is not None:
                consumed = {str(d.data["id"]) for d in drafts if d.type == "approval.consumed"}
                drafts.extend(self._fire_drafts(state, trigger, consumed, fallback))
            if started or source_hash is not None:
                drafts.append(run._draft("step.committed", key=key))
            return drafts

        events = run._commit(make)
        fired = next((e for e in events if e.type == "transition.fired"), None)
        if fired is not None:
            summary = f"{fired.data['trigger']}: {fired.data['from']} → {fired.data['to']}"
            run._remember("transition", summary)
        return events

    def _fire_drafts(
        self,
        state: RunState,
        trigger: str,
        consumed: set[str],
        fallback: dict[str, str] | None = None,
    ) -> list[EventDraft]:
        run = self._run()
        extra: dict[str, Any] = {"profile": self.profile} if self.profile != DEFAULT_PROFILE else {}
        if fallback is not None:
            extra["fallback"] = fallback
        assert run.workflow is not None  # noqa: S101  # _transition checked it
        transition = run.workflow.find(state.state, trigger) if state.state else None
        if transition is None:
            allowed = run.workflow.triggers_from(state.state) if state.state else []
            raise TransitionNotAllowed(trigger, state.state, allowed)
        drafts = [
            run._draft(
                "transition.fired",
                trigger=trigger,
                action=transition.action,
                **{"from": state.state, "to": transition.target},
                **extra,
            )
        ]
        entry = state_entry_seq(state)
        for approval in state.approvals.values():
            open_ = approval.status in ("pending", "approved") and approval.requested_seq > entry
            if open_ and approval.id not in consumed:
                drafts.append(run._draft("approval.expired", id=approval.id))
        return drafts

    # -- approvals -----------------------------------------------------------------------
    def pending(self) -> list[Approval]:
        """Approval requests waiting for a decision in the current state, oldest first."""
        state = self._run().snapshot_ref(refresh=True)
        entry = state_entry_seq(state)
        return [
            a.model_copy()
            for a in state.approvals.values()
            if a.status == "pending" and a.requested_seq > entry
        ]

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
            ApprovalError: no request is waiting (early), the request is stale (the run left
                the state it was asked in, or ``request`` names an older one), or it was
                already decided (repeated).

        """
        return self._decide(gate, "approved", by, note, request)

    def reject(
        self,
        gate: str,
        by: str | None = None,
        note: str | None = None,
        *,
        request: str | None = None,
    ) -> Approval:
        """Reject the open request of approval gate ``gate`` (see :meth:`approve`)."""
        return self._decide(gate, "rejected", by, note, request)

    def _decide(
        self, gate: str, status: str, by: str | None, note: str | None, request_id: str | None
    ) -> Approval:
        run = self._run()
        who = by or run.user
        chosen: list[str] = []

        def make(state: RunState) -> list[EventDraft]:
            request = _pending_request(state, gate, request_id)
            chosen.append(request.id)
            return [run._draft("approval.decided", id=request.id, status=status, by=who, note=note)]

        run._commit(make)
        run._remember(f"approval_{status}", f"{gate} {status} by {who}")
        return run.snapshot_ref().approvals[chosen[-1]].model_copy()

    # -- follow-ups ----------------------------------------------------------------------
    def follow_ups(self) -> list[FollowUp]:
        """Follow-ups left by warning gates and not resolved yet, oldest first."""
        return bending.open_follow_ups(self._run().snapshot_ref(refresh=True))

    def resolve_follow_up(
        self, id: str, by: str | None = None, note: str | None = None
    ) -> FollowUp:
        """Resolve follow-up ``id`` (or the only open follow-up of the gate named ``id``).

        Recorded with who, when and ``note``; the follow-up leaves the lists.

        Raises:
            SkillnbError: no such follow-up, it is resolved already, or the gate has several.

        """
        run = self._run()
        who = by or run.user
        events = run._commit(lambda s: [bending.resolve_draft(s, id, who, note, run._clock())])
        resolved = str(events[0].data["id"])
        run._remember("follow_up_resolved", f"follow-up {resolved} resolved by {who}")
        return run.snapshot_ref().follow_ups[resolved].model_copy()

    # -- steps ---------------------------------------------------------------------------
    def uncertain(self) -> list[str]:
        """Keys of steps that started, never ended, and whose process is gone (a crash)."""
        state = self._run().snapshot_ref(refresh=True)
        return [k for k, s in state.steps.items() if is_uncertain(s)]

    def clear_step(self, key: str, by: str | None = None) -> None:
        """Declare an uncertain step resolved, so that it may run again."""
        run = self._run()

        def make(state: RunState) -> list[EventDraft]:
            step = state.steps.get(key)
            if step is None or not is_uncertain(step):
                raise SkillnbError(f"step {key!r} is not uncertain (nothing to clear)")
            return [run._draft("step.cleared", key=key, by=by or run.user)]

        run._commit(make)


def _pending_request(state: RunState, gate: str, request_id: str | None) -> Approval:
    entry = state_entry_seq(state)
    requests = [a for a in state.approvals.values() if a.gate == gate]
    if not requests:
        raise ApprovalError(
            f"no approval was requested for gate {gate!r}: an approval answers a request, "
            "which the gated step records when it runs (an early approval is refused)"
        )
    if request_id is not None:
        named = [a for a in requests if a.id == request_id]
        if not named:
            raise ApprovalError(f"gate {gate!r} has no request {request_id!r}")
        latest = named[0]
    else:
        latest = requests[-1]
    if latest.requested_seq <= entry or latest.status == "expired":
        raise ApprovalError(
            f"the request {latest.id} for {gate!r} was made in state {latest.state!r} at version "
            f"{latest.requested_seq}; the run has moved on to {state.state!r}, so it is stale"
        )
    if latest.status != "pending" or latest is not requests[-1]:
        what = "already " + latest.status if latest.status != "pending" else "superseded"
        by = f" by {latest.decided_by}" if latest.decided_by else ""
        raise ApprovalError(f"the request {latest.id} for {gate!r} is {what}{by}")
    return latest


def _approval_message(spec: GateSpec) -> str:
    """What the approver is asked (the gate's message, else its description, else its name)."""
    return spec.approval or spec.escalate or spec.description or f"approve {spec.name}"


def _find_action(registry: Registry, ref: str) -> Callable[..., Any] | None:
    """The callable for an action reference; ``None`` when a plain name is only a label."""
    if ":" in ref:
        return registry.resolve_action(ref)
    try:
        return registry.resolve_action(ref)
    except SkillnbError:
        return None
