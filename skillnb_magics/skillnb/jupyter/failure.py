"""How errors reach the notebook: short messages instead of tracebacks (edge layer).

IPython renders an exception that has a ``_render_traceback_()`` method with the lines it
returns instead of a traceback (the hook ipyparallel uses for remote errors). The magics use it
for expected outcomes, a blocked gate or a refused approval, so the cell fails (Run All stops
there and the exception keeps its type and name, e.g. ``GateBlocked`` for ``skillnb run``)
and the reader sees one short, actionable message.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TypeVar

from skillnb.errors import GateBlocked, SkillnbError, WaitingForApproval
from skillnb.jupyter.views.blocked import one_line

__all__ = ["BodySyntaxError", "explain", "not_parsed", "shorten", "travelling"]

E = TypeVar("E", bound=BaseException)


class BodySyntaxError(Exception):
    """A magic cell's body does not parse; IPython has shown its ``SyntaxError`` above.

    Not a ``SyntaxError`` itself: IPython shows every ``SyntaxError`` that ends a cell in full
    (its ``_render_traceback_`` is not asked), so the magic's own frames would follow the
    error the user already saw. The original is the ``syntax_error`` attribute.
    """

    def __init__(self, message: str, syntax_error: SyntaxError) -> None:
        super().__init__(message)
        self.syntax_error = syntax_error


def not_parsed(what: str, error: SyntaxError) -> BodySyntaxError:
    """The error that ends a magic cell ``what`` whose body does not parse (shown above)."""
    line = f", line {error.lineno}" if error.lineno is not None else ""
    detail = f"{type(error).__name__}: {error.msg}{line}"
    message = f"{what}: nothing recorded, the cell does not parse ({detail}; see above)"
    return shorten(BodySyntaxError(message, error), [f"⛔ {message}"])


def shorten(exc: E, lines: list[str]) -> E:
    """Make IPython show ``lines`` instead of a traceback when ``exc`` ends a cell."""
    shown = list(lines)

    def render() -> list[str]:
        return shown

    # An attribute on the instance keeps the exception's own type (and name) intact.
    exc._render_traceback_ = render  # type: ignore[attr-defined]
    return exc


def explain(exc: SkillnbError) -> list[str]:
    """Return the short message lines for ``exc`` (one per failed gate for a block)."""
    if not isinstance(exc, GateBlocked):
        return [f"⛔ {type(exc).__name__}: {exc}"]
    what = f"'{exc.trigger}'" if exc.trigger else "this cell"
    where = f" in state {exc.state!r}" if exc.state is not None else ""
    lines = [f"✗ GateBlocked: {what} is blocked{where}"]
    waiting = isinstance(exc, WaitingForApproval)
    for result in exc.report.blocking:
        mark = "⏳" if waiting and result.kind == "approval" else "✗"
        lines.append(f"  {mark} {result.gate} ({result.kind}): {result.message}")
    for result in exc.report.warnings:
        lines.append(f"  ⚠ {result.gate} ({result.kind}): {result.message}")
    lines.append("The cell body did not run. Fix the gates above, then run this cell again.")
    return lines


def _approve_lines(exc: GateBlocked, notebook: Path | None) -> list[str]:
    gates = [r.gate for r in exc.report.blocking if r.kind == "approval"]
    lines = []
    for gate in dict.fromkeys(gates):
        where = f"skillnb approve {shlex.quote(str(notebook))} " if notebook is not None else ""
        lines.append(f"  approve: %skillnb approve {gate} --by NAME")
        if where:
            lines.append(f"       or: {where}{shlex.quote(gate)} --by NAME")
    return lines


def travelling(exc: GateBlocked, notebook: Path | None, note: str | None = None) -> GateBlocked:
    """Return ``exc`` made to carry its whole story in its own text.

    Headless clients (papermill, nbconvert, nbmake, pytest) show only the exception's
    rendered lines and text, never the notebook's outputs above it: the text names each
    failed gate with its reason and, for approvals, the exact approve command. A block made
    only of approval gates becomes :class:`~skillnb.errors.WaitingForApproval`.
    """
    waiting = bool(exc.report.blocking) and all(r.kind == "approval" for r in exc.report.blocking)
    if waiting and not isinstance(exc, WaitingForApproval):
        exc = WaitingForApproval(exc.report, state=exc.state, trigger=exc.trigger)
    lines = explain(exc)
    if waiting:
        lines[0] = (
            lines[0]
            .replace("✗ GateBlocked", "⏳ WaitingForApproval")
            .replace("is blocked", "waits for a person's approval")
        )
        lines[-1] = "The cell body did not run. Approve, then run this cell again:"
        lines += _approve_lines(exc, notebook)
    if note is not None:
        lines.append(note)
    head = lines[0].split(": ", 1)[-1]
    exc.args = ("\n".join([head, *(line.strip() for line in lines[1:] if line.strip())]),)
    # The block above the error says it in full; the error itself is one line that still
    # names each gate, its reason and what to do (a headless client prints only this line).
    what = (f"'{exc.trigger}'" if exc.trigger else "this cell") + (
        f" in state {exc.state!r}" if exc.state is not None else ""
    )
    return shorten(exc, [one_line(what, exc.report, waiting=waiting, note=note)])
