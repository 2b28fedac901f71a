"""``%%gate``: gated cells, blocks that stop Run All, approvals, workflows and loops."""

from __future__ import annotations

from pathlib import Path

import pytest
from shellkit import RaisingShell, bundles, cell, last, last_volatile

from skillnb.errors import GateBlocked, TransitionNotAllowed
from skillnb.jupyter.extension import current_run

MIME = "application/vnd.skillnb.v1+json"

REVIEW = """%%workflow
workflow:
  name: review
  states: [draft, review, published]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [has_text]}
    - {from: review, to: published, trigger: publish, gates: [editor_ok]}
    - {from: review, to: draft, trigger: revise}
  gates:
    has_text: {requires: [text]}
    editor_ok: {approval: "Publish the article?"}
"""


@pytest.fixture
def counted(ip: RaisingShell) -> RaisingShell:
    ip.user_ns["calls"] = []
    return ip


def test_passing_gates_run_the_body_once(counted: RaisingShell) -> None:
    cell(counted, "%%formalize budget\n5000")
    gated = "%%gate --requires budget --check 'budget <= 5000'\ncalls.append(1)\n"
    cell(counted, gated)
    assert counted.user_ns["calls"] == [1]
    assert last(counted)["text/plain"] == "✓ gated cell"
    cell(counted, gated)  # Run All after a restart: fast-forward
    assert counted.user_ns["calls"] == [1]
    assert last(counted)["text/plain"].startswith("✓ gated cell (done)")
    assert last(counted)[MIME]["status"] == "restored"


def test_a_block_skips_the_body_records_the_report_and_stops(counted: RaisingShell) -> None:
    cell(counted, "%%formalize budget\n9000")
    with pytest.raises(GateBlocked) as caught:
        cell(
            counted,
            "%%gate --name spend --requires budget,owner --check 'budget <= 5000'\n"
            "calls.append(1)\n",
        )
    assert counted.user_ns["calls"] == []
    # One line, and it travels: headless clients show only it and the exception's text.
    assert caught.value._render_traceback_() == [  # type: ignore[attr-defined]
        "✗ GateBlocked: this cell is blocked (spend.requires: missing facts: owner (formalize "
        "them first); spend.check: budget 9000 is not <= 5000 (budget <= 5000 is false)); "
        "see above"
    ]
    assert "spend.check (check): budget 9000 is not <= 5000 (budget <= 5000 is false)" in str(
        caught.value
    )
    data = last(counted)
    assert data[MIME]["status"] == "blocked"
    # Said once: the gates in words and the one thing to do; the expressions are folded.
    assert data["text/plain"].splitlines() == [
        "✗ spend blocked",
        "✗ spend.requires: missing facts: owner (formalize them first)",
        "✗ spend.check: budget 9000 is not <= 5000",
        "→ Formalize owner first, then run this cell again.",
    ]
    page = data["text/html"]
    folded = page[page.index("<details") :]
    assert "budget &lt;= 5000 is false" in folded
    assert "budget &lt;= 5000 is false" not in page[: page.index("<details")]
    assert [e["type"] for e in last_volatile(counted)["events"]] == ["gate.reported"]
    report = current_run(counted).snapshot.reports["gate:spend"]
    assert not report.passed


def test_on_block_skip_goes_on(counted: RaisingShell) -> None:
    cell(counted, "%%gate --requires nothing_yet --on-block skip\ncalls.append(1)\n")
    assert counted.user_ns["calls"] == []
    assert last(counted)[MIME]["status"] == "blocked"
    assert "(--on-block skip): later cells run" in last(counted)["text/plain"]


def test_approval_waits_then_passes_once_approved(counted: RaisingShell) -> None:
    gated = "%%gate --name ship --approval 'Send the mail?'\ncalls.append(1)\n"
    with pytest.raises(GateBlocked):
        cell(counted, gated)
    data = last(counted)
    assert data[MIME]["kind"] == "approval"
    assert data[MIME]["status"] == "waiting"
    assert data["text/plain"].splitlines()[-1] == (
        "→ Approve with %skillnb approve ship.approval --by NAME, then run this cell again."
    )
    with pytest.raises(GateBlocked):
        cell(counted, gated)  # still waiting: asking again adds no second request
    assert len(current_run(counted).pending()) == 1
    cell(counted, "%skillnb approve ship.approval --by ana --note 'looks good'")
    assert last(counted)["text/plain"].startswith("✓ ship.approval approved by ana")
    cell(counted, gated)
    assert counted.user_ns["calls"] == [1]
    approvals = current_run(counted).snapshot.approvals.values()
    assert [a.status for a in approvals] == ["consumed"]


def test_a_rejection_keeps_the_gate_closed(counted: RaisingShell) -> None:
    gated = "%%gate --name ship --approval 'Send the mail?'\ncalls.append(1)\n"
    with pytest.raises(GateBlocked):
        cell(counted, gated)
    cell(counted, "%skillnb reject ship.approval --note 'not yet'")
    assert last(counted)["text/plain"].startswith("✗ ship.approval rejected by tester")
    # A rejection reads as one: the red "blocked" badge, never the green of a success.
    assert last(counted)[MIME]["status"] == "blocked"
    cell(counted, "%skillnb reject ship.approval")  # Run All passes the cell again
    assert last(counted)["text/plain"].startswith("✗ ship.approval already rejected")
    assert last(counted)[MIME]["status"] == "blocked"
    with pytest.raises(GateBlocked):
        cell(counted, gated)
    assert counted.user_ns["calls"] == []


