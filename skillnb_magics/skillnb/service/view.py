"""The run at a glance, as JSON-safe data (service layer).

:func:`describe` is what every view renders: the widgets, the JupyterLab side panel (through
the server extension), ``skillnb status --json`` and the LLM summary. Its shape (``"v": 1``):

``run_id, workflow, state, version, updated_at, states, visited, next, facts, pending,
uncertain, batches, key_ids, milestones, last_report, history, mermaid, threads, profile,
follow_ups`` (``threads``: the LangGraph threads checkpointed in the run, see
:func:`graph_threads`).

``profile`` is the profile the gates are evaluated under (bypassed gates show as passed with
the message ``bypassed (profile NAME)``); ``follow_ups`` lists the open follow-ups that
warning gates left (``id, gate, state, trigger, reason, text, opened_seq, opened_at``).

``next`` lists the transitions out of the current state with the status of their gates
(``passing``, ``warning``, ``blocked``; ``unknown`` where a gate would run user code and
``evaluate_code`` is false, as in the server).
"""

from __future__ import annotations

from typing import Any

from skillnb.core.bending import open_follow_ups
from skillnb.core.claims import step_claim_key
from skillnb.core.graph import to_mermaid
from skillnb.core.records import Event, GateReport, GateResult, RunState
from skillnb.core.state import describe_event
from skillnb.service.approvals import Approvals
from skillnb.service.gates import Gates
from skillnb.service.owner import is_uncertain

__all__ = ["VIEW_VERSION", "describe", "graph_threads", "stable_view"]

VIEW_VERSION = 1
_CODE_KINDS = ("python", "resource")
_HISTORY = 20
_REMAINING = 20


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _result(r: GateResult) -> dict[str, Any]:
    return {
        "gate": r.gate,
        "kind": r.kind,
        "severity": r.severity,
        "passed": r.passed,
        "message": r.message,
    }


def _status(report: GateReport, unknown: bool) -> str:
    if not report.passed:
        return "blocked"
    if unknown:
        return "unknown"
    return "warning" if report.warnings else "passing"


def _next(gates: Gates, evaluate_code: bool) -> list[dict[str, Any]]:
    workflow = gates.journal.workflow
    state = gates.journal.state.state
    if workflow is None or state is None:
        return []
    out = []
    for transition in workflow.transitions_from(state):
        specs = [workflow.gates[g] for g in transition.gates]
        runnable = [
            s
            for s in specs
            if evaluate_code or s.kind not in _CODE_KINDS or gates.profile in s.bypass_in
        ]
        report = gates.evaluate(runnable, transition.trigger)
        results = [_result(r) for r in report.results]
        skipped = [s for s in specs if s not in runnable]
        results += [
            {
                "gate": s.name,
                "kind": s.kind,
                "severity": s.severity,
                "passed": None,
                "message": "evaluated in the kernel",
            }
            for s in skipped
        ]
        out.append(
            {
                "trigger": transition.trigger,
                "to": transition.target,
                "status": _status(report, bool(skipped)),
                "gates": results,
            }
        )
    return out


_BOOKKEEPING = frozenset(
    {"step.started", "step.committed", "langgraph.checkpoint", "langgraph.writes"}
)
"""Events every durable step or LangGraph step writes; the view's history leaves them out."""


def _meaningful(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type not in _BOOKKEEPING]


