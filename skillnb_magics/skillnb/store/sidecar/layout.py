"""Where each file of a sidecar folder lives (store layer).

::

    .skillnb/<notebook-stem>/
        journal.jsonl        live append-only journal (see skillnb.store.sidecar.journal)
        snapshot.json        compacted RunState
        compaction.json      present only while a compaction is in progress (or was cut short)
        lock                 inter-process writer lock (flock)
        segments/            archived journal lines, <first>-<last>.jsonl, zero-padded;
                             <first>-<last>.jsonl.gz once packed (see skillnb.store.sidecar.packing)
        blobs/               content-addressed values, named by their sha256 hex digest

Nothing in a sidecar may be a symlink: :meth:`SidecarLayout.check_root` checks the folder (and
``.skillnb/`` above it) with ``lstat``, :meth:`SidecarLayout.list_segments` the segments folder,
and every file is opened with ``O_NOFOLLOW`` (:mod:`skillnb.store.durable`). A notebook stem of
``..`` (``...ipynb``) would put the sidecar outside ``.skillnb/``: refused too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from skillnb.errors import UnsafePath
from skillnb.store.durable import check_dir

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
    """The paths of one sidecar folder (each built once: they are read on every write)."""

    root: Path
    """The sidecar folder itself."""

    @cached_property
    def guarded(self) -> int:
        """How many folder levels from :attr:`root` up belong to SKILL.nb (2 under ``.skillnb``)."""
        return 2 if self.root.parent.name == ".skillnb" else 1

    def check_root(self) -> bool:
        """Tell whether the sidecar folder exists, refusing symlinks and escaping names.

        Raises:
            UnsafePath: the folder, or ``.skillnb/`` above it, is a symlink or not a folder, or
                the folder is ``.skillnb/..`` (it would resolve outside ``.skillnb/``).

        """
        if self.guarded == 2 and self.root.name in (".", ".."):
            raise UnsafePath(self.root, "resolves outside the notebook's sidecar folder")
        if self.guarded == 2 and not check_dir(self.root.parent):
            return False
        return check_dir(self.root)

    @cached_property
    def journal(self) -> Path:
        """The live journal."""
        return self.root / "journal.jsonl"

    @cached_property
    def snapshot(self) -> Path:
        """The compacted state."""
        return self.root / "snapshot.json"

    @cached_property
    def intent(self) -> Path:
        """The record of a compaction in progress."""
        return self.root / "compaction.json"

    @cached_property
    def lock(self) -> Path:
        """The lock file."""
        return self.root / "lock"

    @cached_property
    def segments(self) -> Path:
        """The folder of archived journal lines."""
        return self.root / "segments"

    @cached_property
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
        """List the archived segments by first sequence number (other files are ignored).

        Raises:
            UnsafePath: ``segments/`` is a symlink or not a folder.

        """
        found: list[Segment] = []
        try:
            if not check_dir(self.segments):
                return found
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
