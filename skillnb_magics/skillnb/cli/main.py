"""The ``skillnb`` command: parse, dispatch, turn expected errors into one line (edge layer).

``main(argv) -> int`` never raises for an expected failure and never prints a traceback for
one: a :class:`~skillnb.errors.SkillnbError` becomes ``skillnb <command>: <message>`` on
standard error. Exit codes:

====  ==========================================================================
0     done
1     an error (a damaged sidecar, a refused approval, a cell that raised, ...)
2     bad input: arguments, a missing or malformed notebook, an invalid workflow or name,
      a symlink inside a sidecar
3     ``skillnb run`` stopped on a blocked gate or a pending approval
====  ==========================================================================
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from skillnb.cli import commands, definition, fork, headless, listing, move, recall_commands, team
from skillnb.cli.output import emit, fail
from skillnb.cli.target import UsageError, clean
from skillnb.core.limits import InvalidName
from skillnb.errors import SkillnbError, UnsafePath, WorkflowError
from skillnb.notebookfile.ipynb import NotANotebook

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "EXIT_WAITING", "build_parser", "main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_WAITING = headless.EXIT_WAITING


class _ParserExit(Exception):
    """argparse wanted to exit (``--help``, a bad argument): carry the code out of ``main``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An argument parser that writes through :mod:`skillnb.cli.output` and never exits."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if not message:
            return
        write = fail if file is sys.stderr else emit
        write(message.rstrip("\n"))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            fail(message.rstrip("\n"))
        raise _ParserExit(status)

    def error(self, message: str) -> NoReturn:
        fail(self.format_usage().rstrip("\n"))
        fail(f"{self.prog}: error: {message}")
        raise _ParserExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """Return the ``skillnb`` argument parser with every subcommand."""
    parser = _Parser(
        prog="skillnb",
        description="Durable, gated notebook workflows: inspect runs, approve gates, run headless.",
    )
    subparsers = parser.add_subparsers(metavar="COMMAND", dest="command")
    commands.add_commands(subparsers)
    headless.add_commands(subparsers)
    fork.add_commands(subparsers)
    move.add_commands(subparsers)
    definition.add_commands(subparsers)
    team.add_commands(subparsers)
    recall_commands.add_commands(subparsers)
    listing.add_commands(subparsers)
    return parser


def _one_line(command: str | None, exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return clean(f"skillnb {command}: {text}" if command else f"skillnb: {text}")


def _quiet_stdout() -> None:
    """Point standard output at the null device, so the exit flush raises nothing more."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (captured output): nothing to do
        return


def _dispatch(args: argparse.Namespace) -> int:
    handler: Any = getattr(args, "handler", None)
    if handler is None:
        fail("skillnb: give a command (skillnb --help lists them)")
        return EXIT_USAGE
    return int(handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skillnb`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except _ParserExit as exc:
        return exc.status
    command = getattr(args, "command", None)
    try:
        return _dispatch(args)
    except (UsageError, WorkflowError, UnsafePath, InvalidName, NotANotebook) as exc:
        fail(_one_line(command, exc))
        return EXIT_USAGE
    except RecursionError:  # input nested deeper than any reader guards against
        fail(f"skillnb {command}: the input is nested too deeply to read")
        return EXIT_USAGE
    except SkillnbError as exc:
        fail(_one_line(command, exc))
        return EXIT_ERROR
    except BrokenPipeError:  # `skillnb history NB | head -1`: the reader has what it wanted
        _quiet_stdout()
        return EXIT_OK
    except OSError as exc:  # permissions, a full disk: expected outside the program's control
        fail(_one_line(command, exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        fail(f"skillnb {command}: interrupted")
        return 130
