"""Running a magic's cell body in the shell and catching its value (edge layer).

The body of ``%%formalize`` and ``%%gate`` runs inside the magic's own cell, not as a nested
``shell.run_cell``: :func:`prepare` applies IPython's input transforms once (the magic reads
the result too: does the body end with an expression, which names does it read), and
:func:`execute` parses it once with the shell's compiler, applies the shell's AST
transformers and runs the statements with the shell's ``run_ast_nodes`` (a body run again
is not parsed and compiled again: see :mod:`skillnb.jupyter.cells.code`). So the body
behaves as any cell: the last expression goes through the display hook (``_``, ``Out``)
unless the body ends with ``;``, an error is shown once with a traceback whose line numbers
are those of the user's cell (``Cell In[N], line L``), ``%tb`` and ``%debug`` see it.

The value of a ``%%formalize`` cell is its last expression (assigned to a private name,
then shown as usual unless muted), or a variable it set (``--var``), or what it printed
(``--stdout``). A body that needs an event loop (top-level ``await``) still runs through a
nested ``shell.run_cell``, which knows how to run one.
"""

from __future__ import annotations

import ast
import functools
import io
import sys
from types import SimpleNamespace
from typing import IO, Any

from skillnb.errors import SkillnbError
from skillnb.jupyter.cells import code as cellcode
from skillnb.jupyter.cells import transform as celltransform

__all__ = ["Body", "NoValue", "ends_with_expression", "execute", "prepare", "transform"]

_VALUE = "_skillnb_cell_value_"
_MISSING = object()
_UNKNOWN = object()
_MUTED: dict[str, bool] = {}
"""Whether a body (transformed) ends with ``;``, by its text (it is tokenized once)."""
_CACHED = 256
"""Entries each of those caches keeps (the oldest goes first)."""


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
        # Each new node takes the expression's place (no walk over the whole tree to fix them).
        target = ast.copy_location(ast.Name(id=_VALUE, ctx=ast.Store()), last)
        assign = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        node.body[-1] = assign
        if self.show:
            name = ast.copy_location(ast.Name(id=_VALUE, ctx=ast.Load()), last)
            node.body.append(ast.copy_location(ast.Expr(value=name), last))
        return node


def _leading_blank(text: str) -> int:
    count = 0
    for line in text.splitlines():
        if line.strip():
            break
        count += 1
    return count


def _above(source: str, body: str) -> str:
    """The lines of the magic's cell above ``body`` (the ``%%`` line), or ``""`` if unsure.

    IPython drops blank lines before the ``%%`` line and passes the rest as the body.
    """
    lines = source.splitlines(keepends=True)
    first = _leading_blank(source)
    if first >= len(lines) or not lines[first].startswith("%%"):
        return ""
    rest = "".join(lines[first + 1 :])
    if rest.rstrip("\n") != body.rstrip("\n"):
        return ""  # called some other way (run_cell_magic from code): number from the body
    return "".join(lines[: first + 1])


@functools.lru_cache(maxsize=_CACHED)  # pure: a cell run again is not measured again
def _layout(source: str, raw: str, code: str) -> tuple[int, str]:
    """Lines of the user's cell above the body's first transformed line, and the text shown.

    The text shown in tracebacks is the cell's lines above the body, then blank lines for
    those the transforms dropped, then the transformed body.
    """
    above = _above(source, raw) if source else ""
    skipped = max(_leading_blank(raw) - _leading_blank(code), 0)  # dropped by the transforms
    return above.count("\n") + skipped, above + "\n" * skipped + code


