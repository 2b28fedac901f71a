"""Plain-text and HTML renderings of ``run.describe()`` (edge layer).

Used by ``%skillnb status`` (when the interactive ``RunView`` is off or unavailable), by
``%resume`` and by the banner ``%load_ext skillnb`` shows for an existing run. Both renderings
are deterministic (no times, no run ids) and the HTML escapes every recorded text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from skillnb.core.marks import MARKS
from skillnb.core.shell import magic_command

__all__ = [
    "Section",
    "banner_sections",
    "headline",
    "render_html",
    "render_text",
    "scrub",
    "status_sections",
]

Section = tuple[str, list[str]]
"""A titled list of lines (an empty title means: lines without a heading)."""

_MARK = MARKS
_CLIP = 120


def _clip(text: object, limit: int = _CLIP) -> str:
    one = str(text).replace("\n", " ")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def scrub(text: str, run_id: str) -> str:
    """Drop the run id (random per run) from ``text`` so plain outputs stay comparable."""
    return text.replace(run_id, "this run") if run_id else text


def headline(view: Mapping[str, Any]) -> str:
    """Summarise the run in one line: ``workflow report · state 'review' · version 12``."""
    profile = view.get("profile")
    shown = f" · profile {profile}" if profile and profile != "default" else ""
    if view.get("workflow"):
        state = view.get("state")
        return f"workflow {view['workflow']} · state {state!r} · version {view['version']}{shown}"
    return f"run without a workflow · version {view['version']}"


def _pending(view: Mapping[str, Any]) -> list[str]:
    return [
        f"{p['gate']}: {_clip(p['message'])} → {magic_command('approve', p['gate'])}"
        for p in view.get("pending", [])
    ]


def _uncertain(view: Mapping[str, Any]) -> list[str]:
    return [
        f"{u['key']} (started at v{u['started_seq']}, never committed) → "
        f"{magic_command('clear', u['key'])}"
        for u in view.get("uncertain", [])
    ]


def _follow_ups(view: Mapping[str, Any]) -> list[str]:
    return [
        f"{_clip(f['text'])} (gate {f['gate']}: {_clip(f['reason'], 60)}) → "
        f"%skillnb resolve {f['gate']}"
        for f in view.get("follow_ups", [])
    ]


def _batches(view: Mapping[str, Any]) -> list[str]:
    return [f"{b['name']}: {b['done']}/{b['total']} done" for b in view.get("batches", [])]


def _next(view: Mapping[str, Any]) -> list[str]:
    lines = []
    for n in view.get("next", []):
        lines.append(f"{_MARK.get(n['status'], '?')} {n['trigger']} → {n['to']} ({n['status']})")
        lines += [
            f"    ✗ {g['gate']}: {_clip(g['message'])}" for g in n["gates"] if g["passed"] is False
        ]
    return lines


def status_sections(view: Mapping[str, Any], *, history: int = 10) -> list[Section]:
    """Build the sections of ``%skillnb status``."""
    facts = [
        f"{f['key']} v{f['version']} ({f['kind']}) = {_clip(f['preview'])}"
        + ("" if f["restorable"] else " [not restorable]")
        for f in view.get("facts", [])
    ]
    report = view.get("last_report")
    last = []
    if report is not None and not report["passed"]:
        failed = [r for r in report["results"] if r["passed"] is False]
        last = [f"✗ {r['gate']}: {_clip(r['message'])}" for r in failed]
    run_id = str(view.get("run_id") or "")
    recent = [
        f"v{h['seq']} {_clip(scrub(h['summary'], run_id))}"
        for h in view.get("history", [])[-history:]
    ]
    sections: list[Section] = [
        ("", [headline(view)]),
        ("next", _next(view)),
        (f"facts ({len(facts)})", facts),
        ("waiting for approval", _pending(view)),
        ("follow-ups", _follow_ups(view)),
        ("uncertain steps", _uncertain(view)),
        ("batches", _batches(view)),
        ("last block", last),
        ("recent history", recent),
    ]
    return [s for s in sections if s[1]]


def banner_sections(
    view: Mapping[str, Any], *, last_operation: str | None, memory_last: str | None
) -> list[Section]:
    """Build the sections of the resume banner: where the run stands and what waits."""
    where = [headline(view)]
    if last_operation:
        where.append(f"last: {_clip(last_operation)}")
    sections: list[Section] = [
        ("", where),
        ("waiting for approval", _pending(view)),
        ("follow-ups", _follow_ups(view)),
        ("uncertain steps", _uncertain(view)),
        ("batches", _batches(view)),
        ("skill memory", [f"last: {_clip(memory_last)}"] if memory_last else []),
    ]
    return [s for s in sections if s[1]]


def render_text(sections: Sequence[Section]) -> list[str]:
    """Render the sections as indented plain-text lines."""
    lines: list[str] = []
    for title, body in sections:
        if title:
            lines.append(f"{title}:")
            lines += [f"  {line}" for line in body]
        else:
            lines += body
    return lines


def render_html(badge: str, sections: Sequence[Section], status: str = "ok") -> str:
    """Render the sections as escaped HTML lists under the badge."""
    parts = [
        f'<div class="skillnb-output skillnb-{html.escape(status)}">',
        f"<strong>{html.escape(badge)}</strong>",
    ]
    for title, body in sections:
        if title:
            parts.append(f"<div><em>{html.escape(title)}</em></div>")
        items = "".join(f"<li>{html.escape(line)}</li>" for line in body)
        parts.append(f'<ul style="margin:0">{items}</ul>')
    parts.append("</div>")
    return "".join(parts)
