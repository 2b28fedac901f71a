"""What the drafts of an append become: its events and journal lines (store layer).

An append commits at the version after the one it expects, or not at all, so its events and
their lines can be made before the writer lock is taken: the sidecar store then only compares
versions and writes under it.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillnb.core.runstate.eventrecords import event_from_draft, event_from_record
from skillnb.core.runstate.records import CHECKED_DRAFTS, RECORD_VERSION, Event, EventDraft
from skillnb.store.sidecar.journal import encode_events, encode_one

__all__ = ["created_run", "encoded", "events_after"]


def events_after(events: Sequence[Event], version: int) -> Sequence[Event]:
    """The events of ``events`` (numbered one after the other) with ``seq > version``."""
    skip = version - events[0].seq + 1 if events else 0
    return events[skip:] if skip > 0 else events


def created_run(drafts: Sequence[EventDraft]) -> str | None:
    """The run id a ``run.created`` draft among ``drafts`` announces, if any."""
    for d in drafts:
        run_id = d.data.get("run_id") if d.type == "run.created" else None
        if isinstance(run_id, str) and run_id:
            return run_id
    return None


def encoded(drafts: Sequence[EventDraft], after: int) -> tuple[list[Event], bytes]:
    """The events ``drafts`` become after version ``after``, and their journal lines.

    Made before the writer lock is taken: an append commits at ``after + 1`` or not at all.
    One checked draft (every fact write makes one) is encoded in one step.

    Raises:
        EventRejected: a draft the journal cannot hold.

    """
    if len(drafts) == 1 and type(draft := drafts[0]) in CHECKED_DRAFTS:
        line = encode_one(after + 1, draft)  # type: ignore[arg-type]  # a checked draft
        if line is not None:  # the event event_from_draft makes of a checked draft
            fields = {"v": RECORD_VERSION, "seq": after + 1, "type": draft.type, "at": draft.at}
            fields["data"] = {**draft.data}
            return [event_from_record(fields)], line
    checked = [type(d) in CHECKED_DRAFTS for d in drafts]
    events = [
        event_from_draft(after + i, d, c)
        for i, (d, c) in enumerate(zip(drafts, checked, strict=True), 1)
    ]
    return events, encode_events(events, checked) if events else b""
