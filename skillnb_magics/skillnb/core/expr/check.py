"""The restricted check-expression language of ``check:`` gates (core layer).

A check such as ``len(sources) >= 5 and report.score > 0.8`` is parsed once with :mod:`ast`
and validated against an allow-list; anything outside it is rejected when the workflow is
loaded, with the column of the offending part. Evaluation is a small tree-walking
interpreter over the validated tree: user text is never handed to ``eval`` or ``compile``.

Allowed: literals (numbers, strings, ``True``/``False``/``None``, lists, tuples, sets,
dicts), fact names, attribute and index/slice access on JSON values (``report.score`` reads
``report["score"]``), comparisons (chained too), ``and``/``or``/``not``, ``in``/``not in``,
``is None``/``is not None``, unary ``-``/``+``, ``+ - * / // %`` and the functions
``len min max sum abs any all`` called by name (``sum`` adds numbers only).

Hostile input fails cleanly instead of exhausting the process, in two steps. Validation
bounds what a check may say: its length and nesting depth, the size of its literals, and
repetition (``[0] * 5`` needs a literal count of at most :data:`MAX_REPEAT` and may not be
repeated again). Evaluation bounds what it may cost: every operation is charged to a
:class:`~skillnb.core.expr.budget.Budget` (work units and a deadline) before it runs, and a
check that runs out fails with a message saying its budget was exceeded.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from skillnb.core.expr.budget import Budget, BudgetExceeded
from skillnb.core.expr.reason import Failure, reason
from skillnb.core.expr.syntax import (
    BINOPS,
    CMPOPS,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_REPEAT,
    parse_check,
)
from skillnb.errors import SkillnbError

__all__ = [
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_LENGTH",
    "MAX_REPEAT",
    "MAX_SEQUENCE",
    "CheckExpr",
    "CheckFailed",
    "compile_check",
]

MAX_SEQUENCE = 1_000_000
"""Largest string or list that ``+`` or ``*`` may build."""
MAX_INT_BITS = 100_000
"""Largest integer (in bits) that arithmetic may build."""

_EVAL_ERRORS = (
    TypeError,
    ValueError,
    ZeroDivisionError,
    OverflowError,
    KeyError,
    IndexError,
    RecursionError,
    MemoryError,
)
_SCANNED = (str, list, tuple, set, frozenset, dict, Mapping)


class CheckFailed(SkillnbError):
    """A check could not be evaluated: a fact is missing or a value has the wrong type.

    Attributes:
        message: what went wrong, e.g. ``fact 'sources' is missing``.

    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class CheckExpr:
    """A validated check expression, ready to evaluate against facts.

    Build it with :func:`compile_check`. Instances are immutable and safe to share.
    """

    __slots__ = ("_tree", "names", "source")

    source: str
    """The expression text."""
    names: tuple[str, ...]
    """The fact names the expression reads, in order of first appearance."""

    def __init__(self, source: str, tree: ast.expr, names: tuple[str, ...]) -> None:
        self.source = source
        self.names = names
        self._tree = tree

    def __repr__(self) -> str:
        return f"CheckExpr({self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckExpr) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def evaluate(self, facts: Mapping[str, Any], budget: Budget | None = None) -> Any:
        """Evaluate the expression with ``facts`` as its variables, within a budget.

        Args:
            facts: decoded fact values by key.
            budget: the work allowed (default: a fresh :class:`Budget`).

        Returns:
            The expression's value (gates use its truth value).

        Raises:
            CheckFailed: a fact is missing, a key or index does not exist, an operation
                does not apply to the values' types, or the budget was exceeded.

        """
        return _Evaluator(self.source, facts, budget or Budget()).run(self._tree)

    def explain(
        self, facts: Mapping[str, Any], budget: Budget | None = None
    ) -> tuple[Any, str | None]:
        """Evaluate like :meth:`evaluate`, and say in words why a false result is false.

        Returns:
            The expression's value and, when it is false and made of comparisons, a short
            reason built from the values the evaluation compared (``review: 7 of 27 done``,
            ``budget 30000 is not <= 10000``); ``None`` otherwise.

        Raises:
            CheckFailed: as :meth:`evaluate`.

        """
        evaluator = _Evaluator(self.source, facts, budget or Budget())
        value = evaluator.run(self._tree)
        if value:
            return value, None
        return value, reason(self._tree, evaluator.failures, evaluator.text)


