"""The run at a glance as plain text: the one renderer of ``describe()`` (pure core).

:func:`render_text` is the ``text/plain`` form of the notebook's run view (the widget
:class:`skillnb.jupyter.views.widgets.RunView`, ``%skillnb status``) and, with the terminal's
:class:`Commands`, the body of ``skillnb status``; the HTML form
(:mod:`skillnb.jupyter.views.render`) and the resume banner build on the helpers here. So
every view clips text one way (:func:`clip`) and marks a status one way
(:mod:`skillnb.core.views.marks`: ``✓`` passed, ``⚠`` warning, ``✗`` blocked, ``⏳`` waiting), the
same marks the JupyterLab panel uses.

It is a pure function of the dictionary :meth:`skillnb.run.Run.describe` returns and, in the
notebook form, deterministic: no run ids, approval ids, times or object addresses, so a saved
notebook compares equal under nbval from one execution to the next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillnb.core.shell import magic_command
from skillnb.core.views.marks import MARKS, mark

__all__ = [
    "NOTEBOOK",
    "Commands",
    "batch_lines",
    "clip",
    "follow_up_lines",
    "gate_reason",
    "gate_status",
    "headline",
    "history_line",
    "pending_lines",
    "question",
    "render_text",
    "result_status",
    "thread_detail",
    "thread_interrupts",
    "thread_resume",
    "uncertain_lines",
]

View = Mapping[str, Any]
Row = Mapping[str, Any]

CLIP = 80
"""How many characters of a recorded text a view shows on one line, by default."""

_TEXT_HISTORY = 10
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_RUN_CREATED = re.compile(r"^run \S+ created$")
_HINT = re.compile(r"; approve with `[^`]*`(?: or `[^`]*`)?$")


def clip(text: object, limit: int = CLIP) -> str:
    """``text`` on one line of at most ``limit`` characters, cut with an ellipsis.

    Runs of whitespace become one space and control characters (terminal escapes included:
    facts can hold LLM output) become ``?``.
    """
    flat = " ".join(_CONTROL.sub("?", str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Commands:
    """How the reader acts on what the view lists: notebook magics or terminal commands.

    Each function returns the command for one row of the view (``None``: no hint); ``ids``
    shows request and follow-up ids (a terminal user needs them, a saved notebook must not
    hold them).
    """

    approve: Callable[[Row], str | None]
    """For a pending approval request."""
    resolve: Callable[[Row], str | None]
    """For an open follow-up."""
    clear: Callable[[Row], str | None]
    """For an uncertain step."""
    ids: bool = False


NOTEBOOK = Commands(
    approve=lambda p: magic_command("approve", str(p["gate"])),
    resolve=lambda f: magic_command("resolve", str(f["gate"])),
    clear=lambda u: magic_command("clear", str(u["key"])),
)
"""The commands of a notebook: ``%skillnb approve GATE``, ``resolve GATE``, ``clear KEY``."""


def gate_status(passed: bool | None, severity: str) -> str:
    """Classify one gate result: ``passing``, ``warning``, ``blocked`` or ``unknown``."""
    if passed is None:
        return "unknown"
    if passed:
        return "passing"
    return "warning" if severity == "warn" else "blocked"


def result_status(result: Mapping[str, Any], view: View) -> str:
    """Classify one gate result in its view: an approval gate whose request is pending waits.

    ``waiting`` (``⏳``) instead of ``blocked`` when the gate is an approval gate and the view
    lists its request as pending: nothing is wrong, someone has to decide.
    """
    status = gate_status(result.get("passed"), str(result.get("severity")))
    if status == "blocked" and result.get("kind") == "approval":
        pending = {str(p.get("gate")) for p in view.get("pending") or []}
        if str(result.get("gate")) in pending:
            return "waiting"
    return status


def gate_reason(result: Mapping[str, Any], view: View) -> str:
    """A gate result's message without the approve hint when the view lists the request.

    An approval gate's message ends with how to approve (``; approve with `...```); the
    pending section already says it (once, as code), so the moves and the gate report drop it.
    """
    message = str(result.get("message", ""))
    pending = {str(p.get("gate")) for p in view.get("pending") or []}
    if result.get("kind") == "approval" and str(result.get("gate")) in pending:
        return _HINT.sub("", message)
    return message


def history_line(entry: Mapping[str, Any]) -> str:
    """Return a history summary without the run id (it is not deterministic)."""
    summary = str(entry.get("summary", ""))
    return "run created" if _RUN_CREATED.match(summary) else summary


def thread_detail(thread: Mapping[str, Any]) -> str:
    """``step N · waiting in n · next a, b · K checkpoints`` for one thread."""
    step = thread.get("step")
    nodes = [str(n) for n in thread.get("next") or []]
    asking = list(dict.fromkeys(str(i.get("node") or "?") for i in thread.get("interrupts") or []))
    count = int(thread.get("checkpoints") or 0)
    parts = [
        "" if step is None else f"step {step}",
        f"waiting in {', '.join(asking)}" if asking else "",
        f"next {', '.join(nodes)}" if nodes else "finished",
        f"{count} checkpoint{'' if count == 1 else 's'}",
    ]
    return " · ".join(p for p in parts if p)


def thread_resume(thread: Mapping[str, Any]) -> str:
    """The call that resumes a waiting thread once its approval is decided."""
    return f"resume_approved(graph, run, {str(thread.get('thread_id'))!r})"


def question(text: str) -> tuple[str, list[str]]:
    """An interrupt's (or approval's) text as its question and its ``key: value`` lines."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    return (lines[0] if lines else ""), lines[1:]


