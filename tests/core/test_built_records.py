"""Records built without validating again are the records validation gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from skillnb.core.runstate.records import CheckedDraft, Event, EventDraft, Fact, built, replaced
from skillnb.run import open_run
from skillnb.store.sidecar.store import SidecarStore

AT = datetime(2026, 3, 29, 1, 30, 15, 250, tzinfo=timezone(timedelta(hours=2)))


def test_a_checked_draft_built_directly_equals_the_validated_one() -> None:
    data = {"fact": {"key": "k", "value": [1, "two", None]}}
    direct = CheckedDraft.of("fact.formalized", AT, data)
    validated = CheckedDraft(type="fact.formalized", at=AT, data=data)
    assert direct == validated
    assert type(direct) is CheckedDraft
    assert direct.model_dump(mode="json") == validated.model_dump(mode="json")
    assert direct.model_fields_set == validated.model_fields_set
    assert direct.model_copy(update={"at": AT + timedelta(seconds=1)}).at > AT


def test_replaced_is_model_copy_with_an_update_and_leaves_the_original() -> None:
    fact = Fact(key="k", value={"stored": 1}, encoding="json", version=3, seq=9, at=AT)
    copy = replaced(fact, value=("decoded", 1))
    assert copy == fact.model_copy(update={"value": ("decoded", 1)})
    assert fact.value == {"stored": 1}
    assert copy.model_dump()["version"] == 3
    copy.note = "changed"  # an assignment to the copy is not one to the original
    assert fact.note is None


def test_built_takes_every_field_as_given() -> None:
    fields = {"v": 1, "seq": 4, "type": "x.y", "at": AT, "data": {"a": 1}}
    event = built(Event, dict(fields), frozenset(fields))
    assert event == Event(**fields)  # type: ignore[arg-type]
    assert event.model_dump() == fields


def test_an_appended_event_is_the_validated_event_and_owns_its_data(tmp_path: Path) -> None:
    store = SidecarStore(tmp_path / "sidecar")
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    draft = CheckedDraft.of("note.added", at, {"text": "hello"})
    plain = EventDraft(type="note.added", at=at, data={"text": "plain"})
    events = store.append([draft, plain], expected_version=0)
    assert events == [
        Event(seq=1, type="note.added", at=at, data={"text": "hello"}),
        Event(seq=2, type="note.added", at=at, data={"text": "plain"}),
    ]
    draft.data["text"] = "changed later"  # the drafter's dict is not the event's
    assert events[0].data == {"text": "hello"}
    assert SidecarStore(tmp_path / "sidecar").load().events == events


def test_a_plain_draft_changed_after_it_was_made_is_validated_again(tmp_path: Path) -> None:
    store = SidecarStore(tmp_path / "sidecar")
    draft = EventDraft(type="note.added", at=datetime(2026, 1, 2, tzinfo=UTC), data={})
    draft.data[1] = "a key that is not text"  # type: ignore[index]
    with pytest.raises(ValidationError):
        store.append([draft], expected_version=0)
    assert store.head() == 0


def test_a_run_returns_facts_equal_to_what_reading_them_back_gives(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "run", memory=False) as run:
        written = run.formalize("answer", {"n": 42, "items": ["a", "b"]}, note="why")
        assert run.fact("answer") == written
    with open_run(state_dir=tmp_path / "run", memory=False) as again:
        assert again.fact("answer") == written
