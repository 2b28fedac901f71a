"""Moving a run between stores without losing anything (store layer).

``skillnb push`` copies a notebook's sidecar run into a team database and ``skillnb pull``
copies a database run into a sidecar. :func:`copy_run` keeps the run exactly: the same run
id (it is in the ``run.created`` event), the same events with the same sequence numbers,
times and payloads (a sidecar's journal lines and the database's ``line`` column hold the same
text), and every blob the events refer to. The target must hold no run; the events go in one
append, so a failure leaves the target empty, never half a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from skillnb.core.runstate.records import Event, EventDraft
from skillnb.errors import SkillnbError, StoreCorrupted
from skillnb.store.protocol import Store

__all__ = ["Copied", "blob_refs", "copy_run"]

_REF = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Copied:
    """What :func:`copy_run` moved."""

    run_id: str
    """The run's id (unchanged)."""
    events: int
    """How many events (the target's version afterwards)."""
    blobs: int
    """How many blobs the events refer to."""


def blob_refs(value: object) -> Iterator[str]:
    """Every blob reference (``sha256:<64 hex>``) in a JSON value, in order of appearance."""
    if isinstance(value, str):
        if _REF.fullmatch(value):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from blob_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from blob_refs(item)


def _run_id(events: list[Event]) -> str:
    for event in events:
        if event.type == "run.created":
            return str(event.data.get("run_id", ""))
    return ""


def copy_run(source: Store, target: Store) -> Copied:
    """Copy every event and referenced blob of ``source``'s run into the empty ``target``.

    Raises:
        SkillnbError: ``source`` holds no run, or ``target`` already holds one.
        StoreCorrupted: a source file or blob is damaged (nothing is written to ``target``).

    """
    events = list(source.history())
    if not events:
        raise SkillnbError(f"{source.location}: no run to copy")
    gaps = [e.seq for i, e in enumerate(events, start=1) if e.seq != i]
    if gaps:
        raise StoreCorrupted(source.location, f"event numbers jump at {gaps[0]}")
    refs = list(dict.fromkeys(ref for e in events for ref in blob_refs(e.data)))
    blobs: list[bytes] = []
    for ref in refs:
        try:
            blobs.append(source.get_blob(ref))
        except KeyError:
            continue  # a string that only looks like a reference, or a blob never stored
    with target.lock():
        if target.exists():
            raise SkillnbError(
                f"{target.location} already holds a run; copy to another name or place"
            )
        for data in blobs:
            target.put_blob(data)
        drafts = [EventDraft(type=e.type, at=e.at, data=e.data) for e in events]
        target.append(drafts, expected_version=0)
    return Copied(run_id=_run_id(events), events=len(events), blobs=len(blobs))