class Body:
    """A magic's cell body, transformed once; :func:`execute` runs it.

    Args:
        shell: the IPython shell.
        raw: the body (the cell without its magic line).
        source: the whole cell as the user wrote it (so line numbers match it); empty when
            unknown (line numbers then count from the body's first line).

    """

    def __init__(self, shell: Any, raw: str, source: str = "") -> None:
        self.shell = shell
        self.raw = raw
        self.failed: tuple[type[BaseException], BaseException, Any] | None = None
        """The input transforms raised (IPython shows this as the cell's error)."""
        try:
            self.code: str = transform(shell, raw)
        except Exception as exc:  # noqa: BLE001  # shown when the body runs, as IPython does
            self.code = raw
            self.failed = (type(exc), exc, exc.__traceback__)
        self.offset, self._shown_text = _layout(source, raw, self.code)
        """Lines of the user's cell above the body's first transformed line."""
        self._name: str | None = None
        self._tree: ast.Module | None = None
        self._error: BaseException | None = None
        self._muted: bool | None = None
        self._cached: cellcode.Parsed | object | None = _UNKNOWN

    @property
    def name(self) -> str:
        """The body's file name for the compiler and tracebacks (cached in ``linecache``)."""
        if self._name is None:
            result = getattr(self.shell.displayhook, "exec_result", None)
            number = getattr(result, "execution_count", None) or self.shell.execution_count
            self._name = self.shell.compile.cache(self._shown_text, number, raw_code=self.raw)
        return self._name

    def parse(self) -> ast.Module:
        """The body's syntax tree, line numbers as in the user's cell (parsed once).

        Raises:
            SyntaxError: the body does not parse (the same error on every call).

        """
        if self._error is not None:
            raise self._error
        if self._tree is None:
            try:
                self._tree = self.shell.compile.ast_parse(self.padded, filename=self.name)
            except (SyntaxError, ValueError, OverflowError, MemoryError, TypeError) as exc:
                self._error = exc
                raise
        assert self._tree is not None  # noqa: S101  # set just above
        return self._tree

    @property
    def padded(self) -> str:
        """The transformed body below as many blank lines as the cell has above it."""
        return "\n" * self.offset + self.code

    def cached(self) -> cellcode.Parsed | None:
        """What this body's text gave before (parsed now the first time), or ``None``.

        ``None`` when it may not be cached, or does not parse (see
        :mod:`skillnb.jupyter.cells.code`). Asked once per body: nothing of the user's runs
        between the magic's look at its body and the run.
        """
        if self._cached is _UNKNOWN:
            self._cached = self._look_up()
        return self._cached  # type: ignore[return-value]  # _UNKNOWN replaced just above

    def _look_up(self) -> cellcode.Parsed | None:
        if self.failed is not None or self.needs_loop():
            return None
        try:
            return cellcode.parsed(self.shell, self.padded, self.parse)
        except (SyntaxError, ValueError, OverflowError, MemoryError, TypeError):
            return None

    def ends_with_expression(self) -> bool | None:
        """Whether the body ends with an expression; ``None`` when it does not parse."""
        known = self.cached()
        if known is not None:
            return known.ends_with_expression
        try:
            tree = self.parse()
        except (SyntaxError, ValueError, OverflowError, MemoryError, TypeError):
            return None
        return bool(tree.body) and isinstance(tree.body[-1], ast.Expr)

    @property
    def muted(self) -> bool:
        """The body ends with ``;``: its last expression is not shown."""
        if self._muted is None:
            self._muted = _MUTED.get(self.code)
        if self._muted is None:
            try:
                ends = self.shell.displayhook.semicolon_at_end_of_expression(self.code)
            except Exception:  # noqa: BLE001  # untokenizable: it will not run either
                ends = False
            self._muted = bool(ends)
            if len(_MUTED) >= _CACHED:
                _MUTED.pop(next(iter(_MUTED)))
            _MUTED[self.code] = self._muted
        return self._muted

    def needs_loop(self) -> bool:
        """The body awaits at top level, so it needs IPython's coroutine runner."""
        if "await" not in self.code and "async" not in self.code:
            return False
        return bool(self.shell.should_run_async(self.raw, transformed_cell=self.code))


def transform(shell: Any, raw: str) -> str:
    """``shell.transform_cell(raw)``, the static part cached per body text.

    IPython's static transforms (``%magic``, ``!cmd``, ``?``, cleanup of prompts) depend only
    on the text, so a cell run again is not transformed again (unless a transform that is
    not IPython's own is installed: then every time); the dynamic part (prefiltering a
    one-line cell, which may look at the namespace) and ``input_transformers_post`` run
    every time, as in :meth:`~IPython.core.interactiveshell.InteractiveShell.transform_cell`.
    """
    cell = celltransform.static(shell, raw)
    if cell is None:
        return str(shell.transform_cell(raw))
    if len(cell.splitlines()) == 1:
        with shell.builtin_trap:
            cell = shell.prefilter_manager.prefilter_lines(cell) + "\n"
    if shell.input_transformers_post:
        lines = cell.splitlines(keepends=True)
        for post in shell.input_transformers_post:
            lines = post(lines)
        cell = "".join(lines)
    return cell


def prepare(shell: Any, body: str, source: str = "") -> Body:
    """Transform ``body`` once (see :class:`Body`)."""
    return Body(shell, body, source)


def ends_with_expression(shell: Any, body: str) -> bool | None:
    """Whether ``body`` (after IPython's input transforms) ends with an expression.

    ``None`` when it does not parse (running it will show the syntax error).
    """
    return prepare(shell, body).ends_with_expression()


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


