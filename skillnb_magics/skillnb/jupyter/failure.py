"""How errors reach the notebook: short messages instead of tracebacks (edge layer).

IPython renders an exception that has a ``_render_traceback_()`` method with the lines it
returns instead of a traceback (the hook ipyparallel uses for remote errors). The magics use it
for expected outcomes, a blocked gate or a refused approval, so the cell fails (Run All stops
there and the exception keeps its type and name, e.g. ``GateBlocked`` for ``skillnb run``)
and the reader sees one short, actionable message.
"""

from __future__ import annotations

from typing import TypeVar

from skillnb.errors import GateBlocked, SkillnbError

__all__ = ["explain", "shorten"]

E = TypeVar("E", bound=BaseException)


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
    for result in exc.report.blocking:
        lines.append(f"  ✗ {result.gate} ({result.kind}): {result.message}")
    for result in exc.report.warnings:
        lines.append(f"  ⚠ {result.gate} ({result.kind}): {result.message}")
    lines.append("The cell body did not run. Fix the gates above, then run this cell again.")
    return lines
