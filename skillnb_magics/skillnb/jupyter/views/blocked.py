"""What a blocked gated cell shows: said once, in words, the details folded (edge layer).

A blocked cell shows one block: which gate stopped it, why in words a person reads (a
check's compared values, ``review: 7 of 27 done``; the gate's description when the workflow
gives one), and the one thing to do next. The gate report (every gate, its kind, severity and
full message with the expression) is folded under it: an HTML ``<details>`` in the rich form,
left out of the compact ``text/plain``. The cell's error (:func:`one_line`) is one line that
still names each failed gate with its reason and expression, because headless clients
(``skillnb run``, nbclient, papermill) print only that line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillnb.core.shell import magic_command
from skillnb.jupyter.display import Output, Status

if TYPE_CHECKING:
    from skillnb.core.gates.evaluate import GateSpec
    from skillnb.core.runstate.records import GateReport, GateResult

__all__ = ["blocked_output", "folded_report", "next_step", "one_line"]

_MISSING = re.compile(r"^missing facts: (?P<keys>.+) \(formalize them first\)$")
_HINT = re.compile(r"; approve with `[^`]*`(?: or `[^`]*`)?$")
_STYLE = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;line-height:1.45"
_CELL = "padding:2px 8px;text-align:left;vertical-align:top"


def _waiting(report: GateReport) -> bool:
    return bool(report.blocking) and all(
        r.kind == "approval" or r.escalated for r in report.blocking
    )


def _approve(result: GateResult) -> str:
    return f"approve with {magic_command('approve', result.gate)} --by NAME"


def next_step(report: GateReport, specs: Mapping[str, GateSpec]) -> str:
    """The one thing to do: for the first gate that blocks (cheapest first), then run again."""
    if not report.blocking:
        return "Run this cell again."
    first = report.blocking[0]
    spec = specs.get(first.gate)
    if first.kind == "approval" or first.escalated:
        return f"A{_approve(first)[1:]}, then run this cell again."
    if first.kind == "state" and spec is not None and spec.states:
        wanted = " or ".join(spec.states)
        return f"Bring the run to state {wanted} first, then run this cell again."
    if first.kind == "requires":
        match = _MISSING.match(first.message)
        keys = match["keys"] if match else "the facts it needs"
        return f"Formalize {keys} first, then run this cell again."
    if first.kind == "check" and spec is not None and spec.expr is not None and spec.expr.names:
        names = ", ".join(spec.expr.names)
        return f"Update {names} until {first.gate} holds, then run this cell again."
    return f"Run this cell again once {first.gate} passes."


def _gate_line(result: GateResult, specs: Mapping[str, GateSpec], mark: str, flag: str = "") -> str:
    spec = specs.get(result.gate)
    described = f" — {spec.description}" if spec is not None and spec.description else ""
    return f"{mark} {result.gate}{flag}: {_HINT.sub('', result.reason)}{described}"


def _lines(report: GateReport, specs: Mapping[str, GateSpec], *, skipped: bool) -> list[str]:
    mark = "⏳" if _waiting(report) else "✗"
    lines = [_gate_line(r, specs, mark) for r in report.blocking]
    lines += [_gate_line(r, specs, "⚠", " (a warning only)") for r in report.warnings]
    step = next_step(report, specs)
    if skipped:
        step = f"The body was skipped (--on-block skip): later cells run. {step}"
    lines.append(f"→ {step}")
    return lines


def _rows(report: GateReport) -> list[dict[str, str]]:
    rows = []
    for r in report.results:
        mark = "✓" if r.passed else ("⚠" if r.severity == "warn" else "✗")
        rows.append(
            {
                "mark": mark,
                "gate": r.gate,
                "kind": r.kind,
                "severity": r.severity,
                "message": r.message,
            }
        )
    return rows


def _summary(report: GateReport) -> str:
    where = f" in state {report.state}" if report.state is not None else ""
    count = len(report.results)
    return f"gate report{where} ({count} gate{'' if count == 1 else 's'})"


def folded_report(report: GateReport) -> dict[str, Any]:
    """The gate report as the bundle folds it: every gate, the full message with expression."""
    return {"summary": _summary(report), "rows": _rows(report)}


def _details(report: GateReport) -> str:
    """The folded gate report as HTML: a closed ``<details>`` holding a table."""
    cells = ("mark", "gate", "kind", "severity", "message")
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{html.escape(row[c])}</td>' for c in cells) + "</tr>"
        for row in _rows(report)
    )
    return (
        f'<details class="skillnb-gate-report"><summary>{html.escape(_summary(report))}'
        f'</summary><table style="border-collapse:collapse;font-size:12px">{body}</table></details>'
    )


def _html(badge: str, lines: Sequence[str], status: str, report: GateReport) -> str:
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        f'<div class="skillnb-output skillnb-{html.escape(status)}" style="{_STYLE}">'
        f"<strong>{html.escape(badge)}</strong>"
        f'<ul style="margin:2px 0;padding-left:18px;list-style:none">{items}</ul>'
        f"{_details(report)}</div>"
    )


def blocked_output(
    report: GateReport,
    trigger: str | None,
    label: str,
    *,
    skipped: bool,
    specs: Mapping[str, GateSpec] | None = None,
) -> Output:
    """The one block a blocked (or waiting) gated cell shows.

    Args:
        report: the gate report that blocked.
        trigger: the trigger the cell fires, if any.
        label: how the cell is named (its trigger or ``--name``).
        skipped: ``--on-block skip``: the body was skipped and Run All goes on.
        specs: the gates by name, for their descriptions and what they read.

    """
    known = specs or {}
    lines = _lines(report, known, skipped=skipped)
    status: Status = "waiting" if _waiting(report) else "blocked"
    if status == "waiting":
        gates = ", ".join(r.gate for r in report.blocking)
        badge, kind = f"⏳ {label} waits for approval: {gates}", "approval"
    else:
        badge, kind = f"✗ {label} blocked", "blocked"
    page = _html(badge, lines, status, report)
    folded = folded_report(report)
    return Output(kind, status, badge, lines, trigger=trigger, html=page, folded=folded)


def one_line(what: str, report: GateReport, *, waiting: bool, note: str | None = None) -> str:
    """The cell's error, on one line: each failed gate with its reason, and what to do.

    ``what`` names the cell (``'archive'``, ``this cell``). The message of each gate keeps its
    expression: a headless client shows only this line.
    """
    gates = "; ".join(f"{r.gate}: {_HINT.sub('', r.message)}" for r in report.blocking)
    if waiting:
        approve = "; ".join(_approve(r) for r in report.blocking if r.kind == "approval")
        line = (
            f"⏳ WaitingForApproval: {what} waits for a person's approval ({gates}); "
            f"{approve}, then run this cell again"
        )
    else:
        line = f"✗ GateBlocked: {what} is blocked ({gates}); see above"
    return line if note is None else f"{line}. {note}"
