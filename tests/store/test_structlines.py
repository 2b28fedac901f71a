"""Decoding journal lines into typed structs (msgspec): the same events, damage named by line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sidecar_helpers import NOW, careful_scan, seal

from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import EventDraft, Fact, RunState
from skillnb.core.runstate.state import apply_all
from skillnb.errors import StoreCorrupted
from skillnb.store import SidecarStore
from skillnb.store.sidecar import bulklines, heldfacts, structlines
from skillnb.store.sidecar.journal import Scan, scan

pytestmark = pytest.mark.skipif(not structlines.HAVE_MSGSPEC, reason="msgspec is not installed")

PATH = Path("journal.jsonl")
AT = NOW.isoformat()


def _line(obj: dict[str, Any], *, more: bool = False) -> bytes:
    content = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()[:-1]
    return seal(content + (b',"more":true' if more else b""))


def _event(seq: int, type_: str = "t", data: Any = None) -> dict[str, Any]:
    return {"v": 1, "seq": seq, "type": type_, "at": AT, "data": {} if data is None else data}


def draft(n: int) -> EventDraft:
    """The ``n``-th event of a mixed run: facts over 50 keys, steps, batch items."""
    at = NOW + timedelta(seconds=n)
    match n % 5:
        case 0 | 1:
            fact = Fact(key=f"k{n % 50}", value={"n": n, "x": "简历 ✓"}, version=1 + n // 50, at=at)
            return EventDraft(
                type="fact.formalized", at=at, data={"fact": fact.model_dump(mode="json")}
            )
        case 2:
            return EventDraft(type="step.started", at=at, data={"key": f"s{n}"})
        case 3:
            return EventDraft(type="step.committed", at=at, data={"key": f"s{n - 1}"})
        case _:
            return EventDraft(
                type="batch.item_done", at=at, data={"batch": "docs", "item": f"d{n}"}
            )


def write_run(folder: Path, events: int = 1200, group: int = 7) -> Path:
    """A run of ``events`` events appended ``group`` at a time (real files, fsynced)."""
    store = SidecarStore(folder)
    try:
        store.append(
            [EventDraft(type="run.created", at=NOW, data={"run_id": "r1"})], expected_version=0
        )
        head = 1
        while head < events:
            count = min(group, events - head)
            store.append([draft(head + i) for i in range(count)], expected_version=head)
            head += count
    finally:
        store.close()
    return folder / "journal.jsonl"


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few dozen lines: a journal here is read in many of them."""
    monkeypatch.setattr(bulklines, "_CHUNK", 8192)


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines msgspec decoded (the bulk reader's struct path was taken).

    Fact lines count too: their data are held unbuilt (see ``test_heldfacts.py``), each line
    decoded into its own struct.
    """
    calls = [0]

    def counting(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        def counted(line: bytes) -> Any:
            calls[0] += 1
            return decode(line)

        return counted

    assert structlines.decode_line is not None
    monkeypatch.setattr(structlines, "decode_line", counting(structlines.decode_line))
    monkeypatch.setattr(heldfacts, "_decode_fact", counting(heldfacts._decode_fact))
    return calls


def orjson_scan(data: bytes, **kwargs: Any) -> Scan:
    """``scan`` with the bulk reader parsing as it does without msgspec."""
    saved = structlines.decode_line
    structlines.decode_line = None
    try:
        return scan(data, path=PATH, **kwargs)
    finally:
        structlines.decode_line = saved


def _dumps(found: Scan) -> list[Any]:
    return [e.model_dump(mode="json") for e in found.events]


def test_a_run_read_with_msgspec_is_the_run_read_line_by_line(
    tmp_path: Path, decoded: list[int]
) -> None:
    data = write_run(tmp_path / "run").read_bytes()
    found = scan(data, path=PATH, header_allowed=True)
    assert isinstance(found.events, EventRecords)
    assert decoded[0] == data.count(b"\n") - 1  # every line but the header
    assert found.names_checked
    for other in (careful_scan(data, header_allowed=True), orjson_scan(data, header_allowed=True)):
        assert list(found.events) == list(other.events)
        assert _dumps(found) == _dumps(other)
        assert (found.offsets, found.end, found.lines, found.tail) == (
            other.offsets,
            other.end,
            other.lines,
            other.tail,
        )
    folder = tmp_path / "run"
    with SidecarStore(folder) as store:
        loaded = store.load().events
    assert isinstance(loaded, EventRecords)
    assert apply_all(RunState(run_id=""), loaded).model_dump(mode="json") == apply_all(
        RunState(run_id=""), list(careful_scan(data, header_allowed=True).events)
    ).model_dump(mode="json")


def test_types_read_in_bulk_are_one_object_per_type(tmp_path: Path) -> None:
    data = write_run(tmp_path / "run", events=300).read_bytes()
    for found in (
        scan(data, path=PATH, header_allowed=True),
        orjson_scan(data, header_allowed=True),
    ):
        assert isinstance(found.events, EventRecords)
        types = found.events.types
        assert len({id(t) for t in types}) == len(set(types)) == 5


@pytest.mark.parametrize(
    ("content", "more"),
    [
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{},"more":false' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{},"more":true,"x":1' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{},"extra":1' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s"' % AT.encode(), False),
        (b'{"v":true,"seq":1,"type":"t","at":"%s","data":{}' % AT.encode(), False),
        (b'{"v":1,"seq":1.0,"type":"t","at":"%s","data":{}' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":7,"at":"%s","data":{}' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":5,"data":{}', False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":[]' % AT.encode(), False),
        (b'{"v":2,"seq":1,"type":"t","at":"%s","data":{}' % AT.encode(), False),
        (b'{"v":1,"seq":2,"type":"t","at":"%s","data":{}' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{"x":NaN}' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{"x":1e400}' % AT.encode(), False),
        (b'{"v":1,"seq":1,"type":"t","at":"%s","data":{"x":"\\ud800"}' % AT.encode(), False),
    ],
)
def test_a_line_that_is_not_a_plain_event_is_left_to_the_careful_reader(
    content: bytes, more: bool
) -> None:
    line = seal(content + (b',"more":true' if more else b""))[:-1]
    mores = bulklines._sealed([line])
    assert mores is not None
    assert structlines.struct_columns([line], mores, 1, 1) is None


def test_plain_lines_become_columns() -> None:
    lines = [
        _line(_event(1, "a", {"x": 1.5, "big": 2**70}), more=True)[:-1],
        _line({"data": {"y": [1, "é"]}, "at": AT, "type": "b", "seq": 2, "v": 1})[:-1],
    ]
    mores = bulklines._sealed(lines)
    assert mores == [1, 0]
    columns = structlines.struct_columns(lines, mores, 1, 1)
    assert columns == (["a", "b"], [AT, AT], [{"x": 1.5, "big": 2**70}, {"y": [1, "é"]}])
    assert structlines.struct_columns(lines, mores, 2, 1) is None  # numbered from 2: a gap
    assert structlines.struct_columns(lines, [0, 0], 1, 1) is None  # "more" not where it is
    assert structlines.struct_columns([], [], 1, 1) is None


def _reseal(line: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    obj = json.loads(line)
    more = obj.pop("more", False)
    del obj["crc"]
    change(obj)
    return _line(obj, more=more)


def _bad_key(obj: dict[str, Any]) -> None:
    obj["data"]["fact"]["key"] = "<script>alert(1)</script>"


DAMAGE: list[tuple[Callable[[bytes], bytes], str]] = [
    (lambda line: line.replace(b'"type":"', b'"type":"x', 1), "checksum mismatch"),
    (lambda line: _reseal(line, lambda o: o.update(seq=str(o["seq"]))), "seq"),
    (lambda line: _reseal(line, lambda o: o.update(seq=o["seq"] + 1)), "(gap)"),
    (lambda line: _reseal(line, lambda o: o.update(v=True)), ""),
    (lambda line: _reseal(line, _bad_key), "active markup"),
]


@pytest.mark.parametrize(("damage", "detail"), DAMAGE)
def test_damage_after_lines_read_by_msgspec_names_the_file_and_line(
    tmp_path: Path, decoded: list[int], damage: Callable[[bytes], bytes], detail: str
) -> None:
    journal = write_run(tmp_path / "run")
    lines = journal.read_bytes().splitlines(keepends=True)
    at = 801  # line 802: a fact (seq 801), many chunks in
    assert b'"seq":801,' in lines[at]
    assert b"fact.formalized" in lines[at]
    lines[at] = damage(lines[at])
    journal.write_bytes(b"".join(lines))
    with pytest.raises(StoreCorrupted) as raised, SidecarStore(tmp_path / "run") as store:
        store.load()
    assert decoded[0] > 0  # the lines before it were decoded into structs
    assert raised.value.path == journal
    assert raised.value.line == at + 1
    assert detail in raised.value.detail
    assert f"{journal}:{at + 1}" in str(raised.value)


def test_a_name_broken_in_an_unfinished_append_is_not_read(tmp_path: Path) -> None:
    journal = write_run(tmp_path / "run", events=600)
    bad = {"fact": {"key": "<script>"}}
    tail = _line(_event(601, "fact.formalized", bad), more=True)  # never committed
    data = journal.read_bytes() + tail
    found = scan(data, path=PATH, header_allowed=True)
    slow = careful_scan(data, header_allowed=True)
    assert len(found.events) == len(slow.events) == 600
    assert (found.tail, found.tail_lines) == (slow.tail, slow.tail_lines) == (len(tail), 1)


@pytest.mark.parametrize(
    "value",
    [b"NaN", b"1e400", b'"\\ud800"', b"123456789012345678901234567890", b"-9223372036854775809"],
)
def test_values_msgspec_refuses_or_reads_exactly_read_as_line_by_line(value: bytes) -> None:
    lines = [_line(_event(i, "t", {"n": i})) for i in range(1, 60)]
    content = b'{"v":1,"seq":60,"type":"t","at":"%s","data":{"x":%s}' % (AT.encode(), value)
    lines.append(seal(content))
    lines += [_line(_event(i, "t", {"n": i})) for i in range(61, 120)]
    data = b"".join(lines)
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
    assert json.dumps(_dumps(found)) == json.dumps(_dumps(slow))
    assert repr(found.events[59].data) == repr(slow.events[59].data)


def test_without_msgspec_a_run_reads_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_run(folder, events=400)
    script = (
        "import sys, json\n"
        "if sys.argv[1] == 'hidden': sys.modules['msgspec'] = None\n"
        "from skillnb.store.sidecar import structlines\n"
        "assert structlines.HAVE_MSGSPEC is (sys.argv[1] != 'hidden')\n"
        "from skillnb.run import open_run\n"
        f"run = open_run(state_dir={str(folder)!r}, memory=False)\n"
        "print(json.dumps(run.journal.state.model_dump(mode='json')))\n"
    )
    states = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, how],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
        )
        for how in ("hidden", "installed")
    ]
    assert states[0] == states[1]
    assert states[0]["version"] == 400
