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

``facts`` rows are ``key, kind, version, preview, cell_id, at, restorable``;
``fact_counts`` counts the facts of each kind (all of them, also when ``facts_limit`` left some
out of ``facts``). A view is read-only: its fact rows are shared with the state's index.

``history`` lists the recent events, oldest first, without the bookkeeping of steps and
claims; a run of similar events is one row with ``count``, ``last_seq`` and ``last_at``
(:func:`fold_history`).

``next`` lists the transitions out of the current state with the status of their gates
(``passing``, ``warning``, ``blocked``; ``unknown`` where a gate would run user code and
``evaluate_code`` is false, as in the server).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillnb.core.expr.budget import TotalBudget
from skillnb.core.gates.bending import open_follow_ups
from skillnb.core.runstate.claims import step_claim_key
from skillnb.core.runstate.describe import describe_event
from skillnb.core.runstate.records import Event, GateReport, GateResult, RunState
from skillnb.core.runstate.viewindex import iso, view_index
from skillnb.core.workflow.graph import to_mermaid
from skillnb.core.workflow.model import Workflow
from skillnb.service.approvals import Approvals, approval_status
from skillnb.service.gates import Gates
from skillnb.service.owner import is_uncertain

__all__ = ["VIEW_VERSION", "describe", "fold_history", "graph_threads", "stable_view"]

VIEW_VERSION = 1
_CODE_KINDS = ("python", "resource")
_HISTORY = 20
_HISTORY_SCAN = 200  # recent events folded into at most _HISTORY rows
_FOLD_MIN = 3  # shorter runs of similar events stay one row each
_REMAINING = 20


def _result(r: GateResult) -> dict[str, Any]:
    return {
        "gate": r.gate,
        "kind": r.kind,
        "severity": r.severity,
        "passed": r.passed,
        "message": r.message,
    }


def _report_outcome(
    report: GateReport, state: RunState, workflow: Workflow | None
) -> dict[str, Any]:
    """The last report's ``passed`` and ``results``; an approval gate's as its request stands now.

    A report is what the gates said when they ran; an approval decided since (or a request
    asked again after a rejection) changes what its approval gate says, without running
    anything. In the state the report was made in, each approval gate shows the same status
    and reason as ``next`` does, so the two never disagree; an earlier state's report stays
    as it was (history).
    """
    results = [_result(r) for r in report.results]
    if workflow is None or report.state != state.state:
        return {"passed": report.passed, "results": results}
    for shown in results:
        spec = workflow.gates.get(shown["gate"])
        if shown["kind"] == "approval" and spec is not None and spec.kind == "approval":
            shown["passed"], shown["message"] = approval_status(state, spec)
    passed = all(r["passed"] or r["severity"] != "block" for r in results)
    return {"passed": passed, "results": results}


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
    total = TotalBudget()  # one budget for the checks of every transition shown
    for transition in workflow.transitions_from(state):
        specs = [workflow.gates[g] for g in transition.gates]
        runnable = [
            s
            for s in specs
            if evaluate_code or s.kind not in _CODE_KINDS or gates.profile in s.bypass_in
        ]
        report = gates.evaluate(runnable, transition.trigger, total)
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
    {
        "step.started",
        "step.committed",
        "langgraph.checkpoint",
        "langgraph.writes",
        "claim.taken",
        "claim.renewed",
        "claim.released",
    }
)
"""Events every durable step, batch item or LangGraph step writes; history leaves them out."""


def _meaningful(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type not in _BOOKKEEPING]


def _subject(event: Event, summary: str) -> tuple[str, str]:
    """What makes two events similar enough to fold: their type and the summary's subject."""
    if event.type == "fact.formalized":
        return (event.type, "")
    head, sep, _ = summary.partition(": ")
    return (event.type, head if sep else "")


def _history_row(run: list[tuple[Event, str]]) -> dict[str, Any]:
    first, text = run[0]
    last, last_text = run[-1]
    if len(run) > 1:
        head, sep, _ = text.partition(": ")
        if sep and last_text.startswith(head + sep):
            last_text = last_text[len(head + sep) :]  # "batch docs: a done … b done"
        text = f"{text} … {last_text} ({len(run)} events)"
    return {
        "seq": first.seq,
        "type": first.type,
        "at": iso(first.at),
        "summary": text,
        "count": len(run),
        "last_seq": last.seq,
        "last_at": iso(last.at),
    }


