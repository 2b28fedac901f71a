"""``skillnb validate`` and ``skillnb graph``: commands on workflow definition files (edge layer).

``validate FILE`` prints ``ok: <name> (N states, M transitions, K gates)`` and exits 0, or
prints every problem as ``file:line:col: problem`` and exits 2. A valid definition that
declares profiles or has gates that bend (``bypass_in``, ``on_timeout``, ``follow_up``,
``action``) is followed by one line each saying what they do. ``graph FILE`` prints the
state machine as Mermaid (default) or Graphviz DOT text. Output goes through
:mod:`skillnb.cli.output` only.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit, fail
from skillnb.core.gates.evaluate import DEFAULT_PROFILE, GateSpec
from skillnb.core.workflow.graph import to_dot, to_mermaid
from skillnb.core.workflow.model import Workflow, try_load
from skillnb.errors import WorkflowError

__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "add_commands",
    "explain_bending",
    "graph_command",
    "validate_command",
]

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
    for line in explain_bending(workflow):
        emit(line)
    return EXIT_OK


def explain_bending(workflow: Workflow) -> list[str]:
    """Say, one line each, what the profiles and the gates that bend of ``workflow`` do."""
    lines = []
    if workflow.profiles:
        names = ", ".join((DEFAULT_PROFILE, *workflow.profiles))
        lines.append(f"profiles: {names} (open_run(profile=...), $SKILLNB_PROFILE, --profile)")
    for name, spec in workflow.gates.items():
        lines += [f"  gate {name}: {what}" for what in _bends(workflow, name, spec)]
    return lines


def _bends(workflow: Workflow, name: str, spec: GateSpec) -> list[str]:
    out = []
    if spec.bypass_in:
        out.append(
            f"not evaluated in profile {', '.join(spec.bypass_in)} (each bypass is recorded)"
        )
    if spec.escalate is not None:
        out.append(f"on timeout, asks a person instead of failing: {spec.escalate!r}")
    if spec.fallback is not None:
        guarded = [t.trigger for t in workflow.transitions if name in t.gates]
        out.append(f"on timeout, fires {spec.fallback!r} instead of {', '.join(guarded)}")
    if spec.follow_up is not None:
        out.append(f"when it warns, opens a follow-up: {spec.follow_up!r}")
    if spec.action is not None:
        out.append(f"when it warns, runs {spec.action!r} after the transition")
    return out


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
