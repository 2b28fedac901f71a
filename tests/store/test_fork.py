"""A run's sidecar copied for a copy of its notebook: whole, under the lock, original only read."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from skillnb.errors import SkillnbError, UnsafePath
from skillnb.run import open_run
from skillnb.store.folders.fork import fork_sidecar


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _recorded(folder: Path) -> Path:
    with open_run(state_dir=folder, memory=False) as run:
        run.formalize("budget", 5000)
        run.formalize("notes", "x" * 100_000)  # a value kept by reference, in blobs/
        list(run.items("tickets", ["a", "b"]))
    return folder


def test_the_copy_holds_the_run_and_the_original_is_byte_identical(tmp_path: Path) -> None:
    origin = _recorded(tmp_path / ".skillnb" / "report")
    before = files(origin)
    target = tmp_path / ".skillnb" / "report-Copy1"
    fork_sidecar(origin, target)
    assert files(origin) == before
    assert not [p for p in target.parent.iterdir() if "~" in p.name]  # no partial folder left
    assert oct(target.stat().st_mode & 0o777) == "0o700"
    with (
        open_run(state_dir=target, memory=False) as copy,
        open_run(state_dir=origin, memory=False) as original,
    ):
        assert copy.id == original.id
        assert copy.fact("notes").value == "x" * 100_000  # type: ignore[union-attr]
        copy.formalize("budget", 99)  # from here on, the two go their own ways
        assert original.fact("budget").value == 5000  # type: ignore[union-attr]
    assert files(origin) == before


def _hold(lock: Path, ready: Any, go: Any) -> None:
    from skillnb.store.durable import FileLock

    held = FileLock(lock)
    with held.hold():
        ready.set()
        go.wait(30)  # a writer in the middle of its append
    held.close()


def test_the_copy_waits_for_a_writer_holding_the_original(tmp_path: Path) -> None:
    origin = _recorded(tmp_path / ".skillnb" / "report")
    target = tmp_path / ".skillnb" / "copy"
    ctx = multiprocessing.get_context("fork")
    ready, go = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_hold, args=(origin / "lock", ready, go))
    writer.start()
    assert ready.wait(30)
    forking = ctx.Process(target=fork_sidecar, args=(origin, target))
    forking.start()
    forking.join(1.0)
    assert forking.is_alive()  # waits on the lock
    assert not target.exists()
    go.set()
    forking.join(30)
    writer.join(30)
    assert forking.exitcode == 0
    assert files(target) == {k: v for k, v in files(origin).items() if k != "lock"}


def test_nothing_is_overwritten_or_read_through_a_link(tmp_path: Path) -> None:
    origin = _recorded(tmp_path / ".skillnb" / "report")
    taken = tmp_path / ".skillnb" / "taken"
    taken.mkdir()
    with pytest.raises(SkillnbError, match="already exists"):
        fork_sidecar(origin, taken)
    with pytest.raises(SkillnbError, match="no run to fork"):
        fork_sidecar(tmp_path / ".skillnb" / "none", tmp_path / ".skillnb" / "x")
    (origin / "blobs" / "planted").symlink_to("/etc/passwd")
    with pytest.raises(UnsafePath):
        fork_sidecar(origin, tmp_path / ".skillnb" / "copy")
    assert not (tmp_path / ".skillnb" / "copy").exists()
    assert not [p for p in origin.parent.iterdir() if "~" in p.name]
