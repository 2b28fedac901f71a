"""``skillnb runs`` and ``skillnb inbox``: many runs at once (edge layer).

``skillnb runs [FOLDER | --store URL]`` lists every run under a folder (sidecars and state
folders, recursively, never following links or entering hidden folders) or in a team store,
one line each: name, workflow, state, version, last change, waiting approvals, blocked
gates, batch progress. ``skillnb inbox`` lists the open approval requests and follow-ups of
those runs, oldest first, each with the commands that answer it. A run that cannot be read is
one ``?`` line with the reason; the listing goes on. With ``--json`` both print the models of
:mod:`skillnb.core.contract.listing`. Reading creates and changes nothing: sidecars are read
through :class:`~skillnb.store.readonly.ReadOnlyStore`, and a team store is never created or
migrated.

Without ``FOLDER`` or ``--store``, the runs are those of ``$SKILLNB_STORE`` when it is set,
else of the current folder.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError
from skillnb.core.contract.listing import InboxItem, RunRow
from skillnb.core.views.marks import mark

__all__ = ["add_commands", "inbox_lines", "row_line"]


def _reads(args: argparse.Namespace, *, waiting: bool) -> Iterator[Any]:
    from skillnb.service.listing import read_folder, read_store
    from skillnb.store.choose import store_from_env
    from skillnb.store.readonly import ReadOnlyStore

    folder: Path | None = args.folder
    url: str | None = args.store
    if folder is not None and url:
        raise UsageError("give a FOLDER or --store URL, not both")
    if folder is None and not url:
        url = store_from_env(os.environ)
    if url:
        return read_store(url, waiting=waiting)
    where = folder if folder is not None else Path()
    if not where.is_dir():
        raise UsageError(f"{where}: no such folder")
    return read_folder(where, guard=ReadOnlyStore)


def _changed(row: RunRow) -> str:
    return row.updated_at[:16].replace("T", " ") if row.updated_at else "-"


def row_line(row: RunRow) -> str:
    """One run as one line (``?`` and the reason for a run that could not be read)."""
    if row.problem is not None:
        return f"? {row.name}: {row.problem}"
    parts = [row.name]
    if row.workflow:
        parts.append(f"{row.workflow} @ {row.state}")
    parts.append(f"v{row.version}")
    parts.append(f"changed {_changed(row)}")
    if row.waiting:
        parts.append(f"{mark('waiting')} waiting: {', '.join(row.waiting)}")
    if row.follow_ups:
        parts.append(f"{row.follow_ups} follow-up{'s' if row.follow_ups > 1 else ''} open")
    if row.blocked:
        parts.append(f"{mark('blocked')} blocked: {', '.join(row.blocked)}")
    parts.extend(f"{b.name} {b.done}/{b.total}" for b in row.batches)
    return f"  {' · '.join(parts)}"


def inbox_lines(item: InboxItem) -> list[str]:
    """One open request or follow-up: what, where, who asked and since when, then commands."""
    what = "approve" if item.kind == "approval" else "follow up"
    since = item.since[:16].replace("T", " ") if item.since else "-"
    head = f"{mark('waiting')} {item.run} · {what} {item.gate}: {item.message}"
    asked = f"    asked by {item.asked_by or '-'} in state {item.state or '-'} since {since}"
    return [head, asked, *(f"    {command}" for command in item.commands)]


def _filters(args: argparse.Namespace) -> Any:
    from skillnb.service.listing import Filters, parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError:
        raise UsageError(
            f"--since {args.since!r}: give a date (2026-11-30), a time (2026-11-30T08:00) "
            "or an age (30m, 6h, 3d, 2w)"
        ) from None
    return Filters(state=args.state, workflow=args.workflow, waiting=args.waiting, since=since)


def runs_command(args: argparse.Namespace) -> int:
    """List the runs under a folder or in a team store."""
    from skillnb.service.listing import rows

    filters = _filters(args)
    found = rows(_reads(args, waiting=args.waiting), filters)
    if args.json:
        emit(json.dumps([row.model_dump(mode="json") for row in found], indent=2))
        return 0
    if not found:
        emit("no runs")
    for row in found:
        emit(row_line(row))
    return 0


def inbox_command(args: argparse.Namespace) -> int:
    """List the open approval requests and follow-ups, oldest first."""
    from skillnb.service.listing import inbox

    found = inbox(_reads(args, waiting=True), user=args.user or "NAME")
    if args.json:
        body = {
            "items": [item.model_dump(mode="json") for item in found.items],
            "problems": [row.model_dump(mode="json") for row in found.problems],
        }
        emit(json.dumps(body, indent=2))
        return 0
    if not found.items and not found.problems:
        emit("nothing waits")
    for item in found.items:
        for line in inbox_lines(item):
            emit(line)
    for row in found.problems:
        emit(row_line(row))
    return 0


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folder",
        nargs="?",
        type=Path,
        metavar="FOLDER",
        help="list the runs under this folder (default: $SKILLNB_STORE if set, else .)",
    )
    parser.add_argument("--store", metavar="URL", help="list the runs of a team store instead")
    parser.add_argument("--json", action="store_true", help="print them as JSON")


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``runs`` and ``inbox``."""
    runs = subparsers.add_parser(
        "runs",
        help="list the runs under a folder or in a team store",
        description="Every run under FOLDER (sidecars and state folders) or in a team store.",
    )
    _where(runs)
    runs.add_argument("--state", metavar="STATE", help="only runs in this state")
    runs.add_argument("--workflow", metavar="NAME", help="only runs of this workflow")
    runs.add_argument(
        "--waiting", action="store_true", help="only runs waiting for an approval or follow-up"
    )
    runs.add_argument("--since", metavar="WHEN", help="only runs changed since (date or 3d)")
    runs.set_defaults(handler=runs_command)

    inbox = subparsers.add_parser(
        "inbox",
        help="the approval requests and follow-ups waiting for a person",
        description="Open approval requests and follow-ups across runs, oldest first.",
    )
    _where(inbox)
    inbox.add_argument("--user", metavar="NAME", help="who decides (the commands' --by)")
    inbox.set_defaults(handler=inbox_command)
