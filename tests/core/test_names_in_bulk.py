"""Judging the names of many events at once gives the verdict of judging each on its own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillnb.core.limits import event_problem, events_pass, records_pass

NAMES = [
    "k1",
    "step_a",
    "Résumé 2024",  # not ASCII: judged on its own, and good
    "a\x00b",
    "  padded",
    "",
    "k" * 257,
    "<script>alert(1)</script>",
    "<svg/onload=alert(1)>",
    "a<b onion",  # text with < and "on": good
    "javascript:void(0)",
    "\u200bhidden",
    "tail<",  # with the next name joined: "tail< on..." must not pass or fail by accident
    "onclick=x>",
]
VALUES: list[Any] = [*NAMES, None, 3, True, ["k1", "k2"], ["k1", "<script>"], {"a": 1}]


def fact(key: Any, note: Any = None) -> dict[str, Any]:
    return {"fact": {"key": key, "note": note, "value": 1}}


def datas_of(type_: str, values: list[Any]) -> list[dict[str, Any]]:
    if type_ == "fact.formalized":
        return [fact(v) for v in values]
    if type_ == "batch.item_done":
        return [{"batch": "b", "item": v} for v in values]
    if type_ == "transition.fired":
        return [{"trigger": "go", "from": v, "to": "done"} for v in values]
    if type_ == "batch.declared":
        return [{"batch": "b", "items": v} for v in values]
    return [{"key": v} for v in values]


TYPES = ["fact.formalized", "batch.item_done", "transition.fired", "batch.declared", "step.started"]


@pytest.mark.parametrize("type_", TYPES)
@settings(max_examples=60, deadline=None)
@given(picked=st.lists(st.sampled_from(VALUES), max_size=8))
def test_events_pass_agrees_with_judging_each_event(type_: str, picked: list[Any]) -> None:
    datas = datas_of(type_, picked)
    alone = all(event_problem(type_, data) is None for data in datas)
    assert events_pass(type_, datas) is alone


@pytest.mark.parametrize(
    ("note", "good"), [(None, True), ("a note", True), ("n" * 100_000, False), (5, False)]
)
def test_a_fact_note_is_judged_in_bulk_as_alone(note: Any, good: bool) -> None:
    datas = [fact("k1"), fact("k1", note), fact("k2")]
    assert events_pass("fact.formalized", datas) is good
    assert all(event_problem("fact.formalized", d) is None for d in datas) is good


def test_events_of_a_type_without_names_pass() -> None:
    assert events_pass("step.committed", [{"key": "<script>"}])


@settings(max_examples=80, deadline=None)
@given(
    picked=st.lists(
        st.tuples(st.sampled_from(TYPES), st.sampled_from(VALUES)), min_size=1, max_size=12
    ),
    cut=st.integers(min_value=0, max_value=12),
)
def test_records_judged_in_parts_agree_with_judging_each_event(
    picked: list[tuple[str, Any]], cut: int
) -> None:
    """Parts judged one after the other, remembering what passed, give each event's verdict."""
    types = [type_ for type_, _ in picked]
    datas = [datas_of(type_, [value])[0] for type_, value in picked]
    alone = all(event_problem(t, d) is None for t, d in zip(types, datas, strict=True))
    assert records_pass(types, datas) is alone
    passed: dict[object, set[Any]] = {}
    first = records_pass(types[:cut], datas[:cut], passed)
    assert (first and records_pass(types[cut:], datas[cut:], passed)) is alone


def test_a_name_that_passed_in_one_part_is_not_judged_again() -> None:
    passed: dict[object, set[Any]] = {}
    assert records_pass(["step.started"], [{"key": "s1"}], passed)
    assert any("s1" in values for values in passed.values())
    assert not records_pass(["step.started"] * 2, [{"key": "s1"}, {"key": "<script>"}], passed)
    assert not any("<script>" in values for values in passed.values())
    assert records_pass(["step.started", "fact.formalized"], [{"key": "s1"}, fact("k1")], passed)


@pytest.mark.parametrize(
    ("names", "good"),
    [
        (["a", "b  c", "d"], True),  # two spaces inside a name: judged one by one, good
        (["a ", "b"], False),
        (["a", " b"], False),
        ([" a"], False),
        (["a", "", "b"], False),
        (["", ""], False),
        ([""], False),
        (["x:y", "a<b"], True),  # a colon and a "<": searched for markup, none
        (["javascript:x"], False),
    ],
)
def test_plain_names_are_judged_together_as_alone(names: list[str], good: bool) -> None:
    datas = [{"batch": "b", "item": name} for name in names]
    assert events_pass("batch.item_done", datas) is good
    assert all(event_problem("batch.item_done", d) is None for d in datas) is good
