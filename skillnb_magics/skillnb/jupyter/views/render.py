"""The run at a glance as escaped HTML fragments (Jupyter edge).

Everything here is a pure function of the dictionary that :meth:`skillnb.run.Run.describe`
returns: :class:`skillnb.jupyter.views.widgets.RunView` shows these fragments in its sections, and
:func:`render_html` is the view's ``text/html`` form where no widget frontend runs (VS Code
without widgets, nbconvert). The plain-text form, and the one clip, the marks and the helpers
both forms share, are in :mod:`skillnb.core.views.viewtext`.

Every piece of run data goes through :func:`html.escape`: facts and gate messages can hold
LLM output, including markup and ``<script>``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillnb.core.shell import magic_command
from skillnb.core.views.marks import MARKS, mark
from skillnb.core.views.viewtext import (
    clip,
    gate_reason,
    gate_status,
    history_line,
    question,
    result_status,
    thread_detail,
    thread_interrupts,
    thread_resume,
)

if TYPE_CHECKING:
    from skillnb.core.workflow.model import Workflow

__all__ = [
    "STATUS_COLOURS",
    "STATUS_MARKS",
    "batches_html",
    "chips_html",
    "clip",
    "diagram_html",
    "facts_html",
    "gate_reason",
    "gate_status",
    "header_html",
    "history_html",
    "history_line",
    "mermaid_markdown",
    "next_html",
    "pending_html",
    "render_html",
    "report_html",
    "states_html",
    "thread_detail",
    "thread_interrupts",
    "threads_html",
]

View = Mapping[str, Any]

STATUS_COLOURS: Mapping[str, str] = {
    "passing": "var(--skillnb-passed, #1b5e20)",
    "warning": "var(--skillnb-warning, #8a4b00)",
    "blocked": "var(--skillnb-blocked, #b71c1c)",
    "waiting": "var(--skillnb-waiting, #8a4b00)",
    "unknown": "var(--jp-ui-font-color1, #424242)",
}
"""The text colour of a transition (or gate) by gate status, as a CSS value.

