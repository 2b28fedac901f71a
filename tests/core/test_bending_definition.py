"""Gates that bend, in the definition and the evaluation: profiles, bypass_in, on_timeout,
follow_up and corrective actions, each valid and invalid, with the line of every problem."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.gates.evaluate import GateContext, GateSpec, evaluate
from skillnb.core.gates.registry import Registry
from skillnb.core.workflow.model import Workflow, validate
from skillnb.errors import WorkflowError

BASE = """\
workflow:
  name: bend
  states: [a, b, c]
  profiles: [demo, test]
  transitions:
    - {{from: a, to: b, trigger: go, gates: [g]}}
    - {{from: a, to: c, trigger: manual}}
  gates:
    g: {gate}
"""


def _definition(gate: str) -> str:
    return BASE.format(gate=gate)


VALID: list[tuple[str, dict[str, Any]]] = [
    ("{check: 'x > 1', bypass_in: [demo]}", {"bypass_in": ("demo",)}),
    ("{python: 'm:f', bypass_in: demo}", {"bypass_in": ("demo",)}),
    (
        "{resource: quota, on_timeout: {escalate: 'Quota API down: go on?'}}",
        {"escalate": "Quota API down: go on?"},
    ),
    ("{python: 'm:f', timeout: 1, on_timeout: {fallback: manual}}", {"fallback": "manual"}),
    ("{check: 'x > 1', severity: warn, follow_up: 'Add sources'}", {"follow_up": "Add sources"}),
    ("{check: 'x > 1', severity: warn, action: top_up}", {"action": "top_up"}),
]


@pytest.mark.parametrize(("gate", "fields"), VALID)
def test_each_new_field_loads_and_round_trips(gate: str, fields: dict[str, Any]) -> None:
    workflow = Workflow.from_yaml(_definition(gate))
    spec = workflow.gates["g"]
    for name, value in fields.items():
        assert getattr(spec, name) == value
    assert workflow.profiles == ("demo", "test")
    assert Workflow.from_dict(workflow.to_dict()) == workflow
    assert Workflow.from_yaml(workflow.to_yaml()).gates["g"] == spec


INVALID: list[tuple[str, int, int, str]] = [
    ("{check: 'x > 1', bypass_in: [prod]}", 9, 37, "unknown profile 'prod'"),
    ("{check: 'x > 1', bypass_in: [default]}", 9, 37, "never runs"),
    ("{check: 'x > 1', bypass_in: 3}", 9, 36, "bypass_in must be a string or a list"),
    ("{check: 'x > 1', on_timeout: {fallback: manual}}", 9, 25, "only to python and resource"),
    ("{resource: q, on_timeout: {fallback: nowhere}}", 9, 45, "fallback 'nowhere' of gate 'g'"),
    ("{resource: q, on_timeout: {fallback: go}}", 9, 45, "the trigger it guards"),
    ("{resource: q, on_timeout: {escalate: m, fallback: manual}}", 9, 34, "one of: escalate"),
    ("{resource: q, on_timeout: {retry: 3}}", 9, 35, "unknown key 'retry'"),
    ("{resource: q, on_timeout: escalate}", 9, 34, "on_timeout must be a mapping"),
    ("{resource: q, severity: warn, on_timeout: {escalate: m}}", 9, 50, "applies to blocking"),
    ("{resource: q, on_timeout: {escalate: ''}}", 9, 45, "must not be empty"),
    ("{check: 'x > 1', follow_up: 'do it'}", 9, 25, "applies to warn gates"),
    ("{check: 'x > 1', action: fix}", 9, 25, "applies to warn gates"),
    ("{check: 'x > 1', severity: warn, follow_up: 7}", 9, 52, "follow_up must be a string"),
    ("{check: 'x > 1', severity: warn, action: 'a:b:c'}", 9, 49, "not a registered name"),
]


@pytest.mark.parametrize(("gate", "line", "column", "fragment"), INVALID)
def test_each_new_field_is_validated_with_its_line(
    gate: str, line: int, column: int, fragment: str
) -> None:
    errors = validate(_definition(gate))
    assert errors, gate
    first = errors[0]
    assert fragment in first.problem, str(first)
    assert (first.line, first.column) == (line, column), str(first)


@pytest.mark.parametrize(
    ("profiles", "line", "fragment"),
    [
        ("[demo, demo]", 4, "duplicate profile 'demo'"),
        ("demo", 4, "profiles must be a list"),
        ("[demo, '']", 4, "must not be empty"),
    ],
)
def test_profiles_list_is_validated(profiles: str, line: int, fragment: str) -> None:
    text = _definition("{check: 'x > 1'}").replace("[demo, test]", profiles)
    errors = validate(text)
    assert errors
    assert fragment in errors[0].problem
    assert errors[0].line == line


def test_a_fallback_from_a_wildcard_transition_must_exist_from_every_state() -> None:
    text = """\
