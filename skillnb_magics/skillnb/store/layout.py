"""Where each file of a sidecar folder lives (store layer).

::

    .skillnb/<notebook-stem>/
        journal.jsonl        live append-only journal (see skillnb.store.journal)
        snapshot.json        compacted RunState
        compaction.json      present only while a compaction is in progress (or was cut short)
        lock                 inter-process writer lock (flock)
        segments/            archived journal lines, <first>-<last>.jsonl, zero-padded;
                             <first>-<last>.jsonl.gz once packed (see skillnb.store.packing)
        blobs/               content-addressed values, named by their sha256 hex digest
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

__all__ = ["Segment", "SidecarLayout", "sidecar_dir_for"]

_SEGMENT_NAME = re.compile(r"^(\d{12})-(\d{12})\.jsonl(\.gz)?$")


def sidecar_dir_for(notebook: Path) -> Path:
    """Return the sidecar folder of ``notebook``: ``<its folder>/.skillnb/<its stem>``."""
    notebook = Path(notebook)
    return notebook.parent / ".skillnb" / notebook.stem


class Segment(NamedTuple):
    """One archived journal file."""

    first: int
    """Sequence number of its first event."""
    last: int
    """Sequence number of its last event."""
    path: Path
    """The file."""

    @property
    def packed(self) -> bool:
        """True for a gzip-compressed segment (written by packing, never appended to)."""
        return self.path.name.endswith(".gz")


@dataclass(frozen=True)
class SidecarLayout:
    """The paths of one sidecar folder."""

    root: Path
    """The sidecar folder itself."""

    @property
    def journal(self) -> Path:
        """The live journal."""
        return self.root / "journal.jsonl"

    @property
    def snapshot(self) -> Path:
        """The compacted state."""
        return self.root / "snapshot.json"

    @property
    def intent(self) -> Path:
        """The record of a compaction in progress."""
        return self.root / "compaction.json"

    @property
    def lock(self) -> Path:
        """The lock file."""
        return self.root / "lock"

    @property
    def segments(self) -> Path:
        """The folder of archived journal lines."""
        return self.root / "segments"

    @property
    def blobs(self) -> Path:
        """The folder of content-addressed values."""
        return self.root / "blobs"

    def segment(self, first: int, last: int) -> Path:
        """Return the path of the segment holding events ``first`` to ``last``."""
        return self.segments / f"{first:012d}-{last:012d}.jsonl"

    def packed_segment(self, first: int, last: int) -> Path:
        """Return the path of the packed (gzip) segment holding events ``first`` to ``last``."""
        return self.segments / f"{first:012d}-{last:012d}.jsonl.gz"

    def list_segments(self) -> list[Segment]:
        """List the archived segments by first sequence number (other files are ignored)."""
        found: list[Segment] = []
        try:
            names = [p.name for p in self.segments.iterdir()]
        except FileNotFoundError:
            return found
        for name in names:
            match = _SEGMENT_NAME.match(name)
            if match:
                first, last = int(match[1]), int(match[2])
                found.append(Segment(first, last, self.segments / name))
        found.sort()
        return found