def _run_sync(coroutine: Any) -> Any:
    """Drive a coroutine that never suspends (IPython's run of code that awaits nothing)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the cell body awaited outside an event loop")


def _statements(
    shell: Any, body: Body, transformer: _CaptureLast | None
) -> tuple[list[ast.stmt], Any] | BaseException:
    """The statements of ``body`` to run and the compiler to run them with, or the error shown.

    A body run before with the same text and capture comes from :mod:`cellcode`, parsed and
    compiled already.
    """
    known = body.cached()
    capture = "none" if transformer is None else "show" if transformer.show else "hide"
    compiled = known.captures.get(capture) if known is not None else None
    if compiled is None:
        try:
            tree = body.parse()
        except IndentationError as exc:
            shell.showindentationerror()
            return exc
        except (SyntaxError, ValueError, OverflowError, MemoryError, TypeError) as exc:
            shell.showsyntaxerror()
            return exc
        from IPython.core.error import InputRejected

        try:
            tree = shell.transform_ast(tree)
        except InputRejected as exc:
            shell.showtraceback()
            return exc
        if transformer is not None:
            tree = transformer.visit(tree)
        if known is None:
            return tree.body, shell.compile
        compiled = known.captures[capture] = cellcode.Compiled(tree.body)
    return compiled.statements(), cellcode.compiler_for(shell, compiled)


def _run(shell: Any, body: Body, transformer: _CaptureLast | None) -> BaseException | None:
    """Run ``body`` as the shell runs a cell's statements; the error it showed, if any."""
    if body.failed is not None:
        shell.showtraceback(body.failed)
        return body.failed[1]
    found = _statements(shell, body, transformer)
    if isinstance(found, BaseException):
        return found
    statements, compiler = found
    muted = body.muted
    interactivity = "none" if muted else shell.ast_node_interactivity
    outcome = SimpleNamespace(error_before_exec=None, error_in_exec=None)
    with shell.builtin_trap, shell.display_trap:  # already set inside a cell: nested, cheap
        _run_sync(
            shell.run_ast_nodes(
                statements,
                body.name,
                interactivity=interactivity,
                compiler=compiler,
                result=outcome,
            )
        )
    error: BaseException | None = outcome.error_before_exec or outcome.error_in_exec
    return error


def _run_nested(shell: Any, body: Body, transformer: _CaptureLast | None) -> Any:
    """Run ``body`` through a nested ``shell.run_cell`` (a body that needs an event loop)."""
    if transformer is not None:
        shell.ast_transformers.append(transformer)
    try:
        result = shell.run_cell(body.raw, store_history=False)
    finally:
        if transformer is not None:
            shell.ast_transformers.remove(transformer)
    return result.error_before_exec or result.error_in_exec


def execute(
    shell: Any, body: Body | str, *, capture: str | None = None, var: str | None = None
) -> Any:
    """Run ``body`` in the current cell and return what it gives.

    A :class:`Body` is run once (its syntax tree is used up).

    Args:
        shell: the IPython shell.
        body: the cell's code (without the magic line), or the prepared :class:`Body`.
        capture: ``"last"`` for the last expression's value, ``"stdout"`` for what it
            printed, ``None`` for nothing (a gated cell).
        var: return this variable of the user namespace instead.

    Returns:
        The value (``None`` when nothing is captured).

    Raises:
        BaseException: whatever the cell raised, after the shell has shown it.
        NoValue: ``var`` was not set by the cell.

    """
    if isinstance(body, str):
        body = prepare(shell, body)
    catch = capture == "last" and var is None
    transformer = _CaptureLast(show=not body.muted) if catch else None
    shell.user_ns.pop(_VALUE, None)
    tee = _Tee(sys.stdout) if capture == "stdout" else None
    if tee is not None:
        sys.stdout = tee
    try:  # no context manager: a body run without capture pays for none
        if body.needs_loop():
            error = _run_nested(shell, body, transformer)
        else:
            error = _run(shell, body, transformer)
    finally:
        if tee is not None:
            sys.stdout = tee.stream
    if error is not None:
        raise error
    if var is not None:
        value = shell.user_ns.get(var, _MISSING)
        if value is _MISSING:
            raise NoValue(f"the cell did not set {var!r}; nothing was recorded")
        return value
    if tee is not None:
        return tee.copy.getvalue()
    return shell.user_ns.pop(_VALUE, None) if catch else None
