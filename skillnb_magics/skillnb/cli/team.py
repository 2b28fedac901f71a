"""The team-store commands: ``db upgrade``, ``push`` and ``pull`` (edge layer).

``skillnb db upgrade URL`` creates or migrates the skillnb tables in a database.
``skillnb push NOTEBOOK --to URL [--name NAME]`` copies a notebook's sidecar run into the
database; ``skillnb pull NAME --from URL --to NOTEBOOK`` copies a database run into the
notebook's sidecar. Both keep the run id, the events and their numbers, and the blobs (see
:mod:`skillnb.store.transfer`), and refuse to overwrite a run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skillnb.cli.output import emit
from skillnb.cli.target import UsageError, clean, command_path

__all__ = ["add_commands"]


def _sidecar(notebook: Path, state_dir: Path | None, *, must_exist: bool) -> Path:
    from skillnb.store import sidecar_dir_for

    if state_dir is not None:
        return state_dir
    if must_exist and not notebook.is_file():
        raise UsageError(f"{notebook}: no such notebook")
    return sidecar_dir_for(notebook)


def _db_usage(_args: argparse.Namespace) -> int:
    raise UsageError("give an action: skillnb db upgrade URL")


def db_upgrade_command(args: argparse.Namespace) -> int:
    """Create or migrate the skillnb schema in the database at ``URL``."""
    from skillnb.store.postgres.schema import upgrade
    from skillnb.store.postgres.session import PgSession
    from skillnb.store.postgres.url import is_database_url, redact

    if not is_database_url(args.url):
        raise UsageError(f"{redact(args.url)!r} is not a postgresql:// URL")
    session = PgSession(args.url, check_schema=False)
    try:
        before, after = session.run(lambda conn: upgrade(conn, session.location))
    finally:
        session.close()
    if before == after:
        emit(f"{session.location}: skillnb schema already at version {after}")
    else:
        emit(f"{session.location}: skillnb schema upgraded from version {before} to {after}")
    return 0


def push_command(args: argparse.Namespace) -> int:
    """Copy a notebook's run into a team store."""
    from skillnb.store import SidecarStore
    from skillnb.store.choose import open_store
    from skillnb.store.transfer import copy_run

    folder = _sidecar(args.notebook, args.state_dir, must_exist=args.state_dir is None)
    name = args.name or args.notebook.as_posix()
    with SidecarStore(folder) as source:
        target = open_store(args.to, name)
        try:
            copied = copy_run(source, target)
        finally:
            target.close()
    emit(
        clean(
            f"pushed run {copied.run_id} ({copied.events} events, {copied.blobs} blobs) to "
            f"{target.location}"
        )
    )
    emit(f"open it with: skillnb status {command_path(name)} --store URL")
    return 0


def pull_command(args: argparse.Namespace) -> int:
    """Copy a team store's run into a notebook's sidecar."""
    from skillnb.store import SidecarStore
    from skillnb.store.choose import open_store
    from skillnb.store.transfer import copy_run

    folder = _sidecar(args.to, args.state_dir, must_exist=False)
    source = open_store(args.source, args.name)
    try:
        with SidecarStore(folder) as target:
            copied = copy_run(source, target)
    finally:
        source.close()
    emit(
        clean(
            f"pulled run {copied.run_id} ({copied.events} events, {copied.blobs} blobs) from "
            f"{source.location} into {folder}"
        )
    )
    return 0


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``db``, ``push`` and ``pull``."""
    db = subparsers.add_parser("db", help="manage a team store's database")
    db.set_defaults(handler=_db_usage)
    db_commands = db.add_subparsers(metavar="ACTION", dest="db_action")
    upgrade = db_commands.add_parser(
        "upgrade",
        help="create or migrate the skillnb tables",
        description="Create the skillnb schema in an empty database, or migrate an older one.",
    )
    upgrade.add_argument("url", metavar="URL", help="postgresql://user@host/db")
    upgrade.set_defaults(handler=db_upgrade_command)

    push = subparsers.add_parser(
        "push",
        help="copy a notebook's run into a team store",
        description="Copy the run (same id, events, numbers, blobs) into a database.",
    )
    push.add_argument("notebook", type=Path, metavar="NOTEBOOK")
    push.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host/db")
    push.add_argument("--name", metavar="NAME", help="the run's name there (default: NOTEBOOK)")
    push.add_argument("--state-dir", type=Path, metavar="DIR", help="push this folder's run")
    push.set_defaults(handler=push_command)

    pull = subparsers.add_parser(
        "pull",
        help="copy a team store's run into a notebook's sidecar",
        description="Copy the run (same id, events, numbers, blobs) into a sidecar.",
    )
    pull.add_argument("name", metavar="NAME", help="the run's name in the database")
    pull.add_argument("--from", dest="source", required=True, metavar="URL")
    pull.add_argument("--to", required=True, type=Path, metavar="NOTEBOOK")
    pull.add_argument("--state-dir", type=Path, metavar="DIR", help="pull into this folder")
    pull.set_defaults(handler=pull_command)
