"""A fact folded from a writer's record is the fact validating that record gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from skillnb.core.runstate.records import FACT_KINDS, Event, Fact, RunState, stored_fact
from skillnb.core.runstate.state import MalformedEvent, apply
from skillnb.run import open_run

AT = datetime(2026, 3, 29, 1, 30, 15, 250, tzinfo=timezone(timedelta(hours=2)))
VALIDATE = Fact.__pydantic_validator__.validate_python


def _same(built: Fact | None, validated: Fact) -> None:
    assert built is not None
    assert built == validated
    assert list(built.__dict__) == list(validated.__dict__)
    for name, value in validated.__dict__.items():
        assert type(built.__dict__[name]) is type(value), name
    assert built.model_fields_set == validated.model_fields_set
    assert type(built.at.tzinfo) is type(validated.at.tzinfo)
    assert built.__pydantic_private__ == validated.__pydantic_private__
    assert built.__pydantic_extra__ == validated.__pydantic_extra__


@pytest.mark.parametrize("kind", FACT_KINDS)
@pytest.mark.parametrize(
    "zone", [UTC, timezone(timedelta(hours=-3, minutes=-30)), ZoneInfo("Europe/Paris")]
)
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"note": "why", "cell_id": "c-1", "source_hash": "ab" * 16},
        {"value": {"$blob": "sha256:" + "0" * 64, "encoding": "json"}, "encoding": "blob"},
        {"value": "just text", "encoding": "text", "restorable": False, "preview": ""},
    ],
)
def test_a_dumped_fact_is_built_as_validation_builds_it(
    kind: str, zone: timezone | ZoneInfo, extra: dict[str, Any]
) -> None:
    fields: dict[str, Any] = {"key": "k", "value": [1, 2.5, {"a": None}], "version": 4}
    fact = Fact(**{**fields, "kind": kind, "at": AT.astimezone(zone), "preview": "p", **extra})
    stored = fact.model_dump(mode="json")
    built = stored_fact(stored, 9)
    _same(built, VALIDATE({**stored, "seq": 9}))
    assert built is not None
    assert built.value is stored["value"]  # shared, as validating an Any field shares it


def _stored() -> dict[str, Any]:
    return Fact(key="k", value=1, version=1, at=AT).model_dump(mode="json")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.pop("preview"),  # a field missing
        lambda r: r.update(extra=1),  # a foreign field
        lambda r: r.update(version="2"),  # a type validation would convert
        lambda r: r.update(restorable=1),
        lambda r: r.update(v=True),
        lambda r: r.update(kind="other"),  # a kind no fact has
        lambda r: r.update(note=5),
        lambda r: r.update(at="not a time"),  # validation says what is wrong
        lambda r: r.update(at=AT),  # a time already parsed: left to validation
        lambda r: r.update(key=("k",)),
    ],
)
def test_a_record_that_is_not_exactly_a_dump_is_left_to_validation(change: Any) -> None:
    stored = _stored()
    change(stored)
    assert stored_fact(stored, 3) is None


def test_keys_in_another_order_are_left_to_validation() -> None:
    stored = dict(reversed(list(_stored().items())))
    assert stored_fact(stored, 3) is None
    _same(VALIDATE({**stored, "seq": 3}), VALIDATE({**_stored(), "seq": 3}))


def test_a_malformed_fact_event_is_still_refused_with_validations_message() -> None:
    state = RunState(run_id="r")
    stored = {**_stored(), "at": "not a time"}
    event = Event(seq=1, type="fact.formalized", at=AT, data={"fact": stored})
    with pytest.raises(MalformedEvent, match=r"event 1 \(fact\.formalized\).*at"):
        apply(state, event)
    assert not state.facts


def test_a_run_reopened_holds_the_facts_its_writer_folded(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "run", memory=False) as run:
        run.formalize("a", {"x": [1, 2]}, note="n")
        run.formalize("b", "two", kind="decision")
        written = dict(run.journal.state.facts)
    with open_run(state_dir=tmp_path / "run", memory=False) as again:
        assert set(again.journal.state.facts) == set(written)
        for key, fact in again.journal.state.facts.items():
            _same(written[key], fact)
