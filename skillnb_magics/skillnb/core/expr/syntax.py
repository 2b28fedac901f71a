"""The syntax of check expressions: parsing and the allow-list (core layer).

:func:`parse_check` parses a check with :mod:`ast` (parsing only: nothing is compiled or
run) and walks the tree against the allow-list described in :mod:`skillnb.core.expr.check`,
raising :class:`~skillnb.errors.WorkflowError` with the 1-based line and column (in
characters) of the first part that is not allowed. Depth is checked iteratively before the
recursive walk, so deeply nested input fails cleanly instead of exhausting the stack.

Cost is bounded here as far as the text allows: number literals have at most
:data:`MAX_DIGITS` digits; a list, tuple or string literal may be repeated (``[0] * 5``)
only by a literal count of at most :data:`MAX_REPEAT`, and never repeated again
(``[[0] * 5] * 5``); functions take their usual number of arguments and ``sum`` no
``start`` list. What the text cannot tell (a fact holding a huge list) is bounded when the
check is evaluated (:mod:`skillnb.core.expr.budget`).
"""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from skillnb.errors import WorkflowError

__all__ = [
    "BINOPS",
    "CMPOPS",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_LENGTH",
    "MAX_REPEAT",
    "parse_check",
]

MAX_LENGTH = 2_000
"""Longest accepted expression, in characters."""
MAX_DEPTH = 50
"""Deepest accepted syntax tree."""
MAX_REPEAT = 100
"""Largest literal count a sequence literal may be repeated by."""
MAX_DIGITS = 30
"""Most digits a number literal may have."""
_ARITY: Mapping[str, tuple[int, int]] = {
    "len": (1, 1),
    "abs": (1, 1),
    "any": (1, 1),
    "all": (1, 1),
    "sum": (1, 2),
    "min": (1, 50),
    "max": (1, 50),
}
FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "len": len,
    "min": min,
    "max": max,
    "sum": sum,
    "abs": abs,
    "any": any,
    "all": all,
}
"""The functions a check may call, by name."""

BINOPS: Mapping[type[ast.operator], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}
"""The arithmetic operators a check may use: symbol and implementation."""
CMPOPS: Mapping[type[ast.cmpop], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
    ast.Is: ("is", operator.is_),
    ast.IsNot: ("is not", operator.is_not),
}
"""The comparison operators a check may use (``is`` only with ``None``)."""
_REJECTED_BINOPS: Mapping[type[ast.operator], str] = {
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
}
_CONSTANT_TYPES = (int, float, str, bool, type(None))
_DESCRIBE: Mapping[type[ast.AST], str] = {
    ast.Lambda: "lambda functions",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.JoinedStr: "f-strings",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.IfExp: "conditional expressions (x if c else y)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Starred: "* unpacking",
}


