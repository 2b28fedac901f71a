"""Packing a sidecar's archived segments into one gzip segment (store layer).

Compaction (:mod:`skillnb.store.sidecar.compaction`) moves the live journal's lines into plain
segments, one per compaction. Packing completes it for a run that is done growing (an
archived run, or one past its byte cap): every archived line, from event 1 up to the last
archived one, goes byte for byte (checksums kept) into a single
``segments/<first>-<last>.jsonl.gz``, and the segments it replaces are removed. History reads
packed segments like plain ones (:func:`~skillnb.store.sidecar.history.read_segment`).

Crash safety, with the writer lock held: the packed file is written atomically (temporary
file, fsync, rename, folder fsync) *before* any segment it replaces is removed, so a crash
leaves either the old segments, or the old ones and the packed one side by side; history
skips events it has already yielded, so the overlap duplicates nothing, and the next packing
removes it. Segments that do not form one gap-free chain from event 1 are left as they are.
"""

from __future__ import annotations

import gzip

from skillnb.store.durable import atomic_write, fsync_dir
from skillnb.store.sidecar.history import read_segment
from skillnb.store.sidecar.layout import Segment, SidecarLayout

__all__ = ["pack_segments"]


def _chain(segments: list[Segment]) -> list[Segment] | None:
    """The segments covering 1..N without gap, preferring the widest; ``None`` if broken."""
    chain: list[Segment] = []
    last = 0
    for segment in sorted(segments, key=lambda s: (s.first, -s.last)):
        if segment.last <= last:
            continue
        if segment.first != last + 1:
            return None
        chain.append(segment)
        last = segment.last
    return chain


def _raw(segment: Segment) -> bytes:
    data = segment.path.read_bytes()
    return gzip.decompress(data) if segment.packed else data


def pack_segments(layout: SidecarLayout) -> int:
    """Pack the archived segments into one; return how many files it replaced (0: nothing).

    The caller holds the store's lock.

    Raises:
        StoreCorrupted: a segment is damaged (each is checked before it is packed).

    """
    segments = layout.list_segments()
    chain = _chain(segments)
    if not chain or (len(segments) == 1 and chain[0].packed):
        return 0
    for segment in chain:
        read_segment(segment)  # checked: a damaged line is never packed into the archive
    target = layout.packed_segment(1, chain[-1].last)
    data = b"".join(_raw(s) for s in chain)
    atomic_write(target, gzip.compress(data, compresslevel=6, mtime=0), phase="pack")
    replaced = [s for s in segments if s.path != target and s.last <= chain[-1].last]
    for segment in replaced:
        segment.path.unlink(missing_ok=True)
    fsync_dir(layout.segments)
    return len(replaced)
