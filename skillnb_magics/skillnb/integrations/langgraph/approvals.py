"""Answering a LangGraph ``interrupt()`` through the run's approvals (integration layer).

When a root-graph task calls ``interrupt(value)``, :class:`~.saver.SkillnbSaver` opens an
approval request whose id is the interrupt's id and whose gate is
:func:`~.saver.gate_name` (``langgraph:<thread>:<node>``). Approving or rejecting it — from
the panel, a widget, ``%skillnb approve`` or ``skillnb approve`` — records the decision in
the journal. The decision is the answer the graph gets back from ``interrupt()``::

    {"approved": True, "by": "ana", "note": "ship it"}      # or "approved": False

:func:`resume_approved` resumes a thread with ``Command(resume={interrupt id: answer})``
for every answered interrupt, and marks approved requests consumed once the graph ran.
:func:`resume_on_approval` does it as soon as a decision is committed through this process's
run object (the kernel that owns the thread); a decision made elsewhere (the CLI) waits for
the next :func:`resume_approved` call, in this process or a later one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skillnb.core.records import Event, EventDraft, RunState

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from skillnb.run import Run

__all__ = ["answers", "resume_approved", "resume_on_approval"]

_ANSWERED = ("approved", "rejected", "consumed")


def answers(run: Run, thread_id: str) -> dict[str, Any]:
    """Interrupt id -> the recorded answer, for the thread's open interrupts that have one."""
    state = run.journal.refresh()
    thread = state.graph_threads.get(thread_id)
    if thread is None:
        return {}
    out: dict[str, Any] = {}
    for interrupt in thread.interrupts:
        approval = state.approvals.get(interrupt.id)
        if approval is None or approval.status not in _ANSWERED:
            continue
        out[interrupt.id] = {
            "approved": approval.status != "rejected",
            "by": approval.decided_by,
            "note": approval.note,
        }
    return out


def resume_approved(graph: CompiledStateGraph[Any, Any, Any, Any], run: Run, thread_id: str) -> Any:
    """Resume ``thread_id`` with the answers recorded for its interrupts.

    Returns:
        What ``graph.invoke`` returned, or ``None`` when no interrupt of the thread has an
        answer yet (nothing was run).

    """
    from langgraph.types import Command

    found = answers(run, thread_id)
    if not found:
        return None
    result = graph.invoke(Command(resume=found), {"configurable": {"thread_id": thread_id}})

    def consume(state: RunState) -> list[EventDraft]:
        return [
            run.journal.draft("approval.consumed", id=ident)
            for ident in found
            if ident in state.approvals and state.approvals[ident].status == "approved"
        ]

    run.journal.commit(consume)
    return result


def resume_on_approval(
    graph: CompiledStateGraph[Any, Any, Any, Any], run: Run
) -> Callable[[], None]:
    """Resume a thread of ``graph`` whenever ``run`` commits a decision on one of its interrupts.

    Returns:
        A function that stops it.

    """

    def listener(_run: Run, events: list[Event]) -> None:
        decided = {str(e.data.get("id")) for e in events if e.type == "approval.decided"}
        if not decided:
            return
        for thread_id, thread in list(run.journal.state.graph_threads.items()):
            if any(i.id in decided for i in thread.interrupts):
                resume_approved(graph, run, thread_id)

    return run.subscribe(listener)
