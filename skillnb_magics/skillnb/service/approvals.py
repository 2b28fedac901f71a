"""Durable approvals: request, decide, consume (service layer).

Approvals are durable events: a blocked approval gate records a *request* bound to the state
entry it was asked in (the version at which the run entered its current state); approving
answers that request; the next passing evaluation *consumes* it. A request made before the
run left its state is stale and can no longer be approved; an approval with no request
(early) or for a request already answered (repeated) is refused.
"""

from __future__ import annotations

from skillnb.core.gates.evaluate import GateSpec
from skillnb.core.runstate.records import Approval, EventDraft, RunState
from skillnb.core.runstate.state import state_entry_seq
from skillnb.core.shell import cli_command, magic_command
from skillnb.errors import ApprovalError
from skillnb.service.journal import RunJournal

__all__ = [
    "ASK_ANEW",
    "Approvals",
    "approval_message",
    "approval_status",
    "open_request",
    "pending_in",
]


def pending_in(state: RunState) -> list[Approval]:
    """Approval requests of ``state`` waiting for a decision in its state, oldest first."""
    entry = state_entry_seq(state)
    return [
        a.model_copy()
        for a in state.approvals.values()
        if a.status == "pending" and a.requested_seq > entry
    ]


def open_request(state: RunState, gate: str) -> Approval | None:
    """The latest request for ``gate`` that is still answerable in the current state entry."""
    entry = state_entry_seq(state)
    for approval in reversed(state.approvals.values()):
        if approval.gate == gate and approval.requested_seq > entry:
            return approval if approval.status in ("pending", "approved", "rejected") else None
    return None


def approval_message(spec: GateSpec) -> str:
    """What the approver is asked.

    The approval gate's message, or the escalation message of a gate that timed out; else
    the gate's description; else its name.
    """
    return spec.approval or spec.escalate or spec.description or f"approve {spec.name}"


ASK_ANEW = "; run the step again to ask anew"
"""How a rejected approval's reason ends."""


def approval_status(state: RunState, spec: GateSpec) -> tuple[bool, str]:
    """Whether approval gate ``spec`` passes in ``state``, and why (an evaluation callback)."""
    request = open_request(state, spec.name)
    how = (
        f"approve with `{magic_command('approve', spec.name)}` "
        f"or `{cli_command('approve', 'NOTEBOOK', spec.name, '--by', 'NAME')}`"
    )
    message = approval_message(spec)
    if request is None:
        return False, f"needs approval: {message}; {how}"
    if request.status == "approved":
        return True, f"approved by {request.decided_by}"
    if request.status == "rejected":
        note = f": {request.note}" if request.note else ""
        return False, f"rejected by {request.decided_by}{note}{ASK_ANEW}"
    return False, f"waiting for approval ({message}); {how}"


class Approvals:
    """List, approve and reject the approval requests of one run."""

    def __init__(self, journal: RunJournal) -> None:
        self.journal = journal

    def pending(self) -> list[Approval]:
        """Approval requests waiting for a decision in the current state, oldest first."""
        return pending_in(self.journal.refresh())

    def decide(
        self, gate: str, status: str, by: str | None, note: str | None, request_id: str | None
    ) -> Approval:
        """Answer the open request of ``gate`` with ``status`` (``approved`` or ``rejected``).

        Raises:
            ApprovalError: no request is waiting (early), the request is stale (the run left
                the state it was asked in, or ``request_id`` names an older one), or it was
                already decided (repeated).

        """
        journal = self.journal
        who = by or journal.user
        chosen: list[str] = []

        workflow = journal.workflow
        declared = (
            {n for n, g in workflow.gates.items() if g.kind == "approval"} if workflow else set()
        )

        def make(state: RunState) -> list[EventDraft]:
            _known_gate(state, gate, declared)
            request = _pending_request(state, gate, request_id)
            chosen.append(request.id)
            return [
                journal.draft("approval.decided", id=request.id, status=status, by=who, note=note)
            ]

        journal.commit(make)
        journal.skill.remember(f"approval_{status}", f"{gate} {status} by {who}")
        return journal.state.approvals[chosen[-1]].model_copy()


def _known_gate(state: RunState, gate: str, declared: set[str]) -> None:
    """Refuse a gate name no workflow declares and no request used, suggesting close ones."""
    known = declared | {a.gate for a in state.approvals.values()}
    if not known or gate in known:
        return
    import difflib

    close = difflib.get_close_matches(gate, sorted(known), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    names = ", ".join(sorted(known))
    raise ApprovalError(f"unknown approval gate {gate!r} ({hint or 'known: ' + names})")


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
