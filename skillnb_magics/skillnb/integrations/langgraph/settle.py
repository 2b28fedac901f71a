"""Interrupts as approvals: opened, answered and settled in the thread's own commits (integration).

The saver calls these while it holds the store's lock, and appends what they return in the
same all-or-nothing commit as the LangGraph event that causes it, so an approval and the
thread it answers never disagree, whichever way the answer came and wherever a process dies:

* a task writes ``__interrupt__``: an ``approval.requested`` per new interrupt (its id is the
  interrupt's; the gate is ``langgraph:<thread>:<node>``);
* the answer reaches the thread: ``Command(resume=value)`` is stored as a resume write of no
  task, and ``Command(resume={id: value})`` (what :func:`~.approvals.resume_approved` sends) as
  the interrupted task's own ``__resume__`` write once it ran. Either one settles the
  approvals of the interrupts it answers: a decided one becomes ``consumed``; a pending one,
  answered in code, is decided (``approved``, or ``rejected`` when the answer is ``False`` or
  ``{"approved": False, ...}``) and consumed at once;
* the thread checkpoints past the checkpoint an interrupt was raised at without a resume
  write of its own (the graph ran its step, or ``update_state`` skipped the node): its
  approval is settled too (``consumed`` when the graph ran its step; ``expired`` when the
  thread went on without the answer: new input, an update or a fork from that checkpoint).

So an approval is ``pending`` (or decided) while its answer has not reached the thread, and
``consumed`` once it has: a process that dies after the answer was stored leaves a thread that
:func:`~.approvals.resume_approved` continues with it, never an answer used twice or lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from xxhash import xxh3_128_hexdigest

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.integrations.langgraph.threads import (
    INTERRUPT,
    NULL_TASK,
    RESUME,
    TASKS,
    approval_requests,
    interrupt_rows,
    node_of,
    sends,
    sent,
)

if TYPE_CHECKING:
    from skillnb.integrations.langgraph.index import Namespace

__all__ = ["after_checkpoint", "answered_ids", "on_writes", "open_interrupts", "unnamed_send"]

_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
_ANSWERS = 64
"""How many earlier answers of one task an interrupt id is checked against."""
_RECENT = 4
"""How many of the latest checkpoints' writes are searched for the ``Send`` of a task."""
_SETTLED = ("consumed", "expired")


def open_interrupts(ns: Namespace | None, checkpoint: str | None) -> dict[str, str]:
    """Interrupt id -> the task that raised it, for the interrupts open at ``checkpoint``."""
    out: dict[str, str] = {}
    if ns is None or checkpoint is None:
        return out
    for (at, task), rows in ns.interrupts.items():
        if at == checkpoint:
            out.update((str(r["id"]), task) for r in rows if r.get("id"))
    return out


def answered_ids(value: Any, open_: Iterable[str]) -> dict[str, Any]:
    """The interrupts a ``Command(resume=value)`` answers: the ids a map names, else all open."""
    ids = list(open_)
    if isinstance(value, Mapping) and value and all(_INTERRUPT_ID.match(str(k)) for k in value):
        return {str(k): v for k, v in value.items() if str(k) in ids}
    return dict.fromkeys(ids, value)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _approved(answer: Any) -> bool:
    if answer is False:
        return False
    return not (isinstance(answer, Mapping) and answer.get("approved") is False)


def _settle(state: RunState, answers: Mapping[str, Any], by: str, ran: bool) -> list[EventDraft]:
    """Drafts settling the approvals of ``answers`` (interrupt id -> answer, or ``None``)."""
    at = datetime.now(UTC)
    drafts = []
    for ident, answer in answers.items():
        approval = state.approvals.get(ident)
        if approval is None or approval.status in _SETTLED:
            continue
        if not ran:
            drafts.append(EventDraft(type="approval.expired", at=at, data={"id": ident}))
            continue
        if approval.status == "pending":
            status = "approved" if _approved(answer) else "rejected"
            note = "answered with Command(resume=...)"
            data = {"id": ident, "status": status, "by": by, "note": note}
            drafts.append(EventDraft(type="approval.decided", at=at, data=data))
        drafts.append(EventDraft(type="approval.consumed", at=at, data={"id": ident}))
    return drafts


def _raised_by(ident: str, node: str, task_id: str) -> bool:
    """Whether LangGraph's id for an interrupt of ``node``'s task ``task_id`` is ``ident``.

    LangGraph names an interrupt by a hash of its task's namespace (``node:task id``) and of
    how many answers the task had before it (none for the first).
    """
    ns = f"{node}:{task_id}"
    names = (ns, *(f"{ns}|{n}" for n in range(1, _ANSWERS)))
    return any(xxh3_128_hexdigest(name.encode()) == ident for name in names)


