"""The run at a glance as deterministic plain text (Jupyter edge).

:func:`render_text` is the ``text/plain`` form of :class:`skillnb.jupyter.widgets.RunView`:
what VS Code without widgets, nbconvert and nbval show. It is a pure function of the
dictionary :meth:`skillnb.run.Run.describe` returns, and deterministic: no run ids, approval
ids, times or object addresses, so a saved notebook compares equal under nbval from one
execution to the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from skillnb.core.shell import magic_command
from skillnb.jupyter.widgets_render import (
    STATUS_MARKS,
    clip,
    gate_reason,
    gate_status,
    history_line,
    thread_detail,
    thread_interrupts,
)

__all__ = ["render_text"]

View = Mapping[str, Any]

_TEXT_HISTORY = 10


def _text_states(view: View) -> list[str]:
    states: Sequence[str] = view.get("states") or []
    if not states:
        return []
    visited = set(view.get("visited") or [])
    current = view.get("state")
    chips = [f"[{s}]" if s == current else (f"{s}✓" if s in visited else s) for s in states]
    lines = ["States: " + "  ".join(chips) + "   ([current], ✓ visited)"]
    for move in view.get("next") or []:
        status = str(move.get("status", "unknown"))
        mark = STATUS_MARKS.get(status, "?")
        lines.append(f"  {mark} {move['trigger']} → {move['to']}: {status}")
        for gate in move.get("gates") or []:
            if gate.get("passed") is not True:
                reason = clip(gate_reason(gate, view))
                lines.append(f"      {gate['gate']} ({gate['kind']}): {reason}")
    return lines


def _text_report(view: View) -> list[str]:
    report = view.get("last_report")
    if not report:
        return []
    verdict = "passed" if report.get("passed") else "blocked"
    where = report.get("trigger") or report.get("key") or "cell"
    earlier = report.get("state") != view.get("state")
    state = f"state {report.get('state')!r}" + (", earlier state" if earlier else "")
    lines = [f"Last gate report ({where}, {state}): {verdict}"]
    if earlier:  # history now: the reasons no longer apply
        return lines
    for r in report.get("results") or []:
        mark = STATUS_MARKS[gate_status(r.get("passed"), str(r.get("severity")))]
        lines.append(
            f"  {mark} {r['gate']} [{r['kind']}, {r['severity']}]: {clip(gate_reason(r, view))}"
        )
    return lines


def _text_facts(view: View) -> list[str]:
    facts = view.get("facts") or []
    if not facts:
        return []
    width = max(len(str(f["key"])) for f in facts)
    lines = ["Facts:"]
    for f in facts:
        flag = "" if f.get("restorable", True) else "  (not restorable)"
        lines.append(
            f"  {str(f['key']).ljust(width)}  {f['kind']:<10} v{f['version']}  "
            f"{clip(f.get('preview', ''))}{flag}"
        )
    return lines


def _text_pending(view: View) -> list[str]:
    pending = view.get("pending") or []
    if not pending:
        return []
    lines = ["Pending approvals:"]
    for p in pending:
        lines.append(
            f"  - {p['gate']} (for {p.get('trigger')}): {clip(p.get('message', ''))}"
            f" → {magic_command('approve', str(p['gate']))}"
        )
    return lines


def _text_follow_ups(view: View) -> list[str]:
    follow_ups = view.get("follow_ups") or []
    if not follow_ups:
        return []
    lines = ["Follow-ups:"]
    for f in follow_ups:
        lines.append(f"  - {clip(f.get('text', ''))} (gate {f['gate']}, state {f.get('state')})")
    return lines


def _text_threads(view: View) -> list[str]:
    threads = view.get("threads") or []
    if not threads:
        return []
    lines = ["LangGraph threads:"]
    for t in threads:
        lines.append(f"  - {t['thread_id']}: {thread_detail(t)}")
        for node, value, waiting in thread_interrupts(t, view):
            note = " (waiting for approval)" if waiting else ""
            lines.append(f"      interrupt in {node}: {clip(value)}{note}")
    return lines


def _text_batches(view: View) -> list[str]:
    return [f"Batch {b['name']}: {b['done']}/{b['total']} done" for b in view.get("batches") or []]


def _text_uncertain(view: View) -> list[str]:
    return [
        f"Uncertain step: {u['key']} (started at v{u['started_seq']}, never committed)"
        for u in view.get("uncertain") or []
    ]


def render_text(view: View, *, history: int = _TEXT_HISTORY) -> str:
    """Render the run as deterministic plain text (no ids, no times).

    Args:
        view: what :meth:`~skillnb.run.Run.describe` returned.
        history: how many of the most recent events to list.

    """
    workflow = view.get("workflow")
    head = (
        f"SKILL.nb run: workflow {workflow}, state {view.get('state')!r}"
        if workflow
        else ("SKILL.nb run (no workflow)")
    )
    profile = view.get("profile")
    shown = f", profile {profile}" if profile and profile != "default" else ""
    lines = [f"{head}, version {view.get('version', 0)}{shown}"]
    for section in (
        _text_states,
        _text_pending,
        _text_follow_ups,
        _text_threads,
        _text_uncertain,
        _text_report,
        _text_facts,
        _text_batches,
    ):
        part = section(view)
        if part:
            lines.extend(part)
    recent = list(view.get("history") or [])[-history:] if history > 0 else []
    if recent:
        lines.append(f"History (last {len(recent)}):")
        lines.extend(f"  v{h['seq']} {clip(history_line(h))}" for h in recent)
    return "\n".join(lines)
