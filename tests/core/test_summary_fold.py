"""Recent history in the views and the summary: runs of similar events fold into one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_summary import parse, section
from test_summary_run import Clock

import skillnb
from skillnb.core.runstate.records import Event
from skillnb.core.views.summary import render_summary
from skillnb.service.view import fold_history, stable_view
from skillnb.store import MemoryStore

BASE = datetime(2026, 3, 2, 9, 0, 0, 250_000, tzinfo=UTC)


def done(seq: int, item: str, batch: str = "docs") -> Event:
    at = BASE + timedelta(seconds=seq)
    return Event(seq=seq, type="batch.item_done", at=at, data={"batch": batch, "item": item})


def fired(seq: int, trigger: str) -> Event:
    at = BASE + timedelta(seconds=seq)
    data = {"trigger": trigger, "from": "a", "to": "b", "action": None}
    return Event(seq=seq, type="transition.fired", at=at, data=data)


def started(seq: int) -> Event:
    return Event(seq=seq, type="step.started", at=BASE, data={"key": f"s{seq}"})


def test_twenty_batch_items_become_one_row() -> None:
    events = [fired(4, "go")] + [done(5 + i, f"doc-{i:02d}") for i in range(20)]
    rows = fold_history(events)
    assert len(rows) == 2
    assert rows[0]["summary"] == "go: a → b"
    assert (rows[0]["count"], rows[0]["last_seq"], rows[0]["last_at"]) == (1, 4, rows[0]["at"])
    row = rows[1]
    assert row["seq"] == 5
    assert (row["count"], row["last_seq"]) == (20, 24)
    assert row["summary"] == "batch docs: doc-00 done … doc-19 done (20 events)"
    assert row["at"] == (BASE + timedelta(seconds=5)).isoformat()
    assert row["last_at"] == (BASE + timedelta(seconds=24)).isoformat()


def test_bookkeeping_between_similar_events_does_not_break_a_run() -> None:
    events: list[Event] = []
    for i in range(6):
        events += [started(10 + 2 * i), done(11 + 2 * i, f"d{i}")]
    rows = fold_history(events)
    assert len(rows) == 1
    assert (rows[0]["seq"], rows[0]["last_seq"], rows[0]["count"]) == (11, 21, 6)


def test_short_runs_and_different_subjects_stay_apart() -> None:
    events = [done(1, "a"), done(2, "b"), done(3, "c", batch="other"), fired(4, "go")]
    rows = fold_history(events)
    assert [r["summary"] for r in rows] == [
        "batch docs: a done",
        "batch docs: b done",
        "batch other: c done",
        "go: a → b",
    ]
    assert all(r["count"] == 1 for r in rows)


def test_folding_keeps_the_newest_rows() -> None:
    events = []
    for block in range(30):  # 30 runs of three items of different batches
        events += [done(3 * block + i + 1, f"i{i}", batch=f"b{block}") for i in range(3)]
    rows = fold_history(events, limit=20)
    assert len(rows) == 20
    assert rows[-1]["last_seq"] == 90
    assert rows[0]["seq"] == 31


def test_a_folded_row_renders_as_one_line_with_times_to_the_second() -> None:
    rows = fold_history([fired(4, "go")] + [done(5 + i, f"doc-{i:02d}") for i in range(20)])
    parsed = parse(render_summary({"history": rows}))
    assert section(parsed, "## Recent history") == [
        "- #4 2026-03-02T09:00:04+00:00 go: a → b",
        "- #5..#24 2026-03-02T09:00:05+00:00..09:00:24"
        " batch docs: doc-00 done … doc-19 done (20 events)",
    ]
    stable = parse(render_summary(stable_view({"history": rows, "run_id": "r"})))
    assert section(stable, "## Recent history") == [
        "- #4 go: a → b",
        "- #5..#24 batch docs: doc-00 done … doc-19 done (20 events)",
    ]


def test_a_range_over_days_or_zones_shows_both_times() -> None:
    row = {
        "seq": 1,
        "last_seq": 9,
        "count": 9,
        "at": "2026-03-02T23:59:59.999999+00:00",
        "last_at": "2026-03-03T00:00:01.5+00:00",
        "summary": "x",
    }
    parsed = parse(render_summary({"history": [row]}))
    assert section(parsed, "## Recent history") == [
        "- #1..#9 2026-03-02T23:59:59+00:00..2026-03-03T00:00:01+00:00 x"
    ]


def test_times_show_to_the_second_everywhere() -> None:
    view = {
        "updated_at": "2026-03-02T09:00:05.123456+02:00",
        "milestones": [{"name": "m", "seq": 3, "state": "a", "at": "2026-03-02T09:00:01.5Z"}],
        "history": [{"seq": 3, "at": "2026-03-02T09:00:01.000001+00:00", "summary": "e"}],
    }
    out = render_summary(view)
    assert "updated: 2026-03-02T09:00:05+02:00" in out
    assert "(state a, 2026-03-02T09:00:01Z)" in out
    assert "- #3 2026-03-02T09:00:01+00:00 e" in out
    assert ".1234" not in out
    assert ".5" not in out


@pytest.mark.parametrize("budget", [0, 60, 150, 300, 600, 1200, 4000])
def test_a_batch_loop_folds_in_the_run_summary_within_every_budget(budget: int) -> None:
    run = skillnb.open_run(store=MemoryStore(), memory=False, clock=Clock())
    run.formalize("topic", "résumés")
    for _ in run.items("resumes", [f"r{i:02d}.pdf" for i in range(20)]):
        pass
    out = run.summary(max_chars=budget, stable=True)
    assert len(out) <= budget
    assert out == run.summary(max_chars=budget, stable=True)  # deterministic
    full = parse(run.summary(stable=True))
    history = section(full, "## Recent history")
    folded = [line for line in history if "(20 events)" in line]
    assert folded == [
        f"- #{folded[0].split('#')[1].split('.')[0]}..#{run.version}"
        " batch resumes: r00.pdf done … r19.pdf done (20 events)"
    ]
