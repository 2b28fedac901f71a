"""What stays on offer: the withdrawal rules of :mod:`skillnb.core.suggest.pending`."""

from __future__ import annotations

from datetime import UTC, datetime

from skillnb.core.runstate.records import Fact
from skillnb.core.suggest.pending import PendingSuggestions
from skillnb.core.suggest.rank import Suggestion

DEADLINE = Suggestion("deadline", "constraint", 0.75, "a limit set in the cell")
BUDGET = Suggestion("budget", "constraint", 0.75, "a limit set in the cell")
AT = datetime(2026, 12, 1, tzinfo=UTC)


def _fact(key: str, version: int) -> Fact:
    return Fact(key=key, value="x", kind="constraint", version=version, at=AT)


def test_an_offer_lives_while_its_name_holds_its_value_and_its_fact_is_unchanged() -> None:
    pending = PendingSuggestions()
    value = ["2026-12-15"]
    ns = {"deadline": value}
    pending.offer([DEADLINE], ns, "c1", {})
    pending.expire(ns, {})
    assert pending.live() == [DEADLINE]
    pending.expire({"deadline": ["2026-12-15"]}, {})  # equal but another object: reassigned
    assert pending.live() == []


def test_a_fact_version_written_since_withdraws_the_offer() -> None:
    pending = PendingSuggestions()
    ns = {"deadline": "2026-12-15", "budget": 4000}
    pending.offer([DEADLINE, BUDGET], ns, "c1", {"budget": _fact("budget", 1)})
    pending.expire(ns, {"budget": _fact("budget", 1)})
    assert pending.live() == [DEADLINE, BUDGET]
    pending.expire(ns, {"deadline": _fact("deadline", 1), "budget": _fact("budget", 2)})
    assert pending.live() == []


def test_take_supersede_and_the_newest_first() -> None:
    pending = PendingSuggestions()
    ns = {"deadline": "2026-12-15", "budget": 4000}
    pending.offer([DEADLINE], ns, "c1", None)
    pending.offer([BUDGET], ns, "c2", None)
    assert pending.live() == [BUDGET, DEADLINE]
    pending.supersede(None)  # no cell id: nothing to match
    assert len(pending) == 2
    pending.supersede("c1")
    assert pending.live() == [BUDGET]
    offer = pending.take("budget")
    assert offer is not None
    assert (offer.cell_id, offer.value, offer.seen) == ("c2", 4000, 0)
    assert pending.take("budget") is None
    assert pending.live() == []


def test_an_extracted_value_is_no_variable_and_the_oldest_go_past_the_limit() -> None:
    pending = PendingSuggestions(limit=2)
    risks = Suggestion("risks", "data", 0.9, "read by the extractor")
    pending.offer([risks], {"risks": ["gas"]}, "c1", None, bound=False)
    pending.expire({}, None)
    assert pending.live() == [risks]
    pending.offer([DEADLINE, BUDGET], {"deadline": 1, "budget": 2}, "c2", None)
    assert pending.live() == [DEADLINE, BUDGET]
