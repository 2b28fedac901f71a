"""Folding events from columns gives the state that folding the events one by one gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skillnb.core.eventrecords import EventRecords
from skillnb.core.records import Event, RunState
from skillnb.core.state import MalformedEvent, apply_all

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

Spec = tuple[str, dict[str, Any]]


def columns(specs: list[Spec], first: int = 1) -> EventRecords:
    """The events of ``specs`` as a store's bulk reader hands them over (columns)."""
    times = [NOW + timedelta(seconds=i) for i in range(len(specs))]
    return EventRecords(
        range(first, first + len(specs)), [t for t, _ in specs], times, [d for _, d in specs]
    )


def one_by_one(specs: list[Spec], first: int = 1) -> list[Event]:
    return [
        Event(seq=first + i, type=t, at=NOW + timedelta(seconds=i), data=d)
        for i, (t, d) in enumerate(specs)
    ]


def started(key: str, **extra: Any) -> Spec:
    return ("step.started", {"key": key, "source_hash": "h", "cell_id": "c", **extra})


def committed(key: str) -> Spec:
    return ("step.committed", {"key": key})


def done(item: str, batch: str = "docs") -> Spec:
    return ("batch.item_done", {"batch": batch, "item": item})


RERUNS: list[Spec] = [
    ("run.created", {"run_id": "r"}),
    started("a"),
    committed("a"),
    started("b", idempotent=True, owner="h:1:2"),
    done("x"),
    ("batch.declared", {"batch": "docs", "items": ["y", "z", 7]}),
    done("y"),
    done("x"),
    started("a"),  # run again: this start replaces the first step "a"
    committed("b"),
    done("q", batch="other"),
    committed("a"),
    started("c"),  # never committed
    committed("b"),  # a commit before its key's last start is written over
    started("b"),
    ("keyids.set", {"ids": {"k": "id"}}),
]


def dumped(state: RunState) -> dict[str, Any]:
    return state.model_dump(mode="json")


def same_state(specs: list[Spec]) -> RunState:
    at_once = apply_all(RunState(run_id="r"), columns(specs))
    in_turn = apply_all(RunState(run_id="r"), one_by_one(specs))
    assert dumped(at_once) == dumped(in_turn)
    assert list(at_once.steps) == list(in_turn.steps)  # insertion order too
    assert list(at_once.batches) == list(in_turn.batches)
    for key, step in at_once.steps.items():
        assert step.model_fields_set == in_turn.steps[key].model_fields_set
        assert list(step.__dict__.items()) == list(in_turn.steps[key].__dict__.items())
    return at_once


def test_a_rerun_journal_folds_from_columns_as_in_turn() -> None:
    state = same_state(RERUNS)
    assert state.steps["a"].started_seq == 9
    assert state.steps["a"].committed_seq == 12
    assert state.steps["b"].status == "started"
    assert state.batches["docs"].done == ["x", "y", "x"]
    assert state.batches["docs"].items == ["x", "y", "z", "7"]


@pytest.mark.parametrize(
    "extra",
    [
        [committed("never-started")],  # folded in turn: it makes a step of its own
        [started("d"), committed("d"), committed("d")],  # two commits of one start
        [started("e"), ("step.failed", {"key": "e", "error": "boom"})],
        [started("f", source_hash=None, owner=None), committed("f")],
    ],
)
def test_unusual_steps_give_the_same_state(extra: list[Spec]) -> None:
    same_state(RERUNS + extra)


def test_a_step_whose_fields_need_validating_is_refused_as_in_turn() -> None:
    specs = [*RERUNS, started("f", owner={"host": "h"})]  # an owner is an id (text)
    _refused_in_turn(specs, len(specs), "step.started")


def test_a_claim_in_the_run_folds_as_in_turn() -> None:
    claim = {
        "key": 'item:["docs","x"]',
        "owner": {"host": "h", "pid": 1, "started": 0.0},
        "since": NOW.isoformat(),
        "until": NOW.isoformat(),
    }
    specs = [*RERUNS[:4], ("claim.taken", {"claim": claim}), *RERUNS[4:]]
    state = same_state(specs)
    assert 'item:["docs","x"]' not in state.claims  # its item's completion released it


@pytest.mark.parametrize("bad_at", [3, 8, 12])
def test_a_malformed_event_stops_the_fold_where_folding_in_turn_stops(bad_at: int) -> None:
    specs = list(RERUNS)
    specs.insert(bad_at - 1, ("keyids.set", {"ids": [1]}))
    states = []
    for source in (columns(specs), one_by_one(specs)):
        state = RunState(run_id="r")
        with pytest.raises(MalformedEvent, match=rf"event {bad_at} \(keyids.set\)"):
            apply_all(state, source)
        states.append(state)
    assert dumped(states[0]) == dumped(states[1])
    assert states[0].version == bad_at - 1
    assert list(states[0].steps) == list(states[1].steps)


def test_a_step_or_item_without_its_key_is_refused_with_its_event() -> None:
    for bad in (("step.committed", {}), ("batch.item_done", {"batch": "docs"})):
        _refused_in_turn([*RERUNS[:6], bad, *RERUNS[6:]], 7, bad[0])


def _refused_in_turn(specs: list[Spec], seq: int, kind: str) -> None:
    states = []
    for source in (columns(specs), one_by_one(specs)):
        state = RunState(run_id="r")
        with pytest.raises(MalformedEvent, match=rf"event {seq} \({kind}\)"):
            apply_all(state, source)
        states.append(dumped(state))
    assert states[0] == states[1]
