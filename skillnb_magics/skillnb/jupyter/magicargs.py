"""The typed pieces every SKILL.nb magic is declared with: fact kinds, arguments, markers (edge).

IPython's ``magic_arguments`` and magic markers are not annotated; these typed views keep mypy
strict in :mod:`skillnb.jupyter.magics` and :mod:`skillnb.jupyter.suggest.magics`, which both
declare their magics with them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from IPython.core import magic as _magic
from IPython.core import magic_arguments as _arguments

from skillnb.jupyter import commands

__all__ = [
    "FACT_KINDS",
    "argument",
    "cell_magic",
    "line_cell_magic",
    "line_magic",
    "magic_arguments",
    "no_var_expand",
    "parse_argstring",
]

FACT_KINDS = ("decision", "data", "constraint", "summary", "note")
"""The fact kinds (the same as :data:`skillnb.core.runstate.records.FACT_KINDS`, kept here so
loading the extension does not import the records)."""

_F = TypeVar("_F", bound=Callable[..., Any])


class _Decorator(Protocol):
    def __call__(self, fn: _F, /) -> _F: ...


# IPython's magic_arguments is not annotated; these typed views keep mypy strict here.
def magic_arguments() -> _Decorator:
    """Mark a magic whose arguments are declared with :func:`argument` (IPython's own)."""
    return _arguments.magic_arguments()  # type: ignore[no-untyped-call]


def argument(*args: Any, **kwargs: Any) -> _Decorator:
    """Declare one argument of a magic (IPython's ``magic_arguments.argument``)."""
    return _arguments.argument(*args, **kwargs)  # type: ignore[no-untyped-call]


# IPython annotates its markers as returning "the function or a decorator"; used bare, as
# here, they return the function.
cell_magic = cast("_Decorator", _magic.cell_magic)
no_var_expand = cast("_Decorator", _magic.no_var_expand)
line_magic = cast("_Decorator", _magic.line_magic)
line_cell_magic = cast("_Decorator", _magic.line_cell_magic)


def parse_argstring(magic: Callable[..., Any], line: str) -> argparse.Namespace:
    """Parse ``line`` for ``magic`` as shell words (quotes removed, as in a terminal).

    Raises:
        UsageError: an unknown option, a bad value or unbalanced quotes (shown short).

    """
    parser = magic.parser  # type: ignore[attr-defined]  # set by @magic_arguments
    return commands.parse_with(parser, line)