def thread_interrupts(thread: Mapping[str, Any], view: View) -> list[tuple[str, str, bool]]:
    """``(node, value, waiting)`` per open interrupt; ``waiting`` when its approval is pending."""
    pending = {str(p.get("id")) for p in view.get("pending") or []}
    return [
        (str(i.get("node") or "?"), str(i.get("value") or ""), str(i.get("id")) in pending)
        for i in thread.get("interrupts") or []
    ]


def _hint(command: str | None) -> str:
    return f" → {command}" if command else ""


def pending_lines(view: View, commands: Commands = NOTEBOOK) -> list[str]:
    """One line per pending approval: ``⏳ gate (for trigger): message → how to approve``."""
    lines = []
    for p in view.get("pending") or []:
        where = [f"for {p['trigger']}"] if p.get("trigger") else []
        if commands.ids:
            where.append(f"request {p['id']}")
        detail = f" ({', '.join(where)})" if where else ""
        lines.append(
            f"{MARKS['waiting']} {p['gate']}{detail}: {clip(p.get('message', ''))}"
            + _hint(commands.approve(p))
        )
    return lines


def follow_up_lines(view: View, commands: Commands = NOTEBOOK) -> list[str]:
    """One line per open follow-up: ``⚠ text (gate g in state s: why) → how to resolve``."""
    lines = []
    for f in view.get("follow_ups") or []:
        ident = f"{f['id']} " if commands.ids else ""
        lines.append(
            f"{MARKS['warning']} {ident}{clip(f.get('text', ''))} (gate {f['gate']} in state "
            f"{f.get('state')}: {clip(f.get('reason', ''), 60)})" + _hint(commands.resolve(f))
        )
    return lines


def uncertain_lines(view: View, commands: Commands = NOTEBOOK) -> list[str]:
    """One line per uncertain step: started at which version, never committed."""
    return [
        f"{u['key']} (started at v{u['started_seq']}, never committed)" + _hint(commands.clear(u))
        for u in view.get("uncertain") or []
    ]


def batch_lines(view: View) -> list[str]:
    """One line per batch: ``name: done/total done``."""
    return [f"{b['name']}: {b['done']}/{b['total']} done" for b in view.get("batches") or []]


def _titled(title: str, lines: list[str]) -> list[str]:
    return [title, *(f"  {line}" for line in lines)] if lines else []


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
        lines.append(f"  {mark(status)} {move['trigger']} → {move['to']}: {status}")
        for gate in move.get("gates") or []:
            if gate.get("passed") is not True:
                gate_mark = mark(result_status(gate, view))
                reason = clip(gate_reason(gate, view))
                lines.append(f"      {gate_mark} {gate['gate']} ({gate['kind']}): {reason}")
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
        result_mark = mark(result_status(r, view))
        lines.append(
            f"  {result_mark} {r['gate']} [{r['kind']}, {r['severity']}]: "
            f"{clip(gate_reason(r, view))}"
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


def _text_threads(view: View) -> list[str]:
    threads = view.get("threads") or []
    if not threads:
        return []
    lines = ["LangGraph threads:"]
    for t in threads:
        lines.append(f"  - {t['thread_id']}: {thread_detail(t)}")
        for node, value, waiting in thread_interrupts(t, view):
            title, fields = question(value)
            note = " (waiting for approval)" if waiting else ""
            lines.append(f"      interrupt in {node}: {clip(title)}{note}")
            lines += [f"        {clip(f)}" for f in fields]
        if t.get("interrupts"):
            lines.append(f"      once decided, resume with {thread_resume(t)}")
    return lines


def headline(view: View) -> str:
    """The first line: workflow, state, version and (when not the default) the profile."""
    workflow = view.get("workflow")
    head = (
        f"SKILL.nb run: workflow {workflow}, state {view.get('state')!r}"
        if workflow
        else "SKILL.nb run (no workflow)"
    )
    profile = view.get("profile")
    shown = f", profile {profile}" if profile and profile != "default" else ""
    return f"{head}, version {view.get('version', 0)}{shown}"


def render_text(view: View, *, history: int = _TEXT_HISTORY, commands: Commands = NOTEBOOK) -> str:
    """Render the run as plain text (deterministic with the notebook's commands).

    Args:
        view: what :meth:`~skillnb.run.Run.describe` returned.
        history: how many of the most recent events to list.
        commands: how to act on a request, a follow-up or an uncertain step.

    """
    lines = [headline(view)]
    lines += _text_states(view)
    lines += _titled("Pending approvals:", pending_lines(view, commands))
    lines += _titled("Follow-ups:", follow_up_lines(view, commands))
    lines += _text_threads(view)
    lines += _titled("Uncertain steps:", uncertain_lines(view, commands))
    lines += _text_report(view)
    lines += _text_facts(view)
    lines += _titled("Batches:", batch_lines(view))
    recent = list(view.get("history") or [])[-history:] if history > 0 else []
    if recent:
        lines.append(f"History (last {len(recent)}):")
        lines.extend(f"  v{h['seq']} {clip(history_line(h))}" for h in recent)
    return "\n".join(lines)
