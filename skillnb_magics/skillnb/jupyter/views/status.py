"""The resume banner: where the run stands and what waits, as text and HTML (edge layer).

Used by ``%resume`` and by the banner ``%load_ext skillnb`` shows for an existing run
(:func:`skillnb.jupyter.views.outcomes.resumed`). Its lines come from the one renderer of the run
view, :mod:`skillnb.core.views.viewtext` (the same clip, marks and words as ``%skillnb status``,
the widget and the CLI); here they are only grouped under titles. Both renderings are
deterministic (no times, no run ids) and the HTML escapes every recorded text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from skillnb.core.views.viewtext import (
    batch_lines,
    clip,
    follow_up_lines,
    pending_lines,
    uncertain_lines,
)

__all__ = [
    "Section",
    "banner_sections",
    "headline",
    "render_html",
    "render_text",
    "scrub",
]

Section = tuple[str, list[str]]
"""A titled list of lines (an empty title means: lines without a heading)."""


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


def banner_sections(
    view: Mapping[str, Any], *, last_operation: str | None, memory_last: str | None
) -> list[Section]:
    """Build the sections of the resume banner: where the run stands and what waits."""
    where = [headline(view)]
    if last_operation:
        where.append(f"last: {clip(last_operation, 120)}")
    sections: list[Section] = [
        ("", where),
        ("waiting for approval", pending_lines(view)),
        ("follow-ups", follow_up_lines(view)),
        ("uncertain steps", uncertain_lines(view)),
        ("batches", batch_lines(view)),
        ("skill memory", [f"last: {clip(memory_last, 120)}"] if memory_last else []),
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
