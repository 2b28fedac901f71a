"""Why a check expression is false, in words a person reads (pure core).

The evaluator of :mod:`skillnb.core.expr.check` records each comparison that came out false, with
the values it compared (a :class:`Failure`). :func:`reason` turns those records into one
short sentence: ``review: 7 of 27 done`` for progress (``review.done == review.total``),
``budget 30000 is not <= 10000`` for other comparisons. Nothing is evaluated here: only the
values the evaluation already produced are shown, each clipped, so a fact holding a long
text or a large list costs no more than its first characters.

An ``and`` is explained by the part that stopped it; an ``or`` by every part, when each is a
comparison that failed. Anything else (a bare fact, ``not``, a function's truth value) has
no sentence: the caller keeps its plain form.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PROGRESS_TOTALS", "Failure", "reason"]

PROGRESS_TOTALS = frozenset(
    {"total", "count", "expected", "target", "size", "needed", "required", "goal", "all"}
)
"""Names of a right-hand side that make ``x.done == x.total`` read as progress (``7 of 27``)."""

_TEXT = 40
"""How many characters of an operand's text or value a reason shows."""


@dataclass(frozen=True)
class Failure:
    """One comparison that was false, with the values it compared."""

    left: ast.expr
    """The left operand's node."""
    symbol: str
    """The operator (``==``, ``<=``, ``in``, ...)."""
    right: ast.expr
    """The right operand's node."""
    left_value: Any
    """What the left operand evaluated to."""
    right_value: Any
    """What the right operand evaluated to."""


def reason(
    tree: ast.expr, failures: Mapping[int, Failure], text: Callable[[ast.AST], str]
) -> str | None:
    """Return why ``tree`` is false, from the comparisons that failed (``None``: no words).

    Args:
        tree: the expression's validated tree.
        failures: the failed comparisons by ``id`` of their ``Compare`` node.
        text: the source text of a node.

    """
    return _explain(tree, failures, text)


def _explain(
    node: ast.expr, failures: Mapping[int, Failure], text: Callable[[ast.AST], str]
) -> str | None:
    if isinstance(node, ast.Compare):
        failure = failures.get(id(node))
        return None if failure is None else _phrase(failure, text)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        # evaluation stopped at the first false part: the first one with a failure
        return next((r for p in node.values if (r := _explain(p, failures, text))), None)
    if isinstance(node, ast.BoolOp):  # or: false only when every part was false
        parts = [_explain(p, failures, text) for p in node.values]
        if all(parts):
            return " and ".join(p for p in parts if p)
    return None


def _phrase(failure: Failure, text: Callable[[ast.AST], str]) -> str:
    progress = _progress(failure, text)
    if progress is not None:
        return progress
    left = _operand(failure.left, failure.left_value, text)
    right = _operand(failure.right, failure.right_value, text)
    return {
        "==": f"{left} is not {right}",
        "!=": f"{left} equals {right}",
        "in": f"{left} is not in {right}",
        "not in": f"{left} is in {right}",
        "is": f"{left} is not {right}",
        "is not": f"{left} is {right}",
    }.get(failure.symbol, f"{left} is not {failure.symbol} {right}")


def _progress(failure: Failure, text: Callable[[ast.AST], str]) -> str | None:
    """``review: 7 of 27 done`` for ``review.done == review.total`` (or ``>=``) not reached."""
    done, total = failure.left_value, failure.right_value
    if failure.symbol not in ("==", ">=") or not (_count(done) and _count(total)):
        return None
    if not 0 <= done < total or _last_name(failure.right) not in PROGRESS_TOTALS:
        return None
    label = _last_name(failure.left)
    if label is None:
        return None
    base = _common_base(failure.left, failure.right, text)
    return f"{base}: {done} of {total} {label}" if base else f"{done} of {total} {label}"


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _last_name(node: ast.expr) -> str | None:
    """``done`` for ``review.done``, ``review["done"]``, ``done`` or ``len(review.done)``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and _is_len(node):
        return _last_name(node.args[0])
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        return key if isinstance(key, str) else None
    return None


def _is_len(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "len"


def _base(node: ast.expr) -> ast.expr | None:
    if isinstance(node, ast.Call) and node.args and _is_len(node):
        return _base(node.args[0])
    if isinstance(node, ast.Attribute | ast.Subscript):
        return node.value
    return None


def _common_base(left: ast.expr, right: ast.expr, text: Callable[[ast.AST], str]) -> str | None:
    a, b = _base(left), _base(right)
    if a is None or b is None:
        return None
    shown = text(a)
    return _clip(shown) if shown == text(b) else None


def _operand(node: ast.expr, value: Any, text: Callable[[ast.AST], str]) -> str:
    """``budget 30000``, ``sources (list of 2)``; a literal shows only its value."""
    shown = _value(value)
    if isinstance(node, ast.Constant):
        return shown
    return f"{_clip(text(node))} {shown}"


def _value(value: Any) -> str:
    if isinstance(value, Mapping | Sequence | set | frozenset) and not isinstance(value, str):
        name = "dict" if isinstance(value, Mapping) else type(value).__name__
        return f"({name} of {len(value)})"
    if isinstance(value, str):
        return repr(_clip(value)) if len(value) <= _TEXT else repr(value[: _TEXT - 1]) + "…"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"(a number of {value.bit_length()} bits)"  # not turned into its digits
    return _clip(repr(value))


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _TEXT else flat[: _TEXT - 1] + "…"
