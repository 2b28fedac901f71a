"""A fact's journal record is built directly, not through the model: it must say the same."""

from __future__ import annotations

import json
import time as time_module
import warnings
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from skillnb.core.limits import InvalidName
from skillnb.core.runstate.records import Fact, json_time
from skillnb.errors import SkillnbError
from skillnb.run import open_run
from skillnb.service import clock as clock_module
from skillnb.store.codec import values as codec

VALUES: list[Any] = [
    {"score": 1, "label": "item", "ok": True, "none": None, "ratio": 0.25},
    "plain text, é and 🧪",
    [1, [2, [3]], {"deep": {"er": 1e-7}}],
    (1, 2, 3),  # not plain: a tuple goes through the encoders
    {1: "int keys"},
    b"\x00bytes",
    Decimal("1.10"),
    date(2026, 12, 1),
    {"a", "set"},
    10**30,
    None,
]

ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-3))]


def _journal_facts(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    return [e["data"]["fact"] for e in events if e.get("type") == "fact.formalized"]


@pytest.mark.parametrize("zone", ZONES, ids=["utc", "plus-0530", "minus-03"])
def test_the_record_is_what_the_fact_model_dumps(tmp_path: Path, zone: timezone) -> None:
    """Each value's line holds what ``Fact(...).model_dump(mode="json")`` would give."""
    moments = iter(datetime(2026, 12, 1, 3, 4, 5, m, tzinfo=zone) for m in (0, 7, 123456) * 20)
    run = open_run(state_dir=tmp_path / "run", memory=False, clock=lambda: next(moments))
    expected = []
    for i, value in enumerate(VALUES):
        note, cell = (f"note {i}", f"cell-{i}") if i % 2 else (None, None)
        at = next(moments)
        moments = _prepend(at, moments)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unrestorable value warns; not the point here
            fact = run.formalize(
                f"k{i}", value, kind="decision", note=note, cell_id=cell, source_hash=cell
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            encoded = codec.encode(value, run.journal.store)
        model = Fact(
            key=f"k{i}",
            value=encoded.value,
            encoding=encoded.encoding,
            restorable=encoded.restorable,
            kind="decision",
            version=1,
            at=at,
            cell_id=cell,
            source_hash=cell,
            note=note,
            preview=encoded.preview,
        )
        expected.append(model.model_dump(mode="json"))
        assert fact.version == 1
        assert fact.at == at
    in_memory = [e.data["fact"] for e in run.journal.history(100) if e.type == "fact.formalized"]
    run.close()
    assert in_memory == expected  # what this process folded is what a reader will
    assert _journal_facts(tmp_path / "run") == expected


def test_the_record_reads_back_as_the_fact_returned(tmp_path: Path) -> None:
    """Reopened from the journal, every fact is the one ``formalize`` returned."""
    run = open_run(state_dir=tmp_path / "run", memory=False)
    returned = {f"k{i}": run.formalize(f"k{i}", v) for i, v in enumerate(VALUES[:6])}
    run.close()
    again = open_run(state_dir=tmp_path / "run", memory=False)
    for key, fact in returned.items():
        assert again.fact(key) == fact
    again.close()


@pytest.mark.parametrize(
    ("field", "bad", "error", "named"),
    [
        ("kind", "bogus", SkillnbError, "kind"),
        ("note", 12, InvalidName, "note"),
        ("cell_id", 12, SkillnbError, "cell id"),
        ("source_hash", ["x"], SkillnbError, "source hash"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused_before_any_write(
    tmp_path: Path, field: str, bad: object, error: type[Exception], named: str
) -> None:
    """What the model refused is refused with a message naming the field; nothing written."""
    run = open_run(state_dir=tmp_path / "run", memory=False)
    with pytest.raises(error, match=named):
        run.formalize("k", 1, **{field: bad})
    assert run.version == 0
    run.close()


@pytest.fixture
def paris(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local zone is Europe/Paris for the test."""
    monkeypatch.setenv("TZ", "Europe/Paris")
    time_module.tzset()
    monkeypatch.setattr(clock_module, "_zone_until", 0.0)
    yield
    monkeypatch.undo()
    time_module.tzset()
    clock_module._zone_until = 0.0


@pytest.mark.usefixtures("paris")
def test_the_default_clock_follows_daylight_saving_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local offset is looked up once a minute and changes on the minute it changes."""
    switch = datetime(2026, 3, 29, 1, 0, tzinfo=UTC).timestamp()  # Paris: +01:00 -> +02:00
    for delta, offset in [(-0.5, 1), (-30.0, 1), (0.0, 2), (0.5, 2), (59.9, 2), (-0.25, 1)]:
        monkeypatch.setattr(clock_module.time, "time", lambda d=delta: switch + d)
        moment = clock_module.now()
        assert moment.utcoffset() == timedelta(hours=offset), delta
        assert moment.timestamp() == pytest.approx(switch + delta, abs=1e-6)
        assert moment == datetime.fromtimestamp(switch + delta, UTC).astimezone()


def _prepend(first: datetime, rest: Iterator[datetime]) -> Iterator[datetime]:
    yield first
    yield from rest


@pytest.mark.parametrize(
    "zone",
    [
        None,
        UTC,
        timezone(timedelta(0)),
        timezone(timedelta(hours=2)),
        timezone(timedelta(hours=-3, minutes=-30)),
        timezone(timedelta(hours=14)),
        timezone(timedelta(seconds=3661)),  # seconds: left to pydantic, which drops them
        timezone(timedelta(seconds=1, microseconds=5)),
        ZoneInfo("Europe/Paris"),
    ],
)
def test_a_facts_time_is_written_as_the_fact_model_writes_it(zone: tzinfo | None) -> None:
    for micro in (0, 1, 1000, 500000, 999999):
        for year in (1, 999, 2026, 9999):
            at = datetime(year, 3, 29, 2, 30, 15, micro, tzinfo=zone)
            expected = Fact(key="k", version=1, at=at).model_dump(mode="json")["at"]
            assert json_time(at) == expected, repr(at)
