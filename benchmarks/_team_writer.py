"""What the team benchmark's writer processes run: the runs' events and their appends.

A module of its own, imported by name (``benchmarks/`` is on ``sys.path``): the writers are
spawned processes, which find ``write_runs`` by its module's name, and ``team.py`` runs under
another name when ``benchmarks/all.py`` runs it (``benchmark_team``), which they cannot import.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from skillnb.core.runstate.records import EventDraft
from skillnb.store.postgres.store import PostgresStore

EVENTS = 100
CHUNK = 25
WAITING_EVERY = 50  # 2 %


def _now() -> datetime:
    return datetime.now(UTC)


def fact_event(key: str, n: int) -> EventDraft:
    fact = {
        "key": key,
        "value": {"n": n, "note": "x" * 40},
        "encoding": "json",
        "restorable": True,
        "kind": "data",
        "version": n,
        "at": _now().isoformat(),
    }
    return EventDraft(type="fact.formalized", at=_now(), data={"fact": fact})


def _approval(seq_hint: int) -> dict[str, Any]:
    return {
        "id": uuid.uuid4().hex[:10],
        "gate": "publish_ok",
        "trigger": "publish",
        "message": "Publish the weekly report?",
        "state": "review",
        "requested_seq": seq_hint,
        "requested_at": _now().isoformat(),
    }


def run_events(index: int, count: int = EVENTS, every: int = WAITING_EVERY) -> list[EventDraft]:
    """The ``count`` events of run ``index``: facts, transitions, a batch, an approval.

    Every ``every``-th run is left waiting for the approval; the others had it approved.
    """
    at = _now()
    waiting = index % every == 0
    head = [
        EventDraft(type="run.created", at=at, data={"run_id": uuid.uuid4().hex[:12]}),
        EventDraft(
            type="workflow.bound",
            at=at,
            data={"workflow": "weekly", "hash": "h" * 16, "initial": "draft"},
        ),
        EventDraft(type="batch.declared", at=at, data={"batch": "files", "items": ["a", "b"]}),
        EventDraft(type="batch.item_done", at=at, data={"batch": "files", "item": "a"}),
        EventDraft(
            type="transition.fired",
            at=at,
            data={"trigger": "submit", "from": "draft", "to": "review"},
        ),
    ]
    approval = _approval(len(head) + 1)
    tail = [EventDraft(type="approval.requested", at=at, data={"approval": approval})]
    if not waiting:
        tail += [
            EventDraft(
                type="approval.decided",
                at=at,
                data={"id": approval["id"], "status": "approved", "by": "ann"},
            ),
            EventDraft(
                type="transition.fired",
                at=at,
                data={"trigger": "publish", "from": "review", "to": "done"},
            ),
        ]
    facts = [fact_event(f"k{n % 10}", n) for n in range(count - len(head) - len(tail))]
    return head + facts[: len(facts) // 2] + tail + facts[len(facts) // 2 :]


def write_runs(job: tuple[str, str, list[int], int]) -> int:
    """Write the runs numbered ``indexes`` (a writer process); return how many events."""
    url, prefix, indexes, every = job
    written = 0
    for index in indexes:
        store = PostgresStore(url, f"{prefix}/{index:05d}")
        events = run_events(index, every=every)
        for at in range(0, len(events), CHUNK):
            store.append(events[at : at + CHUNK], expected_version=at)
            written += len(events[at : at + CHUNK])
        store.close()
    return written
