"""Each journal event in one line of words: what ``history`` and ``last_operation`` say (core).

:func:`describe_event` reads only the event's type and data, and falls back to the type for
anything it does not recognise or a payload it cannot read: a description never raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event

__all__ = ["describe_event"]


def _report_passed(report: Any) -> bool:
    results = report.get("results", []) if isinstance(report, dict) else []
    return all(r.get("passed") for r in results if r.get("severity", "block") == "block")


def _fallback_note(fallback: Any) -> str:
    if not isinstance(fallback, dict):
        return ""
    return f" (fallback: gate {fallback.get('gate')} of {fallback.get('for')} timed out)"


def _clip(value: Any, limit: int = 60) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


_DESCRIBE: dict[str, Callable[[dict[str, Any]], str]] = {
    "run.created": lambda d: f"run {d.get('run_id')} created",
    "workflow.bound": lambda d: f"workflow {d.get('workflow')} bound",
    "fact.formalized": lambda d: (
        f"formalized {d['fact'].get('key')} v{d['fact'].get('version')}"
        f" = {_clip(d['fact'].get('preview', ''))}"
    ),
    "transition.fired": lambda d: (
        f"{d.get('trigger')}: {d.get('from')} → {d.get('to')}{_fallback_note(d.get('fallback'))}"
    ),
    "gate.reported": lambda d: (
        f"gates {'passed' if _report_passed(d.get('report')) else 'blocked'} {d.get('key')}"
    ),
    "approval.requested": lambda d: f"approval requested: {d['approval'].get('gate')}",
    "approval.decided": lambda d: f"approval {d.get('status')} by {d.get('by')}",
    "approval.consumed": lambda d: "approval used",
    "approval.expired": lambda d: "approval expired",
    "gate.bypassed": lambda d: (
        f"gate {d.get('gate')} bypassed (profile {d.get('profile')}) for {d.get('key')}"
    ),
    "followup.opened": lambda d: (
        f"follow-up opened by {d['follow_up'].get('gate')}: {_clip(d['follow_up'].get('text'))}"
    ),
    "followup.resolved": lambda d: f"follow-up {d.get('id')} resolved by {d.get('by')}",
    "step.started": lambda d: f"step {d.get('key')} started",
    "step.committed": lambda d: f"step {d.get('key')} committed",
    "step.failed": lambda d: f"step {d.get('key')} failed: {_clip(d.get('error', ''))}",
    "step.cleared": lambda d: f"step {d.get('key')} cleared by {d.get('by')}",
    "batch.declared": lambda d: f"batch {d.get('batch')}: {len(d.get('items', []))} new items",
    "batch.item_done": lambda d: f"batch {d.get('batch')}: {_clip(d.get('item'))} done",
    "keyids.set": lambda d: "key ids: " + _clip(", ".join(f"{k}={v}" for k, v in d["ids"].items())),
    "milestone.recorded": lambda d: f"milestone {d.get('name')!r}",
    "run.rebuilt": lambda d: (
        f"run rebuilt from {d.get('notebook')} ({d.get('replayed')} events, "
        f"{d.get('skipped')} skipped)"
    ),
    "store.lost": lambda d: "an event lost to damage (kept as a placeholder by repair)",
    "langgraph.checkpoint": lambda d: (
        f"thread {d.get('thread')}: checkpoint"
        + (
            f" step {d['head']['step']}"
            if d.get("head") and d["head"].get("step") is not None
            else ""
        )
    ),
    "langgraph.writes": lambda d: f"thread {d.get('thread')}: {len(d.get('writes', []))} writes",
    "langgraph.pruned": lambda d: (
        f"thread {d.get('thread')}: {len(d.get('ids', []))} checkpoints pruned"
    ),
    "langgraph.deleted": lambda d: f"thread {d.get('thread')} deleted",
    "langgraph.copied": lambda d: f"thread {d.get('source')} copied to {d.get('target')}",
    "claim.taken": lambda d: f"claimed {d['claim'].get('key')}",
    "claim.renewed": lambda d: f"claim on {d.get('key')} renewed",
    "claim.released": lambda d: f"claim on {d.get('key')} released",
}


def describe_event(event: Event) -> str:
    """A one-line, human-readable description of ``event``."""
    describe = _DESCRIBE.get(event.type)
    if describe is None:
        return event.type
    try:
        return describe(event.data)
    except (KeyError, TypeError, AttributeError):
        return event.type
