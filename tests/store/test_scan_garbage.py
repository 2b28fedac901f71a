"""Reading a journal leaves nothing for the cyclic collector: what it read dies with its reader."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from sidecar_helpers import NOW

from skillnb.core.runstate.records import Event
from skillnb.store import SidecarStore
from skillnb.store.sidecar.journal import encode_events, encode_header, parse_line, scan

PATH = Path("journal.jsonl")


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The cyclic collector off, with no garbage of earlier tests left to find."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _journal(events: int) -> bytes:
    lines = [Event(seq=i, type="note", at=NOW, data={"n": i}) for i in range(1, events + 1)]
    return encode_header(0, "r1") + encode_events(lines)


@pytest.mark.usefixtures("collector_off")
def test_reading_a_header_leaves_no_cycle() -> None:
    # A header is tried as an event first: the refusal it gets must not hold the frame.
    parse_line(encode_header(3, "r1")[:-1], path=PATH, line=1)
    assert gc.collect() == 0


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("events", [3, 50])  # read line by line, and in bulk
def test_a_scan_of_a_journal_with_a_header_leaves_no_cycle(events: int) -> None:
    found = scan(_journal(events), path=PATH, header_allowed=True)
    assert len(found.events) == events
    del found
    assert gc.collect() == 0


def test_a_load_is_freed_when_its_reader_drops_it(tmp_path: Path) -> None:
    (tmp_path / "journal.jsonl").write_bytes(_journal(50))
    store = SidecarStore(tmp_path)
    try:
        gc.collect()
        gc.disable()
        try:
            loaded = store.load()
            assert len(loaded.events) == 50
            del loaded
            assert gc.collect() == 0
        finally:
            gc.enable()
    finally:
        store.close()
