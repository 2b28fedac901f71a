"""What a step that passed its gates records about gates that bent (core layer).

Pure: given the run's state, the gate report of a step that is about to commit and the
workflow's gates, :func:`step_drafts` builds the audit events (``gate.bypassed`` for each
gate the run's profile bypassed) and opens a follow-up (``followup.opened``) for each
warning gate with a ``follow_up`` text, unless one is already open for that gate in that
state. :func:`corrective_actions` names the corrective actions of the gates that warned;
the run executes them after the transition. :func:`resolve_draft` checks and builds the
event that closes a follow-up.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from skillnb.core.gates.evaluate import GateSpec
from skillnb.core.runstate.records import EventDraft, FollowUp, GateReport, RunState
from skillnb.errors import SkillnbError

__all__ = ["corrective_actions", "open_follow_ups", "resolve_draft", "step_drafts"]


_REASON = 2000
"""Characters of a gate's message kept as a follow-up's reason (gate callables write them)."""


def _clip(text: str) -> str:
    return text if len(text) <= _REASON else text[: _REASON - 1] + "…"


def open_follow_ups(state: RunState) -> list[FollowUp]:
    """The follow-ups not resolved yet, oldest first (copies)."""
    rows = [f for f in state.follow_ups.values() if f.status == "open"]
    return [f.model_copy() for f in sorted(rows, key=lambda f: (f.opened_seq, f.id))]


def step_drafts(
    state: RunState,
    report: GateReport,
    gates: Mapping[str, GateSpec],
    key: str,
    at: datetime,
) -> list[EventDraft]:
    """The bypass and follow-up events of step ``key`` whose gates gave ``report``.

    Args:
        state: the run's state under the lock, before the step commits.
        report: the gate report the step passed with.
        gates: the workflow's gates by name (inline gates have no follow-up).
        key: the step's key (``transition:TRIGGER``, ``gate:TRIGGER``, ...).
        at: when the step commits.

    """
    drafts = [
        EventDraft(
            type="gate.bypassed",
            at=at,
            data={
                "key": key,
                "trigger": report.trigger,
                "gate": r.gate,
                "profile": report.profile,
                "state": report.state,
            },
        )
        for r in report.bypassed
    ]
    opened = {(f.gate, f.state) for f in state.follow_ups.values() if f.status == "open"}
    for result in report.warnings:
        spec = gates.get(result.gate)
        if spec is None or spec.follow_up is None or (result.gate, report.state) in opened:
            continue
        follow_up = FollowUp(
            id=uuid.uuid4().hex[:10],
            gate=result.gate,
            state=report.state,
            trigger=report.trigger or key,
            reason=_clip(result.message),
            text=spec.follow_up,
            opened_at=at,
        )
        opened.add((result.gate, report.state))
        dump = follow_up.model_dump(mode="json")
        drafts.append(EventDraft(type="followup.opened", at=at, data={"follow_up": dump}))
    return drafts


def corrective_actions(report: GateReport, gates: Mapping[str, GateSpec]) -> list[tuple[str, str]]:
    """``(gate, action)`` for each warning gate in ``report`` that names a corrective action."""
    out = []
    for result in report.warnings:
        spec = gates.get(result.gate)
        if spec is not None and spec.action is not None:
            out.append((result.gate, spec.action))
    return out


def resolve_draft(state: RunState, ref: str, by: str, note: str | None, at: datetime) -> EventDraft:
    """The event that resolves the follow-up ``ref``: its id, or the gate of its only open one.

    Raises:
        SkillnbError: no such follow-up, it is resolved already, or the gate has several open.

    """
    follow_up = state.follow_ups.get(ref)
    if follow_up is None:
        of_gate = [f for f in open_follow_ups(state) if f.gate == ref]
        if len(of_gate) > 1:
            ids = ", ".join(f.id for f in of_gate)
            raise SkillnbError(f"gate {ref!r} has several open follow-ups; give the id ({ids})")
        if not of_gate:
            known = ", ".join(f"{f.id} ({f.gate})" for f in open_follow_ups(state)) or "none"
            raise SkillnbError(f"no follow-up {ref!r} in this run (open: {known})")
        follow_up = of_gate[0]
    if follow_up.status != "open":
        raise SkillnbError(f"follow-up {ref!r} was already resolved by {follow_up.resolved_by}")
    return EventDraft(
        type="followup.resolved", at=at, data={"id": follow_up.id, "by": by, "note": note}
    )