workflow:
  name: w
  states: [a, b]
  transitions:
    - {from: '*', to: b, trigger: go, gates: [q]}
    - {from: a, to: b, trigger: slow}
  gates:
    q: {resource: q, on_timeout: {fallback: slow}}
"""
    errors = validate(text)
    assert len(errors) == 1
    assert "from state 'b'" in errors[0].problem
    assert errors[0].line == 8


def test_profiles_check_at_open_names_the_declared_ones() -> None:
    workflow = Workflow.from_yaml(_definition("{check: 'x > 1'}"))
    assert workflow.check_profile("default") == "default"
    assert workflow.check_profile("demo") == "demo"
    with pytest.raises(WorkflowError, match=r"'prod' is not declared.*default, demo, test"):
        workflow.check_profile("prod")


def test_the_builder_takes_every_new_field() -> None:
    built = (
        Workflow.build("bend")
        .states("a", "b", "c")
        .profiles("demo", "test")
        .transition("a", "b", trigger="go", gates=["g"])
        .transition("a", "c", trigger="manual")
        .gate("g", resource="quota", on_timeout={"fallback": "manual"}, bypass_in=["demo"])
        .gate("w", check="x > 1", severity="warn", follow_up="look", action="fix")
        .done()
    )
    assert built.gates["g"].fallback == "manual"
    assert built.gates["g"].bypass_in == ("demo",)
    assert built.gates["w"].follow_up == "look"
    assert built.gates["w"].action == "fix"


# -- evaluation ---------------------------------------------------------------------------
def _ctx(
    registry: Registry,
    *,
    profile: str = "default",
    approval: Callable[[GateSpec], tuple[bool, str]] | None = None,
) -> GateContext:
    return GateContext(
        state="a",
        version=3,
        trigger="go",
        facts={"x": 0},
        registry=registry,
        approval=approval or (lambda spec: (False, f"waiting: {spec.escalate}")),
        sleep=lambda _s: None,
        profile=profile,
    )


_stop = threading.Event()


def _hang(_facts: Any) -> bool:
    _stop.wait(5)
    return True


def _boom(_facts: Any) -> bool:
    raise ConnectionError("refused")


@pytest.fixture
def registry() -> Any:
    registry = Registry()
    registry.register_gate("hang", _hang)
    registry.register_gate("boom", _boom)
    registry.register_gate("deny", lambda _f: (False, "no permission"))
    yield registry
    _stop.set()
    _stop.clear()


CASES: list[tuple[str, GateSpec, str, dict[str, Any]]] = [
    (
        "bypassed in its profile",
        GateSpec("perm", "python", ref="deny", bypass_in=("demo",)),
        "demo",
        {"passed": True, "bypassed": True, "message": "bypassed (profile demo)"},
    ),
    (
        "evaluated in another profile",
        GateSpec("perm", "python", ref="deny", bypass_in=("demo",)),
        "default",
        {"passed": False, "bypassed": False, "message": "no permission"},
    ),
    (
        "a resource timeout escalates",
        GateSpec("q", "resource", ref="hang", timeout=0.05, retries=1, escalate="go on?"),
        "default",
        {"passed": False, "timed_out": True, "escalated": True, "attempts": 2},
    ),
    (
        "a python timeout falls back",
        GateSpec("q", "python", ref="hang", timeout=0.05, fallback="manual"),
        "default",
        {"passed": False, "timed_out": True, "fallback": "manual", "escalated": False},
    ),
    (
        "an exception is not a timeout: no escalation",
        GateSpec("q", "resource", ref="boom", timeout=1, escalate="go on?"),
        "default",
        {
            "passed": False,
            "timed_out": False,
            "escalated": False,
            "message": "ConnectionError: refused",
        },
    ),
    (
        "an exception is not a timeout: no fallback",
        GateSpec("q", "python", ref="boom", timeout=1, fallback="manual"),
        "default",
        {"passed": False, "timed_out": False, "fallback": None},
    ),
    (
        "a timeout without on_timeout only fails",
        GateSpec("q", "resource", ref="hang", timeout=0.05),
        "default",
        {"passed": False, "timed_out": True, "escalated": False, "fallback": None},
    ),
]


@pytest.mark.parametrize(
    ("spec", "profile", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_evaluation_of_each_field(
    registry: Registry, spec: GateSpec, profile: str, expected: dict[str, Any]
) -> None:
    report = evaluate([spec], _ctx(registry, profile=profile))
    result = report.results[0]
    for name, value in expected.items():
        got = getattr(result, name)
        if name == "message":
            assert value in got
        else:
            assert got == value, (name, result)
    assert report.profile == profile


def test_an_escalated_gate_says_why_and_what_the_person_is_asked(registry: Registry) -> None:
    spec = GateSpec("q", "resource", ref="hang", timeout=0.05, escalate="go on?")
    result = evaluate([spec], _ctx(registry)).results[0]
    assert result.message.startswith(
        "timed out after 0.05s; escalated to a person: waiting: go on?"
    )


def test_an_approved_escalation_passes_without_calling_the_resource_again() -> None:
    calls: list[int] = []
    registry = Registry()
    registry.register_gate("count", lambda _f: calls.append(1) or True)
    spec = GateSpec("q", "resource", ref="count", escalate="go on?")
    report = evaluate([spec], _ctx(registry, approval=lambda s: (True, "approved by ana")))
    assert report.passed
    assert report.results[0].escalated
    assert calls == []


def test_a_fallback_report_names_the_trigger(registry: Registry) -> None:
    spec = GateSpec("q", "python", ref="hang", timeout=0.05, fallback="manual")
    report = evaluate([spec], _ctx(registry))
    assert not report.passed
    assert report.fallback is not None
    assert report.fallback.fallback == "manual"
    assert "falling back to 'manual'" in report.results[0].message


def test_a_warning_fallback_is_not_taken(registry: Registry) -> None:
    spec = GateSpec("w", "check", severity="warn", check="x > 1", follow_up="look")
    report = evaluate([spec], _ctx(registry))
    assert report.passed
    assert report.warnings
    assert report.fallback is None


def test_validate_explains_profiles_and_each_gate_that_bends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from skillnb.cli.main import main

    fixture = Path(__file__).parents[1] / "fixtures" / "workflows" / "bending_flow.yaml"
    assert main(["validate", str(fixture)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ok: Bending_Flow (5 states, 5 transitions, 4 gates)",
        "profiles: default, demo, test (open_run(profile=...), $SKILLNB_PROFILE, --profile)",
        "  gate has_publisher_role: not evaluated in profile demo, test (each bypass is recorded)",
        "  gate feed_answers: on timeout, fires 'by_hand' instead of fetch",
        "  gate enough_sources: when it warns, opens a follow-up: "
        "'Add sources before the report goes out'",
        "  gate quota_ok: on timeout, asks a person instead of failing: "
        "'The quota service does not answer: analyze anyway?'",
    ]


def test_validate_lists_every_problem_of_the_new_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skillnb.cli.main import main

    path = tmp_path / "bad.yaml"
    path.write_text(
        _definition("{resource: q, on_timeout: {fallback: nowhere}}").replace("test]", "demo]"),
        encoding="utf-8",
    )
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4:" in err
    assert f"{path}:9:" in err
    assert "duplicate profile 'demo'" in err
    assert "fallback 'nowhere' of gate 'g'" in err
    assert "2 problems found" in err
