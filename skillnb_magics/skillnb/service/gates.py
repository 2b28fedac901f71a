"""Gates, transitions and gated steps of a run (service layer).

Every rule about when a step may run lives here, not in the magics, widgets or the
JupyterLab extension. :class:`Gates` evaluates a trigger's gates (plus inline ones), records
what blocked, and runs a gated body as a durable step (:class:`~skillnb.service.steps.Steps`)
whose commit fires the transition and consumes the approvals it used, in one append.
"""

from __future__ import annotations

import difflib
import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from skillnb.core.expr.budget import TotalBudget
from skillnb.core.gates import bending
from skillnb.core.gates import evaluate as gate_eval
from skillnb.core.gates.evaluate import DEFAULT_PROFILE, GateContext, GateSpec
from skillnb.core.gates.registry import Registry, default_registry
from skillnb.core.limits import check_event
from skillnb.core.runstate.records import (
    Approval,
    CheckedDraft,
    Event,
    EventDraft,
    GateReport,
    JsonValue,
    RunState,
)
from skillnb.core.runstate.state import state_entry_seq
from skillnb.errors import GateBlocked, SkillnbError, TransitionNotAllowed
from skillnb.service.approvals import (
    ASK_ANEW,
    approval_message,
    approval_status,
    open_request,
)
from skillnb.service.drift import StaleGate, stale_gates
from skillnb.service.journal import RunJournal
from skillnb.service.steps import Steps

if TYPE_CHECKING:
    from skillnb.core.workflow.model import Transition, Workflow

__all__ = ["Gates", "StepOutcome"]


@dataclass
class StepOutcome:
    """What happened to a gated step (a ``%%gate`` cell or :meth:`Gates.run_gated`)."""

    status: Literal["ran", "done", "blocked", "fallback"]
    """``ran``: gates passed and the body ran; ``done``: already completed in this run and
    not run again; ``blocked``: a blocking gate failed (only with ``on_block="skip"``)."""
    report: GateReport | None = None
    """The gate report (``None`` when the step was already done)."""
    result: Any = None
    """What the body returned."""
    events: list[Event] = field(default_factory=list)
    """The events the step committed."""
    stale: list[StaleGate] = field(default_factory=list)
    """For a step already ``done``: gates of its trigger that passed when it fired and fail
    now that a fact they read changed (the step does not run or fire again)."""


@dataclass(frozen=True)
class _GatedStep:
    """What identifies one gated step while it is claimed, run and committed."""

    key: str
    trigger: str | None
    source_hash: str | None
    cell_id: str | None
    idempotent: bool
    skip_done: bool


@dataclass(frozen=True)
class _Fallback:
    """A fallback transition fired for a gated step whose gate timed out."""

    why: dict[str, str]
    """The ``fallback`` record of the ``transition.fired`` event (for, gate, reason)."""
    cell: _GatedStep | None
    """The gated cell that fell back: marked done in the fallback's own append."""


