"""Reading a journal in bulk: the same events as line by line, damage still named by its line."""

from __future__ import annotations

import gc
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sidecar_helpers import NOW, careful_scan, event_line, seal

from skillnb.core.gcpause import PROMOTE_AFTER, gc_paused
from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import Event, EventDraft, Fact, RunState, Step
from skillnb.core.runstate.state import MalformedEvent, apply_all
from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.sidecar import fastline, structlines
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import Scan, encode_events, encode_header, scan

PATH = Path("journal.jsonl")
NOT_JSON = b'{"v":1,"seq":6,"type":"x","at":"2024-05-01T12:00:00Z","data":{'
"""A line whose checksum is right but whose JSON is cut."""

FACT = Fact(key="k", value=[1, {"x": "简历 ✓"}], version=1, at=NOW).model_dump(mode="json")
MIXED: list[tuple[str, dict[str, Any]]] = [
    ("run.created", {"run_id": "r1"}),
    ("keyids.set", {"ids": {"big": 2**70, "f": 1.5e300, "n": None}}),
    ("batch.declared", {"batch": "docs", "items": ["a", "b", "c"]}),
    ("step.started", {"key": "s", "source_hash": "h", "idempotent": True}),
    (
        "fact.formalized",
        {
            "fact": Fact(key="k", value=[1, {"x": "简历 ✓"}], version=1, at=NOW).model_dump(
                mode="json"
            )
        },
    ),
    ("batch.item_done", {"batch": "docs", "item": "a"}),
    ("step.committed", {"key": "s"}),
    ("some.future_event", {"whatever": [1, 2, 3]}),
    ("step.failed", {"key": "t", "error": "boom"}),
    ("milestone.recorded", {"name": "m", "state": None, "facts": {"k": 1}}),
]


def mixed_events(first: int = 1) -> list[Event]:
    return [
        Event(seq=first + i, type=t, at=NOW + timedelta(microseconds=i * 7), data=d)
        for i, (t, d) in enumerate(MIXED)
    ]


def journal_bytes(*, header: bool = True, groups: int = 3) -> bytes:
    """A journal of ``groups`` appends of the mixed events (several lines each)."""
    out = encode_header(0, "r1") if header else b""
    seq = 1
    for _ in range(groups):
        events = mixed_events(seq)
        out += encode_events(events)
        seq += len(events)
    return out


def same_scan(data: bytes, **kwargs: Any) -> Scan:
    """Scan ``data`` both ways, check the bulk reader took it and agrees; return its scan."""
    fast = scan(data, path=PATH, **kwargs)
    slow = careful_scan(data, **kwargs)
    assert isinstance(fast.events, EventRecords)  # the bulk reader read it
    assert list(fast.events) == list(slow.events)
    assert [e.model_dump(mode="json") for e in fast.events] == [
        e.model_dump(mode="json") for e in slow.events
    ]
    assert (fast.offsets, fast.header, fast.end, fast.lines, fast.tail, fast.tail_lines) == (
        slow.offsets,
        slow.header,
        slow.end,
        slow.lines,
        slow.tail,
        slow.tail_lines,
    )
    return fast


@pytest.fixture(autouse=True)
def bulk_even_for_few_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk reader reads even a few lines here (``scan`` reads fewer one by one)."""
    monkeypatch.setattr(journal_module, "_FEW_LINES", 0)


@pytest.fixture(params=["msgspec", "orjson", "stdlib"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The bulk reader decodes with msgspec, orjson or the standard library (each alone)."""
    if request.param == "msgspec" and not structlines.HAVE_MSGSPEC:
        pytest.skip("msgspec is not installed")
    if request.param == "orjson" and not fastline.HAVE_ORJSON:
        pytest.skip("orjson is not installed")
    if request.param != "msgspec":
        monkeypatch.setattr(structlines, "decode_line", None)
    monkeypatch.setattr(fastline, "loads", fastline._decoder(request.param != "stdlib"))
    return request.param


def test_bulk_reading_gives_what_reading_line_by_line_gives(parser: str) -> None:
    data = journal_bytes()
    found = same_scan(data, header_allowed=True)
    assert len(found.events) == 3 * len(MIXED)
    assert found.header is not None
    assert found.header.run_id == "r1"
    same_scan(journal_bytes(header=False), header_allowed=True)  # an older journal, no header
    # Bytes from the middle of a journal, as a reader catching up reads them.
    start = data.index(b"\n") + 1
    same_scan(data[start:], start=start, first_line=2, next_seq=1)


