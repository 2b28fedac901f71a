"""A pause of the cyclic collector that promotes what it built, however little."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

from skillnb.core.gcpause import gc_paused
from skillnb.core.runstate.records import Event
from skillnb.store.sidecar.journal import encode_events, encode_header, scan

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_a_promoting_pause_leaves_even_a_few_objects_out_of_the_young_generation() -> None:
    gc.collect()
    with gc_paused(promote=True):
        kept = [{"n": [i]} for i in range(200)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 10  # no young collection will walk them
    assert len(kept) == 200


def test_a_promoting_pause_inside_another_leaves_the_collector_off() -> None:
    gc.collect()
    with gc_paused():
        with gc_paused(promote=True):
            kept = [{"n": [i]} for i in range(200)]
        assert not gc.isenabled()
        assert gc.get_count()[0] >= 400  # the outer pause decides, when it ends
    assert gc.isenabled()
    assert len(kept) == 200


def test_a_bulk_scan_leaves_its_columns_out_of_the_young_generation() -> None:
    events = [Event(seq=i, type="note", at=NOW, data={"n": i}) for i in range(1, 200)]
    data = encode_header(0, "r1") + encode_events(events)
    gc.collect()
    found = scan(data, path=Path("journal.jsonl"), header_allowed=True)
    assert gc.isenabled()
    assert gc.get_count()[0] < 10
    assert len(found.events) == len(events)