def test_workflow_triggers_fire_transitions(counted: RaisingShell) -> None:
    cell(counted, REVIEW)
    shown = counted.display_pub.outputs
    diagram = shown[-2]["data"]
    assert diagram["text/html"].startswith('<div class="skillnb-diagram"')  # inline SVG
    assert '<svg xmlns="http://www.w3.org/2000/svg" role="img"' in diagram["text/html"]
    assert "\nstateDiagram-v2\n    direction LR\n" in diagram["text/plain"]  # the source
    assert last(counted)["text/plain"].startswith("⚙ workflow review\nstate 'draft'")
    with pytest.raises(GateBlocked, match="text"):
        cell(counted, "%%gate submit\ncalls.append('submit')\n")
    cell(counted, "%%formalize text\n'hello'")
    cell(counted, "%%gate submit\ncalls.append('submit')\n")
    assert last(counted)["text/plain"] == "✓ submit: draft → review"
    assert current_run(counted).state == "review"
    cell(counted, "%%gate submit\ncalls.append('submit')\n")  # done: not fired again
    assert counted.user_ns["calls"] == ["submit"]


def test_a_looping_workflow_runs_the_step_again(counted: RaisingShell) -> None:
    cell(counted, REVIEW)
    cell(counted, "%%formalize text\n'hello'")
    submit = "%%gate submit\ncalls.append('submit')\n"
    cell(counted, submit)
    cell(counted, "%%gate revise\ncalls.append('revise')\n")
    cell(counted, submit)  # back in draft: submit applies again
    assert counted.user_ns["calls"] == ["submit", "revise", "submit"]
    assert current_run(counted).state == "review"


def test_a_trigger_that_does_not_apply_is_a_short_error(ip: RaisingShell) -> None:
    cell(ip, REVIEW)
    with pytest.raises(TransitionNotAllowed) as caught:
        cell(ip, "%%gate publish\n1\n")
    assert caught.value._render_traceback_() == [  # type: ignore[attr-defined]
        "⛔ TransitionNotAllowed: no transition 'publish' from state 'draft' (allowed: submit)"
    ]


def test_a_body_that_raises_fires_nothing(counted: RaisingShell) -> None:
    cell(counted, REVIEW)
    cell(counted, "%%formalize text\n'hello'")
    with pytest.raises(KeyError) as caught:
        cell(counted, "%%gate submit\n{}['missing']\n")
    assert "nothing recorded" in caught.value._render_traceback_()[0]  # type: ignore[attr-defined]
    run = current_run(counted)
    assert run.state == "draft"
    assert run.snapshot.steps["gate:submit"].status == "failed"


def test_gate_help_and_bad_options(ip: RaisingShell) -> None:
    doc = ip.find_cell_magic("gate").__doc__
    for option in ("--requires", "--state", "--check", "--approval", "--on-block"):
        assert option in doc
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="invalid choice: 'maybe'"):
        cell(ip, "%%gate --on-block maybe\n1\n")
    assert bundles(ip) == []


def test_an_invalid_check_expression_is_a_short_error(ip: RaisingShell) -> None:
    with pytest.raises(Exception, match="is not allowed") as caught:
        cell(ip, "%%gate --check '__import__(\"os\")'\n1\n")
    assert caught.value._render_traceback_()[0].startswith("⛔ WorkflowError")  # type: ignore[attr-defined]


def test_verbose_lists_every_gate_and_quiet_only_the_badge(ip: RaisingShell) -> None:
    cell(ip, "%%formalize a\n1")
    cell(ip, '%config SkillNB.verbosity = "verbose"')
    cell(ip, "%%gate --name g --requires a\npass")
    assert last(ip)["text/plain"].splitlines() == ["✓ g", "✓ g.requires (requires) present: a"]
    cell(ip, '%config SkillNB.verbosity = "quiet"')
    cell(ip, "%%gate --name g --requires a\npass")
    assert last(ip)["text/plain"] == "✓ g (done)"


def test_workflow_from_a_file_and_usage(ip: RaisingShell, tmp_path: Path) -> None:
    from IPython.core.error import UsageError

    from skillnb.errors import WorkflowError

    path = tmp_path / "flow.yaml"
    path.write_text(REVIEW.split("\n", 1)[1], encoding="utf-8")
    cell(ip, f"%workflow {path}")
    assert current_run(ip).state == "draft"
    with pytest.raises(UsageError, match="%workflow FILE, or %%workflow"):
        cell(ip, "%workflow")
    with pytest.raises(UsageError, match="%workflow FILE, or %%workflow"):
        cell(ip, f"%%workflow {path}\nworkflow: {{}}\n")
    with pytest.raises(WorkflowError) as caught:
        cell(ip, "%%workflow\nworkflow:\n  name: broken\n  states: []\n")
    (line,) = caught.value._render_traceback_()  # type: ignore[attr-defined]
    assert line.startswith("⛔ WorkflowError: %%workflow cell:4:")  # the cell's own line


def test_state_gate(counted: RaisingShell) -> None:
    cell(counted, REVIEW)
    cell(counted, "%%gate --name late --state review --on-block skip\ncalls.append(1)\n")
    assert counted.user_ns["calls"] == []
    assert "late.state: state is 'draft', needs 'review'" in last(counted)["text/plain"]
    cell(counted, "%%gate --name early --state draft,review\ncalls.append(1)\n")
    assert counted.user_ns["calls"] == [1]