def test_a_torn_tail_and_an_unfinished_append_are_left_out_as_before(parser: str) -> None:
    data = journal_bytes()
    unfinished = encode_events(mixed_events(3 * len(MIXED) + 1))[:-1].rsplit(b"\n", 1)[0] + b"\n"
    found = same_scan(data + unfinished, header_allowed=True)
    assert len(found.events) == 3 * len(MIXED)
    assert found.tail == len(unfinished)
    assert found.tail_lines == len(MIXED) - 1
    torn = same_scan(data + b'{"v":1,"seq":31,"ty', header_allowed=True)
    assert torn.tail == len(b'{"v":1,"seq":31,"ty')
    assert torn.end == len(data)
    only_header = same_scan(encode_header(4, "r1"), header_allowed=True)
    assert only_header.lines == 1
    assert not only_header.events


@pytest.mark.parametrize(
    ("bad", "detail"),
    [
        (lambda line: line.replace(b'"item":"a"', b'"item":"b"'), "checksum mismatch"),
        (lambda line: line[:40] + line[41:], "checksum"),  # a byte lost
        (
            lambda _line: seal(NOT_JSON),
            "JSON",
        ),
        (lambda _line: event_line(99), "sequence number 99 where 6 was expected"),
        (lambda _line: event_line(6, data={"a": [[[[1]]]]}, v=True), ""),
    ],
)
def test_a_damaged_line_is_named_by_the_careful_reader(parser: str, bad: Any, detail: str) -> None:
    lines = journal_bytes(groups=1).splitlines(keepends=True)
    lines[6] = bad(lines[6])  # the header is line 1: this is line 7, the event numbered 6
    with pytest.raises(StoreCorrupted) as raised:
        scan(b"".join(lines), path=PATH, header_allowed=True)
    assert raised.value.line == 7
    assert raised.value.path == PATH
    assert detail in raised.value.detail


def test_a_line_nested_too_deep_among_plain_lines_is_refused_with_its_line() -> None:
    deep = b'{"v":1,"seq":6,"type":"x","at":"2024-05-01T12:00:00+00:00","data":'
    deep += b'{"a":' * 200 + b"1" + b"}" * 200
    lines = journal_bytes(groups=1).splitlines(keepends=True)
    lines[6] = seal(deep)
    with pytest.raises(StoreCorrupted) as raised:
        scan(b"".join(lines), path=PATH, header_allowed=True)
    assert raised.value.line == 7


def test_unusual_lines_are_read_line_by_line_with_the_same_result() -> None:
    # A checksum in capitals and an older header: valid, just not what this writer writes.
    line = event_line(1, "note", {"x": 1})
    upper = line[:-11] + line[-11:-3].upper() + line[-3:]
    data = seal(b'{"v":1,"base":0')
    found = scan(data + upper, path=PATH, header_allowed=True)
    assert [e.seq for e in found.events] == [1]
    assert found.header is not None
    assert found.header.base == 0


