"""Facts read in bulk with their data held unbuilt: the same events, names and damage as before."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sidecar_helpers import NOW, careful_scan, seal

from skillnb.core.runstate.eventrecords import EventRecords, HeldData
from skillnb.core.runstate.records import Event, Fact, RunState
from skillnb.core.runstate.state import apply_all
from skillnb.errors import StoreCorrupted
from skillnb.store import SidecarStore
from skillnb.store.sidecar import heldfacts, structlines
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import encode_events, encode_header, scan

PATH = Path("journal.jsonl")

pytestmark = pytest.mark.skipif(not structlines.HAVE_MSGSPEC, reason="msgspec is not installed")


@pytest.fixture(autouse=True)
def bulk_even_for_few_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk reader reads even a few lines here (``scan`` reads fewer one by one)."""
    monkeypatch.setattr(journal_module, "_FEW_LINES", 0)


def fact_data(n: int, keys: int = 3, **fields: Any) -> dict[str, Any]:
    key = f"k{n % keys}"
    fact = Fact(key=key, value={"n": n, "label": f"item {key}"}, version=1 + n // keys, at=NOW)
    return {"fact": {**fact.model_dump(mode="json"), **fields}}


def events_of(*items: tuple[str, dict[str, Any]], first: int = 1) -> list[Event]:
    return [
        Event(seq=first + i, type=t, at=NOW + timedelta(seconds=i), data=d)
        for i, (t, d) in enumerate(items)
    ]


def facts_and_steps(count: int = 12) -> list[Event]:
    """Fact versions over three keys, with steps and batch items between them."""
    items: list[tuple[str, dict[str, Any]]] = [("run.created", {"run_id": "r1"})]
    for n in range(count):
        items.append(("fact.formalized", fact_data(n)))
        if n % 3 == 0:
            items.append(("step.started", {"key": f"s{n}"}))
            items.append(("step.committed", {"key": f"s{n}"}))
        if n % 4 == 0:
            items.append(("batch.item_done", {"batch": "docs", "item": f"d{n}"}))
    return events_of(*items)


def journal(events: list[Event], *, header: bool = True) -> bytes:
    return (encode_header(0, "r1") if header else b"") + encode_events(events)


def dumped(events: Any) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json") for event in events]


def test_facts_are_held_and_read_back_as_line_by_line() -> None:
    data = journal(facts_and_steps())
    found = scan(data, path=PATH, header_allowed=True)
    slow = careful_scan(data, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    column = found.events.data
    assert isinstance(column, HeldData)
    types = found.events.types
    assert all(
        (type(d) is not dict) == (t == "fact.formalized")
        for d, t in zip(column.held, types, strict=True)
    )
    held = [d for d in column.held if type(d) is not dict]
    assert list(map(column.key_of, held)) == [f"k{n % 3}" for n in range(12)]
    assert dumped(found.events) == dumped(slow.events)
    assert list(found.events) == list(slow.events)
    assert (found.offsets, found.end, found.lines) == (slow.offsets, slow.end, slow.lines)


def test_held_data_are_built_once_and_only_when_read() -> None:
    built: list[int] = []

    def build(i: int) -> dict[str, Any]:
        built.append(i)
        return {"i": i}

    column = HeldData([{"a": 0}, "x", "y", {"a": 3}], build, str.upper)
    assert built == []
    assert column[1] == {"i": 1}
    assert column[1] is column[1]
    assert column[-2] == {"i": 2}
    assert built == [1, 2]
    tail = column[2:]
    assert isinstance(tail, HeldData)
    assert list(tail) == [{"i": 2}, {"a": 3}]
    rest = HeldData(["x", "y"], build, str.upper, first=5)
    assert rest[1] == {"i": 6}
    assert rest.key_of(rest.held[0]) == "X"
    assert column[::2] == [{"a": 0}, {"i": 2}]
    assert len(column) == 4
    assert "4 events" in repr(column)
    with pytest.raises(IndexError):
        column[4]


def test_folding_held_facts_builds_only_each_key_latest() -> None:
    events = facts_and_steps()
    found = scan(journal(events), path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    column = found.events.data
    assert isinstance(column, HeldData)
    folded = apply_all(RunState(run_id=""), found.events)
    expected = apply_all(RunState(run_id=""), list(events))
    assert folded.model_dump(mode="json") == expected.model_dump(mode="json")
    assert list(folded.facts) == list(expected.facts)  # in the order keys were first written
    # What was built took the place of what was kept: each key's latest only.
    facts = [i for i, t in enumerate(found.events.types) if t == "fact.formalized"]
    built = [i for i in facts if type(column.held[i]) is dict]
    latest = {found.events[i].data["fact"]["key"]: i for i in facts}
    assert built == sorted(latest.values())


def test_a_load_of_held_facts_reads_as_line_by_line(tmp_path: Path) -> None:
    events = facts_and_steps(40)
    (tmp_path / "journal.jsonl").write_bytes(journal(events))
    store = SidecarStore(tmp_path)
    try:
        loaded = store.load()
    finally:
        store.close()
    assert isinstance(loaded.events, EventRecords)
    assert isinstance(loaded.events.data, HeldData)
    assert dumped(loaded.events) == dumped(events)


def _resealed(line: bytes, old: bytes, new: bytes) -> bytes:
    content = line[: line.rindex(b',"crc"')].replace(old, new)
    return seal(content)


def _with_line(events: list[Event], index: int, change: Callable[[bytes], bytes]) -> bytes:
    lines = journal(events).splitlines(keepends=True)
    lines[index + 1] = change(lines[index + 1])  # the header is line 1
    return b"".join(lines)


def test_a_number_beyond_a_float_is_read_as_the_careful_reader_reads_it() -> None:
    events = facts_and_steps()
    data = _with_line(events, 1, lambda line: _resealed(line, b'"n":0,', b'"n":1e400,'))
    found = scan(data, path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    assert isinstance(found.events.data, HeldData)
    slow = careful_scan(data, header_allowed=True)
    assert found.events[1].data["fact"]["value"]["n"] == float("inf")
    assert found.events[1].data == slow.events[1].data
    assert dumped(found.events) == dumped(slow.events)


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        (b'"key":"k0"', b'"key":"<script>"', "fact key"),
        (b'"key":"k0"', b'"key":""', "fact key"),
        (b'"note":null', b'"note":"' + b"x" * 10_001 + b'"', "note"),
    ],
)
def test_a_held_fact_whose_names_break_the_rules_is_refused_with_its_line(
    old: bytes, new: bytes, detail: str
) -> None:
    events = facts_and_steps()
    data = _with_line(events, 1, lambda line: _resealed(line, old, new))
    with pytest.raises(StoreCorrupted) as raised:
        scan(data, path=PATH, header_allowed=True)
    assert raised.value.line == 3  # the header, run.created, then this fact
    assert detail in raised.value.detail


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"key":"k0"', b'"key":7'),  # a fact whose key is not text
        (b'"note":null', b'"note":5'),  # nor its note
        (b'{"fact":{', b'{"other":1,"fact":{'),  # another member beside the fact
        (b'"label":"item k0"', b'"label":"item k0","label":"again"'),  # a member twice
        (b'"n":0,', b'"n":' + b"9" * 40 + b","),  # an integer beyond 64 bits
    ],
)
def test_facts_of_other_shapes_read_as_line_by_line(old: bytes, new: bytes) -> None:
    events = facts_and_steps()
    data = _with_line(events, 1, lambda line: _resealed(line, old, new))
    bulk = _outcome(lambda: scan(data, path=PATH, header_allowed=True))
    assert bulk == _outcome(lambda: careful_scan(data, header_allowed=True))