def parse_check(source: str) -> tuple[ast.expr, tuple[str, ...]]:
    """Parse ``source`` and check it against the allow-list.

    Returns:
        The expression tree and the fact names it reads, in order of first appearance.

    Raises:
        WorkflowError: the text is empty, too long, not an expression, too deeply nested,
            or uses something outside the allow-list.

    """
    if not isinstance(source, str):
        raise WorkflowError(f"a check must be a string, not {type(source).__name__}")
    if not source.strip():
        raise WorkflowError("a check must not be empty", line=1, column=1)
    if len(source) > MAX_LENGTH:
        raise WorkflowError(
            f"check is {len(source)} characters long; the limit is {MAX_LENGTH}",
            line=1,
            column=MAX_LENGTH + 1,
        )
    stripped = source.strip()
    offset = len(source) - len(source.lstrip())
    try:
        with warnings.catch_warnings():
            # Invalid escapes ("\d") warn in the compiler; in a check they are errors.
            warnings.simplefilter("error")
            tree = ast.parse(stripped, mode="eval")
    except SyntaxError as exc:
        line = exc.lineno or 1
        # CPython reports offset 0 (or past the end) for errors at the end of the input.
        end = len(stripped) + 1
        column = min(exc.offset, end) if exc.offset and exc.offset > 0 else end
        column += offset if line == 1 else 0
        hint = ""
        if "\n" in stripped:
            hint = " (a check on several lines needs parentheses, or a folded '>' YAML block)"
        raise WorkflowError(
            f"invalid check expression: {exc.msg}{hint}", line=line, column=column
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise WorkflowError(f"invalid check expression: {exc or 'too deeply nested'}") from None
    body = tree.body
    check_depth(body, stripped, offset)
    names: list[str] = []
    _Validator(stripped, offset, names).visit(body)
    return body, tuple(dict.fromkeys(names))


def _position(node: ast.AST, source: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``node`` in characters (ast columns are UTF-8 bytes)."""
    lineno = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0)
    lines = source.splitlines() or [""]
    text = lines[min(lineno, len(lines)) - 1]
    char_col = len(text.encode()[:col].decode(errors="ignore"))
    return lineno, char_col + 1 + (offset if lineno == 1 else 0)


def check_depth(root: ast.AST, source: str, offset: int) -> None:
    """Reject trees deeper than :data:`MAX_DEPTH` without recursing."""
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line, column = _position(node, source, offset)
            raise WorkflowError(
                f"check expression is nested too deeply (more than {MAX_DEPTH} levels)",
                line=line,
                column=column,
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _Validator:
    """Walks a parsed expression and rejects everything outside the allow-list."""

    def __init__(self, source: str, offset: int, names: list[str]) -> None:
        self._source = source
        self._offset = offset
        self._names = names

    def fail(self, node: ast.AST, problem: str) -> NoReturn:
        line, column = _position(node, self._source, self._offset)
        raise WorkflowError(problem, line=line, column=column)

    def visit(self, node: ast.AST) -> None:  # noqa: C901 - one flat dispatch over node types
        if isinstance(node, ast.Constant):
            self._constant(node)
        elif isinstance(node, ast.Name):
            self._names.append(node.id)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            self.visit_all(node.elts)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    self.fail(value, "** unpacking is not allowed in a check")
                self.visit(key)
                self.visit(value)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                self.fail(node, f"attribute {node.attr!r} is not allowed (names starting '_')")
            self.visit(node.value)
        elif isinstance(node, ast.Subscript):
            self._subscript(node)
        elif isinstance(node, ast.Compare):
            self._compare(node)
        elif isinstance(node, ast.BoolOp):
            self.visit_all(node.values)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
                self.fail(node, "operator '~' is not allowed in a check")
            self.visit(node.operand)
        elif isinstance(node, ast.BinOp):
            self._binop(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        else:
            what = _DESCRIBE.get(type(node), type(node).__name__)
            self.fail(node, f"{what} not allowed in a check")

    def visit_all(self, nodes: Sequence[ast.AST]) -> None:
        for child in nodes:
            self.visit(child)

    def _constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, _CONSTANT_TYPES):
            self.fail(node, f"literal {node.value!r} is not allowed in a check")
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            digits = sum(c.isdigit() for c in repr(node.value).partition("e")[0])
            if digits > MAX_DIGITS:
                self.fail(node, f"number literal has {digits} digits (limit {MAX_DIGITS})")

    def _binop(self, node: ast.BinOp) -> None:
        if type(node.op) not in BINOPS:
            symbol = _REJECTED_BINOPS.get(type(node.op), type(node.op).__name__)
            self.fail(node, f"operator {symbol!r} is not allowed in a check")
        self.visit(node.left)
        self.visit(node.right)
        if isinstance(node.op, ast.Mult):
            self._repetition(node)

    def _repetition(self, node: ast.BinOp) -> None:
        """Bound ``sequence * count``: a literal count, small, and no repetition inside."""
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            if not _builds_sequence(seq):
                continue
            if not (isinstance(count, ast.Constant) and type(count.value) is int):
                self.fail(count, f"a repeated sequence needs a literal count, at most {MAX_REPEAT}")
            if count.value > MAX_REPEAT:
                self.fail(count, f"repeating a sequence {count.value} times (limit {MAX_REPEAT})")
            if any(_is_repetition(n) for n in ast.walk(seq)):
                self.fail(node, "a repeated sequence may not contain another repetition")
            return

    def _subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        index = node.slice
        if isinstance(index, ast.Slice):
            for part in (index.lower, index.upper, index.step):
                if part is not None:
                    self.visit(part)
            return
        if (
            isinstance(index, ast.Constant)
            and isinstance(index.value, str)
            and index.value.startswith("__")
        ):
            self.fail(index, f"index {index.value!r} is not allowed (names starting '__')")
        self.visit(index)

    def _compare(self, node: ast.Compare) -> None:
        self.visit(node.left)
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Is | ast.IsNot) and not (
                isinstance(right, ast.Constant) and right.value is None
            ):
                self.fail(right, "'is' and 'is not' are only allowed with None")
            self.visit(right)

    def _call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Name):
            self.fail(node, "only the functions len, min, max, sum, abs, any, all may be called")
        if node.func.id not in FUNCTIONS:
            allowed = ", ".join(FUNCTIONS)
            self.fail(node, f"function {node.func.id!r} is not allowed; allowed: {allowed}")
        if node.keywords:
            self.fail(node.keywords[0], "keyword arguments are not allowed in a check")
        low, high = _ARITY.get(node.func.id, (0, 50))
        if not low <= len(node.args) <= high:
            wanted = str(low) if low == high else f"{low} to {high}"
            self.fail(node, f"{node.func.id}() takes {wanted} arguments, not {len(node.args)}")
        if node.func.id == "sum" and len(node.args) == 2 and _builds_sequence(node.args[1]):
            self.fail(node.args[1], "sum() adds numbers; its start may not be a list or string")
        self.visit_all(node.args)


def _builds_sequence(node: ast.AST) -> bool:
    """True for a list, tuple or string literal, or ``+``/``*`` of one (a sequence for sure)."""
    if isinstance(node, ast.List | ast.Tuple):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        return _builds_sequence(node.left) or _builds_sequence(node.right)
    return False


def _is_repetition(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and (_builds_sequence(node.left) or _builds_sequence(node.right))
    )
