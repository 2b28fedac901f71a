"""Helpers shared by the store tests: drafts, states and hand-made journal lines."""

from __future__ import annotations

import json
import os
import traceback
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import Scan, scan

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def draft(type_: str = "note", **data: Any) -> EventDraft:
    return EventDraft(type=type_, at=NOW, data=data)


def state_at(version: int, **fields: Any) -> RunState:
    return RunState(run_id="run-test", version=version, **fields)


def seal(content: bytes) -> bytes:
    """Close a JSON object (without its last brace) with a valid checksum, as the format says."""
    crc = zlib.crc32(content + b"}")
    return content + b',"crc":"%08x"}\n' % crc


def event_line(
    seq: int, type_: str = "note", data: Any = None, *, more: bool = False, v: Any = 1, **extra: Any
) -> bytes:
    """A valid journal line for an event (fields can be made wrong on purpose)."""
    obj = {"v": v, "seq": seq, "type": type_, "at": NOW.isoformat(), "data": data or {}, **extra}
    content = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()[:-1]
    if more:
        content += b',"more":true'
    return seal(content)


def header_line(base: int) -> bytes:
    return seal(b'{"v":1,"base":%d' % base)


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def fork(work: Callable[[], None]) -> int:
    """Run ``work`` in a forked process; return its pid (exit code 0: it returned)."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 0
        try:
            work()
        except BaseException:  # noqa: BLE001 - report anything, then leave the child
            traceback.print_exc()
            code = 99
        os._exit(code)
    return pid


def careful_scan(data: bytes, **kwargs: Any) -> Scan:
    """``scan`` of ``data`` (as ``journal.jsonl``) without the bulk reader: line by line."""
    saved = journal_module._scan_plain
    journal_module._scan_plain = lambda *_a, **_k: None  # type: ignore[assignment]
    try:
        return scan(data, path=Path("journal.jsonl"), **kwargs)
    finally:
        journal_module._scan_plain = saved
