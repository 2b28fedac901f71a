"""LangChain tools that let an agent work inside a SKILL.nb run (integration layer).

:func:`run_tools` returns five tools bound to one run: ``formalize_fact``, ``check_gate``,
``fire_trigger``, ``request_approval`` and ``read_summary``. A tool never raises a SKILL.nb
error into the agent loop: a refusal (a blocked gate, a transition the state does not allow,
an approval that cannot be given, a conflict) comes back as the tool's text, starting with
``refused:`` and carrying the gate's reason, so the model can read it and change course.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, StructuredTool

from skillnb.core.runstate.records import GateReport
from skillnb.errors import GateBlocked, SkillnbError

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["run_tools"]


def _report_text(trigger: str, report: GateReport) -> str:
    if report.passed:
        return f"{trigger}: every blocking gate passes"
    reasons = "; ".join(f"{r.gate} ({r.kind}): {r.message}" for r in report.blocking)
    return f"{trigger}: blocked: {reasons}"


def _refusal(exc: SkillnbError) -> str:
    kind = type(exc).__name__
    if isinstance(exc, GateBlocked):
        reasons = "; ".join(f"{r.gate} ({r.kind}): {r.message}" for r in exc.report.blocking)
        return f"refused: {kind}: {reasons or exc}"
    return f"refused: {kind}: {exc}"


def _guard(body: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(body)
    def guarded(*args: Any, **kwargs: Any) -> str:
        try:
            return body(*args, **kwargs)
        except SkillnbError as exc:
            return _refusal(exc)

    return guarded


def run_tools(run: Run) -> list[BaseTool]:
    """The five agent tools bound to ``run`` (see the module docstring)."""

    def formalize_fact(key: str, value: Any, kind: str = "data", note: str | None = None) -> str:
        """Record a value worth keeping as the next version of fact KEY.

        kind is one of decision, data, constraint, summary, note.
        """
        if kind not in ("decision", "data", "constraint", "summary", "note"):
            return f"refused: unknown kind {kind!r} (decision, data, constraint, summary, note)"
        fact = run.formalize(key, value, kind=kind, note=note)  # type: ignore[arg-type]
        return f"formalized {fact.key} v{fact.version}: {fact.preview}"

    def check_gate(trigger: str) -> str:
        """Evaluate the gates of TRIGGER without moving the workflow; say which block and why."""
        return _report_text(trigger, run.check(trigger))

    def fire_trigger(trigger: str) -> str:
        """Move the workflow with TRIGGER when its gates pass."""
        event = run.fire(trigger)
        return f"fired {trigger}: {event.data.get('from')} -> {event.data.get('to')}"

    def request_approval(trigger: str) -> str:
        """Ask a person to approve TRIGGER (its approval gates); the answer comes later."""
        report = run.check(trigger)
        waiting = [r for r in report.blocking if r.kind == "approval"]
        if not waiting:
            return f"no approval to request for {trigger}: {_report_text(trigger, report)}"
        try:
            event = run.fire(trigger)  # records the requests of the approval gates that block
        except GateBlocked as exc:
            if any(r.kind != "approval" for r in exc.report.blocking):
                return _refusal(exc)
            names = ", ".join(r.gate for r in waiting)
            return f"approval requested for {trigger} ({names}); wait for a person to decide"
        return f"fired {trigger}: {event.data.get('from')} -> {event.data.get('to')}"

    def read_summary(max_chars: int = 2000) -> str:
        """The run at a glance: state, next triggers and their gates, facts, pending approvals."""
        return run.summary(max_chars=max_chars, stable=True)

    bodies = (formalize_fact, check_gate, fire_trigger, request_approval, read_summary)
    return [StructuredTool.from_function(_guard(body), name=body.__name__) for body in bodies]
