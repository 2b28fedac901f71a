"""Reading journal lines on the fast path: same events, same state, with or without orjson."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.runstate.records import Event, EventDraft, RunState
from skillnb.core.runstate.state import apply_all
from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.sidecar import fastline
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.journal import encode_events, parse_line

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

DATA: list[tuple[str, dict[str, Any]]] = [
    ("run.created", {"run_id": "r1"}),
    ("keyids.set", {"ids": {"big": 2**70, "neg": -(2**63) - 1, "f": 1.5e300, "n": None}}),
    ("keyids.set", {"ids": {"text": '简历 ✓ \u2028 \\ " ```', "nested": [[{"a": [1, {}]}]]}}),
    ("batch.declared", {"batch": "docs", "items": ["a", "b", "c"]}),
    ("batch.item_done", {"batch": "docs", "item": "a"}),
    ("step.started", {"key": "s", "source_hash": "h", "idempotent": True}),
    ("step.committed", {"key": "s"}),
    ("some.future_event", {"whatever": [1, 2, 3]}),
    ("milestone.recorded", {"name": "m", "state": None, "facts": {"k": 1}}),
]


def events(zone: timezone = UTC) -> list[Event]:
    return [
        Event(seq=n, type=t, at=(AT + timedelta(microseconds=n * 7)).astimezone(zone), data=d)
        for n, (t, d) in enumerate(DATA, start=1)
    ]


def lines(evs: list[Event]) -> list[bytes]:
    return encode_events(evs).splitlines()


def careful(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> Event:
    with monkeypatch.context() as patch:
        patch.setattr(journal_module, "fast_event", lambda *_a, **_k: None)
        item, _ = parse_line(raw, path=Path("j"), line=1)
    assert isinstance(item, Event)
    return item


@pytest.mark.parametrize("zone", [UTC, timezone(timedelta(hours=5, minutes=30))])
@pytest.mark.parametrize("use_orjson", [True, False])
def test_the_fast_path_builds_the_event_pydantic_builds(
    zone: timezone, use_orjson: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if use_orjson and not fastline.HAVE_ORJSON:
        pytest.skip("orjson is not installed")
    parse = fastline._decoder(use_orjson)
    for raw, original in zip(lines(events(zone)), events(zone), strict=True):
        body = raw[: raw.rindex(b',"crc"')].removesuffix(b',"more":true') + b"}"
        fast = fastline.fast_event(body, parse=parse)
        slow = careful(raw, monkeypatch)
        assert fast is not None
        assert fast == slow == original
        assert fast.model_dump(mode="json") == slow.model_dump(mode="json")
        assert fast.model_fields_set == slow.model_fields_set
        assert fast.at.utcoffset() == slow.at.utcoffset()
        assert copy.deepcopy(fast) == fast
        assert fast.model_copy(update={"seq": 99}).seq == 99


@pytest.mark.parametrize(
    "body",
    [
        b'{"v":1,"base":0}',  # a header
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00"}',  # no data
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":{},"z":1}',
        b'{"v":1,"seq":"1","type":"x","at":"2026-03-02T09:00:00+00:00","data":{}}',
        b'{"v":true,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":{}}',
        b'{"v":2,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":{}}',
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02 09:00:00+00:00","data":{}}',
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02","data":{}}',
        b'{"v":1,"seq":1,"type":"x","at":1767000000,"data":{}}',
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":[]}',
        b'{"v":1,"seq":1,"type":"x","at":"2026-13-02T09:00:00+00:00","data":{}}',
        b"[1,2,3]",
        b"not json",
    ],
)
def test_anything_unusual_takes_the_careful_path(body: bytes) -> None:
    for use_orjson in (True, False):
        assert fastline.fast_event(body, parse=fastline._decoder(use_orjson)) is None


def test_integers_beyond_64_bits_stay_exact() -> None:
    for number in (2**64, 2**70, -(2**63) - 1, 10**30):
        body = b'{"v":1,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":{"n":%d}}'
        event = fastline.fast_event(body % number)
        assert event is not None
        assert event.data["n"] == number
        assert type(event.data["n"]) is int


def test_checksums_are_still_verified(tmp_path: Path) -> None:
    store = SidecarStore(tmp_path / "run")
    drafts = [EventDraft(type=t, at=AT, data=d) for t, d in DATA]
    store.append(drafts, expected_version=0)
    store.close()
    journal = tmp_path / "run" / "journal.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data.replace(b'"item":"a"', b'"item":"b"'))  # valid JSON, wrong sum
    with pytest.raises(StoreCorrupted, match="checksum mismatch"):
        SidecarStore(tmp_path / "run").load()


def _write_run(folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        from replay import write_journal
    finally:
        sys.path.pop(0)
    write_journal(folder, 3000)
    store = SidecarStore(folder)
    head = store.head()
    drafts = [EventDraft(type=t, at=AT, data=d) for t, d in DATA[1:]]
    store.append(drafts, expected_version=head)
    store.close()


def _state(folder: Path) -> dict[str, Any]:
    with open_run(state_dir=folder, memory=False) as run:
        return run.journal.state.model_dump(mode="json")


def test_replay_with_and_without_orjson_gives_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    _write_run(folder)
    fast = _state(folder)
    monkeypatch.setattr(fastline, "loads", fastline._decoder(False))
    stdlib = _state(folder)
    monkeypatch.setattr(journal_module, "fast_event", lambda *_a, **_k: None)
    monkeypatch.setattr(journal_module, "_scan_plain", lambda *_a, **_k: None)
    careful_state = _state(folder)
    assert fast == stdlib == careful_state
    loaded = SidecarStore(folder).load().events
    assert apply_all(RunState(run_id=""), loaded).model_dump(mode="json")["version"] == 3008
    # Without orjson installed at all: a fresh interpreter where importing it fails.
    script = (
        "import sys, json; sys.modules['orjson'] = None\n"
        "from skillnb.store.sidecar import fastline; assert not fastline.HAVE_ORJSON\n"
        "from skillnb.run import open_run\n"
        f"run = open_run(state_dir={str(folder)!r}, memory=False)\n"
        "print(json.dumps(run.journal.state.model_dump(mode='json')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout) == fast


@pytest.mark.parametrize("levels", [150, 250, 2000])
def test_lines_nested_too_deep_are_refused_as_before(tmp_path: Path, levels: int) -> None:
    content = (
        b'{"v":1,"seq":1,"type":"x","at":"2026-03-02T09:00:00+00:00","data":'
        + b'{"a":' * levels
        + b"1"
        + b"}" * levels
    )
    line = journal_module._seal(content)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "journal.jsonl").write_bytes(line)
    if levels < journal_module.READ_DEPTH:
        assert len(SidecarStore(folder).load().events) == 1
        return
    with pytest.raises(StoreCorrupted) as raised:
        SidecarStore(folder).load()
    assert raised.value.line == 1