def test_a_damaged_line_in_the_middle_of_100000_names_its_line(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        from replay import write_journal
    finally:
        sys.path.pop(0)
    folder = tmp_path / "run"
    write_journal(folder, 100_000)
    journal = folder / "journal.jsonl"
    data = journal.read_bytes()
    assert len(SidecarStore(folder).load().events) == 100_000
    lines = data.splitlines(keepends=True)
    assert b'"seq":50000,' in lines[50_000]  # line 50,001: the header is line 1
    lines[50_000] = lines[50_000].replace(b'"seq":50000,', b'"seq":50O00,')
    journal.write_bytes(b"".join(lines))
    with pytest.raises(StoreCorrupted) as raised:
        SidecarStore(folder).load()
    assert raised.value.line == 50_001
    assert raised.value.path == journal
    assert "checksum mismatch" in raised.value.detail
    assert f"{journal}:50001" in str(raised.value)


def test_event_records_build_each_event_once_and_only_when_read() -> None:
    events = mixed_events()
    data = encode_header(0, "r1") + encode_events(events)
    found = scan(data, path=PATH, header_allowed=True)
    records = found.events
    assert isinstance(records, EventRecords)
    assert records._built == [None] * len(events)
    assert repr(records) == f"EventRecords({len(events)} events)"
    assert records._built == [None] * len(events)
    first = records[0]
    assert records[0] is first
    assert records[-1] == events[-1]
    assert sum(e is not None for e in records._built) == 2
    assert records == events
    assert events == records
    assert records != events[:-1]
    assert records[2:] == events[2:]
    assert isinstance(records[2:], EventRecords)
    assert records != "not events"


def test_folding_records_gives_the_state_folding_events_gives() -> None:
    events = mixed_events()
    found = scan(encode_events(events), path=PATH)
    assert isinstance(found.events, EventRecords)
    from_records = apply_all(RunState(run_id=""), found.events)
    from_events = apply_all(RunState(run_id=""), list(events))
    assert from_records.model_dump(mode="json") == from_events.model_dump(mode="json")
    # Only what a fold reads became an Event: not the steps' and batch items' events.
    types = {MIXED[i][0] for i, e in enumerate(found.events._built) if e is not None}
    assert "step.started" not in types
    assert "batch.item_done" not in types


@pytest.mark.parametrize(
    "bad",
    [
        ("step.started", {"key": "s2", "owner": 5}),  # owner must be an object
        ("batch.item_done", {"batch": "docs"}),  # no item
        ("step.committed", {}),  # no key
        ("keyids.set", {"ids": [1]}),  # folded from an Event
    ],
)
def test_a_malformed_record_stops_the_fold_where_an_event_would(bad: tuple[str, Any]) -> None:
    events = mixed_events()
    events.insert(5, Event(seq=6, type=bad[0], at=NOW, data=bad[1]))
    for i, event in enumerate(events):
        event.seq = i + 1
    found = scan(encode_events(events), path=PATH)
    assert isinstance(found.events, EventRecords)
    states = []
    for source in (found.events, list(events)):
        state = RunState(run_id="")
        with pytest.raises(MalformedEvent, match=rf"event 6 \({bad[0]}\)"):
            apply_all(state, source)
        states.append(state.model_dump(mode="json"))
    assert states[0] == states[1]
    assert states[0]["version"] == 5


def test_replay_with_orjson_and_with_the_stdlib_gives_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    store = SidecarStore(folder)
    head = 0
    for _ in range(20):
        drafts = [EventDraft(type=t, at=NOW, data=d) for t, d in MIXED[1:]]
        head = store.append(drafts, expected_version=head)[-1].seq
    store.close()
    states = []
    for use_orjson in (True, False):
        monkeypatch.setattr(fastline, "loads", fastline._decoder(use_orjson))
        with open_run(state_dir=folder, memory=False) as run:
            states.append(run.journal.state.model_dump(mode="json"))
            assert [e.seq for e in run.history(50)] == list(range(head - 49, head + 1))
    assert states[0] == states[1]
    assert states[0]["version"] == head


def test_a_long_gc_pause_leaves_what_it_built_out_of_the_young_generation() -> None:
    gc.collect()
    with gc_paused():
        kept = [{"n": [i]} for i in range(PROMOTE_AFTER)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 1000  # no young collection will walk the objects kept
    assert len(kept) == PROMOTE_AFTER


def test_a_short_gc_pause_leaves_young_objects_young() -> None:
    gc.collect()
    with gc_paused():
        kept = [{"n": [i]} for i in range(200)]
    assert gc.isenabled()
    assert gc.get_count()[0] >= 400  # still counted as young: collected young if garbage
    assert len(kept) == 200


@pytest.mark.parametrize(
    "data",
    [
        {"key": "s"},
        {"key": "s", "source_hash": "h", "cell_id": "c", "idempotent": True, "owner": "h:1:2"},
        {"key": 7, "idempotent": 0, "owner": None},
    ],
)
def test_a_step_started_is_the_step_validation_builds(data: dict[str, Any]) -> None:
    state = apply_all(RunState(run_id=""), [Event(seq=1, type="step.started", at=NOW, data=data)])
    step = state.steps[str(data["key"])]
    expected = Step.model_validate(
        {
            "key": str(data["key"]),
            "status": "started",
            "source_hash": data.get("source_hash"),
            "cell_id": data.get("cell_id"),
            "idempotent": bool(data.get("idempotent")),
            "owner": data.get("owner"),
            "started_seq": 1,
        }
    )
    assert step == expected
    assert list(step.__dict__.items()) == list(expected.__dict__.items())
    assert step.model_fields_set == expected.model_fields_set
    assert step.model_dump_json() == expected.model_dump_json()
    step.status = "committed"  # assignable as any Step
    assert step.model_copy(deep=True).status == "committed"


def test_a_step_started_with_a_value_of_another_type_is_still_refused() -> None:
    event = Event(seq=1, type="step.started", at=NOW, data={"key": "s", "source_hash": 5})
    with pytest.raises(MalformedEvent, match="source_hash"):
        apply_all(RunState(run_id=""), [event])


def _line(obj: dict[str, Any], *, more: bool = False) -> bytes:
    content = json.dumps(obj, separators=(",", ":")).encode()[:-1]
    return seal(content + (b',"more":true' if more else b""))


def test_members_in_another_order_are_read_in_bulk_as_line_by_line(parser: str) -> None:
    at = NOW.isoformat()
    lines = [
        _line({"seq": 1, "v": 1, "type": "a", "at": at, "data": {"x": 1}}, more=True),
        _line({"data": {}, "at": at, "type": "b", "seq": 2, "v": 1}),
    ]
    found = same_scan(b"".join(lines))
    assert [e.type for e in found.events] == ["a", "b"]
    assert list(found.events[0].__dict__) == ["v", "seq", "type", "at", "data"]


@pytest.mark.parametrize(
    "at",
    [
        "2024-05-01 12:00:00+00:00",  # a space for the T: of the same length as the others
        "2024/05/01T12:00:00+00:00",
        "2024-05-01T12-00:00+00:00",
    ],
)
def test_a_time_of_another_shape_is_read_line_by_line(at: str) -> None:
    good = NOW.isoformat()
    assert len(at) == len(good)
    objs = [{"v": 1, "seq": i, "type": "t", "at": good, "data": {}} for i in (1, 2, 3)]
    objs[1]["at"] = at
    data = b"".join(_line(obj) for obj in objs)
    refused: StoreCorrupted | None = None
    try:
        slow = careful_scan(data)
    except StoreCorrupted as exc:
        refused = exc
    if refused is not None:
        with pytest.raises(StoreCorrupted) as raised:
            scan(data, path=PATH)
        assert (raised.value.line, raised.value.detail) == (refused.line, refused.detail)
        return
    found = scan(data, path=PATH)
    assert not isinstance(found.events, EventRecords)  # not in bulk
    assert list(found.events) == list(slow.events)


def test_a_line_whose_tail_is_not_its_checksum_is_refused_with_its_line() -> None:
    lines = journal_bytes(groups=1).splitlines(keepends=True)
    lines[4] = lines[4].replace(b',"crc":"', b',"crc" :"')  # the checksum no longer parses
    with pytest.raises(StoreCorrupted) as raised:
        scan(b"".join(lines), path=PATH, header_allowed=True)
    assert raised.value.line == 5
    assert "checksum" in raised.value.detail


def test_event_columns_slice_and_fold_like_a_list_of_events() -> None:
    events = mixed_events()
    found = scan(encode_events(events), path=PATH)
    assert isinstance(found.events, EventRecords)
    every_other = found.events[::2]
    assert isinstance(every_other, EventRecords)
    assert list(every_other) == events[::2]
    assert every_other[1].data is found.events[2].data  # shared, as the contract says
    with pytest.raises(MalformedEvent, match="event 3 follows version 1"):
        apply_all(RunState(run_id=""), every_other)  # numbered 1, 3, ...: folded in turn
    with pytest.raises(ValueError, match="differ in length"):
        EventRecords(range(1, 3), ["a"], [NOW], [{}])


@pytest.mark.parametrize(
    "content",
    [
        b'{"v":1,"seq":2,"type":"t","at":5,"data":{}',  # a time that is not text
        b'{"v":1,"seq":2,"type":"t","at":["2024-05-01T12:00:00+00:00"],"data":{}',
        b'{"v":1,"seq":2,"type":"t","at":"2024-05-01T12:00:00+00:00","data":[]',
        b'{"v":1,"seq":2,"type":7,"at":"2024-05-01T12:00:00+00:00","data":{}',
        b'{"v":1,"seq":2.0,"type":"t","at":"2024-05-01T12:00:00+00:00","data":{}',
        b'{"v":true,"seq":2,"type":"t","at":"2024-05-01T12:00:00+00:00","data":{}',
    ],
)
def test_a_line_of_another_shape_is_refused_with_its_line(parser: str, content: bytes) -> None:
    first = _line({"v": 1, "seq": 1, "type": "t", "at": NOW.isoformat(), "data": {}})
    with pytest.raises(StoreCorrupted) as raised:
        scan(first + seal(content), path=PATH)
    assert raised.value.line == 2


def test_a_few_lines_are_read_one_by_one_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Below ``_FEW_LINES`` lines, ``scan`` skips the bulk reader: same events, same bounds."""
    data = encode_events(mixed_events(1)[:3])
    bulk = scan(data, path=PATH)
    assert isinstance(bulk.events, EventRecords)
    monkeypatch.setattr(journal_module, "_FEW_LINES", 4)
    few = scan(data, path=PATH)
    assert not isinstance(few.events, EventRecords)  # read line by line
    assert list(few.events) == list(bulk.events)
    assert (few.offsets, few.end, few.lines, few.tail) == (
        bulk.offsets,
        bulk.end,
        bulk.lines,
        bulk.tail,
    )
