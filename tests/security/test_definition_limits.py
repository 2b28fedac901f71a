"""Attack: a stored definition so large that opening the run, or showing it, never ends.

A journal's ``workflow.bound`` event carries the definition the run was bound to; a hostile
sidecar can plant one with 50,000 states (opening took more than ten minutes: loading was
quadratic) or with 100 check gates of half a second each (``describe()`` took 55 s). Loading is
linear, a definition is bounded at load with an error naming the limit, and one evaluation of
all gates has one total budget.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.expr.budget import TOTAL_SECONDS
from skillnb.core.runstate.records import EventDraft
from skillnb.core.workflow.definition import MAX_GATES, MAX_STATES
from skillnb.core.workflow.model import Workflow
from skillnb.errors import WorkflowError
from skillnb.run import open_run
from skillnb.store import SidecarStore


def _chain(states: int, **extra: Any) -> dict[str, Any]:
    names = [f"s{i}" for i in range(states)]
    transitions = [
        {"from": names[i], "to": names[i + 1], "trigger": f"t{i}"} for i in range(states - 1)
    ]
    return {"workflow": {"name": "big", "states": names, "transitions": transitions, **extra}}


def _plant(folder: Path, definition: dict[str, Any]) -> Path:
    """A sidecar whose journal binds ``definition``, written as an attacker would."""
    store = SidecarStore(folder)
    at = datetime.now(UTC)
    drafts = [
        EventDraft(type="run.created", at=at, data={"run_id": "planted"}),
        EventDraft(
            type="workflow.bound",
            at=at,
            data={"workflow": "big", "hash": "0" * 64, "initial": "s0", "definition": definition},
        ),
    ]
    store.append(drafts, expected_version=0)
    store.close()
    return folder


def _load_seconds(states: int) -> float:
    definition = _chain(states)
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        Workflow.from_dict(definition)
        best = min(best, time.perf_counter() - started)
    return best


def test_loading_a_definition_is_linear_in_its_size() -> None:
    small, large = _load_seconds(1_000), _load_seconds(8_000)
    # 8 times the states: about 8 times the time when linear, 64 times when quadratic.
    assert large / small < 24, (small, large)


def test_a_stored_definition_past_the_limits_is_refused_at_once(tmp_path: Path) -> None:
    folder = _plant(tmp_path / "huge", _chain(50_000))
    started = time.perf_counter()
    with pytest.raises(WorkflowError) as raised:
        open_run(state_dir=folder, memory=False)
    assert time.perf_counter() - started < 30
    text = str(raised.value)
    assert f"the limit is {MAX_STATES:,} states" in text
    assert "stored definition" in text


def test_too_many_gates_or_too_long_a_text_is_refused() -> None:
    gates = {f"g{i}": {"requires": ["x"]} for i in range(MAX_GATES + 1)}
    with pytest.raises(WorkflowError, match=f"the limit is {MAX_GATES:,} gates"):
        Workflow.from_dict(_chain(2, gates=gates))
    with pytest.raises(WorkflowError, match="longer than 10,000 characters"):
        Workflow.from_dict(_chain(2, description="x" * 10_001))


def test_one_view_of_many_slow_checks_has_one_total_budget(tmp_path: Path) -> None:
    # Each check is within its own budget (it reads a big fact), but 100 of them are not.
    check = "[x] * 40 == [x] * 40"
    definition = _chain(2)
    body = definition["workflow"]
    body["gates"] = {f"g{i}": {"check": check} for i in range(100)}
    body["transitions"][0]["gates"] = list(body["gates"])
    folder = tmp_path / "slow"
    with open_run(state_dir=folder, workflow=Workflow.from_dict(definition), memory=False) as run:
        run.formalize("x", list(range(100_000)))
    with open_run(state_dir=folder, memory=False) as run:
        started = time.perf_counter()
        view = run.describe()
        took = time.perf_counter() - started
        report = run.check("t0")
    assert took < TOTAL_SECONDS + 5, took
    results = view["next"][0]["gates"]
    assert len(results) == 100
    assert not any(r["passed"] for r in results)
    assert any("total budget" in r["message"] for r in results)
    assert any("total budget" in r.message for r in report.results)
