"""Answering a LangGraph ``interrupt()`` through the run's approvals (integration layer).

When a root-graph task calls ``interrupt(value)``, :class:`~.saver.SkillnbSaver` opens an
approval request whose id is the interrupt's id and whose gate is
:func:`~.saver.gate_name` (``langgraph:<thread>:<node>``). Approving or rejecting it — from
the panel, a widget, ``%skillnb approve`` or ``skillnb approve`` — records the decision in
the journal. The decision is the answer the graph gets back from ``interrupt()``::

    {"approved": True, "by": "ana", "note": "ship it"}      # or "approved": False

:func:`resume_approved` resumes a thread with ``Command(resume={interrupt id: answer})``
for every decided interrupt. The saver settles each approval in the same commit that stores
the answer in the thread (:mod:`.settle`): it is ``consumed`` once its answer is in the
thread, whichever way it came (``resume_approved``, or the graph's own
``app.invoke(Command(resume=...), config)``, which settles a pending approval too). A process
that dies in between leaves an approval that is still decided (the next ``resume_approved``
delivers it) or consumed with its answer stored in the thread (the next ``resume_approved``
continues the thread with it, ``invoke(None)``): never an answer lost or given twice.
:func:`resume_on_approval` does it as soon as a decision is committed through this process's
run object (the kernel that owns the thread); a decision made elsewhere (the CLI) waits for
the next :func:`resume_approved` call, in this process or a later one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from skillnb.core.runstate.records import Event, RunState
from skillnb.integrations.langgraph.threads import RESUME

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from skillnb.run import Run

__all__ = ["answers", "resume_approved", "resume_on_approval"]

_DECIDED = ("approved", "rejected")


def answers(run: Run, thread_id: str) -> dict[str, Any]:
    """Interrupt id -> the recorded answer, for open interrupts decided and not yet delivered."""
    state = run.journal.refresh()
    thread = state.graph_threads.get(thread_id)
    if thread is None:
        return {}
    out: dict[str, Any] = {}
    for interrupt in thread.interrupts:
        approval = state.approvals.get(interrupt.id)
        if approval is None or approval.status not in _DECIDED:
            continue
        out[interrupt.id] = {
            "approved": approval.status == "approved",
            "by": approval.decided_by,
            "note": approval.note,
        }
    return out


def _stored_answer(graph: CompiledStateGraph[Any, Any, Any, Any], config: Any) -> bool:
    """Whether the thread's latest checkpoint holds an answer that its step has not used up.

    A resume write stays on the checkpoint it answered until the step finishes and the next
    checkpoint is stored: one there means a process stopped between the two.
    """
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        return False
    found = saver.get_tuple(config)
    return found is not None and any(w[1] == RESUME for w in found.pending_writes or [])


def _waiting(state: RunState, thread_id: str) -> bool:
    """Whether an open interrupt of the thread still waits for its answer to be stored."""
    thread = state.graph_threads.get(thread_id)
    return thread is not None and any(
        i.id not in state.approvals or state.approvals[i.id].status != "consumed"
        for i in thread.interrupts
    )


def resume_approved(graph: CompiledStateGraph[Any, Any, Any, Any], run: Run, thread_id: str) -> Any:
    """Resume ``thread_id`` with the answers recorded for its interrupts.

    The decided answers go in as ``Command(resume={interrupt id: answer})``; a thread whose
    answer was stored before its process died (its approval consumed, the step it resumed
    not finished) is continued with ``invoke(None)``, which hands the stored answer on.

    Returns:
        What ``graph.invoke`` returned, or ``None`` when no interrupt of the thread has an
        answer yet (nothing was run).

    """
    from langgraph.types import Command

    config: Any = {"configurable": {"thread_id": thread_id}}
    found = answers(run, thread_id)
    if found:
        return graph.invoke(Command(resume=found), config)
    if not _waiting(run.journal.state, thread_id) and _stored_answer(graph, config):
        return graph.invoke(None, config)
    return None


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

    return run.journal.subscribe(functools.partial(listener, run))
