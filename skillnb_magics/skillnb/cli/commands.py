"""The ``skillnb`` commands that read or change a run: status, facts, approve, ... (edge layer).

Each handler takes the parsed arguments, makes one call on the :class:`~skillnb.run.Run` and
prints through :mod:`skillnb.cli.output`; it returns the exit code. Expected failures are
raised as :class:`~skillnb.errors.SkillnbError` and turned into one line by
:func:`skillnb.cli.main.main`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.render import facts_lines, follow_up_lines, history_lines, status_lines
from skillnb.cli.target import (
    UsageError,
    add_target,
    clean,
    command_path,
    open_target,
    store_url,
    target_folder,
)
from skillnb.core.runstate.describe import describe_event
from skillnb.errors import SkillnbError

__all__ = ["add_commands"]


def _json(data: Any) -> None:
    emit(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def _target_name(args: argparse.Namespace) -> str:
    url = store_url(args)
    if url is not None:
        from skillnb.store.postgres.url import redact

        return f"{command_path(args.notebook.as_posix())} --store {command_path(redact(url))}"
    if args.notebook is not None:
        return command_path(args.notebook)
    return f"--state-dir {command_path(args.state_dir)}"


def status_command(args: argparse.Namespace) -> int:
    """Print the run at a glance (``--json``: :meth:`Run.describe`'s dictionary)."""
    with open_target(args) as run:
        view = run.describe()
        stale = run.gates.stale()
    if args.json:
        _json(view)
    else:
        for line in status_lines(view, target=_target_name(args)):
            emit(line)
        for gate in stale:  # a fact changed after the gate passed: say so, nothing fires
            emit(clean(f"⚠ gate no longer holds: {gate.line()}"))
    return 0


def summary_command(args: argparse.Namespace) -> int:
    """Print the LLM-ready Markdown summary."""
    if args.max_chars < 200:
        raise UsageError("--max-chars must be at least 200")
    with open_target(args) as run:
        emit(clean(run.summary(max_chars=args.max_chars)).rstrip("\n"))
    return 0


def facts_command(args: argparse.Namespace) -> int:
    """Print each fact's latest version (``--json``: with its stored value)."""
    with open_target(args) as run:
        if args.json:
            state = run.journal.refresh()
            _json([f.model_dump(mode="json") for f in state.facts.values()])
        else:
            for line in facts_lines(run.describe()):
                emit(line)
    return 0


def history_command(args: argparse.Namespace) -> int:
    """Print the ``-n`` most recent events, oldest first."""
    if args.n < 1:
        raise UsageError("-n must be at least 1")
    with open_target(args) as run:
        recent = run.history(args.n)
    events = [
        {
            "seq": e.seq,
            "type": e.type,
            "at": e.at.isoformat(),
            "summary": describe_event(e),
            "data": e.data,
        }
        for e in recent
    ]
    if args.json:
        _json(events)
    else:
        for line in history_lines(events):
            emit(line)
    return 0


def compact_command(args: argparse.Namespace) -> int:
    """Write a snapshot so that opening the run replays only what comes after."""
    with open_target(args) as run:
        run.compact()
        emit(f"compacted run {run.id} at version {run.version}")
    return 0


def repair_command(args: argparse.Namespace) -> int:
    """Repair a damaged sidecar, keeping every valid event and the damaged files aside."""
    from skillnb.store.folders.repair import repair

    report = repair(target_folder(args))
    for line in str(report).splitlines():
        emit(clean(line))
    return 0


def _decide(args: argparse.Namespace, status: str) -> int:
    with open_target(args) as run:
        decide = run.approve if status == "approved" else run.reject
        approval = decide(args.gate, by=args.by, note=args.note, request=args.request)
    emit(
        f"{status} {clean(approval.gate)} (request {clean(approval.id)}) by "
        f"{clean(approval.decided_by)}"
    )
    if args.notebook is not None and store_url(args) is None:
        emit(f"continue with: skillnb run {command_path(args.notebook)}")
    return 0


def follow_ups_command(args: argparse.Namespace) -> int:
    """List the open follow-ups that warning gates left (``--json``: the view's rows)."""
    view = open_target(args).describe()
    if args.json:
        _json(view["follow_ups"])
    else:
        for line in follow_up_lines(view, target=_target_name(args)):
            emit(line)
    return 0


def resolve_command(args: argparse.Namespace) -> int:
    """Resolve a follow-up (by its id, or by its gate when that gate has one open)."""
    follow_up = open_target(args).resolve_follow_up(args.follow_up, by=args.by, note=args.note)
    emit(
        f"resolved follow-up {clean(follow_up.id)} of {clean(follow_up.gate)} by "
        f"{clean(follow_up.resolved_by)}"
    )
    return 0


def approve_command(args: argparse.Namespace) -> int:
    """Approve the open request of an approval gate."""
    return _decide(args, "approved")


def reject_command(args: argparse.Namespace) -> int:
    """Reject the open request of an approval gate."""
    return _decide(args, "rejected")


def _refuse_copy(notebook: Path) -> None:
    """Refuse to rebuild a copy's outputs into a second sidecar of the original's run.

    Raises:
        SkillnbError: ``notebook`` is a copy of a notebook that holds the run it names.

    """
    from skillnb.notebookfile.identity import copy_of

    copied = copy_of(notebook)
    if copied is None:
        return
    raise SkillnbError(
        clean(
            f"{notebook} is a copy of {copied.original_as(notebook)} (run {copied.run_id}), "
            f"whose sidecar holds that run: nothing was rebuilt. {copied.commands(notebook)}"
        )
    )


def rebuild_command(args: argparse.Namespace) -> int:
    """Rebuild the run from the notebook's saved outputs and metadata mirror."""
    from skillnb.notebookfile.rebuild import rebuild_run

    notebook: Path = args.notebook
    if not notebook.is_file():
        raise UsageError(f"{notebook}: no such notebook")
    if args.state_dir is None:
        _refuse_copy(notebook)
    with rebuild_run(notebook, state_dir=args.state_dir, workflow=args.workflow) as run:
        rebuilt = next((e for e in reversed(run.history(5)) if e.type == "run.rebuilt"), None)
        data = rebuilt.data if rebuilt is not None else {}
        emit(
            f"rebuilt run {run.id} at version {run.version} in {run.store.location}: "
            f"{data.get('replayed', 0)} events replayed, {data.get('skipped', 0)} skipped, "
            f"{len(data.get('preview_only', []))} preview-only facts"
        )
    return 0


def memory_command(args: argparse.Namespace) -> int:
    """Print a skill's memory as the Markdown an LLM reads at the start of a session."""
    from skillnb.skillmemory import SkillMemory

    try:
        memory = SkillMemory(args.skill)
    except ValueError as exc:
        raise UsageError(f"skill name {args.skill!r}: {exc}") from exc
    emit(clean(memory.to_prompt_summary()).rstrip("\n"))
    return 0


def _run_parser(
    subparsers: argparse._SubParsersAction[Any], name: str, help_: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_, description=help_)
    add_target(parser)
    return parser


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register the run commands on the ``skillnb`` command's subparsers."""
    status = _run_parser(subparsers, "status", "show the run at a glance")
    status.add_argument("--json", action="store_true", help="print describe() as JSON")
    status.set_defaults(handler=status_command)

    summary = _run_parser(subparsers, "summary", "print the LLM-ready Markdown summary")
    summary.add_argument("--max-chars", type=int, default=4000, metavar="N")
    summary.set_defaults(handler=summary_command)

    history = _run_parser(subparsers, "history", "list the most recent events")
    history.add_argument("-n", type=int, default=20, metavar="N", help="how many (default 20)")
    history.add_argument("--json", action="store_true", help="print the events as JSON")
    history.set_defaults(handler=history_command)

    facts = _run_parser(subparsers, "facts", "list the facts and their versions")
    facts.add_argument("--json", action="store_true", help="print the facts (stored form) as JSON")
    facts.set_defaults(handler=facts_command)

    compact = _run_parser(subparsers, "compact", "snapshot the run so it opens fast")
    compact.set_defaults(handler=compact_command)

    repair = _run_parser(subparsers, "repair", "repair a damaged sidecar (keeps every valid event)")
    repair.set_defaults(handler=repair_command)

    for name, handler in (("approve", approve_command), ("reject", reject_command)):
        decide = _run_parser(subparsers, name, f"{name} the open request of an approval gate")
        decide.add_argument("gate", metavar="GATE", help="the approval gate's name")
        decide.add_argument("--by", required=True, metavar="NAME", help="who decides")
        decide.add_argument("--note", metavar="TEXT", help="a note kept with the decision")
        decide.add_argument(
            "--request", metavar="ID", help="the request id (refused unless it is the open one)"
        )
        decide.set_defaults(handler=handler)

    follow_ups = _run_parser(subparsers, "follow-ups", "list the open follow-ups of warning gates")
    follow_ups.add_argument("--json", action="store_true", help="print them as JSON")
    follow_ups.set_defaults(handler=follow_ups_command)

    resolve = _run_parser(subparsers, "resolve", "resolve a follow-up a warning gate left")
    resolve.add_argument("follow_up", metavar="ID", help="the follow-up's id (or its gate's name)")
    resolve.add_argument("--by", required=True, metavar="NAME", help="who resolves it")
    resolve.add_argument("--note", metavar="TEXT", help="a note kept with the resolution")
    resolve.set_defaults(handler=resolve_command)

    rebuild = subparsers.add_parser(
        "rebuild",
        help="rebuild a lost sidecar from the notebook's saved outputs",
        description="Rebuild the run from the notebook alone; never overwrites a sidecar.",
    )
    rebuild.add_argument("notebook", type=Path, metavar="NOTEBOOK")
    rebuild.add_argument("--state-dir", type=Path, metavar="DIR", help="where to write it")
    rebuild.add_argument("--workflow", type=Path, metavar="FILE", help="a workflow YAML to bind")
    rebuild.set_defaults(handler=rebuild_command)

    memory = subparsers.add_parser(
        "memory", help="print a skill's memory", description="Print a skill's memory summary."
    )
    memory.add_argument("skill", metavar="SKILL", help="the skill's name")
    memory.set_defaults(handler=memory_command)
