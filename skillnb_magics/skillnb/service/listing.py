"""Many runs at once: the rows of ``skillnb runs`` and the items of the inbox (service layer).

:func:`read_folder` reads every run under a folder (sidecars and state folders, see
:mod:`skillnb.store.folders.discover`), :func:`read_store` every run of a team store (or only those
that may wait, through the store's index of open requests, see
:mod:`skillnb.store.postgres.listing`). Both yield one :class:`Read` per run, and one per place that
could not be read (a damaged journal, a folder or file the user may not read, an unreachable
store) with its ``problem``: a listing never ends early. :func:`rows` and :func:`inbox` turn
reads into the shapes of :mod:`skillnb.core.contract.listing`; :class:`Filters` selects rows.
Nothing here writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from skillnb.core.contract.listing import InboxItem, RunRow
from skillnb.core.views.listing import Listed, inbox_items, problem_row, run_row
from skillnb.errors import SkillnbError

if TYPE_CHECKING:
    from skillnb.core.runstate.records import RunState
    from skillnb.store.folders.discover import Found
    from skillnb.store.protocol import Store

__all__ = ["Filters", "Read", "inbox", "parse_since", "read_folder", "read_store", "rows"]


@dataclass
class Read:
    """One run read for a listing, or a place that could not be read (``problem``)."""

    listed: Listed
    state: RunState | None = None
    done: dict[str, int] | None = None
    """Completed items per batch, when the state was folded without completions."""
    problem: str | None = None


@dataclass(frozen=True)
class Filters:
    """Which rows a listing keeps (rows that could not be read are always kept)."""

    state: str | None = None
    workflow: str | None = None
    waiting: bool = False
    """Only runs with a pending approval or an open follow-up."""
    since: datetime | None = None
    """Only runs changed at or after this time."""

    def keep(self, row: RunRow) -> bool:
        """Whether ``row`` passes every filter."""
        if row.problem is not None:
            return True
        if self.state is not None and row.state != self.state:
            return False
        if self.workflow is not None and row.workflow != self.workflow:
            return False
        if self.waiting and not (row.waiting or row.follow_ups):
            return False
        if self.since is not None:
            changed = datetime.fromisoformat(row.updated_at) if row.updated_at else None
            return changed is not None and changed >= self.since
        return True


_AGO = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A time from ``2026-11-30``, ``2026-11-30T08:00`` (UTC unless it says) or ``3d`` ago.

    Raises:
        ValueError: neither form.

    """
    ago = _AGO.match(text.strip())
    if ago:
        delta = timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
        return (now or datetime.now(UTC)) - delta
    when = datetime.fromisoformat(text.strip())
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, PermissionError):
        return f"not allowed to read ({exc.strerror or 'permission denied'})"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__


def _listed(found: Found, root: Path, shown: Path) -> Listed:
    if found.kind == "notebook" and found.notebook is not None:
        rel = found.notebook.relative_to(root).as_posix()
        if found.notebook.is_file():
            return Listed(rel, "folder", (str(shown / rel),))
        sidecar = found.folder.relative_to(root).as_posix()
        return Listed(rel, "folder", (), ("--state-dir", str(shown / sidecar)))
    rel = found.folder.relative_to(root).as_posix()
    if found.kind == "unlisted":
        return Listed(rel if rel != "." else str(shown), "folder", ())
    name = rel if rel != "." else str(shown)
    target = str(shown / rel) if rel != "." else str(shown)
    return Listed(name, "folder", (), ("--state-dir", target))


def read_folder(
    root: Path, *, shown: Path | None = None, guard: Callable[[Store], Store] | None = None
) -> Iterator[Read]:
    """Every run under ``root``, in path order.

    Args:
        root: the folder to walk.
        shown: the folder as the listing names it in commands (default ``root``).
        guard: wraps each store before it is read (a read-only store, from the edges).

    """
    from skillnb.store.folders.discover import find_runs, read_state

    for found in find_runs(root):
        listed = _listed(found, root, shown if shown is not None else root)
        if found.problem is not None:
            yield Read(listed, problem=f"not listed: {found.problem}")
            continue
        try:
            state = read_state(found.folder, guard)
        except (SkillnbError, OSError, LookupError, ValueError, RecursionError) as exc:
            yield Read(listed, problem=_reason(exc))
            continue
        yield Read(listed, state)


def read_store(url: str, *, waiting: bool = False, shown_url: str | None = None) -> Iterator[Read]:
    """Every run of the team store at ``url`` (``waiting``: those that may wait for a person).

    Args:
        url: a ``postgresql://`` URL.
        waiting: read only the runs the store's index of open requests names.
        shown_url: how commands name the store (default: the URL, password redacted).

    """
    from skillnb.store.postgres.listing import StoreListing
    from skillnb.store.postgres.url import redact

    where = shown_url if shown_url is not None else redact(url)
    listing: StoreListing | None = None
    try:
        listing = StoreListing(url)
        names = listing.names(waiting=waiting)
        reads = list(listing.read(names)) if names else []
    except SkillnbError as exc:
        yield Read(Listed(redact(url), "store", ()), problem=_reason(exc))
        return
    finally:
        if listing is not None:
            listing.close()
    for found in reads:
        listed = Listed(found.name, "store", (found.name,), ("--store", where))
        if found.problem is not None or found.state is None:
            yield Read(listed, problem=found.problem or "unreadable")
            continue
        found.state.version = found.version
        found.state.updated_at = found.updated_at
        yield Read(listed, found.state, done=found.done)


def _row(read: Read) -> RunRow:
    if read.state is None:
        return problem_row(read.listed, read.problem or "unreadable")
    state = read.state
    return run_row(read.listed, state, state.version, state.updated_at, read.done)


def rows(reads: Iterable[Read], filters: Filters | None = None) -> list[RunRow]:
    """The listing rows of ``reads`` that pass ``filters``, by name."""
    keep = (filters or Filters()).keep
    return sorted((row for row in map(_row, reads) if keep(row)), key=lambda row: row.name)


@dataclass
class Inbox:
    """What waits (oldest first) and the places that could not be read."""

    items: list[InboxItem] = field(default_factory=list)
    problems: list[RunRow] = field(default_factory=list)


def inbox(reads: Iterable[Read], user: str = "NAME") -> Inbox:
    """The open approval requests and follow-ups of ``reads``, oldest first."""
    found = Inbox()
    for read in reads:
        if read.state is None:
            found.problems.append(_row(read))
            continue
        found.items.extend(inbox_items(read.listed, read.state, user))
    found.items.sort(key=lambda item: item.since or "")
    return found