The ``--skillnb-*`` variables come from the JupyterLab extension's stylesheet, which flips
them with the theme (each meets WCAG AA on the theme's backgrounds); the fallbacks are the
light values, for renderers without that stylesheet (nbconvert, other frontends).
"""

_ACCENT = "var(--skillnb-accent, #0d47a1)"
_TEXT = "var(--jp-ui-font-color1, #212121)"
_BORDER = "var(--jp-border-color2, #ddd)"

STATUS_MARKS: Mapping[str, str] = MARKS
"""The mark of a transition (or gate) by gate status, in plain text."""

_PREVIEW = 80


def _e(text: object, limit: int | None = None) -> str:
    """Escaped (and optionally clipped) text for HTML."""
    return html.escape(clip(text, limit) if limit else str(text), quote=True)


def _coded(escaped: str) -> str:
    """Show `backticked` spans of already escaped text as ``<code>`` (commands in messages)."""
    return re.sub(r"`([^`<>]+)`", r"<code>\1</code>", escaped)


def _gate_colour(result: Mapping[str, Any], view: View) -> str:
    return STATUS_COLOURS[result_status(result, view)]


def _gate_mark(result: Mapping[str, Any], view: View) -> str:
    return mark(result_status(result, view))


_BOX = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;line-height:1.45"
_H = "margin:8px 0 4px 0;font-size:13px;font-weight:600"
_TABLE = "border-collapse:collapse;font-size:12px"
_CELL = f"padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid {_BORDER}"


def _badge(text: str, colour: str) -> str:
    return (
        f'<span style="display:inline-block;padding:0 6px;border-radius:8px;color:{colour};'
        f'border:1px solid {colour};font-size:11px">{html.escape(text)}</span>'
    )


def header_html(view: View) -> str:
    """Render the title line: workflow, current state, version."""
    workflow = view.get("workflow")
    if not workflow:
        version = int(view.get("version", 0))
        return f'<div style="{_BOX}"><b>SKILL.nb run</b> (no workflow) · v{version}</div>'
    state = view.get("state")
    profile = view.get("profile")
    shown = ""
    if profile and profile != "default":
        shown = f' · <span class="skillnb-profile">profile <b>{_e(profile)}</b></span>'
    return (
        f'<div style="{_BOX}"><b>SKILL.nb</b> · workflow <b>{_e(workflow)}</b> · state '
        f'<span class="skillnb-current-state" style="font-weight:600;color:{_ACCENT}">'
        f"{_e(state)}</span> · v{int(view.get('version', 0))}{shown}</div>"
    )


def states_html(view: View, diagram: str = "") -> str:
    """Render the state machine (``diagram``, else chips) and the moves out of the state.

    Args:
        view: a ``describe()`` result.
        diagram: the run's inline SVG diagram (:func:`diagram_html`); without one the
            states are chips (current highlighted, visited marked).

    """
    drawn = diagram or chips_html(view)
    return drawn + next_html(view) if drawn else ""


def diagram_html(workflow: Workflow | None, view: View) -> str:
    """The run's state machine as inline SVG (:func:`skillnb.core.workflow.diagram.to_svg`).

    The current state, visited states and gate statuses come from ``view`` (a
    ``describe()`` of a run of ``workflow``); ``""`` without a workflow.
    """
    if workflow is None or not view.get("states"):
        return ""
    from skillnb.core.workflow.diagram import (
        to_svg,  # definitions are not needed to load the extension
    )

    statuses = {
        str(m["trigger"]): str(m.get("status"))
        for m in view.get("next") or []
        if m.get("status") not in (None, "unknown")
    }
    return to_svg(
        workflow,
        current=view.get("state"),
        visited=view.get("visited") or [],
        statuses=statuses,
    )


def chips_html(view: View) -> str:
    """Render the states as chips, the current one highlighted and the visited ones marked.

    This is the built-in rendering of the state machine, used where mermaid is not drawn.
    """
    states: Sequence[str] = view.get("states") or []
    if not states:
        return ""
    visited = set(view.get("visited") or [])
    current = view.get("state")
    chips = []
    for s in states:
        if s == current:
            style = f"color:{_ACCENT};border:2px solid {_ACCENT};font-weight:600"
            cls = "skillnb-state skillnb-state-current"
        elif s in visited:
            style = f"color:{_TEXT};border-color:{_ACCENT}"
            cls = "skillnb-state skillnb-state-visited"
        else:
            style = f"color:{_TEXT};border-color:{_BORDER}"
            cls = "skillnb-state"
        mark = "✓ " if s in visited and s != current else ""
        chips.append(
            f'<span class="{cls}" style="display:inline-block;margin:2px 4px 2px 0;'
            f'padding:1px 8px;border:1px solid;border-radius:10px;{style}">{mark}{_e(s)}</span>'
        )
    return f'<div style="{_BOX}">{"".join(chips)}</div>'


def next_html(view: View) -> str:
    """Render the moves out of the current state, coloured by gate status, with failing gates."""
    rows = []
    for move in view.get("next") or []:
        status = str(move.get("status", "unknown"))
        colour = STATUS_COLOURS.get(status, STATUS_COLOURS["unknown"])
        gates = "".join(
            f'<li style="color:{_gate_colour(g, view)}">{_gate_mark(g, view)} '
            f"<b>{_e(g['gate'])}</b> ({_e(g['kind'])}): "
            f"{_coded(_e(gate_reason(g, view), 200))}</li>"
            for g in move.get("gates") or []
            if g.get("passed") is not True
        )
        rows.append(
            f'<div class="skillnb-next skillnb-next-{_e(status)}" style="margin:2px 0">'
            f'<span style="color:{colour};font-weight:600">{_e(move["trigger"])} → '
            f"{_e(move['to'])}</span> {_badge(f'{mark(status)} {status}', colour)}"
            + (f'<ul style="margin:2px 0 2px 18px;padding:0">{gates}</ul>' if gates else "")
            + "</div>"
        )
    return f'<div style="{_BOX}">{"".join(rows)}</div>' if rows else ""


def report_html(view: View) -> str:
    """Render the last recorded gate report, with each failure's reason."""
    report = view.get("last_report")
    if not report:
        return ""
    passed = bool(report.get("passed"))
    verdict = _badge("passed" if passed else "blocked", STATUS_COLOURS[gate_status(passed, "")])
    where = report.get("trigger") or report.get("key") or "cell"
    rows = "".join(
        f'<tr><td style="{_CELL};color:{_gate_colour(r, view)}">'
        f"{_gate_mark(r, view)}</td>"
        f'<td style="{_CELL}"><b>{_e(r["gate"])}</b></td><td style="{_CELL}">{_e(r["kind"])}</td>'
        f'<td style="{_CELL}">{_e(r["severity"])}</td>'
        f'<td style="{_CELL}">{_coded(_e(gate_reason(r, view), 300))}</td></tr>'
        for r in report.get("results") or []
    )
    title = f"Last gate report: {_e(where)} in state {_e(report.get('state'))}"
    table = f'<table style="{_TABLE}">{rows}</table>'
    if report.get("state") != view.get("state"):  # history now: folded away
        return (
            f'<details class="skillnb-report skillnb-report-earlier" style="{_BOX}">'
            f"<summary>{title} (earlier state) {verdict}</summary>{table}</details>"
        )
    return (
        f'<div class="skillnb-report" style="{_BOX}"><div style="{_H}">{title} {verdict}</div>'
        f"{table}</div>"
    )


def _when(entry: Mapping[str, Any], times: bool) -> str:
    """A ``title`` attribute with the entry's time (empty when ``times`` is off)."""
    return f' title="{_e(entry.get("at") or "")}"' if times else ""


def facts_html(view: View, *, times: bool = True) -> str:
    """Render the facts: key, kind, version and a clipped, escaped value.

    ``times`` adds each fact's time as a tooltip (off in the saved fallback, see
    :func:`render_html`).
    """
    facts = view.get("facts") or []
    if not facts:
        return ""
    rows = "".join(
        f'<tr><td style="{_CELL}"><code>{_e(f["key"])}</code></td><td style="{_CELL}">'
        f'{_e(f["kind"])}</td><td style="{_CELL}">v{int(f["version"])}</td>'
        f'<td style="{_CELL}"{_when(f, times)}>{_e(f.get("preview", ""), _PREVIEW)}'
        + ("" if f.get("restorable", True) else " <i>(not restorable)</i>")
        + "</td></tr>"
        for f in facts
    )
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("fact", "kind", "version", "value"))
    return (
        f'<div class="skillnb-facts" style="{_BOX}"><div style="{_H}">Facts</div>'
        f'<table style="{_TABLE}"><tr>{head}</tr>{rows}</table></div>'
    )


