"""Gate evaluation: order, severities, the callable contract, timeouts, retries, approvals."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from skillnb.core.gates.evaluate import GateContext, GateSpec, evaluate, inline_gates
from skillnb.core.gates.registry import Registry
from skillnb.errors import WorkflowError


class FakeClock:
    """A monotonic clock that only moves when a gate sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def context(
    *,
    state: str | None = "collecting",
    facts: Mapping[str, Any] | None = None,
    registry: Registry | None = None,
    approval: Callable[[GateSpec], tuple[bool, str]] | None = None,
    clock: FakeClock | None = None,
) -> GateContext:
    clock = clock or FakeClock()
    return GateContext(
        state=state,
        version=7,
        trigger="data_sufficient",
        facts={"topic": "batteries", "sources": [1, 2, 3]} if facts is None else facts,
        registry=registry or Registry(),
        approval=approval or (lambda spec: (False, f"waiting for {spec.name}")),
        clock=clock,
        sleep=clock.sleep,
    )


def test_gates_run_cheapest_first_and_stable_within_a_kind() -> None:
    registry = Registry()
    registry.register_gate("p", lambda facts: True)
    registry.register_gate("r", lambda facts: True)
    specs = [
        GateSpec("approve", "approval", approval="ok?"),
        GateSpec("quota", "resource", ref="r"),
        GateSpec("code", "python", ref="p"),
        GateSpec("check2", "check", check="len(sources) > 1"),
        GateSpec("needs", "requires", requires=("topic",)),
        GateSpec("check1", "check", check="topic == 'batteries'"),
        GateSpec("where", "state", states=("collecting",)),
    ]
    report = evaluate(specs, context(registry=registry, approval=lambda s: (True, "approved")))
    assert [r.gate for r in report.results] == [
        "where",
        "needs",
        "check2",
        "check1",
        "code",
        "quota",
        "approve",
    ]
    assert report.passed
    assert (report.trigger, report.state, report.version) == ("data_sufficient", "collecting", 7)


@pytest.mark.parametrize(
    ("spec", "passed", "message"),
    [
        (GateSpec("s", "state", states=("collecting",)), True, "in state 'collecting'"),
        (
            GateSpec("s", "state", states=("init", "done")),
            False,
            "state is 'collecting', needs 'init' or 'done'",
        ),
        (GateSpec("r", "requires", requires=("topic",)), True, "present: topic"),
        (
            GateSpec("r", "requires", requires=("topic", "budget", "owner")),
            False,
            "missing facts: budget, owner",
        ),
        (GateSpec("c", "check", check="len(sources) >= 3"), True, "len(sources) >= 3 holds"),
        (
            GateSpec("c", "check", check="len(sources) >= 5"),
            False,
            "len(sources) 3 is not >= 5 (len(sources) >= 5 is false)",
        ),
        (
            GateSpec("c", "check", check="topic == 'x'"),
            False,
            "topic 'batteries' is not 'x' (topic == 'x' is false)",
        ),
        (GateSpec("c", "check", check="budget > 1"), False, "fact 'budget' is missing"),
        (GateSpec("c", "check", check="topic > 1"), False, "cannot compare str and int"),
    ],
)
def test_declarative_gate_results(spec: GateSpec, passed: bool, message: str) -> None:
    [result] = evaluate([spec], context()).results
    assert (result.gate, result.kind, result.passed) == (spec.name, spec.kind, passed)
    assert message in result.message
    assert result.attempts == 1


def test_severity_warn_reports_without_blocking() -> None:
    specs = [
        GateSpec("soft", "requires", "warn", requires=("missing",)),
        GateSpec("hard", "requires", requires=("topic",)),
    ]
    report = evaluate(specs, context())
    assert report.passed
    assert [r.gate for r in report.warnings] == ["soft"]
    assert report.blocking == []
    report = evaluate([*specs, GateSpec("also", "requires", requires=("nope",))], context())
    assert not report.passed
    assert [r.gate for r in report.blocking] == ["also"]


@pytest.mark.parametrize(
    ("returned", "passed", "message"),
    [
        (True, True, "ok"),
        (False, False, "enough returned False"),
        ((True, "budget is 300"), True, "budget is 300"),
        ((False, "budget is 10"), False, "budget is 10"),
        (1, False, "enough returned 1; a gate returns True/False or (bool, message)"),
        (None, False, "enough returned None"),
        ("yes", False, "enough returned 'yes'"),
        (("yes", "x"), False, "enough returned ('yes', 'x')"),
        ((True, "a", "b"), False, "enough returned (True, 'a', 'b')"),
    ],
)
def test_python_gate_contract(returned: Any, passed: bool, message: str) -> None:
    registry = Registry()
    seen: list[Mapping[str, Any]] = []

    @registry.gate("enough")
    def enough(facts: Mapping[str, Any]) -> Any:
        seen.append(facts)
        return returned

    [result] = evaluate([GateSpec("g", "python", ref="enough")], context(registry=registry)).results
    assert result.passed is passed
    assert result.message.startswith(message)
    assert seen[0]["topic"] == "batteries"


