"""What the run shows of a LangGraph thread: its head, next nodes and open interrupts.

The saver computes a thread's *head* (the summary :class:`~skillnb.core.records.GraphThread`
holds) when it writes an event that changes it, and puts it in that event, so the run's
fold stays a copy and two processes agree. Only the root namespace (``""``) is summarised:
subgraphs report their interrupts to the root graph's task.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from skillnb.core.records import Approval, EventDraft, RunState
from skillnb.integrations.langgraph.index import Namespace
from skillnb.store.encoders import clip_preview, dumps

__all__ = [
    "INTERRUPT",
    "RESUME",
    "approval_requests",
    "gate_name",
    "head",
    "interrupt_rows",
    "next_nodes",
    "node_of",
]

INTERRUPT = "__interrupt__"
RESUME = "__resume__"
_BRANCH = "branch:to:"
_START = "__start__"


def node_of(task_path: str) -> str:
    """The node a task runs, from LangGraph's task path (``"~__pregel_pull, ask"`` -> ``ask``)."""
    return task_path.rsplit(", ", 1)[-1].strip() if task_path else ""


def next_nodes(ns: Namespace, checkpoint: dict[str, Any]) -> list[str]:
    """Nodes the checkpoint schedules: those whose trigger channel holds a value (sorted).

    LangGraph empties a node's ``branch:to:<node>`` channel when the node consumes it, so a
    channel that is set at this checkpoint names a node still to run (an interrupted one too).
    """
    out = []
    for channel, version in (checkpoint.get("channel_versions") or {}).items():
        if not isinstance(channel, str):
            continue
        if channel.startswith(_BRANCH) or channel == _START:
            stored = ns.blobs.get((channel, version))
            if stored is not None and "e" not in stored:
                out.append(channel[len(_BRANCH) :] if channel != _START else _START)
    return sorted(out)


def _preview(value: Any) -> str:
    try:
        return clip_preview(dumps(value), 200)
    except (TypeError, ValueError):
        return clip_preview(repr(value), 200)


def interrupt_rows(value: Any, task_path: str) -> list[dict[str, Any]]:
    """``{"id", "node", "value"}`` rows for the ``Interrupt`` objects LangGraph wrote."""
    items = value if isinstance(value, list | tuple) else [value]
    rows = []
    for item in items:
        ident = getattr(item, "id", None)
        payload = getattr(item, "value", item)
        rows.append(
            {
                "id": str(ident) if ident is not None else "",
                "node": node_of(task_path),
                "value": _preview(payload),
            }
        )
    return rows


def _open_interrupts(ns: Namespace, checkpoint_id: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for (checkpoint, _task), raised in sorted(ns.interrupts.items()):
        if checkpoint == checkpoint_id:
            rows.extend(raised)
    return rows


def head(ns: Namespace | None, decode_checkpoint: Any) -> dict[str, Any] | None:
    """The summary of a thread's root namespace, or ``None`` when it holds no checkpoint."""
    if ns is None or ns.latest is None:
        return None
    entry = ns.checkpoints[ns.latest]
    checkpoint = decode_checkpoint(entry.checkpoint)
    metadata = entry.metadata if isinstance(entry.metadata, dict) else {}
    step = metadata.get("step")
    return {
        "checkpoint": entry.id,
        "step": step if isinstance(step, int) else None,
        "source": str(metadata.get("source")) if metadata.get("source") is not None else None,
        "next": next_nodes(ns, checkpoint),
        "interrupts": _open_interrupts(ns, entry.id),
        "checkpoints": len(ns.checkpoints),
    }


def gate_name(thread_id: str, node: str) -> str:
    """The approval gate an ``interrupt()`` in ``node`` of thread ``thread_id`` opens."""
    return f"langgraph:{thread_id}:{node}" if node else f"langgraph:{thread_id}"


def approval_requests(
    state: RunState, thread: str, interrupts: list[dict[str, Any]]
) -> list[EventDraft]:
    """``approval.requested`` drafts for new interrupts (an interrupt's id is its request's)."""
    at = datetime.now(UTC)
    drafts = []
    for row in interrupts:
        if not row["id"] or row["id"] in state.approvals:
            continue
        approval = Approval(
            id=row["id"],
            gate=gate_name(thread, row["node"]),
            message=row["value"],
            state=state.state,
            requested_at=at,
        )
        data = {"approval": approval.model_dump(mode="json")}
        drafts.append(EventDraft(type="approval.requested", at=at, data=data))
    return drafts
