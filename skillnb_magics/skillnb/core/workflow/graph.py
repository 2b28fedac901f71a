"""Diagrams of a workflow: Mermaid ``stateDiagram-v2`` and Graphviz DOT text (core layer).

This is the one diagram renderer: the workflow cell, the run widget, ``run.describe()`` and
``skillnb graph`` all draw :func:`to_mermaid`'s text (in Markdown, :func:`mermaid_markdown`),
left to right like the DOT form, so a machine reads the same way everywhere.

Both renderers take the static :class:`~skillnb.core.workflow.model.Workflow` plus optional run
data: the ``current`` state (highlighted), the ``visited`` states (marked) and gate
``statuses`` keyed by trigger (``passing`` ✓, ``warning`` ⚠, ``blocked`` ✗ in the edge
label). Transitions from ``"*"`` (any state) are drawn from one "any state" node. Every
label is escaped, since state and trigger names come from user files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from skillnb.core.views.marks import MARKS
from skillnb.core.workflow.definition import ANY_STATE

if TYPE_CHECKING:
    from skillnb.core.workflow.model import Workflow

__all__ = ["DIRECTION", "STATUS_MARKS", "Status", "mermaid_markdown", "to_dot", "to_mermaid"]

Status = Literal["passing", "warning", "blocked"]
STATUS_MARKS: Mapping[str, str] = MARKS
"""The mark added to a transition's label for each gate status."""

DIRECTION = "LR"
"""Which way diagrams run: left to right (a machine is a row of states, not a screen tall)."""

_MERMAID_CONFIG = (
    "---",
    "config:",
    "  themeVariables:",
    '    edgeLabelBackground: "#e8e8e8"',
    '    transitionLabelColor: "#1f1f1f"',
    "---",
)
"""Front matter: edge labels as light chips with dark text in every theme.

Mermaid's own label colours fail WCAG AA in its dark theme (#ccc on #585858, 4.4:1), and no
single background suits the light and dark themes' label text, so the labels carry both
colours, like the ``current`` and ``visited`` states (15:1 on any theme). The rest of the
diagram takes the theme JupyterLab gives Mermaid.
"""

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 _.,'()\-✓⚠✗⏳]")
_ANY_ID = "any_state"
_ANY_LABEL = "any state"
_DOT_STYLE = {"passing": "#2e7d32", "warning": "#ef6c00", "blocked": "#c62828"}


def _ids(workflow: Workflow) -> dict[str, str]:
    """Give each state a diagram id: ``s_<name>`` for simple names, else ``s<index>``."""
    return {
        state: f"s_{state}" if _IDENT.match(state) else f"s{index}"
        for index, state in enumerate(workflow.states)
    }


def _mermaid_text(text: str) -> str:
    """Escape ``text`` for a Mermaid label with entity codes (``#58;`` for ``:``)."""
    text = " ".join(text.split())
    return "".join(ch if _MERMAID_SAFE.match(ch) else f"#{ord(ch)};" for ch in text)


def _label(trigger: str, statuses: Mapping[str, Status] | None) -> str:
    mark = STATUS_MARKS.get(str(statuses.get(trigger))) if statuses else None
    return f"{trigger} {mark}" if mark else trigger


def _edges(workflow: Workflow) -> Iterable[tuple[str | None, str, str]]:
    """Yield (source state or ``None`` for any state, target, trigger) for every edge."""
    for transition in workflow.transitions:
        sources = [None] if transition.source == ANY_STATE else list(transition.source)
        for source in sources:
            yield source, transition.target, transition.trigger


