"""Check expressions cannot freeze a kernel: refused at load, or budgeted at evaluation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skillnb.core.expr.check import compile_check
from skillnb.core.workflow.model import Workflow, validate
from skillnb.errors import WorkflowError
from skillnb.run import open_run

FREEZERS = [
    "[[0]*999999]*999999 == [[0]*999999]*999999",
    "sum([[1]*999999]*999999, [])",
    "'a' * 999999999 == 'a' * 999999999",
    "[0] * n",
    "([0] * 9) * 9",
    "min([[[0] * 99] * 99] * 99)",
    "x < 10 ** 99999999",
    "x << 99999999",
    "9" * 5000 + " > x",
]


def _workflow(check: str) -> dict[str, object]:
    return {
        "name": "checks",
        "states": ["a", "b"],
        "transitions": [{"from": "a", "to": "b", "trigger": "go", "gates": ["g"]}],
        "gates": {"g": {"check": check}},
    }


@pytest.mark.parametrize("check", FREEZERS)
def test_a_freezing_check_is_a_workflow_error_at_load(check: str) -> None:
    started = time.perf_counter()
    assert validate(_workflow(check)), "validate accepted a costly check"
    with pytest.raises(WorkflowError) as info:
        Workflow.from_dict(_workflow(check))
    assert info.value.line is None or info.value.line >= 1
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("check", "facts"),
    [
        ("x == y", {"x": [[0] * 1000] * 10_000, "y": [[0] * 1000] * 10_000}),
        ("[x] * 100 == [y] * 100", {"x": list(range(200_000)), "y": list(range(200_000))}),
        ("x in y", {"x": -1, "y": [[1] * 1000] * 20_000}),
        ("sum(x) > 0", {"x": [[1]] * 10}),
        ("max(x) > y", {"x": [[0] * 10_000] * 10_000, "y": [1]}),
        ("x * 99 == x * 99", {"x": "a" * 1_000_000}),
    ],
)
def test_a_costly_check_on_big_facts_fails_its_gate_within_a_second(
    tmp_path: Path, check: str, facts: dict[str, object]
) -> None:
    run = open_run(state_dir=tmp_path / "s", workflow=Workflow.from_dict(_workflow(check)))
    started = time.perf_counter()
    message = _evaluate(run, facts)
    assert time.perf_counter() - started < 1.0
    assert any(word in message for word in ("budget", "limit", "sum adds numbers")), message


def _evaluate(run: object, facts: dict[str, object]) -> str:
    from skillnb.core.gates.evaluate import GateContext, evaluate

    assert hasattr(run, "workflow")
    spec = run.workflow.gates["g"]
    report = evaluate([spec], GateContext(state="a", version=1, trigger="go", facts=facts))
    (result,) = report.results
    assert result.passed is False
    return result.message


def test_ordinary_checks_on_ordinary_facts_still_pass() -> None:
    facts = {"sources": [f"s{i}" for i in range(10_000)], "report": {"score": 0.9}}
    check = compile_check("len(sources) >= 5 and report.score > 0.8 and 's9' in sources")
    assert check.evaluate(facts) is True