def _candidates(
    ns: Namespace, checkpoint_id: str | None, decode: Callable[[Any], Any]
) -> list[Any]:
    """``Send`` packets near ``checkpoint_id``: in it, and written at the latest checkpoints.

    A pushed task may write before its checkpoint is stored (LangGraph stores checkpoints in
    the background), so the packets of the writes that scheduled it count too.
    """
    packets: list[Any] = []
    entry = ns.checkpoints.get(checkpoint_id or "")
    if entry is not None:
        packets += sends(ns, decode(entry.checkpoint), decode)
    for cid in sorted(ns.writes, reverse=True)[:_RECENT]:
        packets += [decode(w[2]) for w in ns.writes[cid].values() if w[1] == TASKS]
    return packets


def _send_node(
    ns: Namespace | None, checkpoint_id: str | None, task_id: str, first: str, decode: Any
) -> Callable[[int], str | None]:
    def find(index: int) -> str | None:
        if ns is None:
            return None
        nodes = dict.fromkeys(
            str(getattr(p, "node", "")) for p in _candidates(ns, checkpoint_id, decode)
        )
        for node in nodes:
            if node and _raised_by(first, node, task_id):
                return node
        return None

    return find


def _first_id(raised: Sequence[Any]) -> str:
    return next((str(getattr(i, "id", "")) for v in raised for i in _items(v)), "")


def unnamed_send(
    ns: Namespace | None,
    checkpoint_id: str | None,
    task: tuple[str, str],
    writes: Sequence[tuple[str, Any]],
    decode: Callable[[Any], Any],
) -> bool:
    """Whether ``writes`` raise an interrupt in a ``Send``'s task whose packet is not stored yet.

    LangGraph stores writes from a pool of threads, so a pushed task's interrupt may reach the
    saver before the writes that scheduled it; its node (and so its gate) is known only once
    they are stored.
    """
    task_id, task_path = task
    raised = [v for c, v in writes if c == INTERRUPT]
    if not raised or not sent(task_path):
        return False
    return _send_node(ns, checkpoint_id, task_id, _first_id(raised), decode)(0) is None


def on_writes(
    state: RunState,
    by: str,
    where: tuple[str, str, Namespace | None, str | None],
    task: tuple[str, str],
    writes: Sequence[tuple[str, Any]],
    decode: Callable[[Any], Any],
) -> tuple[list[dict[str, Any]], list[EventDraft]]:
    """The interrupt rows of a task's writes, and the approval events they cause.

    Args:
        state: the run's state (its approvals).
        by: who answers when the graph is resumed in code (the run's user).
        where: thread id, checkpoint namespace, its index entry and the checkpoint id.
        task: the task's id and path.
        writes: ``(channel, value)`` pairs as LangGraph gave them.
        decode: the saver's decoder (to find the node of a ``Send``).

    """
    thread, ns_name, ns, checkpoint_id = where
    task_id, task_path = task
    raised = [v for c, v in writes if c == INTERRUPT]
    rows: list[dict[str, Any]] = []
    if raised:
        first = _first_id(raised)
        node = node_of(task_path, _send_node(ns, checkpoint_id, task_id, first, decode))
        rows = [r for v in raised for r in interrupt_rows(v, node)]
    drafts = approval_requests(state, thread, rows) if ns_name == "" else []
    resumes = [v for c, v in writes if c == RESUME]
    if not resumes:
        return rows, drafts
    open_ = open_interrupts(ns, checkpoint_id)
    if task_id == NULL_TASK:
        answers = answered_ids(resumes[-1], open_)
    else:
        still = {str(r["id"]) for r in rows}
        last = resumes[-1][-1] if isinstance(resumes[-1], list) and resumes[-1] else None
        answers = {i: last for i, t in open_.items() if t == task_id and i not in still}
    return rows, drafts + _settle(state, answers, by, ran=True)


def after_checkpoint(
    state: RunState, by: str, ns: Namespace | None, parent: str | None, source: Any
) -> list[EventDraft]:
    """Approval events for a root checkpoint stored after ``parent``: its interrupts are past."""
    open_ = open_interrupts(ns, parent)
    if not open_:
        return []
    ran = source == "loop"
    return _settle(state, dict.fromkeys(open_), by, ran=ran)
