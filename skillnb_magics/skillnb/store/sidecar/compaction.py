"""Compaction of a sidecar and its recovery after a crash (store layer).

A compaction at head ``H`` of a live journal that continues from ``B`` (``B < H``) runs with
the writer lock held, in this order; every write is atomic (temporary file, fsync, rename,
folder fsync):

1. ``compaction.json`` records the intent: ``{"v":1,"base":B,"head":H,"segment":NAME}``,
   sealed with a ``crc`` as a journal line is.
2. ``segments/NAME`` receives the committed lines ``B+1..H``, byte for byte (checksums kept).
3. ``snapshot.json`` receives the state at ``H``.
4. ``journal.jsonl`` is replaced by a journal holding only the header ``{"base":H,"run":ID}``.
5. ``compaction.json`` is removed.

Why a crash anywhere loses and duplicates nothing:

* Until step 4, the live journal still holds ``B+1..H``: every event is there, whatever else
  was written. Readers take events after the snapshot's version from it, and
  :meth:`~skillnb.store.sidecar.store.SidecarStore.history` skips sequence numbers it has already
  yielded, so a segment written at step 2 duplicates nothing.
* After step 4, ``B+1..H`` live in the segment (durable since step 2) and the state at ``H``
  in the snapshot (durable since step 3), so dropping them from the journal loses nothing.
* A reader never needs the intent file: the journal's base and the snapshot's version are
  consistent in every intermediate state (a snapshot newer than the journal's base only
  means fewer events to replay).

Appends need not wait for that: every intermediate state is one they continue correctly from.
The next compaction (or :func:`~skillnb.store.folders.repair.repair`) finishes or undoes the work
first (:func:`recover`): if the journal already has base ``H``, only step 5 is left; if the snapshot
is at ``H`` and the segment exists, steps 4 and 5 are redone (keeping any events appended
since); otherwise the segment (whose events are all still in the journal) is removed and the
compaction is abandoned. Temporary files are swept at the same time.

The record is trusted only as far as the files agree with it, since it may have been left by
another version, copied from another run, or planted: its checksum must hold, it must name
the segment ``B+1``-``H`` by its one proper name, the journal must still continue from ``B``
past ``H``, and a segment it names must hold the journal's lines ``B+1..H`` byte for byte
before anything is dropped or removed. A record that fails any of these is set aside
(``compaction.json.stray-<UTC time>``) with a :class:`StrayIntentWarning`, and nothing else is
touched: a stray record can never make compaction delete a segment whose events are in no
other file. Records written before the checksum (no ``crc``) are honoured on those same
checks.
"""

from __future__ import annotations

import json
import re
import warnings
import zlib
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

from skillnb.core.runstate.records import RECORD_VERSION
from skillnb.core.safejson import load_json
from skillnb.errors import SkillnbWarning, StoreCorrupted
from skillnb.store.durable import (
    PhaseHook,
    aside_path,
    atomic_write,
    check_dir,
    check_file,
    ensure_dir,
    fsync_dir,
    read_file,
    read_or_none,
)
from skillnb.store.migrations import upgrade
from skillnb.store.sidecar.journal import encode_header
from skillnb.store.sidecar.layout import SidecarLayout
from skillnb.store.sidecar.snapshot import read_snapshot
from skillnb.store.sidecar.tail import JournalTail

__all__ = ["StrayIntentWarning", "compact_journal", "recover"]

_SEAL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\n?\Z')


class StrayIntentWarning(SkillnbWarning):
    """A compaction record the files do not agree with was set aside; nothing was deleted."""


def _no_hook(phase: str) -> None:
    """Observe nothing (the default phase hook)."""


def _encode_intent(base: int, head: int, segment: str) -> bytes:
    """The bytes of ``compaction.json``, sealed with a checksum as a journal line is."""
    content = b'{"v":%d,"base":%d,"head":%d,"segment":%s' % (
        RECORD_VERSION,
        base,
        head,
        json.dumps(segment).encode("ascii"),
    )
    return content + b',"crc":"%08x"}\n' % zlib.crc32(content + b"}")


def _check_seal(raw: bytes, obj: dict[str, object], path: Path) -> None:
    """Check the record's checksum (records written before it have none)."""
    if "crc" not in obj:
        return
    sealed = _SEAL.search(raw)
    if sealed is None or zlib.crc32(raw[: sealed.start()] + b"}") != int(sealed[1], 16):
        raise StoreCorrupted(path, "checksum mismatch (the compaction record was altered)")