def _outcome(read: Callable[[], Any]) -> object:
    """The events read, or the line and detail of the damage found."""
    try:
        return dumped(read().events)
    except StoreCorrupted as exc:
        return exc.line, exc.detail


def test_a_fact_line_with_its_members_in_another_order_is_read_in_full() -> None:
    events = facts_and_steps()
    lines = journal(events).splitlines(keepends=True)
    obj = json.loads(lines[2])
    del obj["crc"]
    content = json.dumps(
        {
            k: obj[k]
            for k in ("type", "data", "at", "seq", "v", *(("more",) if "more" in obj else ()))
        },
        separators=(",", ":"),
    ).encode()[:-1]
    lines[2] = seal(content)
    data = b"".join(lines)
    found = scan(data, path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    assert isinstance(found.events.data, HeldData)
    assert type(found.events.data.held[1]) is dict  # not where this writer puts the type
    assert any(type(d) is not dict for d in found.events.data.held)  # the other facts are held
    assert dumped(found.events) == dumped(careful_scan(data, header_allowed=True).events)


def test_a_line_that_only_looks_like_a_fact_is_read_in_full() -> None:
    # Its bytes name a fact near the start, but the type is another: read with its data.
    content = b'{"v":1,"seq":2,"data":{"type":"fact.formalized"},"type":"note","at":"%s"' % (
        NOW.isoformat().encode()
    )
    events = facts_and_steps()
    lines = journal(events).splitlines(keepends=True)
    lines[2] = seal(content)
    data = b"".join(lines)
    found = scan(data, path=PATH, header_allowed=True)
    assert found.events[1].type == "note"
    assert found.events[1].data == {"type": "fact.formalized"}
    assert dumped(found.events) == dumped(careful_scan(data, header_allowed=True).events)


def test_facts_of_any_script_are_held_and_read_back_as_written() -> None:
    events = facts_and_steps()
    facts = [e for e in events if e.type == "fact.formalized"]
    facts[0].data["fact"]["note"] = "résumé ✓"
    facts[1].data["fact"]["value"] = {"name": "Zoë Åström", "city": "東京", "mood": "🙂"}
    found = scan(journal(events), path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    assert isinstance(found.events.data, HeldData)
    assert dumped(found.events) == dumped(events)
    assert dumped(found.events) == dumped(careful_scan(journal(events), header_allowed=True).events)


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf0\x9f\x99"],  # not UTF-8 (a surrogate, cut short)
)
def test_a_fact_value_that_is_not_utf8_is_refused_as_line_by_line(bad: bytes) -> None:
    events = facts_and_steps()
    data = _with_line(
        events, 1, lambda line: _resealed(line, b'"label":"item k0"', b'"label":"' + bad + b'"')
    )
    with pytest.raises(StoreCorrupted) as careful:
        careful_scan(data, header_allowed=True)
    with pytest.raises(StoreCorrupted) as bulk:
        scan(data, path=PATH, header_allowed=True)
    assert bulk.value.line == careful.value.line == 3  # the header, run.created, this fact


def test_an_unfinished_append_of_held_facts_is_left_out() -> None:
    events = facts_and_steps()
    more = encode_events(
        events_of(*[("fact.formalized", fact_data(n)) for n in range(3)], first=len(events) + 1)
    )
    unfinished = more.rsplit(b"\n", 2)[0] + b"\n"  # its last line never came
    data = journal(events) + unfinished
    found = scan(data, path=PATH, header_allowed=True)
    assert len(found.events) == len(events)
    assert found.tail == len(unfinished)
    assert dumped(found.events) == dumped(events)


def test_without_msgspec_nothing_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structlines, "decode_line", None)
    events = facts_and_steps()
    found = scan(journal(events), path=PATH, header_allowed=True)
    assert not isinstance(
        found.events.data if isinstance(found.events, EventRecords) else [], HeldData
    )
    assert dumped(found.events) == dumped(events)
    assert heldfacts.held_columns(b"{}\n", [b"{}"], [0], 1, 1) is None


def test_a_bad_name_beside_held_facts_is_refused_with_its_line() -> None:
    events = facts_and_steps()
    index = next(i for i, e in enumerate(events) if e.type == "step.started")
    data = _with_line(
        events, index, lambda line: _resealed(line, b'"key":"s0"', b'"key":"<script>"')
    )
    with pytest.raises(StoreCorrupted) as raised:
        scan(data, path=PATH, header_allowed=True)
    assert raised.value.line == index + 2  # after the header
    assert "step key" in raised.value.detail


@pytest.mark.parametrize("base", [0, 9, 995])  # numbers of one width, or crossing to more digits
def test_fact_lines_are_found_however_wide_their_numbers(base: int) -> None:
    events = [e.model_copy(update={"seq": base + e.seq}) for e in facts_and_steps()]
    data = encode_header(base, "r1") + encode_events(events)
    found = scan(data, path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    column = found.events.data
    assert isinstance(column, HeldData)
    types = found.events.types
    assert [type(d) is not dict for d in column.held] == [t == "fact.formalized" for t in types]
    assert dumped(found.events) == dumped(events)
