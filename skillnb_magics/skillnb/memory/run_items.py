"""What a finished run is remembered by: its recall items (service layer, pure).

:func:`recall_items` walks a run's history once, following its workflow state, and returns
:class:`~skillnb.memory.recall.RecallItem` s for the long-term index: every final fact (text:
key, kind and value; state: the state its last version was recorded in), each decision's
earlier versions, the key events (transitions, approvals with their notes, milestones,
blocked gates) and the run's summary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from skillnb.core.runstate.records import Event, Fact
from skillnb.memory.recall import RecallItem

__all__ = ["fact_text", "recall_items"]

_VALUE_CHARS = 1500


def fact_text(key: str, kind: str, value: Any, note: str | None = None) -> str:
    """``key (kind): value`` with the value as text, clipped; the note after it."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > _VALUE_CHARS:
        text = text[: _VALUE_CHARS - 1] + "…"
    return f"{key} ({kind}): {text}" + (f" — {note}" if note else "")


def _event_text(event: Event) -> str | None:
    """The text of a key event, or ``None`` for bookkeeping."""
    data = event.data
    if event.type == "transition.fired":
        return f"transition {data.get('trigger')}: {data.get('from')} → {data.get('to')}"
    if event.type == "approval.decided":
        note = f": {data['note']}" if data.get("note") else ""
        return f"approval {data.get('status')} by {data.get('by')}{note}"
    if event.type == "milestone.recorded":
        return f"milestone {data.get('name')}"
    if event.type == "gate.reported":
        report = data.get("report")
        if isinstance(report, dict) and not report.get("passed", True):
            failed = [r.get("message", "") for r in report.get("results", []) if not r["passed"]]
            return f"gate {data.get('key')} blocked: " + "; ".join(map(str, failed))
    return None


def _next_state(event: Event, state: str | None) -> str | None:
    if event.type == "workflow.bound" and state is None:
        initial = event.data.get("initial")
        return initial if isinstance(initial, str) else None
    if event.type == "transition.fired":
        target = event.data.get("to")
        return target if isinstance(target, str) else state
    return state


def recall_items(
    events: Iterable[Event], facts: Mapping[str, Fact], summary: str, *, final_state: str | None
) -> list[RecallItem]:
    """The items to file for a run: final facts, earlier decisions, key events, summary.

    Args:
        events: the run's whole history, oldest first.
        facts: its current facts, values decoded.
        summary: its summary text (filed whole, in the final state).
        final_state: the state the run ended in.

    """
    state: str | None = None
    text: str | None
    items: list[RecallItem] = []
    recorded: dict[str, tuple[str | None, str]] = {}
    for event in events:
        at = event.at.isoformat(timespec="seconds")
        if event.type == "fact.formalized":
            fact = event.data.get("fact", {})
            key = str(fact.get("key", ""))
            recorded[key] = (state, at)
            current = facts.get(key)
            superseded = current is not None and fact.get("version") != current.version
            if fact.get("kind") == "decision" and superseded:
                text = fact_text(key, "decision", fact.get("preview") or fact.get("value"))
                items.append(RecallItem(f"earlier {text}", "decision", state, at, key))
        else:
            text = _event_text(event)
            if text is not None:
                items.append(RecallItem(text, "event", state, at, event.type))
        state = _next_state(event, state)
    for key, fact in facts.items():
        where, at = recorded.get(key, (final_state, fact.at.isoformat(timespec="seconds")))
        value = fact.value if fact.restorable else fact.preview
        text = fact_text(key, fact.kind, value, fact.note)
        items.append(RecallItem(text, fact.kind, where, at, key))
    last_at = items[-1].at if items else ""
    items.append(RecallItem(summary, "summary", final_state, last_at, "summary"))
    return items
