"""Finding the sidecar runs under a folder, and reading one without writing (store layer).

:func:`find_runs` walks a folder tree for runs: each notebook's sidecar
(``.skillnb/<stem>/`` beside it, found even when the notebook was moved away) and each
explicit state folder (a folder holding a ``journal.jsonl`` or ``snapshot.json``). It never
follows a symbolic link, enters no hidden folder other than the ``.skillnb`` folders
themselves, and does not look inside a run's folder. A folder it may not list is yielded as a
:class:`Found` with ``problem`` set, and the walk goes on.

:func:`read_state` folds a run's snapshot and journal through a store that refuses every
write, so reading creates no file, no folder and no lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import Event, RunState
from skillnb.core.views.listing import LISTING_TYPES, fold_listing

if TYPE_CHECKING:
    from skillnb.store.protocol import Store

__all__ = ["SIDECARS", "Found", "find_runs", "read_state"]

SIDECARS = ".skillnb"
"""The folder beside notebooks that holds their sidecars."""

_RUN_FILES = ("journal.jsonl", "snapshot.json")
_FOLDED = frozenset((*LISTING_TYPES, "batch.item_done"))
"""The events a row is folded from: facts and steps, most of a journal, are left out."""


@dataclass(frozen=True)
class Found:
    """A run's folder found by :func:`find_runs`, or a folder that could not be listed."""

    folder: Path
    """The run's folder (sidecar or state folder), or the folder that could not be listed."""
    kind: Literal["notebook", "state_dir", "unlisted"]
    notebook: Path | None = None
    """For a sidecar: the notebook it belongs to (which may be gone)."""
    problem: str | None = None


def _is_run_folder(names: set[str]) -> bool:
    return any(name in names for name in _RUN_FILES)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as listing:
        return sorted(listing, key=lambda entry: entry.name)


def _sidecars(folder: Path) -> Iterator[Found]:
    """The sidecars inside ``folder/.skillnb``."""
    box = folder / SIDECARS
    try:
        entries = _entries(box)
    except OSError as exc:
        yield Found(box, "unlisted", problem=_reason(exc))
        return
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        yield Found(Path(entry.path), "notebook", notebook=folder / f"{entry.name}.ipynb")


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def find_runs(root: Path) -> Iterator[Found]:
    """Every run under ``root``, in path order (``root`` itself may be a state folder)."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = _entries(folder)
        except OSError as exc:
            yield Found(folder, "unlisted", problem=_reason(exc))
            continue
        names = {entry.name for entry in entries}
        if folder != root and _is_run_folder(names):
            yield Found(folder, "state_dir")
            continue
        if _is_run_folder(names):  # the folder given is a state folder itself
            yield Found(folder, "state_dir")
            continue
        below: list[Path] = []
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.name == SIDECARS:
                yield from _sidecars(folder)
            elif not entry.name.startswith("."):
                below.append(Path(entry.path))
        pending.extend(reversed(below))


def _listed_events(events: Sequence[Event]) -> Iterator[Event]:
    """The events of ``events`` a listing row depends on (built only for those)."""
    if isinstance(events, EventRecords):
        types = events.types
        return (events[i] for i in range(len(events)) if types[i] in _FOLDED)
    return (e for e in events if e.type in _FOLDED)


def read_state(folder: Path, guard: Callable[[Store], Store] | None = None) -> RunState:
    """The listing state of the run in ``folder``: its snapshot and its journal's row events.

    Facts, steps and claims written after the snapshot are not folded (a row shows none of
    them); the state's version and time are the journal's last event's.

    A healthy sidecar is read by :func:`skillnb.store.sidecar.quickread.quick_read` (only the row's
    events are built); any other through the store, which says what is wrong. Loading a
    sidecar never writes; ``guard`` wraps the store before it is read (the edges
    pass :class:`skillnb.store.readonly.ReadOnlyStore`, which refuses every write).

    Raises:
        StoreCorrupted: a damaged journal or snapshot.
        UnsafePath: a symbolic link inside the folder.
        OSError: a file that may not be read.
        LookupError: the folder holds no committed run.

    """
    from skillnb.store.sidecar.quickread import quick_read
    from skillnb.store.sidecar.store import SidecarStore

    quick = quick_read(folder, _FOLDED)
    if quick is not None:
        state = quick.snapshot if quick.snapshot is not None else RunState(run_id="")
        if quick.head is not None:
            fold_listing(state, quick.events, quick.head, quick.at)
        if state.version == 0:
            raise LookupError("no committed run here yet")
        return state
    with SidecarStore(folder) as sidecar:
        store: Store = guard(sidecar) if guard is not None else sidecar
        loaded = store.load()
        state = loaded.snapshot if loaded.snapshot is not None else RunState(run_id="")
        events = loaded.events
        if events:
            last = events[-1]
            fold_listing(state, _listed_events(events), last.seq, last.at)
    if state.version == 0:
        raise LookupError("no committed run here yet")
    return state
