"""The cell index: kept current event by event, it answers as looking through the state does.

Random event sequences (fixed seeds) write facts over again from other cells, start steps
again from other cells, end steps that never started, and use one cell id for facts and
steps alike. They are folded one event at a time, in lists or as columns, into a state whose
index was built at a random moment and asked at random moments; at every check each cell
id's answer equals a scan of the state, and the index equals one built from scratch.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skillnb.core.runstate.cellindex import CellIndex, cell_index
from skillnb.core.runstate.eventrecords import EventRecords, HeldData
from skillnb.core.runstate.records import Event, Fact, RunState
from skillnb.core.runstate.state import apply, apply_all

BASE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CELLS = ["c0", "c1", "c2", "c3", "c4", "", None]
STEPS = ["gate:go", "gate:back", "gate:c0", "formalize:k0", "formalize:k1", "batch:docs"]


def scan_fact(state: RunState, cell_id: str | None) -> str | None:
    """The first fact a cell recorded, found by looking at every fact."""
    if not cell_id:
        return None
    return next((f.key for f in state.facts.values() if f.cell_id == cell_id), None)


def scan_step(state: RunState, cell_id: str | None) -> str | None:
    """The first gate step a cell recorded, found by looking at every step."""
    if not cell_id:
        return None
    for step in state.steps.values():
        if step.cell_id == cell_id and not step.key.startswith("formalize:"):
            return step.key
    return None


def random_events(rng: random.Random, n: int, first: int = 1) -> list[Event]:
    """``n`` events from ``first`` on: facts, steps started and ended, and others."""
    events: list[Event] = []
    for seq in range(first, first + n):
        at = BASE + timedelta(seconds=seq)
        roll = rng.random()
        data: dict[str, Any]
        if roll < 0.45:
            key = f"k{rng.randrange(12)}"
            fact = Fact(key=key, value=seq, version=seq, at=at, cell_id=rng.choice(CELLS))
            data, type_ = {"fact": fact.model_dump(mode="json")}, "fact.formalized"
        elif roll < 0.7:
            data = {"key": rng.choice(STEPS), "cell_id": rng.choice(CELLS)}
            type_ = "step.started"
        elif roll < 0.9:
            type_ = rng.choice(["step.committed", "step.failed", "step.cleared"])
            data = {"key": rng.choice([*STEPS, "gate:never_started"]), "error": "boom"}
        else:
            type_, data = "keyids.set", {"ids": {"session": str(seq)}}
        events.append(Event(seq=seq, type=type_, at=at, data=data))
    return events


def columns(events: list[Event]) -> EventRecords:
    """``events`` as a store hands them over after reading its journal."""
    return EventRecords(
        range(events[0].seq, events[-1].seq + 1),
        [e.type for e in events],
        [e.at for e in events],
        [e.data for e in events],
    )


def held_columns(events: list[Event], built: list[int] | None = None) -> EventRecords:
    """``events`` as a reader hands them over when it holds facts' data unbuilt."""
    data = [e.data for e in events]
    held: list[Any] = [
        (d["fact"]["key"], i) if e.type == "fact.formalized" else d
        for i, (e, d) in enumerate(zip(events, data, strict=True))
    ]

    def build(at: int) -> dict[str, Any]:
        if built is not None:
            built.append(at)
        return data[at]

    column = HeldData(held, build, lambda kept: str(kept[0]))
    return EventRecords(
        range(events[0].seq, events[-1].seq + 1),
        [e.type for e in events],
        [e.at for e in events],
        column,
    )


def assert_answers_as_a_scan(state: RunState) -> None:
    index = cell_index(state)
    for cell_id in [*CELLS, "unknown"]:
        assert index.fact_key(cell_id or "") == scan_fact(state, cell_id), cell_id
        assert index.step_key(cell_id or "") == scan_step(state, cell_id), cell_id
    assert index.snapshot() == CellIndex(state.model_copy(deep=True)).snapshot()


@pytest.mark.parametrize("seed", range(16))
def test_an_index_kept_current_answers_as_a_scan(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311  # reproducible test data
    events = random_events(rng, 500)
    built_at = rng.randrange(len(events))
    state = RunState(run_id="r")
    pos = 0
    while pos < len(events):
        if pos >= built_at and state._cells is None:
            cell_index(state)  # from here on, every event is noted
        chunk = events[pos : pos + rng.choice([1, 1, 1, 3, 20, 60])]
        how = rng.random()
        if len(chunk) == 1 and how < 0.5:
            apply(state, chunk[0])
        elif how < 0.7:
            apply_all(state, chunk)
        elif how < 0.85:
            apply_all(state, columns(chunk))
        else:
            apply_all(state, held_columns(chunk))
        pos += len(chunk)
        if rng.random() < 0.3:
            assert_answers_as_a_scan(state)
    assert_answers_as_a_scan(state)


def test_noting_held_columns_builds_no_fact_the_fold_does_not() -> None:
    events = random_events(random.Random(5), 400)  # noqa: S311
    head, tail = events[:100], events[100:]
    builds: dict[bool, list[int]] = {}
    for indexed in (False, True):
        state = apply_all(RunState(run_id="r"), head)
        if indexed:
            cell_index(state)
        built: list[int] = []
        apply_all(state, held_columns(tail, built))
        builds[indexed] = built
        assert_answers_as_a_scan(state)
    assert builds[True] == builds[False]
    assert len(builds[True]) < sum(e.type == "fact.formalized" for e in tail)


def test_facts_written_over_from_another_cell_move_with_them() -> None:
    state = RunState(run_id="r")
    cell_index(state)
    for seq, (key, cell) in enumerate([("a", "c1"), ("b", "c1"), ("a", "c2"), ("b", "c2")], 1):
        fact = Fact(key=key, value=seq, version=seq, at=BASE, cell_id=cell)
        apply(
            state,
            Event(
                seq=seq,
                type="fact.formalized",
                at=BASE,
                data={"fact": fact.model_dump(mode="json")},
            ),
        )
        assert cell_index(state).fact_key("c1") == scan_fact(state, "c1")
        assert cell_index(state).fact_key("c2") == scan_fact(state, "c2")
    assert cell_index(state).fact_key("c1") is None
    assert cell_index(state).fact_key("c2") == "a"  # the first in the state's order


def test_a_step_started_again_from_another_cell_moves_with_it() -> None:
    state = RunState(run_id="r")
    cell_index(state)
    starts = [("gate:x", "c1"), ("gate:y", "c1"), ("gate:x", "c2"), ("formalize:k", "c3")]
    for seq, (key, cell) in enumerate(starts, 1):
        apply(
            state, Event(seq=seq, type="step.started", at=BASE, data={"key": key, "cell_id": cell})
        )
    assert cell_index(state).step_key("c1") == "gate:y"
    assert cell_index(state).step_key("c2") == "gate:x"
    assert cell_index(state).step_key("c3") is None  # a formalize step is found by its fact


def test_a_copied_or_reloaded_state_builds_its_own_index() -> None:
    state = apply_all(RunState(run_id="r"), random_events(random.Random(3), 200))  # noqa: S311
    index = cell_index(state)
    copy = state.model_copy(deep=True)
    assert copy._cells is None
    assert cell_index(copy) is not index
    assert cell_index(copy).snapshot() == index.snapshot()
    reloaded = RunState.model_validate(state.model_dump(mode="json"))
    assert cell_index(reloaded).snapshot() == index.snapshot()
    assert "_cells" not in state.model_dump()  # never persisted
