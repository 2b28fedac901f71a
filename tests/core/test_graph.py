"""Mermaid and DOT diagrams of a workflow, with run data and hostile names."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillnb.core.workflow.graph import mermaid_markdown, to_dot, to_mermaid
from skillnb.core.workflow.model import Workflow

MARKET = Path(__file__).parent.parent / "fixtures" / "workflows" / "market_research.yaml"

ODD = Workflow.from_dict(
    {
        "name": 'Odd "name"',
        "states": ["start: here", "end", "state #2 <b>", "a\\b"],
        "transitions": [
            {"from": "start: here", "to": "end", "trigger": 'go; now: "quoted" -->'},
            {"from": "*", "to": "state #2 <b>", "trigger": "jump"},
            {"from": "end", "to": "a\\b", "trigger": "line  break"},
        ],
    }
)


@pytest.fixture
def market() -> Workflow:
    return Workflow.from_yaml(MARKET)


def test_mermaid_lists_states_initial_and_labelled_transitions(market: Workflow) -> None:
    text = to_mermaid(market)
    lines = text.splitlines()
    # front matter first (edge label colours), then the diagram, left to right
    assert lines[0] == "---"
    assert lines[lines.index("---", 1) + 1 :][:2] == ["stateDiagram-v2", "    direction LR"]
    assert '    state "collecting" as s_collecting' in lines
    assert "    [*] --> s_init" in lines
    assert "    s_init --> s_collecting : user_request" in lines
    # a transition from several states is drawn from each
    assert "    s_collecting --> s_init : restart" in lines
    assert "    s_analyzing --> s_init : restart" in lines
    assert not any(line.startswith("    class ") for line in lines)


def test_mermaid_marks_current_visited_and_gate_statuses(market: Workflow) -> None:
    text = to_mermaid(
        market,
        current="analyzing",
        visited=["init", "collecting", "analyzing"],
        statuses={"analysis_done": "warning", "restart": "blocked", "user_request": "passing"},
    )
    lines = text.splitlines()
    assert "    class s_analyzing current" in lines
    assert "    class s_init,s_collecting visited" in lines
    assert "    s_analyzing --> s_reporting : analysis_done ⚠" in lines
    assert "    s_analyzing --> s_init : restart ✗" in lines
    assert "    s_init --> s_collecting : user_request ✓" in lines
    assert "    s_collecting --> s_analyzing : data_sufficient" in lines
    assert any(line.startswith("    classDef current ") for line in lines)


def test_mermaid_escapes_names_with_entity_codes() -> None:
    text = to_mermaid(ODD, current="end")
    assert '    state "start#58; here" as s0' in text
    assert '    state "state #35;2 #60;b#62;" as s2' in text
    assert '    state "a#92;b" as s3' in text
    assert "    s0 --> s_end : go#59; now#58; #34;quoted#34; --#62;" in text
    assert "    s_end --> s3 : line break" in text
    assert '    state "any state" as any_state' in text
    assert "    any_state --> s2 : jump" in text
    assert "    class s_end current" in text
    for line in text.splitlines():
        if line.startswith('    state "'):
            label = line[len('    state "') : line.rindex('" as ')]
        elif " : " in line:
            label = line.split(" : ", 1)[1]
        else:
            continue
        assert not set(label) & set('"<>:'), line


def test_unknown_current_and_visited_states_are_ignored(market: Workflow) -> None:
    text = to_mermaid(market, current="elsewhere", visited=["nowhere"])
    assert "    class " not in text


def test_dot_output(market: Workflow) -> None:
    text = to_dot(
        market,
        current="collecting",
        visited=["init"],
        statuses={"data_sufficient": "blocked", "user_request": "passing"},
    )
    lines = text.splitlines()
    assert lines[0] == 'digraph "Market_Research" {'
    assert lines[-1] == "}"
    assert "    __start -> s_init;" in lines
    assert any(
        line.startswith('    s_collecting [label="collecting", style="rounded,filled,bold"')
        for line in lines
    )
    assert any(
        line.startswith('    s_init [label="init", style="rounded,filled"') for line in lines
    )
    assert '    s_done [label="done"];' in lines
    assert (
        '    s_collecting -> s_analyzing [label="data_sufficient ✗", color="#c62828", '
        'fontcolor="#c62828"];' in lines
    )
    assert '    s_analyzing -> s_init [label="restart"];' in lines


def test_dot_escapes_quotes_backslashes_and_newlines() -> None:
    text = to_dot(ODD)
    assert text.startswith('digraph "Odd \\"name\\"" {')
    assert '    s0 [label="start: here"];' in text
    assert '    s3 [label="a\\\\b"];' in text
    assert '    s0 -> s_end [label="go; now: \\"quoted\\" -->"];' in text
    assert '    s_end -> s3 [label="line  break"];' in text
    assert '    any_state -> s2 [label="jump", style=dashed];' in text
    assert "\n\n" not in text


def test_mermaid_edge_labels_carry_colours_that_read_in_every_theme(market: Workflow) -> None:
    text = to_mermaid(market)
    config = text.split("---")[1]
    assert 'edgeLabelBackground: "#e8e8e8"' in config
    assert 'transitionLabelColor: "#1f1f1f"' in config


def test_mermaid_markdown_fences_the_diagram_once(market: Workflow) -> None:
    source = to_mermaid(market)
    markdown = mermaid_markdown(source, direction="TB")
    assert markdown == f"```mermaid\n{source}\n```\n"  # its own direction (LR) is kept
