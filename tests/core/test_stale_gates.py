"""A fact that changes after a gate that read it has fired is reported, never silent."""

from __future__ import annotations

from pathlib import Path

import pytest

import skillnb
from skillnb.run import Run

WORKFLOW = """
workflow:
  name: Quickstart
  states: [draft, reviewed, published]
  transitions:
    - {from: draft, to: reviewed, trigger: review, gates: [has_budget]}
    - {from: reviewed, to: published, trigger: publish, gates: [within_limit, soft]}
  gates:
    has_budget: {requires: [budget]}
    within_limit: {check: "budget <= 10000"}
    soft: {check: "budget <= 100", severity: warn}
"""


@pytest.fixture
def run(tmp_path: Path) -> Run:
    wf = skillnb.Workflow.from_yaml(WORKFLOW)
    opened = skillnb.open_run(state_dir=tmp_path / "state", workflow=wf, memory=False)
    opened.formalize("budget", 6000)
    opened.fire("review")
    opened.fire("publish")
    yield opened  # type: ignore[misc]
    opened.close()


def test_nothing_is_stale_while_the_facts_hold(run: Run) -> None:
    assert run.gates.stale() == []
    run.formalize("budget", 9000)  # changed, but the gate still holds
    assert run.gates.stale() == []
    assert "no longer hold" not in run.summary()


def test_a_changed_fact_that_breaks_a_fired_gate_is_reported(run: Run) -> None:
    run.formalize("budget", 30000)

    (stale,) = run.gates.stale()

    assert (stale.trigger, stale.gate, stale.then, stale.now) == (
        "publish",
        "within_limit",
        {"budget": "6000"},
        {"budget": "30000"},
    )
    assert stale.line() == (
        "`within_limit` passed with budget 6000 when `publish` fired; "
        "budget is now 30000 and `within_limit` fails"
    )
    assert run.gates.stale("review") == []  # has_budget still holds
    summary = run.summary()
    assert "## Gates that no longer hold (1)" in summary
    assert stale.line() in summary
    assert run.state == "published"  # nothing fired again, nothing was undone


def test_setting_the_fact_back_settles_it(run: Run) -> None:
    run.formalize("budget", 30000)
    run.rollback("budget", 1)
    assert run.gates.stale() == []
