"""A Run knows which run it holds: replaced runs, closing, and reads that write nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psutil
import pytest

from skillnb.cli.main import main
from skillnb.errors import RunReplaced, SkillnbError
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for
from skillnb.store.folders.aside import aside_folder, set_aside


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_stale_run_set_aside_raises_run_replaced_and_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    stale = open_run(state_dir=folder, memory=False)
    stale.formalize("budget", 5000)
    set_aside(folder, stale.id)
    before = tree(tmp_path)
    with pytest.raises(RunReplaced) as info:
        stale.formalize("budget", 6000)
    assert (info.value.expected, info.value.actual) == (stale.id, None)
    with pytest.raises(RunReplaced):
        stale.milestone("again")  # and it stays replaced: never recreates the folder
    with pytest.raises(RunReplaced):
        _ = stale.facts
    assert tree(tmp_path) == before
    assert not folder.exists()
    stale.close()


def test_a_stale_run_never_reads_or_writes_the_run_that_replaced_it(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    stale = open_run(state_dir=folder, memory=False)
    for i in range(5):
        stale.formalize(f"old{i}", i)
    set_aside(folder, stale.id)
    with open_run(state_dir=folder, memory=False) as fresh:
        fresh.formalize("new", 1)
        new_id = fresh.id
    before = tree(folder)
    with pytest.raises(RunReplaced) as info:
        _ = stale.version
    assert (info.value.expected, info.value.actual) == (stale.id, new_id)
    with pytest.raises(RunReplaced):
        stale.milestone("panel")
    assert tree(folder) == before
    assert sorted(stale.journal.state.facts) == [f"old{i}" for i in range(5)]  # not mixed
    stale.close()
    with open_run(state_dir=aside_folder(folder, stale.id), memory=False) as old:
        assert len(old.facts) == 5


@pytest.mark.parametrize("new_facts", [1, 8])
def test_a_longer_or_shorter_run_in_the_folder_is_never_mixed_in(
    tmp_path: Path, new_facts: int
) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    stale = open_run(state_dir=folder, memory=False)
    for i in range(3):
        stale.formalize(f"old{i}", i)
    set_aside(folder, stale.id)
    with open_run(state_dir=folder, memory=False) as fresh:
        for i in range(new_facts):
            fresh.formalize(f"new{i}", i)
    with pytest.raises(RunReplaced):
        _ = stale.facts
    assert sorted(stale.journal.state.facts) == ["old0", "old1", "old2"]
    stale.close()


def _fds() -> int:
    return psutil.Process().num_fds()


def test_close_releases_every_file(tmp_path: Path) -> None:
    with open_run(state_dir=tmp_path / "s", memory=False) as run:
        run.formalize("x", 1)
    baseline = _fds()
    for i in range(50):
        with open_run(state_dir=tmp_path / "s", memory=False) as run:
            run.formalize("x", i)
            assert run.fact("x") is not None
    assert _fds() == baseline
    with pytest.raises(SkillnbError, match="closed"):
        _ = run.version
    run.close()  # closing twice is harmless


def test_opening_to_read_creates_nothing(tmp_path: Path) -> None:
    nb = tmp_path / "report.ipynb"
    with open_run(nb, memory=False) as run:
        assert run.version == 0
        assert run.facts == {}
        assert run.id  # chosen now, recorded by the first write
        assert run.history() == []
        run.describe()
        run.summary()
    assert not (tmp_path / ".skillnb").exists()
    with open_run(nb, memory=False) as run:
        chosen = run.id
        run.formalize("x", 1)
        assert run.id == chosen
        assert [e.type for e in run.history()] == ["run.created", "fact.formalized"]


def test_read_commands_leave_the_sidecar_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = tmp_path / "report.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with open_run(nb, memory=False) as run:
        run.formalize("budget", 1200)
        run.formalize("title", "weekly")
        list(run.items("pages", ["a", "b"]))
    folder = sidecar_dir_for(nb)
    before = tree(folder)
    for command in (
        ["status"],
        ["status", "--json"],
        ["summary"],
        ["history"],
        ["history", "--json"],
        ["facts"],
        ["facts", "--json"],
    ):
        assert main([command[0], str(nb), *command[1:]]) == 0, capsys.readouterr()
        assert tree(folder) == before, command
    capsys.readouterr()