def _approve(gate: str) -> str:
    return magic_command("approve", gate)


def pending_html(view: View) -> str:
    """Render pending approvals as a static list (the widget adds Approve/Reject buttons)."""
    pending = view.get("pending") or []
    if not pending:
        return ""
    items = "".join(_pending_item(p) for p in pending)
    return (
        f'<div class="skillnb-pending" style="{_BOX}"><div style="{_H}">Pending approvals</div>'
        f'<ul style="margin:2px 0 2px 18px;padding:0">{items}</ul></div>'
    )


def _pending_item(p: Mapping[str, Any]) -> str:
    """One request: its question in bold, its fields, the gate (and trigger) and the command."""
    title, fields = question(str(p.get("message", "")))
    where = f" for {_e(p.get('trigger'))}" if p.get("trigger") else ""
    body = "".join(f"<br><small>{_e(f, 200)}</small>" for f in fields)
    return (
        f"<li><b>{_e(title or p['gate'], 200)}</b> <small>(gate <code>{_e(p['gate'])}</code>"
        f"{where}; approve with <code>{_e(_approve(p['gate']))}</code>)</small>{body}</li>"
    )


def follow_ups_html(view: View) -> str:
    """Render the open follow-ups that warning gates left."""
    follow_ups = view.get("follow_ups") or []
    if not follow_ups:
        return ""
    items = "".join(
        f"<li><b>{_e(f.get('text', ''), 200)}</b> <small>(gate {_e(f['gate'])} in state "
        f"{_e(f.get('state'))}: {_e(f.get('reason', ''), 120)}; resolve with "
        f"<code>%skillnb resolve {_e(f['gate'])}</code>)</small></li>"
        for f in follow_ups
    )
    return (
        f'<div class="skillnb-follow-ups" style="{_BOX}"><div style="{_H}">Follow-ups</div>'
        f'<ul style="margin:2px 0 2px 18px;padding:0">{items}</ul></div>'
    )


