"""The ``skillnb`` command on prepared runs, in-process (no kernel)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skillnb.cli.main import main
from skillnb.core.workflow.model import Workflow
from skillnb.run import Run, open_run
from skillnb.skillmemory import SkillMemory
from skillnb.store import sidecar_dir_for

WORKFLOW = Workflow.from_yaml(
    Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml"
)


def _notebook(path: Path) -> Path:
    nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


@pytest.fixture
def nb(tmp_path: Path) -> Path:
    return _notebook(tmp_path / "report.ipynb")


def _waiting_run(nb: Path) -> Run:
    run = open_run(nb, workflow=WORKFLOW, memory=False)
    run.formalize("budget", 1200, kind="decision", note="agreed")
    run.formalize("title", "Weekly \x1b[31mreport\x1b[0m")
    run.fire("submit")
    run.gates.run_gated("publish", on_block="skip", subject=run)  # records the approval request
    return run


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_status_shows_state_next_and_pending(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    code, out, err = _cli(capsys, "status", nb)
    assert (code, err) == (0, "")
    assert f"run {run.id} · workflow Publish_Flow · state review · version {run.version}" in out
    assert "  ✗ publish → published: blocked" in out
    request = run.pending()[0]
    assert f"⏳ publish_ok (for publish, request {request.id}): " in out
    assert f" → skillnb approve {nb} publish_ok --by NAME" in out
    assert re.search(r"Facts:\n  \w+ +\w+ +v1 ", out)


def test_status_json_is_describe(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    code, out, _ = _cli(capsys, "status", nb, "--json")
    assert code == 0
    view = json.loads(out)
    assert view == json.loads(json.dumps(run.describe()))
    assert view["state"] == "review"
    assert [p["gate"] for p in view["pending"]] == ["publish_ok"]


def test_facts_table_and_json(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _waiting_run(nb)
    code, out, _ = _cli(capsys, "facts", nb)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["budget", "decision", "v1", "1200"]
    assert "\x1b" not in out  # terminal escapes from fact values are neutralised
    assert "Weekly ?[31mreport" in lines[1]
    code, out, _ = _cli(capsys, "facts", nb, "--json")
    facts = {f["key"]: f for f in json.loads(out)}
    assert facts["budget"]["value"] == 1200
    assert facts["budget"]["note"] == "agreed"


def test_history_lists_recent_events_oldest_first(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _waiting_run(nb)
    code, out, _ = _cli(capsys, "history", nb, "-n", "3")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[-1].lstrip().startswith(f"#{run.version} ")
    assert "approval requested: publish_ok" in out
    code, out, _ = _cli(capsys, "history", nb, "--json", "-n", "50")
    events = json.loads(out)
    assert [e["seq"] for e in events] == list(range(1, run.version + 1))


def test_summary_respects_max_chars(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _waiting_run(nb)
    code, out, _ = _cli(capsys, "summary", nb, "--max-chars", "600")
    assert code == 0
    assert len(out.rstrip("\n")) <= 600
    assert "review" in out
    _, full, _ = _cli(capsys, "summary", nb)
    assert full.rstrip("\n") == open_run(nb).summary().rstrip("\n").replace("\x1b", "?")


def test_compact_then_everything_still_reads(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    code, out, _ = _cli(capsys, "compact", nb)
    assert code == 0
    assert out.strip() == f"compacted run {run.id} at version {run.version}"
    assert (sidecar_dir_for(nb) / "snapshot.json").exists()
    reopened = open_run(nb, memory=False)
    assert (reopened.state, reopened.version) == ("review", run.version)


def test_approve_then_the_gate_passes(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    request = run.pending()[0]
    code, out, err = _cli(capsys, "approve", nb, "publish_ok", "--by", "ed", "--note", "ship it")
    assert (code, err) == (0, "")
    assert f"approved publish_ok (request {request.id}) by ed" in out
    assert f"continue with: skillnb run {nb}" in out
    decided = run.snapshot.approvals[request.id]
    assert (decided.status, decided.decided_by, decided.note) == ("approved", "ed", "ship it")
    run.fire("publish")
    assert run.state == "published"


def test_reject_records_the_decision(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    code, out, _ = _cli(
        capsys, "reject", "--state-dir", sidecar_dir_for(nb), "publish_ok", "--by", "ed"
    )
    assert code == 0
    assert out.startswith("rejected publish_ok")
    assert run.check("publish").passed is False
    assert "rejected by ed" in run.check("publish").results[-1].message


def test_early_approval_is_refused(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = open_run(nb, workflow=WORKFLOW, memory=False)
    run.formalize("budget", 1)
    code, out, err = _cli(capsys, "approve", nb, "publish_ok", "--by", "ed")
    assert code == 1
    assert out == ""
    assert err.startswith("skillnb approve: no approval was requested for gate 'publish_ok'")
    assert len(err.strip().splitlines()) == 1


def test_stale_request_is_refused(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    stale = run.pending()[0].id
    run.approve("publish_ok", by="ed")
    run.fire("publish")
    code, _, err = _cli(capsys, "approve", nb, "publish_ok", "--by", "ed", "--request", stale)
    assert code == 1
    assert "stale" in err
    assert stale in err


def test_repeated_approval_is_refused(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _waiting_run(nb)
    assert _cli(capsys, "approve", nb, "publish_ok", "--by", "ed")[0] == 0
    code, _, err = _cli(capsys, "approve", nb, "publish_ok", "--by", "ed")
    assert code == 1
    assert "already approved by ed" in err


def test_memory_prints_the_prompt_summary(capsys: pytest.CaptureFixture[str]) -> None:
    memory = SkillMemory("doc-extract-engine")
    memory.record("batch_extract", "extracted 7 résumés", ids={"last_batch_id": 374})
    code, out, _ = _cli(capsys, "memory", "doc-extract-engine")
    assert code == 0
    assert out == memory.to_prompt_summary().rstrip("\n") + "\n"
    assert "374" in out


def test_memory_with_an_unsafe_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "memory", "../etc/passwd")
    assert code == 2
    assert "path separator" in err


# -- errors ----------------------------------------------------------------------------------
def test_missing_notebook_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "status", tmp_path / "absent.ipynb")
    assert (code, out) == (2, "")
    assert err.strip() == f"skillnb status: {tmp_path / 'absent.ipynb'}: no such notebook"


def test_notebook_without_a_run_says_how_to_get_one(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capsys, "facts", nb)
    assert code == 1
    assert "no run yet" in err
    assert f"skillnb rebuild {nb}" in err
    assert not sidecar_dir_for(nb).exists()  # looking never creates a run


def test_corrupted_sidecar_names_file_and_line(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(nb)
    journal = sidecar_dir_for(nb) / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    lines[2] = '{"damaged": tru\n'
    journal.write_text("".join(lines))
    code, out, err = _cli(capsys, "status", nb)
    assert (code, out) == (1, "")
    assert len(err.strip().splitlines()) == 1
    assert f"{journal}:3" in err
    assert "Traceback" not in err
    code, out, _ = _cli(capsys, "repair", nb)
    assert code == 0
    assert "repaired" in out
    assert _cli(capsys, "status", nb)[0] == 0


def test_argument_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "approve", "nb.ipynb", "gate")
    assert code == 2
    assert out == ""
    assert "--by" in err
    assert _cli(capsys, "no-such-command")[0] == 2
    assert _cli(capsys)[0] == 2
    assert _cli(capsys, "status")[0] == 2  # neither NOTEBOOK nor --state-dir


def test_help_exits_0_and_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "--help")
    assert code == 0
    for name in (
        "status",
        "summary",
        "history",
        "facts",
        "approve",
        "reject",
        "rebuild",
        "compact",
        "run",
        "memory",
        "validate",
        "graph",
        "repair",
    ):
        assert name in out


def test_rebuild_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from skillnb.notebookfile.sync import write_mirror

    nb = _notebook(tmp_path / "report.ipynb")
    run = _waiting_run(nb)
    write_mirror(nb, run)
    code, _, err = _cli(capsys, "rebuild", nb)
    assert code == 1
    assert "already exists" in err
    code, out, _ = _cli(capsys, "rebuild", nb, "--state-dir", tmp_path / "copy")
    assert code == 0
    assert out.startswith(f"rebuilt run {run.id}")
    assert "2 preview-only facts" in out
    code, _, err = _cli(
        capsys, "rebuild", nb, "--state-dir", tmp_path / "b", "--workflow", "no.yaml"
    )
    assert code == 2
    assert "no.yaml" in err
    assert not (tmp_path / "b").exists()  # a broken definition fails before anything is written


def test_python_dash_m_runs_the_cli(nb: Path) -> None:
    _waiting_run(nb)
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "status", str(nb), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "review"
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "approve", str(nb), "nope", "--by", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_a_closed_pipe_is_quiet_and_succeeds(nb: Path, tmp_path: Path) -> None:
    run = _waiting_run(nb)
    for n in range(60):
        run.formalize("counter", n)
    env_path = str(Path(__file__).resolve().parents[2] / "skillnb_magics")
    command = (
        f"{sys.executable} -m skillnb history {nb} -n 60 | head -1"  # head closes the pipe early
    )
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Broken pipe" not in done.stderr
    assert len(done.stdout.splitlines()) == 1


def test_a_notebook_with_only_its_sidecar_left_still_works(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(nb)
    nb.unlink()  # the notebook moved away; its sidecar stayed
    code, out, err = _cli(capsys, "status", nb)
    assert code == 0, err
    assert "pending" in out or "publish" in out
    assert _cli(capsys, "status", nb.with_name("never.ipynb"))[0] == 2


def test_an_unknown_gate_gets_a_suggestion(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _waiting_run(nb)
    gate = run.pending()[0].gate
    code, _, err = _cli(capsys, "approve", nb, gate + "k", "--by", "ed")
    assert code == 1
    assert f"unknown approval gate '{gate}k' (did you mean '{gate}'?)" in err


def test_fork_copies_a_run_for_a_copy_of_the_notebook(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _waiting_run(nb)
    copy = nb.with_name("report-copy.ipynb")
    code, out, err = _cli(capsys, "fork", nb, copy)
    assert code == 0, err
    assert "forked the run of report.ipynb" in out
    assert copy.is_file()  # the notebook too, since it did not exist
    forked = open_run(copy, memory=False)
    assert forked.fact("budget").value == 1200  # type: ignore[union-attr]
    assert forked.state == run.state
    forked.formalize("budget", 99)  # from here on, the two runs go their own ways
    assert run.fact("budget").value == 1200  # type: ignore[union-attr]
    code, _, err = _cli(capsys, "fork", nb, copy)
    assert code == 2
    assert "has a run already" in err
    assert _cli(capsys, "fork", nb.with_name("none.ipynb"), nb.with_name("x.ipynb"))[0] == 2


def test_a_duplicated_notebook_starts_its_own_run(nb: Path) -> None:
    run = _waiting_run(nb)
    duplicate = nb.with_name("report-Copy1.ipynb")
    duplicate.write_bytes(nb.read_bytes())
    other = open_run(duplicate, memory=False)
    assert other.id != run.id
    assert other.facts == {}
