"""Workflow definitions: YAML, dict and DSL agree; every malformed definition names its place."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.gates.evaluate import GateSpec
from skillnb.core.workflow.model import ANY_STATE, Transition, Workflow, try_load, validate
from skillnb.errors import WorkflowError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "workflows"
MARKET = FIXTURES / "market_research.yaml"

MARKET_DICT: dict[str, Any] = {
    "workflow": {
        "name": "Market_Research",
        "description": "Collect sources on a topic, analyse them and write a report.",
        "states": ["init", "collecting", "analyzing", "reporting", "done"],
        "transitions": [
            {
                "from": "init",
                "to": "collecting",
                "trigger": "user_request",
                "gates": ["has_valid_topic"],
                "action": "start_data_collection",
            },
            {
                "from": "collecting",
                "to": "analyzing",
                "trigger": "data_sufficient",
                "gates": ["min_data_threshold_met"],
                "action": "perform_analysis",
            },
            {
                "from": "analyzing",
                "to": "reporting",
                "trigger": "analysis_done",
                "gates": ["in_analysis", "quality_ok"],
            },
            {
                "from": "reporting",
                "to": "done",
                "trigger": "publish",
                "gates": ["editor_approved"],
                "idempotent": True,
            },
            {"from": ["collecting", "analyzing"], "to": "init", "trigger": "restart"},
        ],
        "gates": {
            "has_valid_topic": {"requires": ["topic"]},
            "min_data_threshold_met": {"check": "len(sources) >= 5", "severity": "block"},
            "in_analysis": {"state": "analyzing"},
            "quality_ok": {
                "check": "report.score > 0.8",
                "severity": "warn",
                "description": "The draft analysis scores well enough.",
            },
            "editor_approved": {"approval": "Publish the weekly market report?"},
        },
    }
}


def market_dsl() -> Workflow:
    return (
        Workflow.build("Market_Research")
        .describe("Collect sources on a topic, analyse them and write a report.")
        .states("init", "collecting", "analyzing", "reporting", "done")
        .transition(
            "init",
            "collecting",
            trigger="user_request",
            gates=["has_valid_topic"],
            action="start_data_collection",
        )
        .transition(
            "collecting",
            "analyzing",
            trigger="data_sufficient",
            gates=["min_data_threshold_met"],
            action="perform_analysis",
        )
        .transition(
            "analyzing", "reporting", trigger="analysis_done", gates=["in_analysis", "quality_ok"]
        )
        .transition(
            "reporting", "done", trigger="publish", gates=["editor_approved"], idempotent=True
        )
        .transition(["collecting", "analyzing"], "init", trigger="restart")
        .gate("has_valid_topic", requires=["topic"])
        .gate("min_data_threshold_met", check="len(sources) >= 5")
        .gate("in_analysis", state="analyzing")
        .gate(
            "quality_ok",
            check="report.score > 0.8",
            severity="warn",
            description="The draft analysis scores well enough.",
        )
        .gate("editor_approved", approval="Publish the weekly market report?")
        .done()
    )


@pytest.fixture
def market() -> Workflow:
    return Workflow.from_yaml(MARKET)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Workflow.from_yaml(MARKET),
        lambda: Workflow.from_yaml(MARKET.read_text(encoding="utf-8")),
        lambda: Workflow.from_dict(MARKET_DICT),
        lambda: Workflow.from_dict(MARKET_DICT["workflow"]),
        market_dsl,
        lambda: Workflow.from_dict(Workflow.from_yaml(MARKET).to_dict()),
        lambda: Workflow.from_yaml(Workflow.from_yaml(MARKET).to_yaml()),
    ],
    ids=["yaml-file", "yaml-text", "dict", "inner-dict", "dsl", "to_dict", "to_yaml"],
)
def test_every_way_of_defining_gives_an_equal_workflow_and_hash(make: Any) -> None:
    reference = Workflow.from_yaml(MARKET)
    workflow = make()
    assert workflow == reference
    assert workflow.hash == reference.hash
    assert workflow.to_dict() == reference.to_dict()
    assert len(workflow.hash) == 64


def test_attributes_of_a_loaded_workflow(market: Workflow) -> None:
    assert market.name == "Market_Research"
    assert market.skill == "Market_Research"
    assert market.states == ("init", "collecting", "analyzing", "reporting", "done")
    assert market.initial == "init"
    assert market.source == str(MARKET)
    assert len(market.transitions) == 5
    first = market.transitions[0]
    assert first == Transition(
        ("init",), "collecting", "user_request", ("has_valid_topic",), "start_data_collection"
    )
    assert market.transitions[3].idempotent is True
    assert market.transitions[4].source == ("collecting", "analyzing")
    check = market.gates["min_data_threshold_met"]
    assert (check.kind, check.severity, check.check) == ("check", "block", "len(sources) >= 5")
    assert check.expr is not None
    assert check.expr.names == ("sources",)
    assert market.gates["in_analysis"].states == ("analyzing",)
    assert market.gates["quality_ok"].severity == "warn"
    assert market.gates["editor_approved"].approval == "Publish the weekly market report?"
    with pytest.raises(TypeError):
        market.gates["new"] = market.gates["in_analysis"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("state", "triggers"),
    [
        ("init", ["user_request"]),
        ("collecting", ["data_sufficient", "restart"]),
        ("analyzing", ["analysis_done", "restart"]),
        ("done", []),
        ("nowhere", []),
        (None, []),
    ],
)
def test_triggers_from_each_state(market: Workflow, state: str | None, triggers: list[str]) -> None:
    assert market.triggers_from(state) == triggers
    assert [t.trigger for t in market.transitions_from(state)] == triggers


@pytest.mark.parametrize(
    ("state", "trigger", "target"),
    [
        ("init", "user_request", "collecting"),
        ("analyzing", "restart", "init"),
        ("collecting", "restart", "init"),
        ("init", "restart", None),
        ("done", "publish", None),
        ("init", "no_such_trigger", None),
    ],
)
def test_find(market: Workflow, state: str, trigger: str, target: str | None) -> None:
    found = market.find(state, trigger)
    assert (found.target if found else None) == target


def test_gate_specs_of_a_transition(market: Workflow) -> None:
    transition = market.find("analyzing", "analysis_done")
    assert transition is not None
    assert [s.name for s in market.gate_specs(transition)] == ["in_analysis", "quality_ok"]
    assert all(isinstance(s, GateSpec) for s in market.gate_specs(transition))


def test_wildcard_source_initial_and_skill() -> None:
    workflow = Workflow.from_yaml(
        textwrap.dedent(
            """\
            name: Flow
            skill: doc-extract-engine
            states: [draft, review, cancelled]
            initial: review
            transitions:
              - {from: review, to: draft, trigger: rework}
              - {from: "*", to: cancelled, trigger: cancel}
            """
        )
    )
    assert workflow.initial == "review"
    assert workflow.skill == "doc-extract-engine"
    assert workflow.transitions[1].source == ANY_STATE
    assert workflow.triggers_from("draft") == ["cancel"]
    assert workflow.triggers_from("cancelled") == ["cancel"]
    assert workflow.to_dict()["workflow"]["transitions"][1]["from"] == "*"
    assert Workflow.from_yaml(workflow.to_yaml()) == workflow


def test_equivalent_spellings_hash_equal_and_real_changes_do_not() -> None:
    base = {
        "name": "W",
        "states": ["a", "b"],
        "transitions": [{"from": "a", "to": "b", "trigger": "t"}],
    }
    spelled = {
        "workflow": {
            "name": "W",
            "skill": "W",
            "states": ["a", "b"],
            "initial": "a",
            "transitions": [{"from": ["a"], "to": "b", "trigger": "t", "idempotent": False}],
            "gates": {},
        }
    }
    changed = {
        **base,
        "states": ["a", "b"],
        "transitions": [{"from": "a", "to": "b", "trigger": "u"}],
    }
    assert Workflow.from_dict(base).hash == Workflow.from_dict(spelled).hash
    assert Workflow.from_dict(base).hash != Workflow.from_dict(changed).hash
    assert Workflow.from_dict(base) != Workflow.from_dict(changed)
    assert Workflow.from_dict(base, source="a") == Workflow.from_dict(base, source="b")


def test_from_dict_does_not_keep_references_to_the_callers_data() -> None:
    data = {"name": "W", "states": ["a"], "transitions": []}
    workflow = Workflow.from_dict(data)
    data["states"].append("b")  # type: ignore[attr-defined]
    assert workflow.states == ("a",)


def test_a_single_state_workflow_without_transitions_is_valid() -> None:
    workflow = Workflow.from_dict({"name": "One", "states": ["only"]})
    assert workflow.transitions == ()
    assert dict(workflow.gates) == {}
    assert "1 states" in repr(workflow)


def test_all_gate_kinds_and_options_round_trip() -> None:
    yaml_text = textwrap.dedent(
        """\
        workflow:
          name: Kinds
          states: [a, b]
          transitions:
            - {from: a, to: b, trigger: go, gates: [s, r, c, p, q, ap]}
          gates:
            s: {state: [a, b], description: in a or b}
            r: {requires: topic}
            c: {check: "x > 1", severity: warn}
            p: {python: mypkg.checks:enough, timeout: 2}
            q: {resource: quota, timeout: 1.5, retries: 3, backoff: 0.25}
            ap: {approval: "Go on?"}
        """
    )
    workflow = Workflow.from_yaml(yaml_text)
    assert workflow.gates["r"].requires == ("topic",)
    assert workflow.gates["p"].ref == "mypkg.checks:enough"
    assert workflow.gates["p"].timeout == 2.0
    resource = workflow.gates["q"]
    assert (resource.timeout, resource.retries, resource.backoff) == (1.5, 3, 0.25)
    assert Workflow.from_yaml(workflow.to_yaml()) == workflow
    assert workflow.to_dict()["workflow"]["gates"]["q"] == {
        "resource": "quota",
        "timeout": 1.5,
        "retries": 3,
        "backoff": 0.25,
    }


# -- malformed definitions ------------------------------------------------------------------

HEAD = "workflow:\n  name: W\n  states: [a, b]\n"
ONE_TRANSITION = HEAD + "  transitions:\n    - {from: a, to: b, trigger: t, gates: [g]}\n"


def wf(*lines: str) -> str:
    """A workflow with states [a, b] and the given extra lines."""
    return HEAD + "".join(f"{line}\n" for line in lines)


def trans(*items: str) -> str:
    """A workflow with states [a, b] and these transitions (flow mappings), from line 5."""
    return wf("  transitions:", *(f"    - {item}" for item in items))


def gate(spec: str) -> str:
    """A workflow whose one transition needs gate ``g`` defined as ``spec``, on line 7."""
    return ONE_TRANSITION + f"  gates:\n    g: {spec}\n"


# (text, line, column, fragment): the first problem reported and where it points.
MALFORMED = [
    ("workflow:\n  nme: W\n  states: [a]\n", 2, 3, "unknown key 'nme' (did you mean 'name'?)"),
    ("workflw:\n  name: W\n", 1, 1, "unknown key 'workflw' (did you mean 'workflow'?)"),
    ("workflow:\n  name: W\n  states: [a]\nextra: 1\n", 4, 1, "unknown key 'extra'"),
    ("workflow:\n  states: [a]\n", 2, 3, "missing required key 'name'"),
    ("workflow:\n  name: W\n", 2, 3, "missing required key 'states'"),
    ("workflow: [a, b]\n", 1, 11, "must be a mapping"),
    ("- a\n- b\n", 1, 1, "must be a mapping"),
    ("workflow:\n  name: [W]\n  states: [a]\n", 2, 9, "name must be a string, not a list"),
    ("workflow:\n  name: ''\n  states: [a]\n", 2, 9, "name must not be empty"),
    ("workflow:\n  name: W\n  states: []\n", 3, 11, "non-empty list"),
    ("workflow:\n  name: W\n  states: a\n", 3, 11, "non-empty list"),
    ("workflow:\n  name: W\n  states: [a, on]\n", 3, 15, "put it in quotes"),
    ("workflow:\n  name: W\n  states: [a, 3]\n", 3, 15, "must be a string, not a number"),
    ("workflow:\n  name: W\n  states: [a, a]\n", 3, 15, "duplicate state 'a'"),
    ("workflow:\n  name: W\n  states: [a, '*']\n", 3, 15, "'*' means any state"),
    ("workflow:\n  name: W\n  states: [a\n", 4, 1, "YAML syntax error"),
    ("workflow:\n  name: W\n  description: !!python/name:os.system\n", 3, 16, "not allowed"),
    (wf("  initial: c"), 4, 12, "unknown state 'c'"),
    (wf("  transitions: {a: b}"), 4, 16, "transitions must be a list"),
    (trans("[a, b]"), 5, 7, "a transition must be a mapping"),
    (trans("{from: a, to: b}"), 5, 7, "missing required key 'trigger'"),
    (trans("{form: a, to: b, trigger: t}"), 5, 8, "did you mean 'from'"),
    (trans("{from: x, to: b, trigger: t}"), 5, 14, "unknown state 'x'"),
    (trans("{from: [a, x], to: b, trigger: t}"), 5, 18, "unknown state 'x'"),
    (trans("{from: a, to: bb, trigger: t}"), 5, 21, "(did you mean 'b'?)"),
    (trans("{from: a, to: b, trigger: 5}"), 5, 33, "trigger must be a string"),
    (trans("{from: a, to: b, trigger: t, idempotent: 1}"), 5, 48, "true or false"),
    (ONE_TRANSITION, 5, 44, "unknown gate 'g'"),
    (
        trans("{from: a, to: b, trigger: t}", "{from: a, to: a, trigger: t}"),
        6,
        33,
        "trigger 't' from state 'a' is already used by transitions[0]",
    ),
    (
        trans("{from: '*', to: b, trigger: t}", "{from: b, to: a, trigger: t}"),
        6,
        33,
        "trigger 't' from state 'b' is already used",
    ),
    (
        "workflow:\n  name: W\n  states: [a, b, c]\n",
        3,
        15,
        "state 'b' is unreachable from the initial state 'a'",
    ),
    (ONE_TRANSITION + "  gates: [g]\n", 6, 10, "gates must be a mapping"),
    (gate("requires"), 7, 8, "gate 'g' must be a mapping"),
    (gate("{severity: warn}"), 7, 8, "gate 'g' has no kind"),
    (gate("{chek: x > 1}"), 7, 8, "'chek' should be 'check'"),
    (gate("{requires: [a], check: x}"), 7, 24, "several kinds (requires, check)"),
    (gate("{requires: [a], retries: 2}"), 7, 24, "'retries' applies only to resource"),
    (gate("{python: p, backoff: 2}"), 7, 20, "'backoff' applies only to resource"),
    (gate("{requires: [a], sevrity: warn}"), 7, 24, "did you mean 'severity'"),
    (gate("{requires: [a], severity: fatal}"), 7, 34, "'block' or 'warn'"),
    (gate("{requires: [a, 1]}"), 7, 23, "a fact name must be a string"),
    (gate("{state: c}"), 7, 16, "unknown state 'c'"),
    (gate("{state: []}"), 7, 16, "a state gate needs at least one name"),
    (gate("{requires: []}"), 7, 19, "a requires gate needs at least one name"),
    (gate("{check: 'len(x) >'}"), 7, 25, "invalid check expression"),
    (gate("{check: \"__import__('os')\"}"), 7, 17, "'__import__' is not allowed"),
    (gate("{check: x.__class__}"), 7, 16, "'__class__' is not allowed"),
    (gate("{check: 'a > 1 and ().__class__'}"), 7, 27, "'__class__'"),
    (gate("{python: 'os:'}"), 7, 17, "not a registered name"),
    (gate("{resource: q, timeout: 0}"), 7, 31, "timeout must be more than 0"),
    (gate("{resource: q, timeout: fast}"), 7, 31, "a number of seconds"),
    (gate("{resource: q, retries: -1}"), 7, 31, "whole number"),
    (gate("{resource: q, retries: 1.5}"), 7, 31, "whole number"),
    (gate("{approval: ''}"), 7, 19, "must not be empty"),
]


@pytest.mark.parametrize(("text", "line", "column", "fragment"), MALFORMED)
def test_malformed_definitions_name_line_column_and_fix(
    text: str, line: int, column: int, fragment: str
) -> None:
    with pytest.raises(WorkflowError) as info:
        Workflow.from_yaml(text)
    error = info.value
    assert fragment in error.problem
    assert (error.source, error.line, error.column) == ("<string>", line, column)


def test_from_yaml_reports_the_first_problem_and_counts_the_rest() -> None:
    text = "workflow:\n  name: W\n  states: [a, a, 3]\n  initial: c\n"
    with pytest.raises(WorkflowError) as info:
        Workflow.from_yaml(text)
    assert info.value.line == 3
    assert "and 2 more problems" in info.value.problem
    problems = validate(text)
    assert [(e.line, e.column) for e in problems] == [(3, 15), (3, 18), (4, 12)]


def test_dict_errors_name_the_path_of_the_value() -> None:
    data = {
        "name": "W",
        "states": ["a", "b"],
        "transitions": [{"from": "a", "to": "c", "trigger": "t"}],
    }
    with pytest.raises(WorkflowError) as info:
        Workflow.from_dict(data, source="stored definition")
    assert info.value.source == "stored definition"
    assert info.value.line is None
    assert info.value.problem.startswith("transitions[0].to: unknown state 'c'")


def test_dsl_errors_are_the_same_validation() -> None:
    builder = Workflow.build("W").states("a", "b").transition("a", "b", trigger="t", gates=["g"])
    with pytest.raises(WorkflowError, match="unknown gate 'g'"):
        builder.done()
    with pytest.raises(WorkflowError, match="several kinds"):
        builder.gate("g", requires=["x"], check="x > 1").done()


@pytest.mark.parametrize(
    ("name", "line", "column", "fragment"),
    [
        ("unknown_key.yaml", 7, 7, "unknown key 'triger' (did you mean 'trigger'?)"),
        ("unknown_state.yaml", 6, 30, "unknown state 'finished'"),
        ("duplicate_trigger.yaml", 6, 36, "trigger 'go' from state 'init' is already used"),
        ("unreachable.yaml", 3, 27, "state 'orphan' is unreachable"),
        ("bad_check.yaml", 7, 37, "only the functions len, min, max, sum, abs, any, all"),
        ("python_object_tag.yaml", 4, 16, "'!!python/object/apply:os.system' is not allowed"),
        ("alias_bomb.yaml", 6, 8, "an alias bomb"),
        ("syntax_error.yaml", 4, 14, "YAML syntax error"),
    ],
)
def test_malformed_fixture_files(name: str, line: int, column: int, fragment: str) -> None:
    path = FIXTURES / name
    with pytest.raises(WorkflowError) as info:
        Workflow.from_yaml(path)
    assert fragment in info.value.problem
    assert (info.value.source, info.value.line, info.value.column) == (str(path), line, column)
    assert str(info.value).startswith(f"{path}:{line}:{column}: ")


def test_a_10_mb_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"a: b\n" * (2 * 1024 * 1024))
    with pytest.raises(WorkflowError, match="at most 1048576 bytes"):
        Workflow.from_yaml(path)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(WorkflowError, match="cannot read the file"):
        Workflow.from_yaml(tmp_path / "missing.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"workflow:\n  name: caf\xe9\n")
    with pytest.raises(WorkflowError, match="not UTF-8") as info:
        Workflow.from_yaml(latin)
    assert (info.value.line, info.value.column) == (2, 12)


def test_from_yaml_rejects_other_types() -> None:
    with pytest.raises(WorkflowError, match="takes a Path or YAML text"):
        Workflow.from_yaml(b"name: W")  # type: ignore[arg-type]


def test_try_load_returns_the_workflow_or_every_problem() -> None:
    workflow, problems = try_load(MARKET)
    assert workflow is not None
    assert problems == []
    workflow, problems = try_load({"name": "W", "states": []})
    assert workflow is None
    assert len(problems) == 1


@pytest.mark.parametrize(
    ("check", "line", "column", "fragment"),
    [
        ("check: >\n        len(x) > 1 and\n        open(x)", 10, 9, "'open' is not allowed"),
        ("check: |\n        (len(x) > 1 and\n         open(x))", 10, 10, "'open' is not allowed"),
        ("check: |\n        len(x) > 1 and\n        x > 2", 8, 14, "needs parentheses"),
        ("check: \"x == '\\\\t' and open(x)\"", 8, 30, "'open' is not allowed"),
    ],
    ids=["folded", "literal", "literal-unparenthesised", "escaped"],
)
def test_check_errors_in_block_and_escaped_scalars_point_into_the_file(
    check: str, line: int, column: int, fragment: str
) -> None:
    text = ONE_TRANSITION + "  gates:\n    g:\n      " + check + "\n"
    with pytest.raises(WorkflowError) as info:
        Workflow.from_yaml(text)
    assert fragment in info.value.problem
    assert (info.value.line, info.value.column) == (line, column)


def test_the_definition_modules_import_nothing_from_jupyter() -> None:
    import subprocess
    import sys

    modules = (
        "skillnb.core.workflow.model",
        "skillnb.core.workflow.definition",
        "skillnb.core.gates.evaluate",
        "skillnb.core.expr.check",
        "skillnb.core.expr.syntax",
        "skillnb.core.gates.registry",
        "skillnb.core.workflow.graph",
        "skillnb.core.workflow.yamlsafe",
        "skillnb.core.workflow.fieldcheck",
    )
    code = (
        f"import importlib, sys\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
        "bad = [m for m in ('IPython', 'ipywidgets', 'nbformat', 'jupyter_server', 'ipykernel')"
        " if m in sys.modules]\nprint(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_deeply_nested_dict_is_refused_cleanly() -> None:
    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(10_000):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(WorkflowError, match="nested deeper than"):
        Workflow.from_dict({"name": "W", "states": ["a"], "description": nested})