def fold_history(events: list[Event], limit: int = _HISTORY) -> list[dict[str, Any]]:
    """Build the view's history rows for ``events``, oldest first, newest ``limit`` kept.

    Bookkeeping events are left out, and runs of at least three similar events fold into
    one row. Similar: the same type and subject (the summary's text before ``": "``; facts
    formalized one after another are similar whatever their key). Every row has ``count``,
    ``last_seq`` and ``last_at`` (1, its own ``seq`` and ``at`` when alone); a folded row's
    summary reads ``first … last (N events)``.
    """
    runs: list[list[tuple[Event, str]]] = []
    subject: tuple[str, str] | None = None
    for event in _meaningful(events):
        text = describe_event(event)
        this = _subject(event, text)
        if runs and this == subject:
            runs[-1].append((event, text))
        else:
            runs.append([(event, text)])
        subject = this
    rows: list[dict[str, Any]] = []
    for run in runs:
        if len(run) >= _FOLD_MIN:
            rows.append(_history_row(run))
        else:
            rows += [_history_row([one]) for one in run]
    return rows[-limit:]


def _facts(state: RunState, facts_limit: int | None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    index = view_index(state)
    rows = index.rows() if facts_limit is None else index.top_rows(facts_limit)
    return rows, index.counts()  # the rows are the index's own: views are read-only


def _uncertain(journal: Any, state: RunState) -> list[dict[str, Any]]:
    now = journal.clock()
    steps = [state.steps[key] for key in sorted(view_index(state).started())]
    steps.sort(key=lambda s: s.started_seq)
    return [
        {"key": s.key, "started_seq": s.started_seq, "cell_id": s.cell_id}
        for s in steps
        if is_uncertain(s, state.claims.get(step_claim_key(s.key)), now)
    ]


def describe(
    gates: Gates, *, evaluate_code: bool = False, facts_limit: int | None = None
) -> dict[str, Any]:
    """The run that ``gates`` evaluates, at a glance (see the module docstring for the shape).

    Costs O(what is shown + what changed since the last call), not O(facts + history): fact
    rows, per-kind orders and open steps are kept current by the state's index
    (:mod:`skillnb.core.runstate.viewindex`). With ``facts_limit``, ``facts`` lists per kind only
    the ``facts_limit`` newest facts and the ``facts_limit`` first by key (what a summary of up
    to ``12 * facts_limit`` characters can show); ``fact_counts`` always counts them all.
    """
    journal = gates.journal
    state = journal.refresh()
    workflow = journal.workflow
    next_ = _next(gates, evaluate_code)
    last_key = max(state.reports, key=lambda k: state.reports[k].version, default=None)
    last = state.reports[last_key] if last_key is not None else None
    statuses = {n["trigger"]: n["status"] for n in next_ if n["status"] != "unknown"}
    facts, counts = _facts(state, facts_limit)
    return {
        "v": VIEW_VERSION,
        "run_id": state.run_id,
        "workflow": state.workflow,
        "state": state.state,
        "version": state.version,
        "updated_at": iso(state.updated_at),
        "states": list(workflow.states) if workflow else [],
        "visited": list(state.visited),
        "next": next_,
        "facts": facts,
        "fact_counts": counts,
        "pending": [
            {
                "id": a.id,
                "gate": a.gate,
                "trigger": a.trigger,
                "message": a.message,
                "state": a.state,
                "requested_seq": a.requested_seq,
                "requested_at": iso(a.requested_at),
            }
            for a in Approvals(journal).pending()
        ],
        "uncertain": _uncertain(journal, state),
        "batches": [
            {
                "name": b.name,
                "done": b.done_count,
                "total": b.total,
                "remaining": b.remaining(_REMAINING),
            }
            for b in state.batches.values()
        ],
        "key_ids": dict(state.key_ids),
        "milestones": [
            {"name": m.name, "seq": m.seq, "state": m.state, "at": iso(m.at)}
            for m in state.milestones
        ],
        "last_report": None
        if last is None
        else {
            "key": last_key,
            "version": last.version,
            "trigger": last.trigger,
            "state": last.state,
            **_report_outcome(last, state, workflow),
        },
        "history": fold_history(journal.history(_HISTORY_SCAN)),
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
                "opened_at": iso(f.opened_at),
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
            "updated_at": iso(t.updated_at),
        }
        for t in sorted(state.graph_threads.values(), key=lambda t: t.thread_id)
    ]


_VOLATILE = {
    "facts": ("at",),
    "pending": ("id", "requested_at"),
    "follow_ups": ("id", "opened_at"),
    "milestones": ("at",),
    "history": ("at", "last_at"),
    "threads": ("checkpoint", "updated_at"),
}


def stable_view(view: Mapping[str, Any]) -> dict[str, Any]:
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
