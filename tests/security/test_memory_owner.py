"""Attack: a cloned notebook's run writes its key ids into the user's own skill memory.

The user's ``doc-extract-engine`` memory says ``last_batch_id`` 374. A notebook cloned from
someone else carries a run of the same skill whose key ids say 999999 and an approval
waiting; ``skillnb approve`` on it used to write 999999 into the user's memory, so the user's
next session continued from the wrong batch. A run writes the memory only when it belongs to
this user here (created here, or adopted: :mod:`skillnb.memory.owned`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillnb.cli.main import main
from skillnb.core.workflow.model import Workflow
from skillnb.errors import GateBlocked
from skillnb.run import open_run
from skillnb.skillmemory import SkillMemory

SKILL = "doc-extract-engine"
WORKFLOW = {
    "workflow": {
        "name": "extract",
        "skill": SKILL,
        "states": ["draft", "done"],
        "transitions": [
            {"from": "draft", "to": "done", "trigger": "publish", "gates": ["ok"]},
        ],
        "gates": {"ok": {"approval": "Publish?"}},
    }
}


def _notebook(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _someone_elses_notebook(folder: Path, monkeypatch: pytest.MonkeyPatch, mine: Path) -> Path:
    """A notebook and sidecar made by another user (another home), copied into ``folder``."""
    theirs = folder.parent / "their-home"
    monkeypatch.setenv("SKILLNB_HOME", str(theirs))
    made = _notebook(folder.parent / "theirs" / "clone.ipynb")
    with open_run(made, workflow=Workflow.from_dict(WORKFLOW)) as run:
        run.set_key_ids(last_batch_id=999999, last_session_id=666)
        with pytest.raises(GateBlocked):
            run.fire("publish")  # leaves an approval waiting
    monkeypatch.setenv("SKILLNB_HOME", str(mine))
    folder.mkdir(parents=True, exist_ok=True)
    clone = folder / "clone.ipynb"
    shutil.copy(made, clone)
    shutil.copytree(made.parent / ".skillnb", folder / ".skillnb")
    return clone


def test_approving_a_cloned_run_leaves_the_users_memory_alone(
    tmp_path: Path, skillnb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SkillMemory(SKILL).record("batch_extract", "extracted 7", ids={"last_batch_id": 374})
    clone = _someone_elses_notebook(tmp_path / "work", monkeypatch, skillnb_home)

    assert main(["approve", str(clone), "ok", "--by", "me"]) == 0
    with open_run(clone) as run:
        assert run.state == "draft"
        assert [a.status for a in run.journal.state.approvals.values()] == ["approved"]
        run.fire("publish")  # the approval works: only the memory is left alone
        assert run.state == "done"
        run.set_key_ids(last_batch_id=999999)
    memory = SkillMemory(SKILL)
    assert memory.get_id("last_batch_id") == 374
    assert memory.get_id("last_session_id") is None
    assert all("999999" not in json.dumps(op) for op in memory.get_history(20))


def test_an_adopted_or_explicitly_opened_run_writes_the_memory(
    tmp_path: Path, skillnb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SkillMemory(SKILL).record("batch_extract", "extracted 7", ids={"last_batch_id": 374})
    clone = _someone_elses_notebook(tmp_path / "work", monkeypatch, skillnb_home)

    with open_run(clone, memory=True) as run:  # the user's word, for this opened run
        run.set_key_ids(last_batch_id=500)
    assert SkillMemory(SKILL).get_id("last_batch_id") == 500
    with open_run(clone) as run:  # not adopted: the next opening writes nothing again
        run.set_key_ids(last_batch_id=600)
    assert SkillMemory(SKILL).get_id("last_batch_id") == 500

    with open_run(clone) as run:
        run.adopt()
    with open_run(clone) as run:  # adopted: it belongs now, in every later process too
        run.set_key_ids(last_batch_id=700)
    assert SkillMemory(SKILL).get_id("last_batch_id") == 700


def test_a_run_created_here_writes_the_memory_from_every_process(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "mine.ipynb")
    with open_run(notebook, workflow=Workflow.from_dict(WORKFLOW)) as run:
        run.set_key_ids(last_batch_id=1)
    assert SkillMemory(SKILL).get_id("last_batch_id") == 1
    assert main(["approve", str(notebook), "ok", "--by", "me"]) != 0  # nothing pending: refused
    with open_run(notebook) as run, pytest.raises(GateBlocked):
        run.fire("publish")
    assert main(["approve", str(notebook), "ok", "--by", "me"]) == 0
    with open_run(notebook) as run:  # another opening: the run still belongs
        run.fire("publish")
        run.set_key_ids(last_batch_id=2)
    memory = SkillMemory(SKILL)
    assert memory.get_id("last_batch_id") == 2
    actions = {op["action"] for op in memory.get_history(10)}
    assert {"approval_approved", "transition", "key_ids"} <= actions
