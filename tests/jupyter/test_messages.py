"""Messages that say what to do: a gate before any workflow, YAML errors in a cell."""

from __future__ import annotations

import pytest
from shellkit import RaisingShell, cell

from skillnb.errors import TransitionNotAllowed, WorkflowError


def rendered(exc: BaseException) -> str:
    (line,) = exc._render_traceback_()  # type: ignore[attr-defined]
    return str(line)


def test_a_gate_before_any_workflow_says_there_is_none_yet(ip: RaisingShell) -> None:
    with pytest.raises(TransitionNotAllowed) as caught:
        cell(ip, "%%gate review\nprint('reviewed')")
    assert rendered(caught.value) == (
        "⛔ TransitionNotAllowed: there is no workflow yet, so trigger 'review' leads nowhere: "
        "run the notebook's %%workflow cell first (in Python: open_run(..., workflow=wf)); "
        "a %%gate with --name NAME instead of a trigger needs no workflow"
    )


def test_a_tab_in_a_workflow_cell_is_called_a_tab_on_the_cells_line(ip: RaisingShell) -> None:
    source = (
        "%%workflow\nworkflow:\n  name: W\n  states: [a, b]\n  transitions:\n"
        "\t- {from: a, to: b, trigger: go}\n"
    )
    with pytest.raises(WorkflowError) as caught:
        cell(ip, source)
    assert caught.value.line == 6  # the cell's sixth line holds the tab
    assert rendered(caught.value) == (
        "⛔ WorkflowError: %%workflow cell:6:1: YAML syntax error: a tab character; YAML "
        "indents with spaces only: replace the tab by spaces"
    )


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("%%workflow\nworkflow:\n  name: W\n  states: [a, b\n  transitions: []\n", 5),
        (
            "%%workflow\nworkflow:\n  name: W\n  states: [a, b]\n  transitions:\n"
            "    - {from: a, to: c, trigger: go}\n",
            6,
        ),
    ],
)
def test_workflow_errors_count_the_cells_lines(ip: RaisingShell, source: str, line: int) -> None:
    with pytest.raises(WorkflowError) as caught:
        cell(ip, source)
    assert caught.value.line == line
    assert rendered(caught.value).startswith(f"⛔ WorkflowError: %%workflow cell:{line}:")


def test_a_tab_in_yaml_text_is_named_outside_notebooks_too() -> None:
    from skillnb.core.workflow.model import Workflow

    with pytest.raises(WorkflowError, match="a tab character; YAML indents with spaces only"):
        Workflow.from_yaml("workflow:\n\tname: W\n")
