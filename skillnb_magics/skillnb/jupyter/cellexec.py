"""Running a magic's cell body through the shell and catching its value (edge layer).

The body runs with ``shell.run_cell``, so its output, display, history variables and error
display behave as in any cell. The value of a ``%%formalize`` cell is its last expression,
caught by an AST transformer added to the shell for the duration of the run (the expression
is assigned to a private name, then shown as usual unless the cell ends with ``;``), or a
variable it set (``--var``), or what it printed (``--stdout``).
"""

from __future__ import annotations

import ast
import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from skillnb.errors import SkillnbError

__all__ = ["NoValue", "ends_with_expression", "execute"]

_VALUE = "_skillnb_cell_value_"
_MISSING = object()


class NoValue(SkillnbError):
    """The cell gave nothing to record (no last expression, or ``--var`` not set)."""


class _CaptureLast(ast.NodeTransformer):
    """Assign the cell's final expression to a private name (then show it, unless muted)."""

    def __init__(self, show: bool) -> None:
        self.show = show

    def visit_Module(self, node: ast.Module) -> ast.Module:
        if not node.body or not isinstance(node.body[-1], ast.Expr):
            return node
        last = node.body[-1]
        target = ast.Name(id=_VALUE, ctx=ast.Store())
        assign = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        node.body[-1] = assign
        if self.show:
            shown = ast.Expr(value=ast.Name(id=_VALUE, ctx=ast.Load()))
            node.body.append(ast.copy_location(shown, last))
        ast.fix_missing_locations(node)
        return node


def ends_with_expression(shell: Any, body: str) -> bool | None:
    """Whether ``body`` (after IPython's input transforms) ends with an expression.

    ``None`` when it does not parse (running it will show the syntax error).
    """
    try:
        tree = ast.parse(shell.transform_cell(body))
    except SyntaxError:
        return None
    return bool(tree.body) and isinstance(tree.body[-1], ast.Expr)


class _Tee(io.TextIOBase):
    """Write to the original stream and keep a copy."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the wrapped stream's encoding
        return str(getattr(self.stream, "encoding", None) or "utf-8")


@contextmanager
def _tee_stdout(enabled: bool) -> Iterator[_Tee | None]:
    if not enabled:
        yield None
        return
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        yield tee
    finally:
        sys.stdout = tee.stream


@contextmanager
def _transformer(shell: Any, transformer: ast.NodeTransformer | None) -> Iterator[None]:
    if transformer is None:
        yield
        return
    shell.ast_transformers.append(transformer)
    try:
        yield
    finally:
        shell.ast_transformers.remove(transformer)


def execute(shell: Any, body: str, *, capture: str | None = None, var: str | None = None) -> Any:
    """Run ``body`` as a cell and return what it gives.

    Args:
        shell: the IPython shell.
        body: the cell's code (without the magic line).
        capture: ``"last"`` for the last expression's value, ``"stdout"`` for what it
            printed, ``None`` for nothing (a gated cell).
        var: return this variable of the user namespace instead.

    Returns:
        The value (``None`` when nothing is captured).

    Raises:
        BaseException: whatever the cell raised, after the shell has shown it.
        NoValue: ``var`` was not set by the cell.

    """
    muted = shell.displayhook.semicolon_at_end_of_expression(body)
    transformer = _CaptureLast(show=not muted) if capture == "last" and var is None else None
    shell.user_ns.pop(_VALUE, None)
    with _transformer(shell, transformer), _tee_stdout(capture == "stdout") as tee:
        result = shell.run_cell(body, store_history=False)
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        raise error
    if var is not None:
        value = shell.user_ns.get(var, _MISSING)
        if value is _MISSING:
            raise NoValue(f"the cell did not set {var!r}; nothing was recorded")
        return value
    if tee is not None:
        return tee.copy.getvalue()
    return shell.user_ns.pop(_VALUE, None) if transformer is not None else None
