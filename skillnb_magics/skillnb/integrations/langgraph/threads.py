"""What the run shows of a LangGraph thread: its head, next nodes and open interrupts.

A node is named as LangGraph's ``get_state().tasks`` name it: the node of a pulled task
(``"~__pregel_pull, ask"``), the target of the ``Send`` a pushed task runs (``create_react_agent``
dispatches its tool calls that way: ``"~__pregel_push, 0000000000, ..."`` is the first
``Send`` of the checkpoint's ``__pregel_tasks`` channel), and for a functional-API ``@task`` the
node that called it. An interrupt's value becomes readable text: its question (``question``,
``message``, ``description``, ... or the value itself when it is a string) and one
``key: value`` line for each other field.

The saver computes a thread's *head* (the summary
:class:`~skillnb.core.runstate.records.GraphThread`
holds) when it writes an event that changes it, and puts it in that event, so the run's
fold stays a copy and two processes agree. Only the root namespace (``""``) is summarised:
subgraphs report their interrupts to the root graph's task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from skillnb.core.runstate.records import Approval, EventDraft, RunState
from skillnb.integrations.langgraph.index import Namespace
from skillnb.store.codec.encoders import clip_preview, dumps

__all__ = [
    "INTERRUPT",
    "NULL_TASK",
    "RESUME",
    "TASKS",
    "approval_requests",
    "gate_name",
    "head",
    "interrupt_rows",
    "interrupt_text",
    "next_nodes",
    "node_of",
    "sends",
]

INTERRUPT = "__interrupt__"
RESUME = "__resume__"
TASKS = "__pregel_tasks"
"""The channel that holds the ``Send`` packets a checkpoint dispatches."""
NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""The task id of writes that no task made (a ``Command``'s, ``update_state``'s)."""
_BRANCH = "branch:to:"
_START = "__start__"
_PULL = "~__pregel_pull"
_PUSH = "~__pregel_push"
_QUESTION_KEYS = ("question", "message", "title", "description", "prompt", "text", "action")
_TEXT = 200


def node_of(task_path: str, send_node: Callable[[int], str | None] | None = None) -> str:
    """The node a task runs, from LangGraph's task path.

    ``"~__pregel_pull, ask"`` is ``ask``; a functional-API task's path starts with
    ``"~__pregel_push, ~__pregel_pull, main"`` (``main``, the node that called it); a
    ``Send``'s (``"~__pregel_push, 0000000002, ..."``) is the node of the checkpoint's third
    ``Send``, which ``send_node`` looks up.
    """
    parts = [p.strip() for p in task_path.split(",")] if task_path else []
    for i, part in enumerate(parts[:-1]):
        if part == _PULL:
            return parts[i + 1]
        if part == _PUSH and parts[i + 1].isdigit():
            found = send_node(int(parts[i + 1])) if send_node is not None else None
            return found or ""
        if part != _PUSH:
            break
    return parts[-1] if parts and not parts[-1].isdigit() else ""


def sent(task_path: str) -> bool:
    """Whether ``task_path`` is a ``Send``'s task (whose node :func:`node_of` must look up)."""
    parts = [p.strip() for p in task_path.split(",")] if task_path else []
    for i, part in enumerate(parts[:-1]):
        if part != _PUSH:
            return False
        if parts[i + 1].isdigit():
            return True
    return False


def sends(ns: Namespace, checkpoint: Mapping[str, Any], decode: Callable[[Any], Any]) -> list[Any]:
    """The ``Send`` packets the checkpoint dispatches (its ``__pregel_tasks`` channel)."""
    version = (checkpoint.get("channel_versions") or {}).get(TASKS)
    stored = ns.blobs.get((TASKS, version)) if version is not None else None
    if stored is None or "e" in stored:
        return []
    present, encoded = ns.materialize(TASKS, version)
    value = decode(encoded) if present else None
    return list(value) if isinstance(value, list | tuple) else []


def next_nodes(
    ns: Namespace, checkpoint: dict[str, Any], decode: Callable[[Any], Any] | None = None
) -> list[str]:
    """Nodes the checkpoint schedules: set trigger channels, and ``Send`` targets (sorted).

    LangGraph empties a node's ``branch:to:<node>`` channel when the node consumes it, so a
    channel that is set at this checkpoint names a node still to run (an interrupted one too).
    A ``Send`` (how ``create_react_agent`` runs its tools) waits in ``__pregel_tasks``.
    """
    out = set()
    for channel, version in (checkpoint.get("channel_versions") or {}).items():
        if not isinstance(channel, str):
            continue
        if channel.startswith(_BRANCH) or channel == _START:
            stored = ns.blobs.get((channel, version))
            if stored is not None and "e" not in stored:
                out.add(channel[len(_BRANCH) :] if channel != _START else _START)
    if decode is not None:
        out.update(str(p.node) for p in sends(ns, checkpoint, decode) if hasattr(p, "node"))
    return sorted(out)


def _preview(value: Any, limit: int = _TEXT) -> str:
    if isinstance(value, str):
        return clip_preview(value, limit)
    try:
        return clip_preview(dumps(value), limit)
    except (TypeError, ValueError):
        return clip_preview(repr(value), limit)


def interrupt_text(value: Any) -> tuple[str, list[str]]:
    """What an interrupt asks, readable: its question and one ``key: value`` line per field.

    A string is the question itself; a mapping's question is its first ``question``,
    ``message``, ``title``, ``description``, ``prompt``, ``text`` or ``action`` that holds
    text (else the first field); other values are shown as JSON.
    """
    if isinstance(value, str):
        return _preview(value) or "(empty question)", []
    if not isinstance(value, Mapping):
        return _preview(value), []
    fields = {str(k): v for k, v in value.items()}
    key = next((k for k in _QUESTION_KEYS if isinstance(fields.get(k), str)), None)
    title = _preview(fields.pop(key)) if key is not None else ""
    lines = [f"{k}: {_preview(v, 160)}" for k, v in fields.items()]
    if not title:
        title = lines.pop(0) if lines else "(empty question)"
    return title, lines


def interrupt_rows(value: Any, node: str) -> list[dict[str, Any]]:
    """``{"id", "node", "value"}`` rows for the ``Interrupt`` objects ``node`` wrote.

    ``value`` is the readable text of :func:`interrupt_text`: the question, then the fields
    on lines of their own.
    """
    items = value if isinstance(value, list | tuple) else [value]
    rows = []
    for item in items:
        ident = getattr(item, "id", None)
        title, lines = interrupt_text(getattr(item, "value", item))
        rows.append(
            {
                "id": str(ident) if ident is not None else "",
                "node": node,
                "value": "\n".join([title, *lines]),
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
    interrupts = _open_interrupts(ns, entry.id)
    next_ = set(next_nodes(ns, checkpoint, decode_checkpoint))
    waiting = {str(i["node"]) for i in interrupts if i.get("node")}
    if waiting:  # an interrupted thread is past its input (an entrypoint runs on __start__)
        next_ = (next_ - {_START}) | waiting
    return {
        "checkpoint": entry.id,
        "step": step if isinstance(step, int) else None,
        "source": str(metadata.get("source")) if metadata.get("source") is not None else None,
        "next": sorted(next_),
        "interrupts": interrupts,
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
