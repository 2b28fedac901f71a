"""Compaction of a sidecar and its recovery after a crash (store layer).

A compaction at head ``H`` of a live journal that continues from ``B`` (``B < H``) runs with
the writer lock held, in this order; every write is atomic (temporary file, fsync, rename,
folder fsync):

1. ``compaction.json`` records the intent: ``{"v":1,"base":B,"head":H,"segment":NAME}``.
2. ``segments/NAME`` receives the committed lines ``B+1..H``, byte for byte (checksums kept).
3. ``snapshot.json`` receives the state at ``H``.
4. ``journal.jsonl`` is replaced by a journal holding only the header ``{"base":H,"run":ID}``.
5. ``compaction.json`` is removed.

Why a crash anywhere loses and duplicates nothing:

* Until step 4, the live journal still holds ``B+1..H``: every event is there, whatever else
  was written. Readers take events after the snapshot's version from it, and
  :meth:`~skillnb.store.sidecar.SidecarStore.history` skips sequence numbers it has already
  yielded, so a segment written at step 2 duplicates nothing.
* After step 4, ``B+1..H`` live in the segment (durable since step 2) and the state at ``H``
  in the snapshot (durable since step 3), so dropping them from the journal loses nothing.
* A reader never needs the intent file: the journal's base and the snapshot's version are
  consistent in every intermediate state (a snapshot newer than the journal's base only
  means fewer events to replay).

Appends need not wait for that: every intermediate state is one they continue correctly from.
The next compaction (or :func:`~skillnb.store.repair.repair`) finishes or undoes the work first
(:func:`recover`): if the journal already has base ``H``, only step 5 is left; if the snapshot
is at ``H`` and the segment exists, steps 4 and 5 are redone (keeping any events appended
since); otherwise the segment (whose events are all still in the journal) is removed and the
compaction is abandoned. Temporary files are swept at the same time.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

from skillnb.core.records import RECORD_VERSION
from skillnb.core.safejson import load_json
from skillnb.errors import StoreCorrupted
from skillnb.store.durable import (
    PhaseHook,
    atomic_write,
    check_dir,
    check_file,
    ensure_dir,
    fsync_dir,
    read_file,
)
from skillnb.store.journal import encode_header
from skillnb.store.layout import SidecarLayout
from skillnb.store.migrations import upgrade
from skillnb.store.snapshot import read_snapshot
from skillnb.store.tail import JournalTail

__all__ = ["compact_journal", "recover"]


def _no_hook(phase: str) -> None:
    """Observe nothing (the default phase hook)."""


def _read_intent(path: Path) -> tuple[int, int, str]:
    try:
        obj = load_json(read_file(path), max_depth=8)
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreCorrupted(path, f"unreadable compaction record: {exc}") from None
    if not isinstance(obj, dict):
        raise StoreCorrupted(path, "the compaction record is not a JSON object")
    obj = upgrade(obj, MappingProxyType({}), path=path)
    base, head, segment = obj.get("base"), obj.get("head"), obj.get("segment")
    if type(base) is not int or type(head) is not int or not isinstance(segment, str):
        raise StoreCorrupted(path, f"malformed compaction record {obj!r}")
    return base, head, segment


def _rebase(
    layout: SidecarLayout, tail: JournalTail, base: int, run_id: str | None, hook: PhaseHook
) -> None:
    """Replace the journal by one continuing from ``base``, keeping later committed lines."""
    rest = tail.committed_bytes(base + 1) if tail.last > base else b""
    header = encode_header(base, run_id)
    atomic_write(layout.journal, header + rest, hook=hook, phase="compact.journal")
    hook("compact.journal")
    tail.reload()


def _finish(layout: SidecarLayout, hook: PhaseHook) -> None:
    layout.intent.unlink(missing_ok=True)
    fsync_dir(layout.root)
    hook("compact.done")


def compact_journal(
    layout: SidecarLayout,
    tail: JournalTail,
    snapshot: bytes,
    hook: PhaseHook = _no_hook,
    *,
    run_id: str | None = None,
) -> None:
    """Archive the live journal's events, write ``snapshot`` and start a fresh journal.

    The caller holds the lock, has brought ``tail`` up to date with no uncommitted tail, has
    checked that ``snapshot`` is the state at ``tail.last``, and that ``tail.last > tail.base``.
    The new journal's header names ``run_id`` (the snapshot's run).
    """
    base, head = tail.base, tail.last
    segment = layout.segment(base + 1, head)
    intent = {"v": RECORD_VERSION, "base": base, "head": head, "segment": segment.name}
    atomic_write(layout.intent, json.dumps(intent).encode(), hook=hook, phase="compact.intent")
    hook("compact.intent")
    ensure_dir(layout.segments)
    atomic_write(segment, tail.committed_bytes(base + 1), hook=hook, phase="compact.segment")
    hook("compact.segment")
    atomic_write(layout.snapshot, snapshot, hook=hook, phase="compact.snapshot")
    hook("compact.snapshot")
    _rebase(layout, tail, head, run_id, hook)
    _finish(layout, hook)


def recover(layout: SidecarLayout, tail: JournalTail, hook: PhaseHook = _no_hook) -> str:
    """Finish or undo a compaction that a crash cut short; the caller holds the lock.

    Returns:
        ``"none"`` (no compaction was pending), ``"finished"`` or ``"abandoned"``.

    Raises:
        StoreCorrupted: the compaction record is damaged or does not match the journal.

    """
    if not check_file(layout.intent):
        return "none"
    base, head, name = _read_intent(layout.intent)
    tail.refresh()
    if tail.base == head:
        _finish(layout, hook)
        return "finished"
    if tail.base != base or tail.last < head:
        raise StoreCorrupted(
            layout.intent,
            f"compaction record (base {base}, head {head}) does not match the journal "
            f"(base {tail.base}, last {tail.last})",
        )
    segment = layout.segments / Path(name).name
    snap = read_snapshot(layout.snapshot)
    if snap is not None and snap.version == head and check_file(segment):
        _rebase(layout, tail, head, tail.run_id or snap.run_id or None, hook)
        _finish(layout, hook)
        return "finished"
    if check_dir(layout.segments) and check_file(segment):
        segment.unlink()
        fsync_dir(layout.segments)
    _finish(layout, hook)
    return "abandoned"
