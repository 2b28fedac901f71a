"""The view indexes: kept current event by event, they equal a full recompute.

Random event sequences (fixed seeds) are folded one event at a time, or in batches, into a
state whose index was built early and synced at random moments; at every check the index
equals one built from scratch over a copy of the state, and a summary rendered from the
budgeted view equals the summary of the full view, for every budget tried.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from skillnb.core.runstate.records import FACT_KINDS, Batch, Event, Fact, RunState
from skillnb.core.runstate.state import apply, apply_all
from skillnb.core.runstate.viewindex import ViewIndex, view_index
from skillnb.core.views.summary import facts_needed, render_summary

BASE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ZONES = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5))]


def _fact(rng: random.Random, key: str, version: int) -> dict[str, Any]:
    # Times go backwards as well as forwards, and collide, as clocks of several hosts do.
    at = BASE + timedelta(seconds=rng.choice([rng.randrange(0, 500), 100]))
    return Fact(
        key=key,
        value=rng.randrange(1000),
        kind=rng.choice(FACT_KINDS),  # type: ignore[arg-type]
        version=version,
        at=at.astimezone(rng.choice(ZONES)),
        preview=rng.choice(["", "x", "a `tick`", "long " * 30]),
        restorable=rng.random() > 0.1,
    ).model_dump(mode="json")


def random_events(rng: random.Random, n: int) -> list[Event]:
    """``n`` events: facts (new keys and new versions), steps and batch items."""
    events: list[Event] = []
    versions: dict[str, int] = {}
    for seq in range(1, n + 1):
        at = BASE + timedelta(seconds=seq)
        roll = rng.random()
        if roll < 0.5:
            key = f"k{rng.randrange(40)}"
            versions[key] = versions.get(key, 0) + 1
            data: dict[str, Any] = {"fact": _fact(rng, key, versions[key])}
            type_ = "fact.formalized"
        elif roll < 0.8:
            type_ = rng.choice(["step.started", "step.committed", "step.failed", "step.cleared"])
            data = {"key": f"s{rng.randrange(10)}", "error": "boom", "by": "ann"}
        elif roll < 0.9:
            type_ = "batch.declared"
            data = {"batch": "b", "items": [f"i{rng.randrange(30)}" for _ in range(3)]}
        else:
            type_ = "batch.item_done"
            data = {"batch": rng.choice(["b", "c"]), "item": f"i{rng.randrange(30)}"}
        events.append(Event(seq=seq, type=type_, at=at, data=data))
    return events


def _fresh(state: RunState) -> dict[str, Any]:
    return ViewIndex(state.model_copy(deep=True)).snapshot()


def view_of(state: RunState, limit: int | None) -> dict[str, Any]:
    """The fact part of a view, as describe() builds it."""
    index = view_index(state)
    rows = index.rows() if limit is None else index.top_rows(limit)
    return {"facts": rows, "fact_counts": index.counts()}


@pytest.mark.parametrize("seed", range(12))
def test_an_index_kept_current_equals_a_full_recompute(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311  # reproducible test data
    events = random_events(rng, 400)
    state = RunState(run_id="r")
    view_index(state)  # built early: every later event is noted
    pos = 0
    while pos < len(events):
        step = rng.choice([1, 1, 1, 5, 40])
        chunk = events[pos : pos + step]
        if step == 1:
            apply(state, chunk[0])
        else:
            apply_all(state, chunk)
        pos += len(chunk)
        if rng.random() < 0.3:
            assert view_index(state).snapshot() == _fresh(state)
    assert view_index(state).snapshot() == _fresh(state)
    assert view_index(state).counts() == {
        kind: sum(1 for f in state.facts.values() if f.kind == kind) for kind in FACT_KINDS
    }
    assert [r["key"] for r in view_index(state).rows()] == list(state.facts)
    started = {k for k, s in state.steps.items() if s.status == "started"}
    assert view_index(state).started() == started


@pytest.mark.parametrize("seed", range(6))
def test_a_budgeted_view_renders_as_the_full_view(seed: int) -> None:
    rng = random.Random(100 + seed)  # noqa: S311  # reproducible test data
    state = apply_all(RunState(run_id="r"), random_events(rng, 600))
    full = view_of(state, None)
    stable_full = {**full, "facts": [{**r, "at": None} for r in full["facts"]]}
    for budget in [0, 50, 120, 200, 333, 500, 800, 1500, 4000, 20_000]:
        limited = view_of(state, facts_needed(budget))
        assert render_summary(limited, max_chars=budget) == render_summary(full, max_chars=budget)
        stable = {**limited, "facts": [{**r, "at": None} for r in limited["facts"]]}
        assert render_summary(stable, max_chars=budget) == render_summary(
            stable_full, max_chars=budget
        )


def test_a_copied_state_builds_its_own_index() -> None:
    state = apply_all(RunState(run_id="r"), random_events(random.Random(7), 50))  # noqa: S311
    index = view_index(state)
    copy = state.model_copy(deep=True)
    assert copy._views is None
    assert view_index(copy) is not index
    assert view_index(copy).snapshot() == index.snapshot()
    assert "_views" not in state.model_dump()  # never persisted


@pytest.mark.parametrize("seed", range(6))
def test_batch_sets_follow_the_lists(seed: int) -> None:
    rng = random.Random(200 + seed)  # noqa: S311  # reproducible test data
    state = apply_all(RunState(run_id="r"), random_events(rng, 500))
    for batch in state.batches.values():
        done = set(batch.done)
        assert batch.done_count == len(done)
        expected = [k for k in batch.items if k not in done]
        assert batch.remaining() == expected
        for limit in (0, 1, 3, 100):
            assert batch.remaining(limit) == expected[:limit]
        assert all(batch.is_done(k) for k in done)
        # A batch read back from a snapshot (no sets yet) answers the same.
        again = Batch.model_validate(batch.model_dump())
        assert again.remaining() == expected
        assert again.done_count == len(done)


def test_batch_lists_changed_behind_the_sets_back_are_noticed() -> None:
    batch = Batch(name="b")
    batch.extend(["a", "b", "c"])
    batch.mark_done("a")
    assert batch.remaining() == ["b", "c"]
    batch.done.clear()  # shrank: the sets are rebuilt
    assert batch.remaining() == ["a", "b", "c"]
    batch.items.append("d")
    batch.done.append("b")
    assert batch.remaining() == ["a", "c", "d"]
    assert batch.done_count == 1


def test_states_compare_by_their_data_not_their_indexes() -> None:
    events = random_events(random.Random(9), 120)  # noqa: S311
    one = apply_all(RunState(run_id="r"), events)
    other = apply_all(RunState(run_id="r"), events)
    view_index(one)
    for batch in one.batches.values():
        batch.remaining(2)  # builds its sets
    assert one == other
    assert one.batches == other.batches
    other.batches["b"].mark_done("new")
    assert one != other
