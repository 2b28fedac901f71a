"""`--wait` on the magics and `skillnb run`; a `%resume` that restores nothing writes nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from shellkit import RaisingShell, cell

from skillnb.cli.main import main
from skillnb.core.runstate.claims import step_claim_key
from skillnb.core.runstate.records import Claim, Owner
from skillnb.errors import StepInProgress
from skillnb.jupyter.extension import current_run
from skillnb.run import open_run


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf"])
@pytest.mark.parametrize("magic", ["%%gate --name send", "%%formalize budget"])
def test_a_bad_wait_is_a_usage_error_naming_the_option(
    ip: RaisingShell, magic: str, value: str
) -> None:
    with pytest.raises(UsageError, match=r"--wait.*seconds") as caught:
        cell(ip, f"{magic} --wait={value}\n1\n")
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_skillnb_run_refuses_a_bad_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    nb = tmp_path / "n.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert main(["run", str(nb), f"--wait={value}"]) == 2
    err = capsys.readouterr().err
    assert "--wait" in err
    assert repr(value) in err


def _held_by_another_process(ip: RaisingShell, key: str, lease: float) -> subprocess.Popen[str]:
    """Record that a live process of this host holds step ``key`` (it sleeps meanwhile)."""
    import psutil

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], text=True)
    owner = Owner(
        host=__import__("socket").gethostname(),
        pid=holder.pid,
        started=psutil.Process(holder.pid).create_time(),
        session="kernel other",
    )
    run = current_run(ip)
    now = run.journal.clock()
    claim = Claim(key=step_claim_key(key), owner=owner, since=now, until=now + timedelta(lease))
    run.journal.commit(
        lambda _s: [
            run.journal.draft(
                "step.started", key=key, owner=owner.id, claim=claim.model_dump(mode="json")
            )
        ]
    )
    return holder


def test_a_step_held_elsewhere_is_in_progress_and_waits_with_wait(ip: RaisingShell) -> None:
    cell(ip, "%%formalize seed\n1\n")  # the run exists
    holder = _held_by_another_process(ip, "gate:send", lease=60)
    try:
        with pytest.raises(StepInProgress) as caught:
            cell(ip, "%%gate --name send\nran = 1\n")
        assert "kernel other" in str(caught.value)
        assert "ran" not in ip.user_ns
        with pytest.raises(StepInProgress):
            cell(ip, "%%gate --name send --wait 0.3\nran = 1\n")
    finally:
        holder.kill()
        holder.wait()
    with pytest.raises(Exception, match="never committed"):  # its owner died mid-step
        cell(ip, "%%gate --name send --wait 5\nran = 1\n")


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_resume_with_nothing_to_restore_leaves_the_sidecar_byte_identical(
    bare_shell: RaisingShell, notebook: Path
) -> None:
    with open_run(notebook, memory=False) as run:
        run.formalize("budget", 5000)
    before = tree(notebook.parent / ".skillnb")
    cell(bare_shell, "%load_ext skillnb")
    cell(bare_shell, "%resume --no-restore")
    cell(bare_shell, "%resume")
    cell(bare_shell, "%skillnb status")
    assert tree(notebook.parent / ".skillnb") == before