def test_python_gates_get_read_only_facts() -> None:
    registry = Registry()

    @registry.gate()
    def meddle(facts: dict[str, Any]) -> bool:
        facts["topic"] = "changed"
        return True

    facts = {"topic": "batteries"}
    [result] = evaluate(
        [GateSpec("g", "python", ref="meddle")], context(facts=facts, registry=registry)
    ).results
    assert not result.passed
    assert result.message.startswith("TypeError:")
    assert facts == {"topic": "batteries"}


def test_a_gate_that_raises_fails_with_the_error_as_its_message() -> None:
    registry = Registry()
    registry.register_gate("boom", lambda facts: 1 / 0)
    specs = [GateSpec("g", "python", ref="boom"), GateSpec("h", "requires", requires=("topic",))]
    report = evaluate(specs, context(registry=registry))
    assert [r.passed for r in report.results] == [True, False]
    assert report.results[1].message == "ZeroDivisionError: division by zero"


def test_an_unregistered_python_gate_fails_with_a_hint() -> None:
    [result] = evaluate([GateSpec("g", "python", ref="nobody")], context()).results
    assert not result.passed
    assert "no gate named 'nobody' is registered" in result.message
    assert "@skillnb.gate('nobody')" in result.message


def test_a_python_gate_with_a_timeout_fails_when_it_is_too_slow() -> None:
    release = threading.Event()
    registry = Registry()
    registry.register_gate("slow", lambda facts: release.wait(5))
    spec = GateSpec("g", "python", ref="slow", timeout=0.05)
    try:
        [result] = evaluate([spec], context(registry=registry)).results
    finally:
        release.set()
    assert not result.passed
    assert result.message == "timed out after 0.05s"


def test_a_resource_gate_is_retried_with_exponential_backoff() -> None:
    calls: list[int] = []

    def flaky(facts: Mapping[str, Any]) -> tuple[bool, str]:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("quota service unreachable")
        return True, "quota left: 12"

    registry = Registry()
    registry.register_gate("quota", flaky)
    clock = FakeClock()
    spec = GateSpec("q", "resource", ref="quota", retries=3, backoff=0.5)
    [result] = evaluate([spec], context(registry=registry, clock=clock)).results
    assert (result.passed, result.message, result.attempts) == (True, "quota left: 12", 3)
    assert clock.sleeps == [0.5, 1.0]
    assert result.duration_ms == pytest.approx(1500.0)


def test_a_resource_gate_that_keeps_failing_reports_the_last_error_and_attempts() -> None:
    registry = Registry()
    registry.register_gate("quota", lambda facts: (_ for _ in ()).throw(PermissionError("denied")))
    clock = FakeClock()
    spec = GateSpec("q", "resource", ref="quota", retries=2, backoff=0.1)
    [result] = evaluate([spec], context(registry=registry, clock=clock)).results
    assert not result.passed
    assert result.message == "PermissionError: denied (after 3 attempts)"
    assert result.attempts == 3
    assert clock.sleeps == pytest.approx([0.1, 0.2])


def test_a_clear_false_from_a_resource_gate_is_not_retried() -> None:
    calls: list[int] = []

    def exhausted(facts: Mapping[str, Any]) -> tuple[bool, str]:
        calls.append(1)
        return False, "quota exhausted"

    registry = Registry()
    registry.register_gate("quota", exhausted)
    clock = FakeClock()
    spec = GateSpec("q", "resource", ref="quota", retries=5)
    [result] = evaluate([spec], context(registry=registry, clock=clock)).results
    assert (result.passed, result.message, result.attempts) == (False, "quota exhausted", 1)
    assert calls == [1]
    assert clock.sleeps == []


def test_a_resource_gate_timeout_counts_as_a_failed_attempt() -> None:
    release = threading.Event()
    calls: list[int] = []

    def hangs_once(facts: Mapping[str, Any]) -> bool:
        calls.append(1)
        if len(calls) == 1:
            release.wait(5)
        return True

    registry = Registry()
    registry.register_gate("quota", hangs_once)
    clock = FakeClock()
    spec = GateSpec("q", "resource", ref="quota", timeout=0.05, retries=1, backoff=2)
    try:
        [result] = evaluate([spec], context(registry=registry, clock=clock)).results
    finally:
        release.set()
    assert (result.passed, result.attempts) == (True, 2)
    assert clock.sleeps == [2]