def compile_check(source: str) -> CheckExpr:
    """Parse and validate a check expression.

    Args:
        source: the expression text, e.g. ``"len(sources) >= 5"``.

    Returns:
        The compiled expression.

    Raises:
        WorkflowError: the text is not an allowed expression; ``line``/``column`` (1-based)
            point inside ``source``.

    """
    tree, names = parse_check(source)
    return CheckExpr(source, tree, names)


class _Evaluator:
    """Evaluates a validated tree; every failure becomes :class:`CheckFailed`."""

    def __init__(self, source: str, facts: Mapping[str, Any], budget: Budget) -> None:
        self._source = source
        self._facts = facts
        self._budget = budget
        self.failures: dict[int, Failure] = {}
        """The comparisons that came out false, by ``id`` of their node (for the reason)."""

    def fail(self, message: str) -> NoReturn:
        raise CheckFailed(f"{message} in {self._source!r}")

    def run(self, node: ast.expr) -> Any:
        try:
            return self.eval(node)
        except BudgetExceeded as exc:
            self.fail(exc.message)
        except _EVAL_ERRORS as exc:
            self.fail(f"{type(exc).__name__}: {exc}")

    def weigh(self, *values: Any, what: str) -> None:
        """Charge the deep size of the values an operation is about to walk."""
        for value in values:
            if isinstance(value, _SCANNED):
                self._budget.weigh(value, what)

    def eval(self, node: ast.expr) -> Any:  # noqa: C901 - one flat dispatch
        self._budget.charge(1)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self._facts:
                raise CheckFailed(f"fact {node.id!r} is missing")
            return self._facts[node.id]
        if isinstance(node, ast.List):
            return [self.eval(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.eval(e) for e in node.elts)
        if isinstance(node, ast.Set):
            items = [self.eval(e) for e in node.elts]
            self.weigh(items, what="hashing set members")
            return set(items)
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            keys_values = [(self.eval(k), self.eval(v)) for k, v in pairs if k is not None]
            self.weigh([k for k, _ in keys_values], what="hashing dict keys")
            return dict(keys_values)
        if isinstance(node, ast.Attribute):
            return self._key(self.eval(node.value), node.attr, node.value)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(node.func.id, [self.eval(a) for a in node.args])
        raise CheckFailed(f"cannot evaluate {ast.unparse(node)!r}")  # unreachable once validated

    def _call(self, name: str, args: list[Any]) -> Any:
        if name not in ("len", "abs"):
            self.weigh(*args, what=f"{name}()")
        if name in ("abs",):
            self._int_size(*args)
        try:
            if name == "sum":
                return _sum(*args)
            return FUNCTIONS[name](*args)
        except _EVAL_ERRORS as exc:
            self.fail(f"{name}() failed: {exc}")

    def _int_size(self, *values: Any) -> None:
        bits = sum(v.bit_length() for v in values if isinstance(v, int))
        if bits > MAX_INT_BITS:
            self.fail(f"a number of {bits} bits is too large (limit {MAX_INT_BITS})")

    def text(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self._text(node)

    def _text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self._source.strip(), node) or ast.unparse(node)

    def _key(self, container: Any, key: Any, node: ast.AST) -> Any:
        if not isinstance(container, Mapping):
            self.fail(f"'{self._text(node)}' is {type(container).__name__}, not a mapping")
        if key not in container:
            raise CheckFailed(f"'{self._text(node)}' has no key {key!r}")
        return container[key]

    def _subscript(self, node: ast.Subscript) -> Any:
        container = self.eval(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = [None if p is None else self.eval(p) for p in _slice_parts(node.slice)]
            if not isinstance(container, Sequence) or isinstance(container, Mapping):
                self.fail(f"cannot slice {type(container).__name__}")
            self._budget.charge(len(container), "slicing")
            return container[slice(*parts)]
        index = self.eval(node.slice)
        if isinstance(container, Mapping):
            return self._key(container, index, node.value)
        if not isinstance(container, Sequence):
            self.fail(f"cannot index {type(container).__name__}")
        if not isinstance(index, int):
            self.fail(f"cannot index {type(container).__name__} with {type(index).__name__}")
        if not -len(container) <= index < len(container):
            raise CheckFailed(f"index {index} is out of range for '{self._text(node.value)}'")
        return container[index]

    def _boolop(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        for part in node.values:
            value = self.eval(part)
            if bool(value) != is_and:
                return value
        return value

    def _unary(self, node: ast.UnaryOp) -> Any:
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        if not isinstance(value, int | float):
            self.fail(f"cannot negate {type(value).__name__}")
        return -value if isinstance(node.op, ast.USub) else +value

    def _binop(self, node: ast.BinOp) -> Any:
        symbol, func = BINOPS[type(node.op)]
        left, right = self.eval(node.left), self.eval(node.right)
        size = _result_size(symbol, left, right)
        if size is not None and size > MAX_SEQUENCE:
            self.fail(f"'{symbol}' would build {size} items (limit {MAX_SEQUENCE})")
        if size is not None:
            self._budget.charge(size, f"'{symbol}'")
        self._int_size(left, right)
        if symbol == "%" and not isinstance(left, int | float):
            self.fail(f"'%' needs numbers, not {type(left).__name__}")
        try:
            return func(left, right)
        except TypeError:
            self.fail(
                f"cannot apply '{symbol}' to {type(left).__name__} and {type(right).__name__}"
            )
        except ZeroDivisionError:
            self.fail("division by zero")

    def _compare(self, node: ast.Compare) -> bool:
        left = self.eval(node.left)
        left_node = node.left
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            symbol, func = CMPOPS[type(op)]
            right = self.eval(right_node)
            if _walks(symbol, left, right):
                self.weigh(left, right, what=f"'{symbol}'")
            try:
                ok = bool(func(left, right))
            except TypeError:
                a, b = type(left).__name__, type(right).__name__
                if symbol in ("in", "not in"):
                    self.fail(f"cannot test {a} '{symbol}' {b}")
                self.fail(f"cannot compare {a} and {b}")
            if not ok:
                self.failures[id(node)] = Failure(left_node, symbol, right_node, left, right)
                return False
            left, left_node = right, right_node
        return True


def _walks(symbol: str, left: Any, right: Any) -> bool:
    """Whether the comparison walks its operands (``==`` stops at a type or length mismatch)."""
    if symbol in ("in", "not in"):
        return True
    if not (isinstance(left, _SCANNED) and isinstance(right, _SCANNED)):
        return False
    if symbol in ("==", "!="):
        return type(left) is type(right) and len(left) == len(right)
    return True


def _sum(values: Any, start: Any = 0) -> Any:
    """``sum`` over numbers only: adding lists or strings would cost quadratic time."""
    total = start
    for value in [start, *values]:
        if not isinstance(value, int | float):
            raise TypeError(f"sum adds numbers, not {type(value).__name__}")
    for value in values:
        total = total + value
    return total


def _slice_parts(node: ast.Slice) -> tuple[ast.expr | None, ...]:
    return node.lower, node.upper, node.step


def _result_size(symbol: str, left: Any, right: Any) -> int | None:
    """Return the length a sequence ``+`` or ``*`` would produce (None for other operations)."""
    sequences = (str, list, tuple)
    if symbol == "*":
        if isinstance(left, sequences) and isinstance(right, int):
            return len(left) * max(right, 0)
        if isinstance(right, sequences) and isinstance(left, int):
            return len(right) * max(left, 0)
    if symbol == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        return len(left) + len(right)
    return None