def _read_intent(path: Path) -> tuple[int, int, str]:
    raw = read_file(path)
    try:
        obj = load_json(raw, max_depth=8)
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreCorrupted(path, f"unreadable compaction record: {exc}") from None
    if not isinstance(obj, dict):
        raise StoreCorrupted(path, "the compaction record is not a JSON object")
    _check_seal(raw, obj, path)
    obj = upgrade(obj, MappingProxyType({}), path=path)
    base, head, segment = obj.get("base"), obj.get("head"), obj.get("segment")
    if type(base) is not int or type(head) is not int or not isinstance(segment, str):
        raise StoreCorrupted(path, f"malformed compaction record {obj!r:.200}")
    return base, head, segment


def _set_aside(layout: SidecarLayout, why: str) -> None:
    """Move a compaction record the files do not agree with aside, and say so (once)."""
    target = aside_path(layout.intent, "stray", datetime.now(UTC))
    layout.intent.rename(target)
    fsync_dir(layout.root)
    warnings.warn(
        f"{layout.intent}: {why}; set it aside as {target.name} and deleted nothing",
        StrayIntentWarning,
        stacklevel=4,
    )


def _live_lines(tail: JournalTail, base: int, head: int) -> bytes:
    """The journal's committed lines of events ``base+1..head`` (one line per event)."""
    data = tail.committed_bytes(base + 1)
    end = 0
    for _ in range(head - base):
        end = data.index(b"\n", end) + 1
    return data[:end]


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
    intent = _encode_intent(base, head, segment.name)
    atomic_write(layout.intent, intent, hook=hook, phase="compact.intent")
    hook("compact.intent")
    ensure_dir(layout.segments)
    atomic_write(segment, tail.committed_bytes(base + 1), hook=hook, phase="compact.segment")
    hook("compact.segment")
    atomic_write(layout.snapshot, snapshot, hook=hook, phase="compact.snapshot")
    hook("compact.snapshot")
    _rebase(layout, tail, head, run_id, hook)
    _finish(layout, hook)


def recover(
    layout: SidecarLayout, tail: JournalTail, hook: PhaseHook = _no_hook, *, strict: bool = False
) -> str:
    """Finish or undo a compaction that a crash cut short; the caller holds the lock.

    Args:
        layout: the sidecar's files.
        tail: its live journal.
        hook: called at each durable-write phase.
        strict: raise on a record the files do not agree with, instead of setting it aside
            with a :class:`StrayIntentWarning` (repair moves it aside itself).

    Returns:
        ``"none"`` (no compaction was pending), ``"finished"``, ``"abandoned"`` or
        ``"set aside"`` (the record did not agree with the files: nothing else was touched).

    Raises:
        StoreCorrupted: with ``strict``, the record is damaged or does not match the files;
            always, when another file (the snapshot) is damaged.

    """
    if not check_file(layout.intent):
        return "none"
    try:
        return _recover(layout, tail, hook)
    except StoreCorrupted as exc:
        if strict or exc.path != layout.intent:
            raise
        _set_aside(layout, exc.detail)
        return "set aside"


def _recover(layout: SidecarLayout, tail: JournalTail, hook: PhaseHook) -> str:
    """:func:`recover` of a record that is checked against the files before it is followed."""
    base, head, name = _read_intent(layout.intent)
    segment = layout.segment(base + 1, head) if 0 <= base < head else None
    if segment is None or name != segment.name:
        raise StoreCorrupted(
            layout.intent,
            f"compaction record (base {base}, head {head}) names the segment {name[:80]!r}, "
            "not the one for those events",
        )
    tail.refresh()
    if tail.base == head:
        if not check_file(segment):
            raise StoreCorrupted(layout.intent, f"the segment it names, {name}, does not exist")
        _finish(layout, hook)
        return "finished"
    if tail.base != base or tail.last < head:
        raise StoreCorrupted(
            layout.intent,
            f"compaction record (base {base}, head {head}) does not match the journal "
            f"(base {tail.base}, last {tail.last})",
        )
    held = read_or_none(segment) if check_dir(layout.segments) else None
    if held is not None and held != _live_lines(tail, base, head):
        raise StoreCorrupted(
            layout.intent,
            f"the segment it names, {name}, does not hold the journal's events {base + 1}..{head}",
        )
    snap = read_snapshot(layout.snapshot)
    if snap is not None and snap.version == head and held is not None:
        _rebase(layout, tail, head, tail.run_id or snap.run_id or None, hook)
        _finish(layout, hook)
        return "finished"
    if held is not None:  # every event it holds is in the journal, byte for byte
        segment.unlink()
        fsync_dir(layout.segments)
    _finish(layout, hook)
    return "abandoned"