class Gates:
    """Evaluate gates, run gated steps and fire transitions of one run.

    Attributes:
        registry: where python/resource gates and actions are looked up.

    """

    def __init__(self, journal: RunJournal, steps: Steps, registry: Registry | None = None):
        self.journal = journal
        self.steps = steps
        self.registry = registry or default_registry
        self.profile = DEFAULT_PROFILE
        """The run profile: gates whose ``bypass_in`` names it are bypassed (and audited)."""

    def _workflow(self, trigger: str) -> Workflow:
        workflow = self.journal.workflow
        if workflow is None:
            error = TransitionNotAllowed(trigger, self.journal.state.state, [])
            error.args = (
                f"there is no workflow yet, so trigger {trigger!r} leads nowhere: run the "
                "notebook's %%workflow cell first (in Python: open_run(..., workflow=wf)); "
                "a %%gate with --name NAME instead of a trigger needs no workflow",
            )
            raise error
        return workflow

    def transition(self, trigger: str) -> Transition:
        """The transition ``trigger`` from the current state.

        Raises:
            TransitionNotAllowed: there is none (or the run has no workflow).

        """
        state = self.journal.state
        workflow = self._workflow(trigger)
        transition = workflow.find(state.state, trigger) if state.state is not None else None
        if transition is None:
            error = TransitionNotAllowed(trigger, state.state, workflow.triggers_from(state.state))
            known = sorted({t.trigger for t in workflow.transitions})
            if trigger not in known:  # a typo, not a wrong moment: say which one was meant
                close = difflib.get_close_matches(trigger, known, n=3, cutoff=0.6)
                hint = " or ".join(repr(c) for c in close)
                error.args = (
                    f"unknown trigger {trigger!r}"
                    + (f" (did you mean {hint}?)" if close else f" (known: {', '.join(known)})"),
                )
            raise error
        return transition

    def specs(self, trigger: str | None, inline: Sequence[GateSpec]) -> list[GateSpec]:
        """The gates of ``trigger``'s transition followed by ``inline`` ones."""
        specs: list[GateSpec] = []
        if trigger is not None:
            transition = self.transition(trigger)  # raises when there is no workflow
            gates = self._workflow(trigger).gates
            specs = [gates[name] for name in transition.gates]
        return [*specs, *inline]

    def evaluate(
        self, specs: Sequence[GateSpec], trigger: str | None, total: TotalBudget | None = None
    ) -> GateReport:
        """Evaluate ``specs`` against the current state (records nothing).

        ``total`` is the budget the check gates share (a new one when ``None``); a view of
        several transitions passes one for all of them.
        """
        state = self.journal.state
        ctx = GateContext(
            state=state.state,
            version=state.version,
            trigger=trigger,
            facts=self.journal.values() if specs else {},  # no gate: no value to decode
            registry=self.registry,
            approval=lambda spec: approval_status(self.journal.state, spec),
            profile=self.profile,
            total=total,
        )
        return gate_eval.evaluate(specs, ctx)

    def stale(self, trigger: str | None = None) -> list[StaleGate]:
        """Gates of fired transitions (``trigger``'s only, when given) that fail now.

        See :mod:`skillnb.service.drift`: a fact a gate read changed after its transition
        fired; nothing fires again, the run says so.
        """
        return stale_gates(self.journal, self.evaluate, trigger)

    def check(self, trigger: str | None, gates: Sequence[GateSpec] = ()) -> GateReport:
        """Evaluate the gates of ``trigger`` (plus ``gates``) without firing: a dry run.

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.

        """
        self.journal.refresh()
        return self.evaluate(self.specs(trigger, gates), trigger)

    def _record_block(
        self, key: str, report: GateReport, specs: Sequence[GateSpec], trigger: str | None
    ) -> None:
        journal = self.journal
        approvals = {s.name: s for s in specs if s.kind == "approval" or s.escalate}
        asked_again: list[GateSpec] = []

        def make(state: RunState) -> list[EventDraft]:
            asked_again.clear()
            drafts = [
                journal.draft("gate.reported", key=key, report=report.model_dump(mode="json"))
            ]
            for result in report.results:
                spec = approvals.get(result.gate)
                asks = result.kind == "approval" or result.escalated
                if spec is None or result.passed or not asks:
                    continue
                request = open_request(state, spec.name)
                if request is not None and request.status != "rejected":
                    continue
                if request is not None and result.kind == "approval":
                    asked_again.append(spec)
                approval = Approval(
                    id=uuid.uuid4().hex[:10],
                    gate=spec.name,
                    trigger=trigger or key,
                    message=approval_message(spec),
                    state=state.state,
                    requested_at=journal.clock(),
                )
                asked = approval.model_dump(mode="json")
                drafts.append(journal.draft("approval.requested", approval=asked))
            return drafts

        journal.commit(make)
        _say_asked_again(report, asked_again, journal.state)
        for result in report.blocking:
            if result.kind == "approval" or result.escalated:
                journal.skill.remember(
                    "approval_requested", f"{key}: {result.gate} waits for approval"
                )

    # -- firing --------------------------------------------------------------------------
    def fire(self, trigger: str, subject: object) -> Event:
        """Fire ``trigger``: evaluate its gates, run its action, enter the target state.

        The action (a callable registered with :func:`skillnb.action` or named
        ``module:function``; a name registered nowhere is only a label) is called with
        ``subject`` (the :class:`~skillnb.run.Run`).

        Raises:
            TransitionNotAllowed: no transition ``trigger`` from the current state.
            GateBlocked: a blocking gate failed (its report is recorded).
            UncertainStep: the action started earlier and never finished.

        """
        self.journal.refresh()
        transition = self.transition(trigger)
        action: Callable[[], Any] | None = None
        if transition.action is not None:
            fn = _find_action(self.registry, transition.action, trusted=transition.trusted)
            if fn is not None:
                action = lambda: fn(subject)  # noqa: E731  # bind the run for the step body
        outcome = self.run_gated(
            trigger,
            body=action,
            key=f"transition:{trigger}",
            idempotent=transition.idempotent,
            subject=subject,
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
        wait: float = 0.0,
        subject: object = None,
        _falling_back: _Fallback | None = None,
    ) -> StepOutcome:
        """Run ``body`` as a durable step once the gates of ``trigger`` and ``gates`` pass.

        With ``skip_done``, a step already committed with the same ``source_hash`` is reported
        as ``done`` and not run again, unless the workflow is back in a state where
        ``trigger`` applies again. The body runs only after the step is claimed, in one
        append with the approvals it uses (so one approval runs one body, once); while
        another live process holds the step, this one waits up to ``wait`` seconds.

        Raises:
            GateBlocked: a blocking gate failed and ``on_block`` is ``"raise"``.
            TransitionNotAllowed: ``trigger`` does not apply in the current state.
            StepInProgress: another live process runs the step (after ``wait`` seconds).
            UncertainStep: the step started earlier and never committed.

        """
        step_key = key or (f"gate:{trigger}" if trigger else "gate")
        step = _GatedStep(step_key, trigger, source_hash, cell_id, idempotent, skip_done)

        def attempt() -> StepOutcome | tuple[GateReport, list[str]]:
            return self._claim(step, gates, on_block, body is not None)

        claimed = self.steps.waiting(wait, attempt)
        if isinstance(claimed, StepOutcome):
            fell = claimed.report.fallback if claimed.report is not None else None
            first = _falling_back is None  # a fallback does not fall back again
            if claimed.status == "blocked" and fell is not None and trigger and first:
                return self._fall_back(step, fell.gate, claimed.report, subject)
            if claimed.status == "blocked" and on_block == "raise":
                assert claimed.report is not None  # noqa: S101  # a blocked step has its report
                raise GateBlocked(claimed.report, state=claimed.report.state, trigger=trigger)
            if claimed.status == "done" and trigger is not None:
                claimed.stale = self.stale(trigger)
            return claimed
        report, used = claimed
        result = self.steps.run_body(step_key, body) if body is not None else None
        events = self._finish(step, report, used, started=body is not None, fallback=_falling_back)
        self._correct(report, subject)
        return StepOutcome(status="ran", report=report, result=result, events=events)

    def _fall_back(
        self, step: _GatedStep, gate: str, report: GateReport | None, subject: object
    ) -> StepOutcome:
        """Fire the fallback transition of the step's gate ``gate``, which timed out."""
        assert report is not None  # noqa: S101  # a fallback comes from a report
        result = next(r for r in report.results if r.gate == gate and r.fallback)
        target = str(result.fallback)
        transition = self.transition(target)
        action: Callable[[], Any] | None = None
        if transition.action is not None:
            fn = _find_action(self.registry, transition.action, trusted=transition.trusted)
            if fn is not None:
                action = lambda: fn(subject)  # noqa: E731  # bind the run for the step body
        why = {"for": str(step.trigger), "gate": gate, "reason": result.message}
        # A cell is done in this run once it fell back: marked so in the fallback's append.
        cell = step if step.source_hash is not None else None
        outcome = self.run_gated(
            target,
            body=action,
            key=f"transition:{target}",
            idempotent=transition.idempotent,
            subject=subject,
            _falling_back=_Fallback(why, cell),
        )
        return StepOutcome(status="fallback", report=report, events=outcome.events)

    def _correct(self, report: GateReport, subject: object) -> None:
        """Run the corrective action of each warning gate of ``report``, each a durable step."""
        workflow = self.journal.workflow
        if workflow is None:
            return
        for gate, ref in bending.corrective_actions(report, workflow.gates):
            fn = self.registry.resolve_action(ref, trusted=workflow.gates[gate].trusted)
            key = f"corrective:{gate}"
            self.steps.claim(key, None, None, False)
            self.steps.run_body(key, functools.partial(fn, subject))
            self.journal.append_drafts([self.steps.committed_draft(key)])
            self.journal.skill.remember("corrective_action", f"{gate} warned: ran {ref}")

    def _claim(
        self,
        step: _GatedStep,
        gates: Sequence[GateSpec],
        on_block: Literal["raise", "skip"],
        has_body: bool,
    ) -> StepOutcome | tuple[GateReport, list[str]]:
        """Evaluate the gates and claim the step; the outcome when it will not run."""
        state = self.journal.refresh()
        self.steps.check_free(state, step.key)
        if step.skip_done and self._done_before(state, step):
            return StepOutcome(status="done")
        specs = self.specs(step.trigger, gates)
        report = self.evaluate(specs, step.trigger)
        if not report.passed:  # run_gated raises, skips or falls back
            self._record_block(step.key, report, specs, step.trigger)
            return StepOutcome(status="blocked", report=report)
        used = [
            r.gate for r in report.results if r.passed and (r.kind == "approval" or r.escalated)
        ]
        if not has_body:  # nothing runs: the finishing append checks and consumes everything
            self.steps.refuse_uncertain(state, step.key, step.idempotent)
            return report, used

        def also(now: RunState) -> list[EventDraft] | None:
            if step.skip_done and self._done_before(now, step):
                return None
            if step.trigger is not None:
                self._applying(now, step.trigger)  # raises when it no longer applies
            return self._consume(now, used)

        if not self.steps.claim(step.key, step.source_hash, step.cell_id, step.idempotent, also):
            return StepOutcome(status="done")
        return report, []

    def _consume(self, state: RunState, used: list[str]) -> list[EventDraft]:
        drafts: list[EventDraft] = []
        for gate in used:
            request = open_request(state, gate)
            if request is None or request.status != "approved":
                raise SkillnbError(
                    f"the approval for {gate!r} was used or changed by another process before "
                    "this step could start; ask for approval again"
                )
            drafts.append(self.journal.draft("approval.consumed", id=request.id))
        return drafts

    def _done_before(self, state: RunState, gated: _GatedStep) -> bool:
        workflow = self.journal.workflow
        step = state.steps.get(gated.key)
        if step is None or step.status != "committed" or step.source_hash != gated.source_hash:
            return False
        if gated.trigger is None or workflow is None or state.state is None:
            return True
        return workflow.find(state.state, gated.trigger) is None

    def _finish(
        self,
        step: _GatedStep,
        report: GateReport,
        used: list[str],
        started: bool,
        fallback: _Fallback | None = None,
    ) -> list[Event]:
        """Commit the step: report, approvals, transition and ``step.committed`` at once.

        ``used`` lists the approval gates to consume here (none when the claim consumed them).
        A fallback's append also marks the gated cell that fell back as done (started and
        committed), so a crash leaves both or neither.
        """
        journal = self.journal
        key, trigger = step.key, step.trigger

        def make(state: RunState) -> list[EventDraft]:
            drafts: list[EventDraft] = []
            if not started and step.source_hash is not None:  # a body-less step, recorded now
                drafts.append(self.steps.started_draft(key, step.source_hash, None, False))
            if report.results:  # keeps the last report current: a passed step is not "blocked"
                dump = report.model_dump(mode="json")
                drafts.append(journal.draft("gate.reported", key=key, report=dump))
            drafts.extend(self._consume(state, used))
            gates = journal.workflow.gates if journal.workflow is not None else {}
            drafts.extend(bending.step_drafts(state, report, gates, key, journal.clock()))
            if trigger is not None:
                consumed = {str(d.data["id"]) for d in drafts if d.type == "approval.consumed"}
                why = fallback.why if fallback is not None else None
                drafts.extend(self._fire_drafts(state, trigger, consumed, why))
            if started or step.source_hash is not None:
                drafts.append(self.steps.committed_draft(key))
            cell = fallback.cell if fallback is not None else None
            if cell is not None:
                steps = self.steps
                drafts.append(steps.started_draft(cell.key, cell.source_hash, cell.cell_id, False))
                drafts.append(steps.committed_draft(cell.key))
            return drafts

        events = journal.commit(make, speculative=True)  # make has no effects
        fired = next((e for e in events if e.type == "transition.fired"), None)
        if fired is not None:
            summary = f"{fired.data['trigger']}: {fired.data['from']} → {fired.data['to']}"
            journal.skill.remember("transition", summary)
        return events

    def _applying(self, state: RunState, trigger: str) -> Transition:
        """The transition ``trigger`` fires from ``state``.

        Raises:
            TransitionNotAllowed: ``trigger`` does not apply there (or there is no workflow).

        """
        workflow = self._workflow(trigger)
        transition = workflow.find(state.state, trigger) if state.state else None
        if transition is None:
            allowed = workflow.triggers_from(state.state) if state.state else []
            raise TransitionNotAllowed(trigger, state.state, allowed)
        return transition

    def _fire_drafts(
        self,
        state: RunState,
        trigger: str,
        consumed: set[str],
        fallback: dict[str, str] | None = None,
    ) -> list[EventDraft]:
        journal = self.journal
        extra: dict[str, Any] = {"profile": self.profile} if self.profile != DEFAULT_PROFILE else {}
        if fallback is not None:
            extra["fallback"] = fallback
        transition = self._applying(state, trigger)
        data: dict[str, JsonValue] = {
            "trigger": trigger,
            "action": transition.action,
            "from": state.state,
            "to": transition.target,
            **extra,
        }
        drafts = [_fired_draft(journal, data, plain=fallback is None)]
        entry = state_entry_seq(state)
        for approval in state.approvals.values():
            open_ = approval.status in ("pending", "approved") and approval.requested_seq > entry
            if open_ and approval.id not in consumed:
                drafts.append(journal.draft("approval.expired", id=approval.id))
        return drafts


