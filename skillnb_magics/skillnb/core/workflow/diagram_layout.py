"""Where a state diagram's boxes and edges go: a left-to-right layout in pure Python (core layer).

:func:`layout` places a workflow's states in one row, ordered by their distance from the
initial state (then by definition order), and routes every transition so that no edge and
no label crosses a box:

* a move to the next box in the row is a straight arrow, its label above it, in a gap wide
  enough for that label;
* every other move (backwards, skipping boxes, a self-loop, several triggers between the same
  two states, moves from "any state") runs in a *lane*: up from its source box (down for
  forward moves), across, and into its target box. Lanes are packed like intervals, the
  shortest moves nearest the boxes, so labels never overlap.

Sizes are in CSS pixels and estimated from the text (no font metrics in the core): a wide
(East Asian) character counts as one em, any other as 0.62 em, which errs on the wide side
for the sans-serif fonts JupyterLab uses. The same input always gives the same layout.
:mod:`skillnb.core.workflow.diagram` draws it as SVG.
"""

from __future__ import annotations

import unicodedata
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["NAME_PX", "SMALL_PX", "Box", "Edge", "Layout", "layout", "text_width"]

NAME_PX = 13
"""Font size of a state's name."""
SMALL_PX = 12
"""Font size of edge labels and of a box's second line (``current``, ``visited``)."""

_PAD = 12
_BOX_H = 46
_BOX_MIN_W = 84
_BOX_PAD_X = 28
_START_R = 7
_START_GAP = 36
_MIN_GAP = 56
_LANE = 26
_LANE_FIRST = 20
_LABEL_H = 18
_LABEL_PAD_X = 12


def text_width(text: str, px: int) -> float:
    """Estimated width of ``text`` in a ``px`` sans-serif font (wide characters one em)."""
    return sum(px if unicodedata.east_asian_width(ch) in "WF" else 0.62 * px for ch in text)


@dataclass
class Box:
    """One state's box: top-left corner and size."""

    state: str | None
    """The state (``None`` for the "any state" box)."""
    x: float
    y: float
    w: float
    h: float = _BOX_H


@dataclass
class Edge:
    """One transition as a polyline, its label centred on ``label_at``."""

    source: str | None
    """The source state (``None``: from any state)."""
    target: str
    trigger: str
    label: str
    """The trigger with its status mark, as drawn."""
    points: list[tuple[float, float]] = field(default_factory=list)
    """The polyline, from the source box to the tip of the arrow at the target box."""
    label_at: tuple[float, float] = (0.0, 0.0)
    label_w: float = 0.0
    arrow: str = "right"
    """Which way the arrowhead points: ``right``, ``down`` (into a box from above), ``up``."""


@dataclass
class Layout:
    """A laid-out diagram: its size, start dot, boxes and edges."""

    width: float
    height: float
    start: tuple[float, float]
    """Centre of the start dot (its arrow is ``edges[0]`` when the initial state is drawn)."""
    start_r: float
    boxes: dict[str | None, Box]
    edges: list[Edge]
    start_edge: list[tuple[float, float]]
    label_h: float = _LABEL_H


def _order(
    states: Sequence[str], initial: str, edges: Iterable[tuple[str | None, str]]
) -> list[str]:
    """States by distance from ``initial`` (breadth first), unreachable ones last."""
    out: dict[str, list[str]] = {s: [] for s in states}
    for source, target in edges:
        if source is not None and source in out and target in out:
            out[source].append(target)
    rank = {initial: 0}
    queue = deque([initial])
    while queue:
        state = queue.popleft()
        for nxt in out[state]:
            if nxt not in rank:
                rank[nxt] = rank[state] + 1
                queue.append(nxt)
    last = max(rank.values()) + 1
    index = {s: i for i, s in enumerate(states)}
    return sorted(states, key=lambda s: (rank.get(s, last), index[s]))


def _box_width(name: str, second: str) -> float:
    widest = max(text_width(name, NAME_PX), text_width(second, SMALL_PX))
    return max(_BOX_MIN_W, round(widest + _BOX_PAD_X))