def to_mermaid(
    workflow: Workflow,
    *,
    current: str | None = None,
    visited: Iterable[str] = (),
    statuses: Mapping[str, Status] | None = None,
) -> str:
    """Render ``workflow`` as a Mermaid ``stateDiagram-v2``.

    Args:
        workflow: the definition.
        current: the run's state, highlighted with the ``current`` class.
        visited: states the run has been in, marked with the ``visited`` class.
        statuses: gate status per trigger, shown as ✓, ⚠ or ✗ after the trigger.

    Returns:
        The diagram text (no trailing newline).

    """
    ids = _ids(workflow)
    lines = [*_MERMAID_CONFIG, "stateDiagram-v2", f"    direction {DIRECTION}"]
    lines += [f'    state "{_mermaid_text(state)}" as {ids[state]}' for state in workflow.states]
    if any(t.source == ANY_STATE for t in workflow.transitions):
        lines.append(f'    state "{_ANY_LABEL}" as {_ANY_ID}')
    lines.append(f"    [*] --> {ids[workflow.initial]}")
    for source, target, trigger in _edges(workflow):
        start = _ANY_ID if source is None else ids[source]
        label = _mermaid_text(_label(trigger, statuses))
        lines.append(f"    {start} --> {ids[target]} : {label}")
    lines += [
        # color: dark text on the light fills, whatever mermaid's theme (dark in dark mode)
        "    classDef current fill:#fff3bf,stroke:#f08c00,stroke-width:3px,font-weight:bold,"
        "color:#000",
        "    classDef visited fill:#e7f5ff,stroke:#74c0fc,color:#000",
    ]
    seen = [ids[s] for s in dict.fromkeys(visited) if s in ids and s != current]
    if seen:
        lines.append(f"    class {','.join(seen)} visited")
    if current in ids:
        lines.append(f"    class {ids[current]} current")
    return "\n".join(lines)


def mermaid_markdown(source: str, *, direction: str | None = None) -> str:
    """Put ``source`` in a mermaid code fence longer than any backtick run inside it.

    This is the Markdown every notebook view of a diagram shows (JupyterLab draws it).

    Args:
        source: a mermaid diagram.
        direction: ``LR``, ``TB``, ... for a ``stateDiagram`` that sets none.

    """
    lines = source.splitlines()
    if direction and lines and lines[0].startswith("stateDiagram"):
        if not any(line.strip().startswith("direction ") for line in lines):
            lines.insert(1, f"    direction {direction}")
        source = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}mermaid\n{source.rstrip()}\n{fence}\n"


def _dot_text(text: str) -> str:
    """Quote ``text`` as a DOT string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def to_dot(
    workflow: Workflow,
    *,
    current: str | None = None,
    visited: Iterable[str] = (),
    statuses: Mapping[str, Status] | None = None,
) -> str:
    """Render ``workflow`` as a Graphviz ``digraph`` (same options as :func:`to_mermaid`).

    Returns:
        The DOT text (no trailing newline).

    """
    ids = _ids(workflow)
    seen = set(visited)
    lines = [
        f"digraph {_dot_text(workflow.name)} {{",
        f"    rankdir={DIRECTION};",
        '    node [shape=box, style="rounded"];',
        '    __start [shape=point, label=""];',
    ]
    for state in workflow.states:
        attrs = [f"label={_dot_text(state)}"]
        if state == current:
            attrs.append('style="rounded,filled,bold", fillcolor="#fff3bf", penwidth=3')
        elif state in seen:
            attrs.append('style="rounded,filled", fillcolor="#e7f5ff"')
        lines.append(f"    {ids[state]} [{', '.join(attrs)}];")
    if any(t.source == ANY_STATE for t in workflow.transitions):
        lines.append(f'    {_ANY_ID} [label="{_ANY_LABEL}", shape=plaintext];')
    lines.append(f"    __start -> {ids[workflow.initial]};")
    for source, target, trigger in _edges(workflow):
        start = _ANY_ID if source is None else ids[source]
        attrs = [f"label={_dot_text(_label(trigger, statuses))}"]
        color = _DOT_STYLE.get(str(statuses.get(trigger))) if statuses else None
        if color:
            attrs.append(f'color="{color}", fontcolor="{color}"')
        if source is None:
            attrs.append("style=dashed")
        lines.append(f"    {start} -> {ids[target]} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines)
