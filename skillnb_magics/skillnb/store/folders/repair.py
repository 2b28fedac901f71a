"""Repairing a damaged sidecar while keeping every valid event (store layer).

:func:`repair` takes the writer lock and checks each line-oriented file (archived segments,
then the live journal) line by line, independently of its neighbours. A file with damage is
kept aside under a new name (``journal.jsonl.damaged-<UTC time>``; nothing is ever deleted)
and rewritten with:

* every line that validates, in order;
* for each sequence number that no valid line holds (its line was damaged), a placeholder
  event of type :data:`LOST_EVENT_TYPE` naming the kept copy and the damaged lines, so the
  journal stays gap-free and the loss stays visible in the history;
* without a trailing unfinished append or torn fragment (never acknowledged to a writer) and
  without lines repeating a sequence number already kept;
* for the live journal: with a header naming the run, and reaching at least the snapshot's
  version (events no file holds any more become placeholders), so a journal emptied or cut
  beside a snapshot opens again.

A file that is not a SKILL.nb journal at all (``[1,2,3]``, plain text) is kept aside the same
way and the journal restarts empty after the archived events.

A ``snapshot.json`` that cannot be read is moved aside (the snapshot is an optimisation: the
run is rebuilt from the history), as is a compaction record that does not match the journal.
A file written by a newer skillnb is not damage: repair raises
:class:`~skillnb.store.migrations.NewerFormatError` and changes nothing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from skillnb.core.runstate.records import Event
from skillnb.errors import StoreCorrupted
from skillnb.store.durable import (
    aside_path,
    atomic_write,
    check_file,
    fsync_dir,
    read_file,
    sweep_temp_files,
)
from skillnb.store.sidecar.compaction import recover
from skillnb.store.sidecar.journal import (
    BadLine,
    JournalHeader,
    encode_events,
    encode_header,
    looks_like_journal,
    parse_line,
)
from skillnb.store.sidecar.layout import SidecarLayout
from skillnb.store.sidecar.names import names_problem
from skillnb.store.sidecar.snapshot import read_snapshot
from skillnb.store.sidecar.store import SidecarStore
from skillnb.store.sidecar.tail import JournalTail

__all__ = ["LOST_EVENT_TYPE", "FileRepair", "RepairReport", "repair"]

LOST_EVENT_TYPE = "store.lost"
"""Type of the placeholder events that stand for events whose lines were damaged."""


@dataclass(frozen=True)
class FileRepair:
    """What :func:`repair` did to one file."""

    path: Path
    """The file, now rewritten clean."""
    moved_to: Path
    """Where the damaged original is kept."""
    kept: int
    """Valid events kept."""
    damaged_lines: tuple[int, ...]
    """1-based lines that did not validate (a torn last line included)."""
    lost: tuple[int, ...]
    """Sequence numbers no valid line held, now placeholder events."""
    dropped_lines: tuple[int, ...]
    """Valid lines left out: an unfinished last append, or a sequence number already kept."""


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair` found and did."""

    path: Path
    """The sidecar folder."""
    files: tuple[FileRepair, ...] = ()
    """The journal and segment files rewritten."""
    moved_aside: tuple[Path, ...] = ()
    """Unreadable files moved aside whole (snapshot, compaction record)."""

    @property
    def changed(self) -> bool:
        """True when anything was rewritten or moved."""
        return bool(self.files or self.moved_aside)

    def __str__(self) -> str:
        if not self.changed:
            return f"{self.path}: nothing to repair"
        lines = [f"{self.path}: repaired"]
        for f in self.files:
            lines.append(
                f"  {f.path.name}: kept {f.kept} events, {len(f.damaged_lines)} damaged lines, "
                f"{len(f.lost)} events lost, {len(f.dropped_lines)} lines dropped; "
                f"original kept as {f.moved_to.name}"
            )
        lines.extend(f"  moved aside: {p.name}" for p in self.moved_aside)
        return "\n".join(lines)


