"""Plain-text renderings of a run for the terminal (edge layer).

Pure functions of :meth:`skillnb.run.Run.describe`'s dictionary (and of events), so the
output is the same whoever asks. ``skillnb status`` is the one renderer of the run view
(:func:`skillnb.core.views.viewtext.render_text`, as in the notebook) with the terminal's commands;
unlike notebook outputs it shows ids (approval requests, follow-ups, the run): the terminal
user needs them for ``--request`` and ``resolve``. Every line goes through
:func:`skillnb.cli.target.clean`, since facts can hold LLM output with terminal escapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from skillnb.cli.target import clean
from skillnb.core.shell import quoted
from skillnb.core.views import viewtext
from skillnb.core.views.viewtext import Commands, render_text

__all__ = [
    "clip",
    "facts_lines",
    "follow_up_lines",
    "history_lines",
    "status_lines",
    "terminal_commands",
]

View = Mapping[str, Any]


def clip(text: object, limit: int = 60) -> str:
    """One line of at most ``limit`` characters, control characters replaced."""
    return viewtext.clip(clean(text), limit)


def _header(view: View) -> str:
    parts = [f"run {clean(view['run_id'])}"]
    if view.get("workflow"):
        parts.append(f"workflow {clean(view['workflow'])}")
        parts.append(f"state {clean(view['state'])}")
    parts.append(f"version {view['version']}")
    if view.get("profile") not in (None, "default"):
        parts.append(f"profile {clean(view['profile'])}")
    return " · ".join(parts)


def terminal_commands(target: str) -> Commands:
    """The commands a terminal user runs on the run named ``target``; ids shown."""
    return Commands(
        approve=lambda p: f"skillnb approve {target} {quoted(p['gate'])} --by NAME",
        resolve=lambda f: f"skillnb resolve {target} {quoted(f['id'])} --by NAME",
        clear=lambda _u: None,
        ids=True,
    )


def status_lines(view: View, *, target: str) -> list[str]:
    """Render the run at a glance; ``target`` is how to name it in a suggested command."""
    lines = [_header(view)]
    if view.get("updated_at"):
        lines.append(f"updated {clean(view['updated_at'])}")
    body = render_text(view, commands=terminal_commands(target)).splitlines()[1:]
    return lines + [clean(line) for line in body]  # the header above replaces the headline


def follow_up_lines(view: View, *, target: str) -> list[str]:
    """One entry per open follow-up: id, gate, state, why, what to do, how to resolve it."""
    follow_ups = view.get("follow_ups", [])
    if not follow_ups:
        return ["no open follow-ups"]
    lines = []
    for f in follow_ups:
        lines.append(
            f"{clean(f['id'])}  {clean(f['gate'])} in {clean(f['state'])} "
            f"(v{f['opened_seq']}, {clean(f['opened_at'])}): {clip(f['text'], 100)}"
        )
        lines.append(f"    why: {clip(f['reason'], 100)}")
        lines.append(f"    resolve: skillnb resolve {target} {clean(f['id'])} --by NAME")
    return lines


def facts_lines(view: View) -> list[str]:
    """One row per fact: key, kind, version, preview (``(not restorable)`` when so)."""
    facts = view.get("facts", [])
    if not facts:
        return ["no facts yet"]
    rows = [
        (
            clip(f["key"], 30),
            f["kind"],
            f"v{f['version']}",
            clip(f["preview"]) + ("" if f["restorable"] else "  (not restorable)"),
        )
        for f in facts
    ]
    width = max(len(r[0]) for r in rows)
    kind_width = max(len(r[1]) for r in rows)
    return [f"{k:<{width}}  {kind:<{kind_width}}  {v:>4}  {p}" for k, kind, v, p in rows]


def history_lines(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per event: ``#seq  time  type  summary`` (oldest first)."""
    if not events:
        return ["no events"]
    width = len(str(events[-1]["seq"])) + 1
    return [
        f"{'#' + str(e['seq']):>{width}}  {e['at']}  {clean(e['type'])}  {clip(e['summary'], 100)}"
        for e in events
    ]