def _fired_draft(journal: RunJournal, data: dict[str, JsonValue], *, plain: bool) -> EventDraft:
    """The ``transition.fired`` draft of ``data``: checked, and not validated again when plain.

    Plain: every value a ``str`` or ``None`` (the usual firing), which is strict JSON as it is,
    so the store may encode it with its fast encoder (see :class:`CheckedDraft`).
    """
    if not plain or not all(v is None or type(v) is str for v in data.values()):
        return journal.draft("transition.fired", **data)
    check_event("transition.fired", data)  # every draft's checks, without validating again
    return CheckedDraft.of("transition.fired", journal.clock(), data)


def _say_asked_again(report: GateReport, specs: Sequence[GateSpec], state: RunState) -> None:
    """Reword the reasons of approval gates whose rejected request was just asked again.

    The evaluation said "rejected …; run the step again to ask anew", and this run of the
    step did ask anew: the reason says both, and what waits now.
    """
    for spec in specs:
        _, waiting = approval_status(state, spec)
        for index, result in enumerate(report.results):
            if result.gate == spec.name:
                said = result.message.removesuffix(ASK_ANEW)
                message = f"{said}; asked again: {waiting}"
                report.results[index] = result.model_copy(update={"message": message})


def _find_action(registry: Registry, ref: str, *, trusted: bool) -> Callable[..., Any] | None:
    """The callable for an action reference; ``None`` when a plain name is only a label."""
    if ":" in ref:
        return registry.resolve_action(ref, trusted=trusted)
    try:
        return registry.resolve_action(ref)
    except SkillnbError:
        return None