@dataclass
class _Salvage:
    """Events rescued from one file, line by line."""

    base: int | None = None
    run_id: str | None = None
    fragment: tuple[int, ...] = ()
    events: list[Event] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    damaged: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    open_group: list[int] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.damaged or self.dropped or self.open_group)

    def keep_within(self, first: int, last: int | None) -> None:
        """Drop events outside ``first``..``last`` (a segment's name says which it holds)."""
        kept = [
            (n, e)
            for n, e in zip(self.numbers, self.events, strict=True)
            if e.seq >= first and (last is None or e.seq <= last)
        ]
        inside = {n for n, _ in kept}
        self.dropped = sorted([*self.dropped, *(n for n in self.numbers if n not in inside)])
        self.numbers = [n for n, _ in kept]
        self.events = [e for _, e in kept]


def _salvage(data: bytes, path: Path, *, header_allowed: bool) -> _Salvage:
    found = _Salvage()
    lines = data.split(b"\n")
    fragment = lines.pop()  # b"" when the file ends with a newline
    for number, raw in enumerate(lines, start=1):
        try:
            item, more = parse_line(raw, path=path, line=number)
        except BadLine:
            found.damaged.append(number)
            continue
        if not isinstance(item, JournalHeader) and names_problem(item) is not None:
            found.damaged.append(number)  # a name the reader refuses: damage, kept aside
            continue
        if isinstance(item, JournalHeader):
            if header_allowed and number == 1:
                found.base, found.run_id = item.base, item.run_id
            else:
                found.damaged.append(number)
            continue
        if found.events and item.seq <= found.events[-1].seq:
            found.dropped.append(number)
            continue
        found.events.append(item)
        found.numbers.append(number)
        found.open_group = [*found.open_group, number] if more else []
    if found.open_group:  # an append cut short at the end: never acknowledged
        del found.events[-len(found.open_group) :], found.numbers[-len(found.open_group) :]
    if fragment:
        _salvage_fragment(found, fragment, path, len(lines) + 1, header_allowed=header_allowed)
    return found


def _salvage_fragment(
    found: _Salvage, fragment: bytes, path: Path, number: int, *, header_allowed: bool
) -> None:
    """Read a last line that lacks its newline.

    A header is still read; anything else was never acknowledged and is dropped (it stays in
    the copy set aside).
    """
    found.fragment = (number,)
    try:
        item, _ = parse_line(fragment, path=path, line=number)
    except BadLine:
        found.damaged.append(number)
        return
    if isinstance(item, JournalHeader) and header_allowed and number == 1:
        found.base, found.run_id = item.base, item.run_id
    found.dropped.append(number)


def _fill(
    events: list[Event], first: int | None, last: int | None, note: dict[str, object], now: datetime
) -> tuple[list[Event], list[int]]:
    """``events`` with placeholders for the missing sequence numbers ``first``..``last``."""
    out: list[Event] = []
    lost: list[int] = []
    expect = first if first is not None else (events[0].seq if events else 1)
    for event in [*events, None]:
        stop = event.seq if event is not None else (last + 1 if last is not None else expect)
        for seq in range(expect, stop):
            out.append(Event(seq=seq, type=LOST_EVENT_TYPE, at=now, data=dict(note)))
            lost.append(seq)
        if event is not None:
            out.append(event)
            expect = event.seq + 1
    return out, lost


def _keep_aside(path: Path, now: datetime) -> Path:
    aside = aside_path(path, "damaged", now)
    try:
        os.link(path, aside)
    except OSError:
        shutil.copy2(path, aside)
    fsync_dir(path.parent)
    return aside


@dataclass(frozen=True)
class _Expect:
    """What a repaired file must hold."""

    first: int | None = None
    """Its first sequence number (a segment's name says), ``None``: from its content."""
    last: int | None = None
    """Its last sequence number (a segment's name says), ``None``: from its content."""
    header: bool = False
    """True for the live journal."""
    archived: int = 0
    """The last archived event (the live journal continues after it)."""
    snapshot: int = 0
    """The snapshot's version (the live journal must reach it)."""
    run_id: str | None = None
    """The run's id, when the snapshot or an event names it (for the journal's header)."""


def _journal_run(found: _Salvage, expect: _Expect) -> str | None:
    if found.run_id is not None:
        return found.run_id
    for event in found.events:
        run_id = event.data.get("run_id") if event.type == "run.created" else None
        if isinstance(run_id, str) and run_id:
            return run_id
    return expect.run_id


