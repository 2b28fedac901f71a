"""Reading a journal a chunk of lines at a time: the same events, damage named by its line."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sidecar_helpers import NOW, seal

from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import Event, Fact, RunState
from skillnb.core.runstate.state import apply_all
from skillnb.errors import StoreCorrupted
from skillnb.store.sidecar import bulklines, fastline, structlines
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import Scan, encode_events, encode_header, scan

PATH = Path("journal.jsonl")


def events(count: int, first: int = 1, *, big_at: int | None = None) -> list[Event]:
    """Facts, steps and items done, as a run writes them; a 70-bit integer at ``big_at``."""
    out = []
    for n in range(first, first + count):
        at = NOW + timedelta(seconds=n)
        match n % 4:
            case 0:
                fact = Fact(key=f"k{n % 7}", value={"n": n, "s": "é"}, version=1, at=at)
                stored = {"fact": fact.model_dump(mode="json")}
                out.append(Event(seq=n, type="fact.formalized", at=at, data=stored))
            case 1:
                out.append(Event(seq=n, type="step.started", at=at, data={"key": f"s{n}"}))
            case 2:
                out.append(Event(seq=n, type="step.committed", at=at, data={"key": f"s{n - 1}"}))
            case _:
                item = {"batch": f"b{n % 2}", "item": f"i{n}"}
                out.append(Event(seq=n, type="batch.item_done", at=at, data=item))
    if big_at is not None:
        out[big_at - first] = Event(
            seq=big_at, type="keyids.set", at=NOW, data={"ids": {"big": 2**70}}
        )
    return out


def journal(count: int = 60, **kwargs: Any) -> bytes:
    """A journal of ``count`` events in appends of up to five (some lines go on)."""
    out, all_events = encode_header(0, "r1"), events(count, **kwargs)
    for at in range(0, count, 5):
        out += encode_events(all_events[at : at + 5])
    return out


def careful_scan(data: bytes) -> Scan:
    saved = journal_module._scan_plain
    journal_module._scan_plain = lambda *_a, **_k: None  # type: ignore[assignment]
    try:
        return scan(data, path=PATH, header_allowed=True)
    finally:
        journal_module._scan_plain = saved


def same_scan(data: bytes) -> Scan:
    fast, slow = scan(data, path=PATH, header_allowed=True), careful_scan(data)
    assert isinstance(fast.events, EventRecords)  # read in bulk
    assert [e.model_dump(mode="json") for e in fast.events] == [
        e.model_dump(mode="json") for e in slow.events
    ]
    assert (fast.offsets, fast.end, fast.lines, fast.tail, fast.tail_lines) == (
        slow.offsets,
        slow.end,
        slow.lines,
        slow.tail,
        slow.tail_lines,
    )
    folded = apply_all(RunState(run_id=""), fast.events).model_dump(mode="json")
    assert folded == apply_all(RunState(run_id=""), list(slow.events)).model_dump(mode="json")
    return fast


@pytest.fixture(params=["msgspec", "orjson", "stdlib", "no orjson"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "msgspec" and not structlines.HAVE_MSGSPEC:
        pytest.skip("msgspec is not installed")
    if request.param == "orjson" and not fastline.HAVE_ORJSON:
        pytest.skip("orjson is not installed")
    if request.param != "msgspec":  # the bulk reader parses with the parser named
        monkeypatch.setattr(structlines, "decode_line", None)
    monkeypatch.setattr(
        fastline, "loads", fastline._decoder(request.param in ("orjson", "msgspec"))
    )
    if request.param == "no orjson":  # as when the speed extra is not installed
        monkeypatch.setattr(fastline, "orjson", None)
    return request.param


@pytest.fixture(params=[1, 300, 4096])
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Chunks of one line, of a line or two, and of many lines."""
    monkeypatch.setattr(bulklines, "_CHUNK", request.param)
    return int(request.param)


def test_chunks_of_any_size_read_what_line_by_line_reads(parser: str, chunk: int) -> None:
    found = same_scan(journal())
    assert len(found.events) == 60
    torn = journal() + encode_events(events(3, 61))[:-7]
    assert len(same_scan(torn).events) == 60


def test_a_long_integer_in_one_chunk_stays_exact(parser: str, chunk: int) -> None:
    found = same_scan(journal(big_at=37))
    assert found.events[36].data["ids"]["big"] == 2**70


@pytest.mark.parametrize("seed", range(4))
def test_damage_at_any_line_is_named_by_its_line(parser: str, chunk: int, seed: int) -> None:
    lines = journal().splitlines(keepends=True)
    rng = random.Random(seed)  # noqa: S311 - a test's choice of line, not a secret
    at = rng.randrange(1, len(lines))  # a line after the header
    damaged = bytearray(lines[at])
    where = rng.randrange(0, len(damaged) - 1)
    damaged[where] = ord("#") if damaged[where] != ord("#") else ord("%")
    lines[at] = bytes(damaged)
    with pytest.raises(StoreCorrupted) as raised:
        scan(b"".join(lines), path=PATH, header_allowed=True)
    assert raised.value.line == at + 1
    assert raised.value.path == PATH


def test_a_line_nested_too_deep_in_a_later_chunk_is_named(chunk: int) -> None:
    lines = journal().splitlines(keepends=True)
    deep = b'{"v":1,"seq":50,"type":"x","at":"2024-05-01T12:00:00+00:00","data":'
    lines[50] = seal(deep + b'{"a":' * 200 + b"1" + b"}" * 200)
    with pytest.raises(StoreCorrupted) as raised:
        scan(b"".join(lines), path=PATH, header_allowed=True)
    assert raised.value.line == 51