def layout(
    states: Sequence[str],
    initial: str,
    edges: Sequence[tuple[str | None, str, str, str]],
    *,
    names: dict[str, str],
    seconds: dict[str, str],
    any_label: str = "any state",
) -> Layout:
    """Lay out ``states`` and ``edges`` (source or ``None``, target, trigger, label).

    Args:
        states: the workflow's states, in definition order.
        initial: the state the start dot points at.
        edges: every transition; ``None`` as source means "from any state".
        names: the text drawn in each state's box (clipped names).
        seconds: a second line per state (``current``, ``visited``), possibly empty.
        any_label: the text of the "any state" box, drawn when an edge needs it.

    """
    order: list[str | None] = list(_order(states, initial, ((e[0], e[1]) for e in edges)))
    if any(e[0] is None for e in edges):
        order.append(None)
    column = {s: i for i, s in enumerate(order)}
    direct: dict[int, int] = {}  # edge index by the gap (column of its source) it crosses
    for i, (source, target, _t, _l) in enumerate(edges):
        if source is not None and column[target] == column[source] + 1:
            direct.setdefault(column[source], i)
    widths = [
        _box_width(any_label if s is None else names[s], "" if s is None else seconds[s])
        for s in order
    ]
    gaps = [
        max(_MIN_GAP, round(text_width(edges[direct[c]][3], SMALL_PX) + 2 * _LABEL_PAD_X + 8))
        if c in direct
        else _MIN_GAP
        for c in range(len(order))
    ]
    xs: list[float] = []
    x = float(_PAD + 2 * _START_R + _START_GAP)
    for c, w in enumerate(widths):
        xs.append(x)
        x += w + gaps[c]
    routed = [i for i in range(len(edges)) if i not in direct.values()]
    lanes = _pack(routed, edges, column, xs, widths)
    above = 1 + max((lane for lane, up in lanes.values() if up), default=-1)
    below = 1 + max((lane for lane, up in lanes.values() if not up), default=-1)
    top = _PAD + (above and _LANE_FIRST + (above - 1) * _LANE + _LABEL_H // 2 + 4)
    boxes = {s: Box(s, xs[c], float(top), widths[c]) for c, s in enumerate(order)}
    mid = top + _BOX_H / 2
    drawn = _route(edges, boxes, direct, lanes)
    width = xs[-1] + widths[-1] + _PAD
    height = top + _BOX_H + _PAD + (below and _LANE_FIRST + (below - 1) * _LANE + _LABEL_H // 2)
    start = (float(_PAD + _START_R), mid)
    first = boxes[initial]
    return Layout(
        width=float(width),
        height=float(height),
        start=start,
        start_r=_START_R,
        boxes=boxes,
        edges=drawn,
        start_edge=[(start[0] + _START_R, mid), (first.x, mid)],
    )


def _pack(
    routed: list[int],
    edges: Sequence[tuple[str | None, str, str, str]],
    column: dict[str | None, int],
    xs: list[float],
    widths: list[float],
) -> dict[int, tuple[int, bool]]:
    """Give each routed edge a lane (index, above?): shortest spans nearest the boxes."""

    def span(i: int) -> tuple[float, float]:
        a, b = column[edges[i][0]], column[edges[i][1]]
        left = xs[min(a, b)] + widths[min(a, b)] / 2
        right = xs[max(a, b)] + widths[max(a, b)] / 2
        half = (text_width(edges[i][3], SMALL_PX) + 2 * _LABEL_PAD_X) / 2
        centre = (left + right) / 2
        return min(left, centre - half) - 6, max(right, centre + half) + 6

    taken: dict[tuple[int, bool], list[tuple[float, float]]] = {}
    lanes: dict[int, tuple[int, bool]] = {}
    for i in sorted(routed, key=lambda i: (span(i)[1] - span(i)[0], i)):
        up = column[edges[i][1]] <= column[edges[i][0]]
        lo, hi = span(i)
        lane = 0
        while any(lo < b and a < hi for a, b in taken.get((lane, up), [])):
            lane += 1
        taken.setdefault((lane, up), []).append((lo, hi))
        lanes[i] = (lane, up)
    return lanes


def _route(
    edges: Sequence[tuple[str | None, str, str, str]],
    boxes: dict[str | None, Box],
    direct: dict[int, int],
    lanes: dict[int, tuple[int, bool]],
) -> list[Edge]:
    """Polylines and label positions, ports spread along each box's top and bottom."""
    ports: dict[tuple[str | None, bool], list[tuple[int, int, str]]] = {}
    for i, (_lane, up) in lanes.items():
        source, target = edges[i][0], edges[i][1]
        ports.setdefault((source, up), []).append((i, 0, "out"))
        ports.setdefault((target, up), []).append((i, 1, "in"))
    where: dict[tuple[int, str], float] = {}
    for (state, _up), users in ports.items():
        box = boxes[state]
        # Outer lanes take the outer ports, so vertical runs cross as few lanes as possible.
        ranked = sorted(users, key=lambda u: (_other_x(u, edges, boxes), -lanes[u[0]][0], u))
        for k, (i, _end, role) in enumerate(ranked):
            where[(i, role)] = box.x + box.w * (k + 1) / (len(ranked) + 1)
    drawn = []
    for i, (source, target, trigger, label) in enumerate(edges):
        edge = Edge(source, target, trigger, label, label_w=text_width(label, SMALL_PX) + 10)
        a, b = boxes[source], boxes[target]
        if i in direct.values():
            y = a.y + a.h / 2
            edge.points = [(a.x + a.w, y), (b.x, y)]
            edge.label_at = ((a.x + a.w + b.x) / 2, y - _LABEL_H / 2 - 3)
        else:
            lane, up = lanes[i]
            y_lane = (
                a.y - _LANE_FIRST - lane * _LANE if up else a.y + a.h + _LANE_FIRST + lane * _LANE
            )
            x0, x1 = where[(i, "out")], where[(i, "in")]
            y0 = a.y if up else a.y + a.h
            y1 = b.y if up else b.y + b.h
            edge.points = [(x0, y0), (x0, y_lane), (x1, y_lane), (x1, y1)]
            edge.label_at = ((x0 + x1) / 2, y_lane)
            edge.arrow = "down" if up else "up"
        drawn.append(edge)
    return drawn


def _other_x(
    use: tuple[int, int, str],
    edges: Sequence[tuple[str | None, str, str, str]],
    boxes: dict[str | None, Box],
) -> float:
    """The x of the box at the other end of the edge using a port (the order along a side)."""
    i, end, _role = use
    other = boxes[edges[i][1 - end]]
    return other.x + other.w / 2