def threads_html(view: View, *, ids: bool = True) -> str:
    """Render the run's LangGraph threads: step, next nodes, open interrupts.

    ``ids`` adds each thread's last checkpoint id as a tooltip (the saved fallback has none).
    """
    threads = view.get("threads") or []
    if not threads:
        return ""
    items = []
    for t in threads:
        tip = f' title="checkpoint {_e(t.get("checkpoint", ""))}"' if ids else ""
        inner = "".join(
            f"<li>interrupt in {_e(node)}: {_e(question(value)[0], 120)}"
            + (" <small>(waiting for approval)</small>" if waiting else "")
            + "</li>"
            for node, value, waiting in thread_interrupts(t, view)
        )
        if t.get("interrupts"):
            inner += f"<li><small>once decided: <code>{_e(thread_resume(t))}</code></small></li>"
        nested = f'<ul style="margin:0 0 0 16px;padding:0">{inner}</ul>' if inner else ""
        items.append(
            f"<li{tip}><code>{_e(t.get('thread_id', ''))}</code> "
            f"<small>{_e(thread_detail(t))}</small>{nested}</li>"
        )
    return (
        f'<div class="skillnb-threads" style="{_BOX}"><div style="{_H}">LangGraph threads</div>'
        f'<ul style="margin:2px 0 2px 18px;padding:0">{"".join(items)}</ul></div>'
    )


def batches_html(view: View) -> str:
    """Render batch progress (done/total with a thin bar) and uncertain steps."""
    parts = []
    for b in view.get("batches") or []:
        total = int(b["total"]) or 1
        pct = min(100, round(100 * int(b["done"]) / total))
        parts.append(
            f"<div>{_e(b['name'])}: {int(b['done'])}/{int(b['total'])} "
            f'<span style="display:inline-block;width:120px;height:6px;'
            f'background:var(--jp-layout-color3, #bdbdbd);vertical-align:middle">'
            f'<span style="display:block;width:{pct}%;height:6px;background:{_ACCENT}">'
            f"</span></span></div>"
        )
    parts.extend(
        f'<div style="color:{STATUS_COLOURS["warning"]}">uncertain step '
        f"<code>{_e(u['key'])}</code>: started and never committed</div>"
        for u in view.get("uncertain") or []
    )
    return f'<div style="{_BOX}">{"".join(parts)}</div>' if parts else ""


def history_html(view: View, *, n: int = 20, times: bool = True) -> str:
    """Render the recent history, newest last, folded in a ``<details>`` element.

    ``times`` adds each event's time as a tooltip.
    """
    recent = list(view.get("history") or [])[-n:]
    if not recent:
        return ""
    items = "".join(
        f"<li{_when(h, times)}>v{int(h['seq'])} · {_e(history_line(h), 160)}</li>" for h in recent
    )
    return (
        f'<details style="{_BOX}"><summary>History (last {len(recent)})</summary>'
        f'<ul style="margin:2px 0 2px 18px;padding:0;font-size:12px">{items}</ul></details>'
    )


def mermaid_markdown(source: str, *, direction: str | None = None) -> str:
    """The diagram's Markdown (:func:`skillnb.core.workflow.graph.mermaid_markdown`, on use).

    (``core.graph`` reads workflow definitions, which loading the extension does not need.)
    """
    from skillnb.core.workflow.graph import mermaid_markdown as fenced

    return fenced(source, direction=direction)


def render_html(view: View, *, diagram: str = "") -> str:
    """Render the whole run as one static, escaped HTML fragment (the widget-less fallback).

    It is saved in the notebook, so it holds no times (the live widget shows them as
    tooltips): a fresh execution gives the same HTML, as ``pytest --nbval`` expects.
    ``diagram`` is the run's inline SVG (:func:`diagram_html`), shown in place of the chips.
    """
    sections = (
        header_html(view),
        states_html(view, diagram),
        pending_html(view),
        follow_ups_html(view),
        threads_html(view, ids=False),
        report_html(view),
        facts_html(view, times=False),
        batches_html(view),
        history_html(view, times=False),
    )
    body = "".join(s for s in sections if s)
    return f'<div class="skillnb-run-static">{body}</div>'
