"""Reading a run's whole history: archived segments, then the live journal (store layer).

The live journal is read first. Whatever compaction replaces it afterwards, the segments then
listed cover every event before its base (a segment is written before the journal that
follows it), so a concurrent compaction can add overlap but never a gap. Overlap (a segment
left by a compaction that a crash cut short, or written meanwhile) is skipped by sequence
number, so no event is yielded twice.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Sequence

from skillnb.core.runstate.records import Event
from skillnb.errors import StoreCorrupted
from skillnb.store.durable import read_or_none
from skillnb.store.sidecar.journal import scan
from skillnb.store.sidecar.layout import Segment, SidecarLayout

__all__ = ["read_history", "read_segment"]


def read_segment(segment: Segment) -> Sequence[Event]:
    """Read the events of one archived segment, checked against its name.

    Raises:
        StoreCorrupted: a line is damaged or the events do not match ``first``..``last``.
        FileNotFoundError: the segment was removed meanwhile.

    """
    data = read_or_none(segment.path)
    if data is None:
        raise FileNotFoundError(segment.path)
    if segment.packed:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise StoreCorrupted(segment.path, f"packed segment is damaged: {exc}") from None
    found = scan(data, path=segment.path, next_seq=segment.first)
    if found.tail or not found.events or found.events[-1].seq != segment.last:
        last = found.events[-1].seq if found.events else segment.first - 1
        raise StoreCorrupted(
            segment.path,
            f"segment named for events {segment.first}..{segment.last} ends at {last}",
            line=found.lines + 1,
        )
    return found.events


def _archived(layout: SidecarLayout) -> Iterator[Event]:
    """Yield the archived events from version 1 on, skipping overlap, up to the first gap."""
    last = 0
    for segment in layout.list_segments():
        if segment.last <= last:
            continue
        if segment.first > last + 1:
            return
        try:
            events = read_segment(segment)
        except FileNotFoundError:
            continue  # abandoned by a writer recovering a compaction: its events are live
        for event in events:
            if event.seq > last:
                yield event
                last = event.seq


def read_history(layout: SidecarLayout) -> Iterator[Event]:
    """Yield every committed event from version 1, oldest first.

    Raises:
        StoreCorrupted: a file is damaged, or no segment holds some archived events.
        UnsafePath: a file or folder of the sidecar is a symlink.

    """
    journal = read_or_none(layout.journal) if layout.check_root() else None
    live = scan(journal or b"", path=layout.journal, header_allowed=True)
    last = 0
    for event in _archived(layout):
        yield event
        last = event.seq
    base = live.base or 0
    if base > last:
        raise StoreCorrupted(
            layout.segments, f"events {last + 1}..{base} are missing: no segment holds them"
        )
    for event in live.events:
        if event.seq > last:
            yield event
