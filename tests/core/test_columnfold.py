"""Folding events from columns gives the state that folding the events one by one gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skillnb.core.runstate.eventrecords import EventRecords
from skillnb.core.runstate.records import Batch, Event, RunState
from skillnb.core.runstate.state import MalformedEvent, apply_all

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


def test_a_claimed_start_comes_after_the_items_done_before_it() -> None:
    claim = {
        "key": 'item:["docs","x"]',
        "owner": {"host": "h", "pid": 1, "started": 0.0},
        "since": NOW.isoformat(),
        "until": NOW.isoformat(),
    }
    claimed = ("step.started", {"key": "s", "claim": claim})
    before = same_state([*RERUNS[:5], claimed])  # "x" was done before the claim was taken
    assert 'item:["docs","x"]' in before.claims
    after = same_state([*RERUNS[:4], claimed, *RERUNS[4:]])  # and now after it
    assert 'item:["docs","x"]' not in after.claims


def test_items_of_several_batches_between_other_events_fold_as_in_turn() -> None:
    specs: list[Spec] = [("run.created", {"run_id": "r"})]
    for n in range(40):
        specs.append(done(f"i{n % 13}", batch=f"b{n % 3}"))
        if n % 7 == 0:
            specs.append(("batch.declared", {"batch": f"b{n % 4}", "items": [f"i{n}", "new"]}))
        if n % 5 == 0:
            specs.extend([started(f"s{n}"), committed(f"s{n}")])
    state = same_state(specs)
    assert list(state.batches) == ["b0", "b1", "b2", "b3"]


def test_marking_items_done_together_is_marking_them_in_turn() -> None:
    keys = ["a", "b", "a", "c", "d", "b", "e"]
    together, in_turn = Batch(name="n", items=["d", "z"]), Batch(name="n", items=["d", "z"])
    together.mark_done("z")
    in_turn.mark_done("z")
    together.mark_all_done(keys)
    for key in keys:
        in_turn.mark_done(key)
    assert together == in_turn
    assert together.items == ["d", "z", "a", "b", "c", "e"]
    assert together.done == ["z", *keys]
    assert together.done_count == in_turn.done_count == 6
    assert together.remaining() == in_turn.remaining() == []
    together.mark_done("f")
    assert together.is_done("f")
    assert together.items[-1] == "f"


def test_steps_held_before_a_fold_are_committed_and_run_again_as_in_turn() -> None:
    head: list[Spec] = [("run.created", {"run_id": "r"}), started("a"), started("b")]
    tail: list[Spec] = [
        committed("a"),  # a step held before this fold, committed in place
        committed("b"),
        started("b", idempotent=True),  # run again: its commit above is written over
        started("n"),
        committed("n"),
        committed("n"),  # a second commit of one start
    ]
    states = []
    for fold in (columns, one_by_one):
        state = apply_all(RunState(run_id="r"), fold(head))
        held = state.steps["a"]
        apply_all(state, fold(tail, first=len(head) + 1))
        assert state.steps["a"] is held  # committed in place, as folding in turn does
        states.append(state)
    at_once, in_turn = states
    assert dumped(at_once) == dumped(in_turn)
    assert list(at_once.steps) == list(in_turn.steps) == ["a", "b", "n"]
    for key, step in at_once.steps.items():
        assert step.model_fields_set == in_turn.steps[key].model_fields_set
        assert list(step.__dict__.items()) == list(in_turn.steps[key].__dict__.items())
    assert at_once.steps["n"].committed_seq == len(head) + 6
    assert at_once.steps["b"].status == "started"


def test_a_fold_of_another_type_reads_the_steps_started_before_it() -> None:
    specs = [*RERUNS, started("e"), ("step.failed", {"key": "e", "error": "boom"}), started("e")]
    state = same_state(specs)
    assert state.steps["e"].status == "started"
    assert state.steps["e"].started_seq == len(specs)