def describe(gates: Gates, *, evaluate_code: bool = False) -> dict[str, Any]:
    """The run that ``gates`` evaluates, at a glance (see the module docstring for the shape)."""
    journal = gates.journal
    state = journal.refresh()
    workflow = journal.workflow
    next_ = _next(gates, evaluate_code)
    last_key = max(state.reports, key=lambda k: state.reports[k].version, default=None)
    last = state.reports[last_key] if last_key is not None else None
    statuses = {n["trigger"]: n["status"] for n in next_ if n["status"] != "unknown"}
    return {
        "v": VIEW_VERSION,
        "run_id": state.run_id,
        "workflow": state.workflow,
        "state": state.state,
        "version": state.version,
        "updated_at": _iso(state.updated_at),
        "states": list(workflow.states) if workflow else [],
        "visited": list(state.visited),
        "next": next_,
        "facts": [
            {
                "key": f.key,
                "kind": f.kind,
                "version": f.version,
                "preview": f.preview,
                "cell_id": f.cell_id,
                "at": _iso(f.at),
                "restorable": f.restorable,
            }
            for f in state.facts.values()
        ],
        "pending": [
            {
                "id": a.id,
                "gate": a.gate,
                "trigger": a.trigger,
                "message": a.message,
                "state": a.state,
                "requested_seq": a.requested_seq,
                "requested_at": _iso(a.requested_at),
            }
            for a in Approvals(journal).pending()
        ],
        "uncertain": [
            {"key": s.key, "started_seq": s.started_seq, "cell_id": s.cell_id}
            for s in state.steps.values()
            if is_uncertain(s, state.claims.get(step_claim_key(s.key)), journal.clock())
        ],
        "batches": [
            {
                "name": b.name,
                "done": len(set(b.done)),
                "total": b.total,
                "remaining": b.remaining()[:_REMAINING],
            }
            for b in state.batches.values()
        ],
        "key_ids": dict(state.key_ids),
        "milestones": [
            {"name": m.name, "seq": m.seq, "state": m.state, "at": _iso(m.at)}
            for m in state.milestones
        ],
        "last_report": None
        if last is None
        else {
            "key": last_key,
            "version": last.version,
            "trigger": last.trigger,
            "state": last.state,
            "passed": last.passed,
            "results": [_result(r) for r in last.results],
        },
        "history": [
            {"seq": e.seq, "type": e.type, "at": _iso(e.at), "summary": describe_event(e)}
            for e in _meaningful(journal.history(_HISTORY * 4))[-_HISTORY:]
        ],
        "profile": gates.profile,
        "follow_ups": [
            {
                "id": f.id,
                "gate": f.gate,
                "state": f.state,
                "trigger": f.trigger,
                "reason": f.reason,
                "text": f.text,
                "opened_seq": f.opened_seq,
                "opened_at": _iso(f.opened_at),
            }
            for f in open_follow_ups(state)
        ],
        "mermaid": to_mermaid(
            workflow, current=state.state, visited=state.visited, statuses=statuses
        )
        if workflow
        else None,
        "threads": graph_threads(state),
    }


def graph_threads(state: RunState) -> list[dict[str, Any]]:
    """The LangGraph threads of the run: head checkpoint, next nodes, open interrupts."""
    return [
        {
            "thread_id": t.thread_id,
            "checkpoint": t.checkpoint,
            "step": t.step,
            "source": t.source,
            "next": list(t.next),
            "interrupts": [{"id": i.id, "node": i.node, "value": i.value} for i in t.interrupts],
            "checkpoints": t.checkpoints,
            "updated_at": _iso(t.updated_at),
        }
        for t in sorted(state.graph_threads.values(), key=lambda t: t.thread_id)
    ]


_VOLATILE = {
    "facts": ("at",),
    "pending": ("id", "requested_at"),
    "follow_ups": ("id", "opened_at"),
    "milestones": ("at",),
    "history": ("at",),
    "threads": ("checkpoint", "updated_at"),
}


def stable_view(view: dict[str, Any]) -> dict[str, Any]:
    """``view`` without what differs between two executions: times, the run id, request ids."""
    out = {**view, "run_id": None, "updated_at": None}
    for key, fields in _VOLATILE.items():
        rows = view.get(key) or []
        out[key] = [{k: (None if k in fields else v) for k, v in row.items()} for row in rows]
    for row in out["threads"]:
        row["interrupts"] = [{**i, "id": None} for i in row["interrupts"]]
    run_id = view.get("run_id")
    if run_id:
        for row in out["history"]:
            row["summary"] = str(row["summary"]).replace(run_id, "this run")
    return out
