"""``skillnb validate`` and ``skillnb graph``: commands on workflow definition files (edge layer).

``validate FILE`` prints ``ok: <name> (N states, M transitions, K gates)`` and exits 0, or
prints every problem as ``file:line:col: problem`` and exits 2. ``graph FILE`` prints the
state machine as Mermaid (default) or Graphviz DOT text. Output goes through
:mod:`skillnb.cli.output` only.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit, fail
from skillnb.core.graph import to_dot, to_mermaid
from skillnb.core.workflow import try_load
from skillnb.errors import WorkflowError

__all__ = ["EXIT_INVALID", "EXIT_OK", "add_commands", "graph_command", "validate_command"]

EXIT_OK = 0
"""The definition is valid (and the graph was printed)."""
EXIT_INVALID = 2
"""The definition is invalid or unreadable."""


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``validate`` and ``graph`` on the ``skillnb`` command's subparsers."""
    check = subparsers.add_parser(
        "validate",
        help="check a workflow definition file",
        description="Check a workflow definition (YAML) and list every problem with its line.",
    )
    check.add_argument("file", type=Path, metavar="FILE", help="the workflow YAML file")
    check.set_defaults(handler=validate_command)

    graph = subparsers.add_parser(
        "graph",
        help="print a workflow's state machine as Mermaid or DOT text",
        description="Print the state machine of a workflow definition as a diagram.",
    )
    graph.add_argument("file", type=Path, metavar="FILE", help="the workflow YAML file")
    graph.add_argument(
        "--format", choices=("mermaid", "dot"), default="mermaid", help="diagram language"
    )
    graph.add_argument("--current", metavar="STATE", help="a state to highlight")
    graph.set_defaults(handler=graph_command)


def _report(errors: list[WorkflowError]) -> int:
    for error in errors:
        fail(str(error))
    count = len(errors)
    fail(f"{count} problem{'s' if count != 1 else ''} found")
    return EXIT_INVALID


def validate_command(args: argparse.Namespace) -> int:
    """Check ``args.file``; print ``ok: ...`` or every problem.

    Returns:
        :data:`EXIT_OK` when valid, :data:`EXIT_INVALID` otherwise.

    """
    path: Path = args.file
    workflow, errors = try_load(path)
    if workflow is None:
        return _report(errors)
    emit(
        f"ok: {workflow.name} ({len(workflow.states)} states, "
        f"{len(workflow.transitions)} transitions, {len(workflow.gates)} gates)"
    )
    return EXIT_OK


def graph_command(args: argparse.Namespace) -> int:
    """Print the diagram of ``args.file`` in ``args.format``.

    Returns:
        :data:`EXIT_OK`, or :data:`EXIT_INVALID` when the definition is invalid.

    """
    path: Path = args.file
    workflow, errors = try_load(path)
    if workflow is None:
        return _report(errors)
    current = getattr(args, "current", None)
    if current is not None and current not in workflow.states:
        fail(f"{path}: --current {current!r} is not a state of {workflow.name!r}")
        return EXIT_INVALID
    render = to_dot if args.format == "dot" else to_mermaid
    emit(render(workflow, current=current))
    return EXIT_OK
