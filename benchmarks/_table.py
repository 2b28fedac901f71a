"""The row every benchmark returns, and the one table ``benchmarks/all.py`` prints.

A benchmark module that joins the table offers ``main(argv: list[str]) -> list[Row]``: it runs,
prints its own detailed output as before, and returns one :class:`Row` per headline figure.
Build rows with :func:`row`, which computes ``ratio`` and ``ok`` the same way everywhere:

* ``ratio`` is ``value / baseline`` (``None`` without a baseline);
* ``target`` is a bound on the ratio, written ``"<= 1.5"`` (at most 1.5 times the baseline) or
  ``">= 3"`` (at least 3 times); ``"<= 50 ms"`` bounds the value itself, in its unit;
* ``ok`` says whether the target is met (``None`` without a target).

Rows are plain dictionaries (a ``TypedDict``), so a benchmark needs nothing but this module,
and a subprocess could hand them over as JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypedDict

__all__ = ["Row", "check", "format_table", "row"]

_TARGET = re.compile(r"^\s*(<=|>=)\s*([0-9.]+)\s*(.*?)\s*$")


class Row(TypedDict):
    """One headline figure of one benchmark, beside its baseline from the same run."""

    benchmark: str
    """The benchmark module (``store``, ``cells``, ...)."""
    figure: str
    """What was measured, e.g. ``run.formalize @10``."""
    value: float
    """The measurement, in ``unit``."""
    unit: str
    """``us``, ``ms``, ``items/s``, ..."""
    baseline: float | None
    """The same-run baseline in the same unit (a raw write+fsync, one process, ...)."""
    baseline_name: str
    """What the baseline is (``raw write+fsync``); empty without one."""
    ratio: float | None
    """``value / baseline``."""
    target: str
    """``"<= 1.5"`` (ratio), ``">= 3"`` (ratio), ``"<= 50 ms"`` (value); empty: none."""
    ok: bool | None
    """Whether the target is met; ``None`` without a target."""


def check(target: str, value: float, ratio: float | None) -> bool | None:
    """Tell whether ``target`` is met by ``value`` / ``ratio`` (``None`` without a target).

    Raises:
        ValueError: ``target`` is not ``"<= N"``, ``">= N"`` or ``"<= N unit"``.

    """
    if not target:
        return None
    match = _TARGET.match(target)
    if match is None:
        raise ValueError(f"benchmark target {target!r} is not '<= N', '>= N' or '<= N unit'")
    op, bound, unit = match[1], float(match[2]), match[3]
    measured = value if unit else ratio
    if measured is None:
        return None
    return measured <= bound if op == "<=" else measured >= bound


def row(
    benchmark: str,
    figure: str,
    value: float,
    unit: str,
    *,
    baseline: float | None = None,
    baseline_name: str = "",
    target: str = "",
) -> Row:
    """Build a :class:`Row`, computing its ratio and whether it meets ``target``."""
    ratio = value / baseline if baseline else None
    return Row(
        benchmark=benchmark,
        figure=figure,
        value=value,
        unit=unit,
        baseline=baseline,
        baseline_name=baseline_name,
        ratio=ratio,
        target=target,
        ok=check(target, value, ratio),
    )


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def format_table(rows: Iterable[Row]) -> str:
    """Render rows as one fixed-width table (benchmark, figure, value, baseline, ratio, ok)."""
    head = ("benchmark", "figure", "value", "baseline", "ratio", "target", "ok")
    body = [
        (
            r["benchmark"],
            r["figure"],
            f"{_num(r['value'])} {r['unit']}",
            f"{_num(r['baseline'])} ({r['baseline_name']})" if r["baseline"] is not None else "-",
            f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-",
            r["target"] or "-",
            {True: "yes", False: "NO", None: "-"}[r["ok"]],
        )
        for r in rows
    ]
    widths = [max(len(cells[i]) for cells in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) for cells in body]
    rule = "  ".join("-" * w for w in widths)
    header = "  ".join(c.ljust(w) for c, w in zip(head, widths, strict=True))
    return "\n".join([header, rule, *lines])
