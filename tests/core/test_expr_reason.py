"""Why a check is false, in words: the values it compared, never anything evaluated again."""

from __future__ import annotations

from typing import Any

import pytest

from skillnb.core.expr.check import compile_check
from skillnb.core.gates.evaluate import GateContext, GateSpec, evaluate

FACTS: dict[str, Any] = {
    "review": {"done": 7, "total": 27, "incomplete": {"a": ["phone"], "b": [], "c": []}},
    "budget": 30000,
    "sources": ["s1", "s2"],
    "topic": "batteries",
    "reviewed": 7,
    "total": 27,
    "status": "draft",
    "owner": None,
    "note": "x" * 500,
}


@pytest.mark.parametrize(
    ("check", "reason"),
    [
        ("review.done == review.total", "review: 7 of 27 done"),
        ("review['done'] >= review['total']", "review: 7 of 27 done"),
        ("reviewed == total", "7 of 27 reviewed"),
        ("budget <= 10000", "budget 30000 is not <= 10000"),
        ("len(sources) >= 5", "len(sources) 2 is not >= 5"),
        ("len(review.incomplete) == 0", "len(review.incomplete) 3 is not 0"),
        ("topic == 'x'", "topic 'batteries' is not 'x'"),
        ("status != 'draft'", "status 'draft' equals 'draft'"),
        ("topic in ['a', 'b']", "topic 'batteries' is not in ['a', 'b'] (list of 2)"),
        ("owner is not None", "owner None is None"),
        ("1 < budget < 20000", "budget 30000 is not < 20000"),
        ("budget > 1 and len(sources) > 3", "len(sources) 2 is not > 3"),
        (
            "budget < 5 or len(sources) > 3",
            "budget 30000 is not < 5 and len(sources) 2 is not > 3",
        ),
        ("review.done > review.total", "review.done 7 is not > review.total 27"),
    ],
)
def test_a_false_comparison_names_its_values(check: str, reason: str) -> None:
    value, why = compile_check(check).explain(FACTS)
    assert not value
    assert why == reason


@pytest.mark.parametrize(
    "check",
    ["not budget", "owner", "budget > 1 and owner", "budget < 5 or owner", "any([])"],
)
def test_what_is_not_a_failed_comparison_has_no_words(check: str) -> None:
    assert compile_check(check).explain(FACTS) == (compile_check(check).evaluate(FACTS), None)


def test_a_true_check_has_no_reason() -> None:
    assert compile_check("review.done < review.total").explain(FACTS) == (True, None)


def test_long_values_are_clipped_and_huge_numbers_not_printed() -> None:
    _, why = compile_check("note == 'y'").explain(FACTS)
    assert why is not None
    assert len(why) < 120
    assert why.endswith("is not 'y'")
    _, why = compile_check("big < 0").explain({"big": 1 << 90_000})
    assert why == "big (a number of 90001 bits) is not < 0"


def test_a_check_gate_says_the_reason_next_to_the_expression() -> None:
    spec = GateSpec("all_covered", "check", check="review.done == review.total")
    context = GateContext(state="extracting", version=1, trigger="archive", facts=FACTS)
    [result] = evaluate([spec], context).results
    assert result.message == "review: 7 of 27 done (review.done == review.total is false)"
    bare = GateSpec("owned", "check", check="owner")
    [result] = evaluate([bare], context).results
    assert result.message == "owner is false (owner=None)"  # no comparison: the plain form
