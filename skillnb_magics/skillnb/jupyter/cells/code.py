"""Magic bodies parsed and compiled once per text (edge layer).

A ``%%formalize`` or ``%%gate`` cell run again (Run All, a loop of cells) holds the same
body: :mod:`skillnb.jupyter.cells.execute` asks here for its statements and their code objects
instead of parsing and compiling it every time. The shell's ``run_ast_nodes`` still runs
them (display hook, ``;``, errors, ``%tb``), through a compiler that answers from this cache
and renames each code object (and the functions and classes it holds) to the cell's own file
name, so tracebacks name ``Cell In[N]`` of the run that raised, at the user's line numbers.

Only what depends on nothing but the text is kept: a body is cached only while the shell has
no AST transformers of the user's (they may look at more than the text), per compiler flags
(``from __future__`` imports of earlier cells) and ``autoawait``; a body that imports from
``__future__`` itself is compiled every time (it changes the flags it is compiled with).
"""

from __future__ import annotations

import ast
import functools
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

__all__ = ["Compiled", "Parsed", "compiler_for", "parsed"]

_CACHED = 256
"""Bodies kept (the oldest goes first)."""


@dataclass
class Compiled:
    """The statements of one body after the capture transform, and their code objects."""

    nodes: list[ast.stmt]
    codes: dict[tuple[int, str], tuple[CodeType, str]] = field(default_factory=dict)
    """By statement index and mode (``exec``/``single``): the code and its file name."""
    index: dict[int, int] = field(init=False, repr=False, compare=False)
    """Each statement's index, by the statement's id (the nodes are kept, so ids hold)."""

    def __post_init__(self) -> None:
        self.index = {id(node): i for i, node in enumerate(self.nodes)}

    def statements(self) -> list[ast.stmt]:
        """The statements to run (a new list: ``run_ast_nodes`` may append to it)."""
        return list(self.nodes)


@dataclass
class Parsed:
    """What one body's text gives, whatever the run: its end, and each capture's statements."""

    ends_with_expression: bool
    captures: dict[str, Compiled] = field(default_factory=dict)
    """By capture of the last expression: ``none``, ``show`` (shown too) or ``hide`` (muted)."""


_PARSED: dict[tuple[str, int, bool], Parsed] = {}


def _key(shell: Any, padded: str) -> tuple[str, int, bool] | None:
    """What compiling ``padded`` depends on, or ``None``: do not cache."""
    if shell.ast_transformers or "__future__" in padded or not _stock_ast(shell):
        return None
    flags = getattr(shell.compile, "flags", None)
    if not isinstance(flags, int) or not hasattr(shell.compile, "extra_flags"):
        return None  # not IPython's caching compiler: compile as the shell does
    return padded, flags, bool(shell.autoawait)


def _stock_ast(shell: Any) -> bool:
    """The shell transforms syntax trees as IPython does (with ``ast_transformers`` only)."""
    return getattr(shell.transform_ast, "__func__", None) is _stock_transform_ast()


@functools.cache
def _stock_transform_ast() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.transform_ast


def parsed(shell: Any, padded: str, tree: Any) -> Parsed | None:
    """The cached facts of ``padded`` (parsed by ``tree()`` the first time), or ``None``.

    ``None`` when the body may not be cached (see the module docstring).
    """
    key = _key(shell, padded)
    if key is None:
        return None
    found = _PARSED.get(key)
    if found is None:
        module: ast.Module = tree()
        found = Parsed(bool(module.body) and isinstance(module.body[-1], ast.Expr))
        if len(_PARSED) >= _CACHED:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = found
    return found


def renamed(code: CodeType, filename: str) -> CodeType:
    """``code`` and every code object inside it, with file name ``filename``."""
    consts = tuple(
        renamed(const, filename) if isinstance(const, CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


class _Compiler:
    """The shell's compiler for ``run_ast_nodes``, answering from ``compiled`` when it can.

    ``run_ast_nodes`` compiles each statement inside ``compiler.extra_flags(flags)``; the flags
    only matter to a compilation, so they are applied around one (a statement answered from
    the cache does not set and reset the shell compiler's flags).
    """

    def __init__(self, compile_: Any, compiled: Compiled) -> None:
        self._compile = compile_
        self._compiled = compiled
        self.flags = 0
        """The extra flags a statement compiled now gets (set by :meth:`extra_flags`)."""

    def extra_flags(self, flags: int) -> AbstractContextManager[Any]:
        """The shell compiler's extra flags (top-level ``await``), for the statement compiled."""
        return _Flags(self, flags)

    def _compiled_now(self, mod: Any, filename: str, mode: str) -> CodeType:
        with self._compile.extra_flags(self.flags):
            return self._compile(mod, filename, mode)  # type: ignore[no-any-return]

    def __call__(self, mod: Any, filename: str, mode: str) -> CodeType:
        """Compile ``mod`` (one statement), or rename the code it gave before."""
        body = getattr(mod, "body", None)
        index = (
            self._compiled.index.get(id(body[0]))
            if isinstance(body, list) and len(body) == 1
            else None
        )
        if index is None:
            return self._compiled_now(mod, filename, mode)
        found = self._compiled.codes.get((index, mode))
        if found is None:
            code = self._compiled_now(mod, filename, mode)
            self._compiled.codes[(index, mode)] = (code, filename)
            return code
        code, named = found
        return code if named == filename else renamed(code, filename)


class _Flags:
    """The extra flags of the statements compiled inside (see :class:`_Compiler`)."""

    def __init__(self, compiler: _Compiler, flags: int) -> None:
        self._compiler = compiler
        self._flags = flags

    def __enter__(self) -> None:
        self._outer = self._compiler.flags
        self._compiler.flags = self._flags

    def __exit__(self, *_exc: object) -> None:
        self._compiler.flags = self._outer


def compiler_for(shell: Any, compiled: Compiled) -> _Compiler:
    """A compiler for the shell's ``run_ast_nodes`` that fills and reads ``compiled``."""
    return _Compiler(shell.compile, compiled)
