"""The summary's keeping order, worked out on demand, agrees with the whole list it replaces."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from skillnb.core.views.fitting import Group, Order, Plan
from skillnb.core.views.summary import render_summary

BASE = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


@st.composite
def groups(draw: st.DrawFn) -> list[Group]:
    """Sections of a few lines, ranks that tie, some with a priority, some with hidden lines."""
    found = []
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(1, 8))
        kind = draw(st.sampled_from(["none", "empty", "shuffled", "newest"]))
        priority: list[int] | range | None = None
        if kind == "empty":
            priority = []
        elif kind == "shuffled":
            priority = draw(st.permutations(range(n)))
        elif kind == "newest":
            priority = range(n - 1, -1, -1)
        lines = [f"line {i}" for i in range(n)]
        rank, hidden = draw(st.integers(0, 3)), draw(st.sampled_from([0, 0, 2]))
        found.append(Group(rank, None, ("x", "xs"), lines, priority, hidden))
    return found


def listed(found: list[Group]) -> list[tuple[int, int]]:
    """The keeping order as it was built before: every line, in one list."""
    return [
        (g, i)
        for g in sorted(range(len(found)), key=lambda g: found[g].rank)
        for i in found[g].priority or range(len(found[g].lines))
    ]


@settings(max_examples=200, deadline=None)
@given(groups())
def test_order_is_the_list_it_replaces(found: list[Group]) -> None:
    order, whole = Order(found), listed(found)
    assert len(order) == len(whole)
    assert list(order) == whole
    assert [order[n] for n in range(len(whole))] == whole
    assert order[1:4] == whole[1:4]
    for kept in range(len(whole) + 2):
        assert order.left(kept) == dict(Counter(g for g, _ in whole[kept:]))
    last = {g: n for n, (g, _) in enumerate(whole)}
    assert Plan.of(found).walls == {n for g, n in last.items() if found[g].hidden}


def history(order: list[int]) -> dict[str, Any]:
    rows = [
        {
            "seq": s,
            "type": "batch.item_done",
            "at": (BASE + timedelta(seconds=s)).isoformat(),
            "summary": f"doc-{s:04d} done",
        }
        for s in order
    ]
    return {"v": 1, "run_id": "r", "state": "a", "version": len(rows), "history": rows}


def test_history_in_any_order_reads_oldest_first() -> None:
    """Rows listed out of order (or with a seq that is no number) are sorted, as before."""
    seqs = list(range(1, 301))
    shuffled = seqs[:]
    random.Random(7).shuffle(shuffled)  # noqa: S311  # an order, not a secret
    expected = render_summary(history(seqs), max_chars=3000)
    assert render_summary(history(shuffled), max_chars=3000) == expected
    odd = history(seqs)
    odd["history"][0]["seq"] = "one"  # counts as 0: still the oldest
    assert "- #0 " in render_summary(odd, max_chars=100_000)
