"""Checked drafts are encoded by orjson when it is installed: same events, same refusals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.runstate.records import CheckedDraft, Event, EventDraft
from skillnb.errors import ConflictError
from skillnb.run import open_run
from skillnb.store.sidecar import journal
from skillnb.store.sidecar.journal import EventRejected, encode_events
from skillnb.store.sidecar.store import SidecarStore

VALUES: list[Any] = [
    {"score": 1, "label": "item", "ok": True, "none": None},
    [1e-7, 1.5e-07, -0.0, 1e16, 5e-324, 1.7976931348623157e308, 0.1],
    'control \x00\x1f\x7f, line separator \u2028, quote " and backslash \\, é, 🧪',
    {"nested": [[{"deep": ["x"]}]], "empty": {}, "list": []},
    2**63 - 1,
    -(2**63),
    2**70,  # beyond 64 bits: the standard library writes it
    "",
]


def _moments() -> Iterator[datetime]:
    start = datetime(2026, 12, 1, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=1)))
    n = 0
    while True:
        yield start + timedelta(seconds=n)
        n += 1


def _lines(folder: Path) -> list[dict[str, Any]]:
    text = (folder / "journal.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line]  # not splitlines: U+2028


def _write(folder: Path) -> list[dict[str, Any]]:
    clock = _moments()
    run = open_run(state_dir=folder, memory=False, clock=lambda: next(clock))
    for i, value in enumerate(VALUES):
        run.formalize(f"k{i}", value, note="é" if i % 2 else None)
    run.close()
    reopened = open_run(state_dir=folder, memory=False)
    for i, value in enumerate(VALUES):
        assert reopened.fact(f"k{i}").value == value
    reopened.close()
    lines = [{k: v for k, v in line.items() if k != "crc"} for line in _lines(folder)]
    for line in lines:
        if line.get("type") == "run.created":
            line["data"]["run_id"] = "-"  # each run has its own id
        line.pop("run", None)  # the header names it too
    return lines


def test_orjson_and_the_standard_library_write_the_same_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines differ at most in how a float is spelled; they read back the same."""
    assert journal.orjson is not None, "the test command installs orjson (the speed extra)"
    fast = _write(tmp_path / "fast")
    monkeypatch.setattr(journal, "orjson", None)
    slow = _write(tmp_path / "slow")
    assert fast == slow
    spelled = {
        name: (tmp_path / name / "journal.jsonl").read_text("utf-8") for name in ("fast", "slow")
    }
    assert "[1e-7," in spelled["fast"]  # orjson wrote the facts
    assert "[1e-07," in spelled["slow"]


def test_what_orjson_cannot_write_the_same_way_is_left_to_the_standard_library(
    tmp_path: Path,
) -> None:
    """A 65-bit integer and an offset of seconds are written exactly."""
    store = SidecarStore(tmp_path / "run")
    odd = timezone(timedelta(hours=-3, seconds=-17))
    at = datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=odd)
    draft = CheckedDraft(type="note", at=at, data={"big": 2**70, "small": [1, 2.5]})
    [event] = store.append([draft], expected_version=0)
    store.close()
    reread = SidecarStore(tmp_path / "run")
    [loaded] = reread.load().events
    reread.close()
    assert loaded == event
    assert loaded.at.utcoffset() == timedelta(hours=-3, seconds=-17)
    assert loaded.data["big"] == 2**70


@pytest.mark.parametrize(
    "data",
    [
        {"surrogate": "\ud800"},
        {"deep": json.loads("[" * 200 + "]" * 200)},
    ],
    ids=["lone-surrogate", "too-deep"],
)
def test_a_checked_draft_that_is_not_journal_json_is_still_refused(data: dict[str, Any]) -> None:
    """The fast encoder never lets through what the strict one refuses (nothing written)."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    event = Event(seq=1, type="note", at=at, data=data)
    with pytest.raises(EventRejected):
        encode_events([event], [True])
    with pytest.raises(EventRejected):
        encode_events([event])


def test_nan_in_a_plain_draft_is_refused_whatever_the_encoder(tmp_path: Path) -> None:
    """Only checked drafts take the fast path: NaN in any other draft is still refused."""
    store = SidecarStore(tmp_path / "run")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(EventRejected, match="not JSON"):
        store.append([EventDraft(type="note", at=at, data={"x": float("nan")})], expected_version=0)
    assert store.head() == 0
    store.close()


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_one_line_append_writes_the_bytes_of_the_general_path(value: Any) -> None:
    """``encode_one`` (one checked draft) gives exactly what ``encode_events`` gives."""
    at = datetime(2026, 12, 1, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=1)))
    draft = CheckedDraft.of("fact.formalized", at, {"fact": {"key": "k", "value": value}})
    event = Event(seq=7, type=draft.type, at=draft.at, data=draft.data)
    line = journal.encode_one(7, draft)
    assert line is None or line == encode_events([event], [True])
    if value != 2**70:  # what orjson cannot write is left to the general path
        assert line is not None


@pytest.mark.parametrize(
    "data",
    [
        {"surrogate": "\ud800"},
        {"deep": json.loads("[" * 200 + "]" * 200)},
        {"fact": {"key": "<script>x</script>", "value": 1}},
        {"fact": {"key": "k", "note": "n" * 20_000}},
    ],
    ids=["lone-surrogate", "too-deep", "markup-key", "long-note"],
)
def test_one_checked_draft_the_journal_refuses_writes_nothing(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    """The one-line append refuses what the general path refuses, and the journal stays."""
    store = SidecarStore(tmp_path / "run")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    store.append([CheckedDraft.of("note", at, {"first": True})], expected_version=0)
    size = (tmp_path / "run" / "journal.jsonl").stat().st_size
    with pytest.raises(EventRejected):
        store.append([CheckedDraft.of("fact.formalized", at, data)], expected_version=1)
    assert store.head() == 1
    assert (tmp_path / "run" / "journal.jsonl").stat().st_size == size
    store.close()


def test_one_checked_draft_at_an_old_version_is_a_conflict(tmp_path: Path) -> None:
    """Encoded for the version the writer expects; committed only if it still is the head."""
    store = SidecarStore(tmp_path / "run")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    for version in range(3):
        [event] = store.append(
            [CheckedDraft.of("note", at, {"n": version})], expected_version=version
        )
        assert event.seq == version + 1
    with pytest.raises(ConflictError):
        store.append([CheckedDraft.of("note", at, {"n": 9})], expected_version=1)
    assert [e.data["n"] for e in store.load().events] == [0, 1, 2]
    store.close()
