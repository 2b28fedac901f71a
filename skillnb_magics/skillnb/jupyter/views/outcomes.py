"""What the magics show for each outcome of the run (edge layer).

Each function turns one result of a :class:`~skillnb.run.Run` call (a formalized or restored
fact, a gated step, a blocked gate, a resumed run) into an :class:`~skillnb.jupyter.display.Output`:
a badge and a few deterministic lines. No decision is made here; the run made them.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillnb.jupyter.display import Output, Status
from skillnb.jupyter.views.blocked import blocked_output
from skillnb.jupyter.views.status import banner_sections, render_html, render_text

if TYPE_CHECKING:
    from skillnb.core.gates.evaluate import GateSpec
    from skillnb.core.runstate.records import Fact, GateReport
    from skillnb.errors import GateBlocked
    from skillnb.service.gates import StepOutcome
    from skillnb.service.steps import FormalizeOutcome

__all__ = ["blocked", "formalized", "gated", "kept", "resumed", "workflow_bound"]

_PREVIEW = 200
LLM_LABEL = "LLM-ready summary (the same run, as context for an agent)"
"""What the ``%resume`` output calls the summary it carries for an agent."""


def _clip(text: str, limit: int = _PREVIEW) -> str:
    one = text.replace("\n", " ")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def formalized(
    outcome: FormalizeOutcome,
    *,
    restored_as: str | None,
    notes: Sequence[str] = (),
    untracked: Sequence[str] = (),
) -> Output:
    """``📌 budget v2`` after a computation, ``↺ budget v2`` when restored and nothing ran."""
    fact = outcome.fact
    lines = [f"{fact.kind} = {_clip(fact.preview)}", *(f"⚠ {note}" for note in notes)]
    if untracked:
        lines.append(f"not tracked (no stable value to compare): {', '.join(untracked)}")
    if outcome.status == "unchanged":
        lines.insert(0, f"unchanged: the value equals v{fact.version}, no new version recorded")
        return Output("formalize", "ok", f"= {fact.key} v{fact.version}", lines, key=fact.key)
    if not fact.restorable:
        where = f" as `{restored_as}`" if restored_as else ""
        lines.append(
            f"⚠ no encoder for this type: kept in this session only{where}; "
            "recomputed after a restart"
        )
    if outcome.status == "computed" and outcome.reason:
        lines.insert(0, f"recomputed: {outcome.reason}")
    if outcome.status == "restored":
        where = f" into `{restored_as}`" if restored_as else ""
        lines.insert(0, f"restored v{fact.version}{where} (source unchanged; the cell did not run)")
        lines.append("--force recomputes it")
        return Output("restore", "restored", f"↺ {fact.key} v{fact.version}", lines, key=fact.key)
    status: Status = "ok" if fact.restorable and not notes else "warning"
    return Output("formalize", status, f"📌 {fact.key} v{fact.version}", lines, key=fact.key)


def kept(facts: Sequence[Fact]) -> Output:
    """``📌 kept budget v1, brief v1`` after ``%%formalize --auto`` (or nothing to keep)."""
    if not facts:
        return Output(
            "formalize", "ok", "nothing to keep", ["no name the cell produced scored 0.5"]
        )
    badge = "📌 kept " + ", ".join(f"{f.key} v{f.version}" for f in facts)
    lines = [f"{f.key}: {f.kind} = {_clip(f.preview)}" for f in facts]
    return Output("formalize", "ok", badge, lines)


def _gate_lines(report: GateReport | None, verbose: bool) -> list[str]:
    if report is None:
        return []
    lines = [f"⚠ {r.gate} ({r.kind}): {r.message}" for r in report.warnings]
    lines += [f"↷ {r.gate} ({r.kind}): {r.message}" for r in report.bypassed]
    if verbose:
        lines += [f"✓ {r.gate} ({r.kind}) {r.message}".rstrip() for r in report.results if r.passed]
    return lines


def gated(
    outcome: StepOutcome,
    trigger: str | None,
    *,
    name: str | None = None,
    verbose: bool = False,
    specs: Mapping[str, GateSpec] | None = None,
) -> Output:
    """Show a gated cell that ran (and fired its trigger), was already done, or skipped."""
    label = name or trigger or "gated cell"
    if outcome.status == "done":
        lines = ["already done in this run: the cell did not run again"]
        if outcome.stale:
            lines = [f"⚠ {s.line()}" for s in outcome.stale] + [
                "already done in this run: the cell did not run again, and the transition "
                "stands; roll the fact back (run.rollback) or start a new run (skillnb fork)"
            ]
            badge = f"⚠ {label} (done; a gate no longer holds)"
            return Output("gate", "warning", badge, lines, trigger=trigger)
        return Output("gate", "restored", f"✓ {label} (done)", lines, trigger=trigger)
    if outcome.status == "blocked":
        assert outcome.report is not None  # noqa: S101  # a blocked step has its report
        return blocked_output(outcome.report, trigger, label, skipped=True, specs=specs)
    if outcome.status == "fallback":
        return _fallback_output(outcome, trigger, label)
    fired = next((e for e in outcome.events if e.type == "transition.fired"), None)
    badge = f"✓ {label}"
    if fired is not None:
        badge += f": {fired.data.get('from')} → {fired.data.get('to')}"
    lines = _gate_lines(outcome.report, verbose)
    lines += [
        f"follow-up opened: {e.data['follow_up'].get('text')} "
        f"(%skillnb resolve {e.data['follow_up'].get('gate')})"
        for e in outcome.events
        if e.type == "followup.opened"
    ]
    status: Status = "warning" if outcome.report is not None and outcome.report.warnings else "ok"
    return Output("gate", status, badge, lines, trigger=trigger)


def _fallback_output(outcome: StepOutcome, trigger: str | None, label: str) -> Output:
    fired = next((e for e in outcome.events if e.type == "transition.fired"), None)
    to = "its fallback"
    if fired is not None:
        to = f"{fired.data.get('trigger')}: {fired.data.get('from')} → {fired.data.get('to')}"
    blocking = outcome.report.blocking if outcome.report is not None else []
    lines = [f"↪ {r.gate} ({r.kind}): {r.message}" for r in blocking]
    lines.append("the cell body did not run; the fallback transition fired instead")
    badge = f"↪ {label} fell back to {to}"
    return Output("gate", "warning", badge, lines, trigger=trigger)


def blocked(
    exc: GateBlocked, name: str | None = None, specs: Mapping[str, GateSpec] | None = None
) -> Output:
    """Show a blocked gate that stops the notebook here (said once; see :mod:`.blocked`)."""
    label = name or exc.trigger or "gated cell"
    return blocked_output(exc.report, exc.trigger, label, skipped=False, specs=specs)


def workflow_bound(view: Mapping[str, Any]) -> Output:
    """Show the workflow now bound to the run."""
    states = ", ".join(view.get("states", []))
    lines = [f"state {view.get('state')!r} (version {view['version']})", f"states: {states}"]
    lines += [f"next: {n['trigger']} → {n['to']} ({n['status']})" for n in view.get("next", [])]
    return Output("workflow", "ok", f"⚙ workflow {view.get('workflow')}", lines)


def resumed(
    view: Mapping[str, Any],
    restored: list[str],
    *,
    last_operation: str | None,
    memory_last: str | None,
    rebuilt: bool = False,
    summary: str | None = None,
) -> Output:
    """``%resume`` and the banner of ``%load_ext``: where the run stands and what waits.

    ``summary`` (``%resume``): the LLM-ready summary, shown after the person's part under
    :data:`LLM_LABEL` (folded in the HTML form), so one output says one state.
    """
    sections = banner_sections(view, last_operation=last_operation, memory_last=memory_last)
    if restored:
        sections.append(("restored into the namespace", [", ".join(restored)]))
    if rebuilt:
        sections.insert(0, ("", ["rebuilt from this notebook's outputs (the sidecar was missing)"]))
    waiting = bool(view.get("pending")) or bool(view.get("uncertain"))
    status: Status = "waiting" if waiting else "ok"
    where = f"state {view['state']}" if view.get("state") else f"version {view['version']}"
    badge = f"▶ resumed {view.get('workflow') or 'run'} at {where}"
    lines, page = render_text(sections), render_html(badge, sections, status)
    if summary is not None:  # after the person's part, labelled, folded in the rich form
        lines += ["", f"{LLM_LABEL}:", summary]
        folded = (
            f'<details class="skillnb-llm-summary"><summary>{html.escape(LLM_LABEL)}</summary>'
            f'<pre style="white-space:pre-wrap">{html.escape(summary)}</pre></details>'
        )
        page = page[: -len("</div>")] + folded + "</div>"
    return Output("resume", status, badge, lines, html=page)
