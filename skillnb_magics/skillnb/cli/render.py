"""Plain-text renderings of a run for the terminal (edge layer).

Pure functions of :meth:`skillnb.run.Run.describe`'s dictionary (and of events), so the
output is the same whoever asks. Unlike notebook outputs they show ids (approval requests,
run ids): the terminal user needs them for ``--request``. Every piece of run data goes through
:func:`skillnb.cli.target.clean`, since facts can hold LLM output with terminal escapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from skillnb.cli.target import clean
from skillnb.core.marks import MARKS, mark
from skillnb.core.shell import quoted

__all__ = ["clip", "facts_lines", "follow_up_lines", "history_lines", "status_lines"]

View = Mapping[str, Any]


def clip(text: object, limit: int = 60) -> str:
    """One line of at most ``limit`` characters, control characters replaced."""
    line = clean(text).replace("\n", " ").replace("\t", " ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _header(view: View) -> str:
    parts = [f"run {clean(view['run_id'])}"]
    if view.get("workflow"):
        parts.append(f"workflow {clean(view['workflow'])}")
        parts.append(f"state {clean(view['state'])}")
    parts.append(f"version {view['version']}")
    if view.get("profile") not in (None, "default"):
        parts.append(f"profile {clean(view['profile'])}")
    return " · ".join(parts)


def _next_lines(view: View) -> list[str]:
    lines = []
    for option in view.get("next", []):
        failing = [g for g in option["gates"] if g["passed"] is False]
        why = "; ".join(f"{clean(g['gate'])}: {clip(g['message'], 80)}" for g in failing)
        lines.append(
            f"  {mark(option['status'])} {clean(option['trigger'])} → {clean(option['to'])}"
            f"  [{option['status']}]" + (f"  {why}" if why else "")
        )
    return ["next:", *lines] if lines else []


def _pending_lines(view: View, target: str) -> list[str]:
    lines = []
    for request in view.get("pending", []):
        gate = clean(request["gate"])
        lines.append(
            f"  {MARKS['waiting']} {gate} (request {clean(request['id'])}, "
            f"asked at v{request['requested_seq']} in {clean(request['state'])}): "
            + clip(request["message"], 80)
        )
        lines.append(f"    approve: skillnb approve {target} {quoted(request['gate'])} --by NAME")
    return ["waiting for approval:", *lines] if lines else []


def status_lines(view: View, *, target: str) -> list[str]:
    """Render the run at a glance; ``target`` is how to name it in a suggested command."""
    lines = [_header(view)]
    if view.get("updated_at"):
        lines.append(f"updated {view['updated_at']}")
    lines += _next_lines(view)
    lines += _pending_lines(view, target)
    follow_ups = view.get("follow_ups", [])
    if follow_ups:
        lines.append(f"open follow-ups: {len(follow_ups)} (skillnb follow-ups {target})")
    uncertain = view.get("uncertain", [])
    if uncertain:
        lines.append("uncertain steps (started, never committed):")
        lines += [f"  {clean(s['key'])} (started at v{s['started_seq']})" for s in uncertain]
    for batch in view.get("batches", []):
        lines.append(f"batch {clean(batch['name'])}: {batch['done']}/{batch['total']} done")
    facts = view.get("facts", [])
    lines.append(f"facts: {len(facts)}" + (f" (skillnb facts {target})" if facts else ""))
    report = view.get("last_report")
    if report is not None and not report["passed"]:
        failed = [r for r in report["results"] if not r["passed"] and r["severity"] == "block"]
        reasons = "; ".join(f"{clean(r['gate'])}: {clip(r['message'], 80)}" for r in failed)
        lines.append(f"last blocked: {clean(report['trigger'] or report.get('key'))}: {reasons}")
    return lines


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