def test_the_approval_callback_decides_approval_gates_and_runs_last() -> None:
    asked: list[str] = []

    def approval(spec: GateSpec) -> tuple[bool, str]:
        asked.append(spec.name)
        return spec.name == "editor", f"{spec.name}: {spec.approval}"

    specs = [
        GateSpec("legal", "approval", approval="Legal ok?"),
        GateSpec("editor", "approval", approval="Publish?"),
        GateSpec("r", "requires", requires=("topic",)),
    ]
    report = evaluate(specs, context(approval=approval))
    assert asked == ["legal", "editor"]
    assert [(r.gate, r.passed, r.message) for r in report.results] == [
        ("r", True, "present: topic"),
        ("legal", False, "legal: Legal ok?"),
        ("editor", True, "editor: Publish?"),
    ]


def test_a_raising_approval_callback_fails_the_gate() -> None:
    def broken(spec: GateSpec) -> tuple[bool, str]:
        raise RuntimeError("store is locked")

    [result] = evaluate([GateSpec("a", "approval", approval="?")], context(approval=broken)).results
    assert (result.passed, result.message) == (False, "RuntimeError: store is locked")


def test_without_a_run_approval_gates_fail() -> None:
    ctx = GateContext(state="a", version=0, trigger=None, facts={})
    [result] = evaluate([GateSpec("a", "approval", approval="?")], ctx).results
    assert not result.passed
    assert "needs a run" in result.message


def test_gate_spec_compiles_its_check_and_rejects_bad_ones() -> None:
    spec = GateSpec("c", "check", check="len(sources) > 2")
    assert spec.expr is not None
    assert spec.expr.names == ("sources",)
    assert spec == GateSpec("c", "check", check="len(sources) > 2")
    with pytest.raises(WorkflowError, match="'__import__' is not allowed"):
        GateSpec("c", "check", check="__import__('os')")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, []),
        ({"requires": ["topic"]}, [("cell.requires", "requires")]),
        ({"requires": "topic"}, [("cell.requires", "requires")]),
        ({"state": "init"}, [("cell.state", "state")]),
        (
            {
                "approval": "Go?",
                "check": "x > 1",
                "requires": ["x"],
                "state": ["a", "b"],
                "name_prefix": "publish",
            },
            [
                ("publish.state", "state"),
                ("publish.requires", "requires"),
                ("publish.check", "check"),
                ("publish.approval", "approval"),
            ],
        ),
        ({"approval": "Go?", "approval_name": "editor_ok"}, [("editor_ok", "approval")]),
    ],
)
def test_inline_gates(kwargs: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    specs = inline_gates(**kwargs)
    assert [(s.name, s.kind) for s in specs] == expected
    assert inline_gates(**kwargs) == specs  # deterministic names


def test_inline_gates_carry_their_settings_and_evaluate() -> None:
    specs = inline_gates(
        requires=["topic"],
        state=["collecting"],
        check="len(sources) == 3",
        approval="Go?",
        severity="warn",
        name_prefix="gate:collect",
    )
    assert all(s.severity == "warn" for s in specs)
    assert specs[-1].approval == "Go?"
    report = evaluate(specs, context())
    assert [r.passed for r in report.results] == [True, True, True, False]
    assert report.passed  # warn only


def test_inline_gates_reject_an_invalid_check() -> None:
    with pytest.raises(WorkflowError, match="not allowed"):
        inline_gates(check="open('x')")


@pytest.mark.parametrize(
    "spec",
    [
        GateSpec("s", "state", states=("a",)),
        GateSpec("r", "requires", "warn", "needs topic", requires=("topic",)),
        GateSpec("c", "check", check="x > 1"),
        GateSpec("p", "python", ref="m:f", timeout=2.0),
        GateSpec("q", "resource", ref="quota", timeout=1.0, retries=2, backoff=0.2),
        GateSpec("a", "approval", approval="Go?"),
    ],
)
def test_gate_spec_to_dict_is_the_definition_form(spec: GateSpec) -> None:
    data = spec.to_dict()
    assert spec.kind in data
    rebuilt = {"name": "W", "states": ["a"], "gates": {spec.name: data}}
    from skillnb.core.workflow.model import Workflow

    assert Workflow.from_dict(rebuilt).gates[spec.name] == spec