def _repair_file(path: Path, expect: _Expect, now: datetime) -> FileRepair | None:
    data = read_file(path)
    found = _salvage(data, path, header_allowed=expect.header)
    foreign = expect.header and not looks_like_journal(data)  # never held our events
    base, first, last = 0, expect.first, expect.last
    if expect.header:
        if found.base is not None:
            base = found.base
        else:
            # No header: the journal continues after the archived events.
            first_seq = found.events[0].seq - 1 if found.events else expect.archived
            base = min(expect.archived, first_seq)
        first = base + 1
    if first is not None:
        found.keep_within(first, last)
    reached = found.events[-1].seq if found.events else (first or 1) - 1
    if last is None:
        # Damaged complete lines after the last valid one held events too (acknowledged,
        # perhaps): their numbers become placeholders, so no later write reuses them.
        after = found.numbers[-1] if found.numbers else 0
        trailing = sum(1 for n in found.damaged if n > after and n not in found.fragment)
        trailing = 0 if foreign else trailing
        target = max(reached + trailing, expect.snapshot if expect.header else 0)
        last = target if target > reached else None
    headless = expect.header and found.base is None and base > 0  # its header was lost
    if found.clean and not headless and (last is None or reached == last):
        return None
    aside = _keep_aside(path, now)
    note: dict[str, object] = {
        "file": aside.name,
        "damaged_lines": found.damaged,
        "reason": "line damaged",
    }
    events, lost = _fill(found.events, first, last, note, now)
    run_id = _journal_run(found, expect) if expect.header else None
    header = encode_header(base, run_id) if expect.header and (base or run_id) else b""
    atomic_write(path, header + b"".join(encode_events([e]) for e in events))
    return FileRepair(
        path=path,
        moved_to=aside,
        kept=len(found.events),
        damaged_lines=tuple(found.damaged),
        lost=tuple(lost),
        dropped_lines=tuple(found.dropped + found.open_group),
    )


def _move_aside(path: Path, now: datetime) -> Path:
    aside = aside_path(path, "damaged", now)
    path.replace(aside)
    fsync_dir(path.parent)
    return aside


def repair(path: Path, *, now: datetime | None = None) -> RepairReport:
    """Repair the sidecar folder ``path``, keeping every valid event.

    Args:
        path: the sidecar folder.
        now: the time used in kept-aside names and placeholder events (default: now, UTC).

    Returns:
        What was rewritten and where the damaged originals are.

    Raises:
        FileNotFoundError: ``path`` is not a folder.
        NewerFormatError: a file was written by a newer skillnb (nothing is changed).

    """
    layout = SidecarLayout(Path(path))
    if not layout.check_root():
        raise FileNotFoundError(f"no sidecar folder at {layout.root}")
    now = now or datetime.now(UTC)
    files: list[FileRepair] = []
    moved: list[Path] = []
    with SidecarStore(layout.root) as store, store.lock():
        archived = 0
        for segment in layout.list_segments():
            if segment.packed:  # written whole by packing, checked when read
                archived = max(archived, segment.last)
                continue
            fixed = _repair_file(segment.path, _Expect(segment.first, segment.last), now)
            files.extend([fixed] if fixed else [])
            archived = max(archived, segment.last)
        try:
            snapshot = read_snapshot(layout.snapshot)
        except StoreCorrupted:
            moved.append(_move_aside(layout.snapshot, now))
            snapshot = None
        if check_file(layout.journal):
            expect = _Expect(
                header=True,
                archived=archived,
                snapshot=snapshot.version if snapshot is not None else 0,
                run_id=snapshot.run_id or None if snapshot is not None else None,
            )
            fixed = _repair_file(layout.journal, expect, now)
            files.extend([fixed] if fixed else [])
        tail = JournalTail(layout.journal)
        try:
            recover(layout, tail, strict=True)
        except StoreCorrupted:
            moved.append(_move_aside(layout.intent, now))
        finally:
            tail.close()
        sweep_temp_files(layout.root)
        sweep_temp_files(layout.segments)
    return RepairReport(path=layout.root, files=tuple(files), moved_aside=tuple(moved))
