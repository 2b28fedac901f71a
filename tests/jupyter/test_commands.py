"""``%skillnb`` subcommands and ``%resume``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from shellkit import RaisingShell, bundles, cell, last, last_volatile, make_shell

from skillnb.errors import ApprovalError, SkillnbError
from skillnb.jupyter.extension import current_run

MIME = "application/vnd.skillnb.v1+json"
SCRIPT = "<script>alert('x')</script>"


def test_status_is_plain_deterministic_and_escaped(ip: RaisingShell) -> None:
    cell(ip, f"%%formalize note --kind note\n{SCRIPT!r}")
    cell(ip, "%%gate --name ship --approval 'Go?' --on-block skip\n1\n")
    cell(ip, "%skillnb status")
    data = last(ip)
    assert data[MIME]["kind"] == "status"
    assert data[MIME]["status"] == "waiting"
    text = data["text/plain"]
    assert "Facts:\n  note  note       v1  <script>alert('x')</script>" in text
    assert (
        "Pending approvals:\n"
        "  ⏳ ship.approval (for gate:ship): Go? → %skillnb approve ship.approval" in text
    )
    assert current_run(ip).id not in text
    assert "<script>" not in data["text/html"]
    assert "&lt;script&gt;" in data["text/html"]
    cell(ip, "%skillnb status")
    assert last(ip)["text/plain"] == text  # nothing changed: the same text


def test_facts_history_and_milestone(ip: RaisingShell) -> None:
    cell(ip, "%%formalize a\n1")
    cell(ip, "%skillnb facts")
    assert last(ip)["text/plain"] == "facts (1)\na v1 (data) = 1"
    cell(ip, "%skillnb milestone first-draft")
    assert last(ip)["text/plain"] == "🏁 first-draft\nat version 5"
    cell(ip, "%skillnb history -n 2")
    assert last(ip)["text/plain"].splitlines() == [
        "history (last 2)",
        "v4 step.committed: step formalize:a committed",
        "v5 milestone.recorded: milestone 'first-draft'",
    ]


def test_rollback_writes_the_old_value_again_and_restores_it(ip: RaisingShell) -> None:
    cell(ip, "%%formalize budget\n100")
    cell(ip, "%%formalize budget\n200")
    cell(ip, "%skillnb rollback budget 1")
    assert ip.user_ns["budget"] == 100
    assert last(ip)["text/plain"].startswith("↶ budget v3")
    assert current_run(ip).fact("budget").value == 100  # type: ignore[union-attr]


def test_approve_without_a_request_is_refused_shortly(ip: RaisingShell) -> None:
    with pytest.raises(ApprovalError) as caught:
        cell(ip, "%skillnb approve nothing.approval")
    (line,) = caught.value._render_traceback_()  # type: ignore[attr-defined]
    assert line.startswith(
        "⛔ ApprovalError: no approval was requested for gate 'nothing.approval'"
    )


def test_the_approval_output_names_no_random_request_id(ip: RaisingShell) -> None:
    cell(ip, "%%gate --name ship --approval 'Go?' --on-block skip\n1\n")
    (request,) = current_run(ip).pending()
    cell(ip, "%skillnb approve ship.approval --by ana --note 'fine'")
    data = last(ip)
    assert data["text/plain"].splitlines() == [
        "✓ ship.approval approved by ana",
        "request for gate:ship: fine",
        "run the gated cell again to go on",
    ]
    assert request.id not in data["text/html"]
    (event,) = last_volatile(ip)["events"]  # the id travels in the output's metadata
    assert (event["type"], event["data"]["id"]) == ("approval.decided", request.id)


def test_summary_and_compact(ip: RaisingShell) -> None:
    cell(ip, "%%formalize budget --kind decision\n5000")
    cell(ip, "%skillnb summary --max-chars 2000")
    data = last(ip)
    assert data["text/markdown"].startswith("# SKILL.nb run summary")
    assert len(data["text/markdown"]) <= 2000
    run = current_run(ip)
    full = run.summary(max_chars=2000)
    assert run.id in full  # the summary an LLM gets names the run and its times...
    assert re.search(r"^updated: 20\d\d-", full, re.MULTILINE)
    for shown in (data["text/markdown"], data["text/plain"]):  # ...its notebook output does not
        assert run.id not in shown
        assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", shown)
        assert "- budget (v1) = 5000" in shown
        assert "\nrun: " not in shown  # the run id differs between executions: left out
    cell(ip, "%skillnb compact")
    assert last(ip)["text/plain"] == "compacted at version 4"
    assert (Path(".skillnb") / "analysis" / "snapshot.json").exists()


def test_use_new_run_and_resume_a_run_set_aside(ip: RaisingShell, tmp_path: Path) -> None:
    cell(ip, "%%formalize budget\n5000")
    first = current_run(ip).id
    cell(ip, "%skillnb new-run")
    second = current_run(ip)
    assert second.id != first
    assert second.fact("budget") is None
    assert (tmp_path / ".skillnb" / f"analysis~{first}").is_dir()
    del ip.user_ns["budget"]
    cell(ip, f"%resume --run {first}")
    assert current_run(ip).id == first
    assert ip.user_ns["budget"] == 5000
    assert (tmp_path / ".skillnb" / f"analysis~{second.id}").is_dir()
    with pytest.raises(SkillnbError, match="no run 'nope'"):
        cell(ip, "%resume --run nope")
    cell(ip, f"%skillnb use {tmp_path / 'state'}")
    assert last(ip)["text/plain"].startswith(f"using state folder {tmp_path / 'state'}")
    cell(ip, "%%formalize other\n1")
    assert (tmp_path / "state" / "journal.jsonl").exists()


def test_resume_restores_facts_and_lists_what_waits(ip: RaisingShell) -> None:
    cell(ip, "%%formalize budget --kind decision\n5000")
    cell(ip, "%%formalize my-key\n'not a variable name'")
    cell(ip, "%%gate --name ship --approval 'Go?' --on-block skip\n1\n")
    again = make_shell()
    try:
        again.run_line_magic("load_ext", "skillnb")
        cell(again, "%resume")
        assert again.user_ns["budget"] == 5000
        resumed = [d for d in bundles(again) if d[MIME]["kind"] == "resume"][-1]
        text = resumed["text/plain"]
        assert text.startswith("▶ resumed run at version ")
        assert "restored into the namespace:\n  budget" in text
        assert "⏳ ship.approval (for gate:ship): Go? → %skillnb approve ship.approval" in text
        # One output: the person's part first, then the LLM-ready summary, labelled
        assert again.display_pub.outputs[-1]["data"] is resumed
        human, llm = text.split("\n\nLLM-ready summary (the same run, as context for an agent):\n")
        assert llm.startswith("# SKILL.nb run summary")
        assert "SKILL.nb run summary" not in human
        page = resumed["text/html"]
        assert page.index("restored into the namespace") < page.index("<details")
        assert "# SKILL.nb run summary" in page[page.index("<details") :]
    finally:
        again.run_line_magic("unload_ext", "skillnb")


def test_resume_no_restore_leaves_the_namespace(ip: RaisingShell) -> None:
    cell(ip, "%%formalize budget\n5000")
    del ip.user_ns["budget"]
    cell(ip, "%resume --no-restore")
    assert "budget" not in ip.user_ns


def test_resume_with_nothing_recorded_and_no_notebook_file(ip: RaisingShell) -> None:
    with pytest.raises(SkillnbError, match="no run is recorded here yet"):
        cell(ip, "%resume")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%skillnb", "required: COMMAND"),
        ("%skillnb launch", "invalid choice: 'launch'"),
        ("%skillnb rollback budget two", "invalid int value: 'two'"),
        ("%skillnb approve", "required: gate"),
    ],
)
def test_bad_commands_are_usage_errors(ip: RaisingShell, line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        cell(ip, line)


def test_help_lists_every_command(ip: RaisingShell) -> None:
    doc = ip.find_line_magic("skillnb").__doc__
    for name in (
        "status",
        "history",
        "facts",
        "approve",
        "reject",
        "rollback",
        "summary",
        "compact",
        "use",
        "new-run",
        "clear",
        "milestone",
    ):
        assert name in doc
