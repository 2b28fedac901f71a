"""``skillnb archive`` and ``skillnb recall``: a skill's long-term memory (edge layer).

``skillnb archive NOTEBOOK [--force]`` files a finished run into its skill's archive and
recall index and leaves the sidecar small (:meth:`~skillnb.run.Run.archive`);
``skillnb recall SKILL QUERY... [-k N] [--state STATE] [--json]`` prints the items of the
skill's archived runs most relevant to the query, each naming its run, state and date.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError, add_target, clean, open_target

__all__ = ["add_commands"]


def archive_command(args: argparse.Namespace) -> int:
    """Archive the run; print what was filed and how the sidecar shrank."""
    report = open_target(args).archive(force=args.force)
    before, after = report.sidecar_bytes
    emit(f"archived run {report.run_id} into skill {report.skill}: {report.items} items filed")
    emit(f"record: {report.record}")
    emit(f"sidecar: {before:,} → {after:,} bytes")
    return 0


def recall_command(args: argparse.Namespace) -> int:
    """Print the recalled items, best first (``--json``: their fields)."""
    from skillnb.memory.recall import RecallIndex

    if args.k < 1:
        raise UsageError("-k must be at least 1")
    try:
        index = RecallIndex(args.skill)
    except ValueError as exc:
        raise UsageError(f"skill name {args.skill!r}: {exc}") from exc
    found = index.recall(" ".join(args.query), args.k, state=args.state)
    if args.json:
        emit(json.dumps([r.to_dict() for r in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        emit(f"nothing recalled from skill {args.skill}")
    for item in found:
        emit(clean(f"{item.score:.2f} {item.line()}"))
    return 0


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``archive`` and ``recall`` on the ``skillnb`` command's subparsers."""
    archive = subparsers.add_parser(
        "archive",
        help="file a finished run in its skill's archive and shrink its sidecar",
        description="File a finished run's facts, key events and summary in its skill's "
        "archive and recall index, then compact and pack its sidecar.",
    )
    add_target(archive)
    archive.add_argument("--force", action="store_true", help="archive an unfinished run too")
    archive.set_defaults(handler=archive_command)

    recall = subparsers.add_parser(
        "recall",
        help="recall what a skill's archived runs recorded",
        description="Print the archived items most relevant to QUERY, best first.",
    )
    recall.add_argument("skill", metavar="SKILL", help="the skill's name")
    recall.add_argument("query", nargs="+", metavar="QUERY", help="what to look for")
    recall.add_argument("-k", type=int, default=5, metavar="N", help="how many (default 5)")
    recall.add_argument("--state", metavar="STATE", help="prefer items recorded in this state")
    recall.add_argument("--json", action="store_true", help="print the items as JSON")
    recall.set_defaults(handler=recall_command)
