"""A workflow's state machine as inline SVG that reads at any width, in any theme (core layer).

:func:`to_svg` draws what :func:`skillnb.core.workflow.graph.to_mermaid` describes (the same
options:
``current``, ``visited``, gate ``statuses``), laid out by
:mod:`skillnb.core.workflow.diagram_layout`,
as an ``<svg>`` of its natural size in CSS pixels inside a ``<div>`` that scrolls
horizontally: the diagram never shrinks to fit, so its text stays at 13 px (names) and 12 px
(edge labels, second lines).

* Colours are JupyterLab's CSS variables only (``--jp-content-font-color1/2/3``,
  ``--jp-layout-color0/2``, ``--jp-brand-color1``), with light fallbacks for renderers without
  them: the diagram follows the Light and Dark themes.
* The current state has a 3 px border *and* a second line "● current"; visited states a
  filled box and "✓ visited"; the transitions out of the current state are drawn thicker.
  A transition's label carries its gate status as a mark (✓ ⚠ ✗ ⏳), never colour alone.
* It is ``role="img"`` with a ``<title>`` and a ``<desc>`` listing every state (which is
  current, which visited), every transition with its status, so screen readers and axe
  read it. No ids, no markers: several diagrams on one page never clash.
* Every name is escaped: state and trigger names come from user files.

Where the SVG is removed (JupyterLab sanitizes the HTML of outputs it does not trust: a
notebook from elsewhere, before it is run or trusted), its text stays, the title and the
description first, one space between the parts, so it still reads as sentences.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from skillnb.core.views.marks import MARKS
from skillnb.core.views.viewtext import clip
from skillnb.core.workflow.definition import ANY_STATE
from skillnb.core.workflow.diagram_layout import NAME_PX, SMALL_PX, Edge, Layout, layout

if TYPE_CHECKING:
    from skillnb.core.workflow.model import Workflow

__all__ = ["DIAGRAM_CLASS", "to_svg"]

DIAGRAM_CLASS = "skillnb-diagram"
"""The class of the scrolling ``<div>`` around the ``<svg>``."""

_NAME_CLIP = 40
_FONT = (
    "var(--jp-ui-font-family, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif)"
)
_TEXT = "var(--jp-content-font-color1, rgba(0, 0, 0, 0.87))"
_LINE = "var(--jp-content-font-color2, rgba(0, 0, 0, 0.72))"
_QUIET = "var(--jp-content-font-color3, rgba(0, 0, 0, 0.54))"
_BACK = "var(--jp-layout-color0, #fff)"
_VISITED = "var(--jp-layout-color2, #eee)"
_ACCENT = "var(--jp-brand-color1, #1976d2)"
_STATUS_WORDS = {"passing": "passing", "warning": "warning", "blocked": "blocked"}
_STATUS_WORDS |= {"waiting": "waiting for approval"}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _label(trigger: str, status: str | None) -> str:
    mark = MARKS.get(status) if status and status != "unknown" else None
    return f"{trigger} {mark}" if mark else trigger


def _edges(workflow: Workflow) -> list[tuple[str | None, str, str]]:
    out: list[tuple[str | None, str, str]] = []
    for t in workflow.transitions:
        sources = [None] if t.source == ANY_STATE else list(t.source)
        out.extend((s, t.target, t.trigger) for s in sources)
    return out


def to_svg(
    workflow: Workflow,
    *,
    current: str | None = None,
    visited: Iterable[str] = (),
    statuses: Mapping[str, str] | None = None,
) -> str:
    """Render ``workflow`` as an accessible inline SVG in a horizontally scrolling ``<div>``.

    Args:
        workflow: the definition.
        current: the run's state (marked "current").
        visited: states the run has been in (marked "visited").
        statuses: gate status per trigger (``passing``, ``warning``, ``blocked``,
            ``waiting``), shown as a mark after the trigger and said in the description.

    Returns:
        HTML text: ``<div class="skillnb-diagram" …><svg role="img" …>…</svg></div>``.

    """
    statuses = statuses or {}
    seen = {s for s in visited if s != current}
    seconds = {
        s: "● current" if s == current else ("✓ visited" if s in seen else "")
        for s in workflow.states
    }
    names = {s: clip(s, _NAME_CLIP) for s in workflow.states}
    edges = [
        (source, target, trigger, clip(_label(trigger, statuses.get(trigger)), 60))
        for source, target, trigger in _edges(workflow)
    ]
    drawn = layout(workflow.states, workflow.initial, edges, names=names, seconds=seconds)
    parts = [_title(workflow, current), _desc(workflow, current, seen, statuses)]
    parts.append(_start(drawn))
    parts += [_edge(e, thick=e.source == current and current is not None) for e in drawn.edges]
    parts += [_box(drawn, s, names, seconds, current, seen) for s in drawn.boxes]
    parts += [_edge_label(e) for e in drawn.edges]
    w, h = round(drawn.width), round(drawn.height)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" style="display:block;width:{w}px;height:{h}px;'
        f'max-width:none;min-width:{w}px;font-family:{_FONT}">{" ".join(parts)}</svg>'
    )
    return (
        f'<div class="{DIAGRAM_CLASS}" tabindex="0" role="group" '
        f'aria-label="State diagram of {_e(clip(workflow.name, 80))} (scrolls sideways)" '
        f'style="overflow-x:auto;overflow-y:hidden;max-width:100%;padding:2px 0">{svg}</div>'
    )


def _title(workflow: Workflow, current: str | None) -> str:
    now = f", current state {clip(current, 200)}" if current is not None else ""
    return f"<title>State diagram of workflow {_e(clip(workflow.name, 200))}{_e(now)}</title>"


def _desc(
    workflow: Workflow, current: str | None, seen: set[str], statuses: Mapping[str, str]
) -> str:
    def state(s: str) -> str:
        tag = " (current)" if s == current else (" (visited)" if s in seen else "")
        return clip(s, 200) + tag

    moves = []
    for source, target, trigger in _edges(workflow):
        word = _STATUS_WORDS.get(str(statuses.get(trigger)))
        status = f" ({word})" if word else ""
        start = "any state" if source is None else clip(source, 200)
        moves.append(f"{start} to {clip(target, 200)} on {clip(trigger, 200)}{status}")
    text = (
        f"States: {', '.join(state(s) for s in workflow.states)}. "
        f"Starts in {clip(workflow.initial, 200)}. "
        f"Transitions: {'; '.join(moves) if moves else 'none'}."
    )
    if current is not None:
        text += f" Current state: {clip(current, 200)}."
    return f"<desc>{_e(text)}</desc>"


def _start(drawn: Layout) -> str:
    (cx, cy), (x0, y0), (x1, y1) = drawn.start, *drawn.start_edge
    return (
        f'<circle cx="{cx:g}" cy="{cy:g}" r="{drawn.start_r:g}" style="fill:{_LINE}"/>'
        + _polyline([(x0, y0), (x1 - 7, y1)], 1.5)
        + _arrow(x1, y1, "right")
    )


def _polyline(points: list[tuple[float, float]], width: float) -> str:
    coords = " ".join(f"{x:g},{y:g}" for x, y in points)
    return (
        f'<polyline points="{coords}" style="fill:none;stroke:{_LINE};stroke-width:{width:g};'
        'stroke-linejoin:round"/>'
    )


def _arrow(x: float, y: float, way: str) -> str:
    """A filled arrowhead whose tip is at ``(x, y)``, pointing ``way``."""
    dx, dy = {"right": (-8, 0), "down": (0, -8), "up": (0, 8)}[way]
    px, py = (0, 4.5) if way == "right" else (4.5, 0)
    points = f"{x:g},{y:g} {x + dx - px:g},{y + dy - py:g} {x + dx + px:g},{y + dy + py:g}"
    return f'<polygon points="{points}" style="fill:{_LINE}"/>'


def _edge(edge: Edge, *, thick: bool) -> str:
    points = list(edge.points)
    tip = points[-1]
    back = {"right": (-7, 0), "down": (0, -7), "up": (0, 7)}[edge.arrow]
    points[-1] = (tip[0] + back[0], tip[1] + back[1])
    dash = ";stroke-dasharray:5 3" if edge.source is None else ""
    line = _polyline(points, 2.5 if thick else 1.5)
    if dash:
        line = line.replace('stroke-linejoin:round"', f'stroke-linejoin:round{dash}"')
    return line + _arrow(tip[0], tip[1], edge.arrow)


def _edge_label(edge: Edge) -> str:
    x, y = edge.label_at
    w, h = edge.label_w, 18
    return (
        f'<rect x="{x - w / 2:g}" y="{y - h / 2:g}" width="{w:g}" height="{h}" rx="3" '
        f'style="fill:{_BACK}"/>'
        f'<text x="{x:g}" y="{y:g}" text-anchor="middle" dominant-baseline="central" '
        f'style="font-size:{SMALL_PX}px;fill:{_TEXT}">{_e(edge.label)}</text>'
    )


def _box(
    drawn: Layout,
    state: str | None,
    names: Mapping[str, str],
    seconds: Mapping[str, str],
    current: str | None,
    seen: set[str],
) -> str:
    box = drawn.boxes[state]
    if state is None:
        stroke, width, fill, name, second = _QUIET, 1.5, _BACK, "any state", ""
    elif state == current:
        stroke, width, fill, name, second = _ACCENT, 3.0, _BACK, names[state], seconds[state]
    elif state in seen:
        stroke, width, fill, name, second = _ACCENT, 1.5, _VISITED, names[state], seconds[state]
    else:
        stroke, width, fill, name, second = _QUIET, 1.0, _BACK, names[state], ""
    dash = ";stroke-dasharray:5 3" if state is None else ""
    cx = box.x + box.w / 2
    weight = ";font-weight:600" if state == current else ""
    name_y = box.y + (box.h / 2 - 8 if second else box.h / 2)
    parts = [
        f'<rect x="{box.x:g}" y="{box.y:g}" width="{box.w:g}" height="{box.h:g}" rx="8" '
        f'style="fill:{fill};stroke:{stroke};stroke-width:{width:g}{dash}"/>',
        f'<text x="{cx:g}" y="{name_y:g}" text-anchor="middle" dominant-baseline="central" '
        f'style="font-size:{NAME_PX}px;fill:{_TEXT}{weight}">{_e(name)}</text>',
    ]
    if second:
        parts.append(
            f'<text x="{cx:g}" y="{box.y + box.h / 2 + 10:g}" text-anchor="middle" '
            f'dominant-baseline="central" style="font-size:{SMALL_PX}px;fill:{_TEXT}{weight}">'
            f"{_e(second)}</text>"
        )
    cls = "current" if state == current else ("visited" if state in seen else "state")
    return f'<g class="skillnb-diagram-{cls}">{" ".join(parts)}</g>'
