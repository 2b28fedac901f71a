"""A sidecar deleted or replaced under a live kernel: said once, never a silent new run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shellkit import RaisingShell, cell, last

from skillnb.errors import RunReplaced
from skillnb.jupyter.extension import current_session
from skillnb.jupyter.held import RunHeld
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for

WORKFLOW = (
    "%%workflow\nworkflow:\n  name: W\n  states: [a, b]\n"
    "  transitions:\n    - {from: a, to: b, trigger: go}\n"
)


def texts(ip: RaisingShell) -> list[str]:
    return [str(o["data"].get("text/plain", "")) for o in ip.display_pub.outputs]


def started(ip: RaisingShell) -> tuple[str, int]:
    cell(ip, WORKFLOW)
    cell(ip, "%%formalize note1\n'x'")
    session = current_session(ip)
    assert session is not None
    return session.run.id, session.run.version


def test_a_deleted_sidecar_is_said_once_and_no_new_run_starts(
    ip: RaisingShell, notebook: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, version = started(ip)
    shutil.rmtree(sidecar_dir_for(notebook))
    ip.display_pub.outputs.clear()
    cell(ip, "x = 1")  # a plain cell: the hooks find it, and say so in this cell
    said = [t for t in texts(ip) if "was deleted" in t]
    assert len(said) == 1
    assert said[0].splitlines() == [
        f"⚠ SKILL.nb · the sidecar of run {run_id} was deleted ({sidecar_dir_for(notebook)})",
        f"this kernel still holds run {run_id} (version {version}, 1 facts, state a); nothing is "
        "recorded until you choose:",
        "  %skillnb restore   write the kernel's copy back",
        "  %resume            rebuild the run from the saved notebook",
        "  %skillnb new-run   start a new run",
    ]
    assert "Error in callback" not in capsys.readouterr().out
    cell(ip, "y = 2")
    assert len([t for t in texts(ip) if "was deleted" in t]) == 1  # once
    with pytest.raises(RunHeld, match=r"choose `%skillnb restore` \(write it back\)"):
        cell(ip, "%%formalize note2\n'y'")
    with pytest.raises(RunHeld):
        cell(ip, "import skillnb\nskillnb.current_run()")
    assert not sidecar_dir_for(notebook).exists()  # no new run without the user's word
    assert "Error in callback" not in capsys.readouterr().out


def test_restore_writes_the_kernels_copy_back(ip: RaisingShell, notebook: Path) -> None:
    run_id, version = started(ip)
    shutil.rmtree(sidecar_dir_for(notebook))
    with pytest.raises(RunReplaced):  # found by the magic itself: the notice, then a short error
        cell(ip, "%%formalize note2\n'y'")
    assert any("was deleted" in t for t in texts(ip))
    cell(ip, "%skillnb restore")
    assert last(ip)["text/plain"].splitlines() == [
        "run written back",
        f"run {run_id} is back at version {version}, as this kernel held it",
    ]
    cell(ip, "%%formalize note2\n'y'")
    with open_run(notebook) as run:
        assert run.id == run_id
        assert run.state == "a"
        assert run.workflow is not None
        assert {k: f.value for k, f in run.facts.items()} == {"note1": "x", "note2": "y"}
        assert next(e.seq for e in run.history(50)) == 1  # the whole history came back


def test_a_replaced_sidecar_offers_the_run_standing_there_and_restore_sets_it_aside(
    ip: RaisingShell, notebook: Path
) -> None:
    run_id, _ = started(ip)
    folder = sidecar_dir_for(notebook)
    shutil.rmtree(folder)
    with open_run(notebook) as other:
        other.formalize("intruder", 1)
        other_id = other.id
    cell(ip, "x = 1")
    said = next(t for t in texts(ip) if "now holds another run" in t)
    assert f"%resume            go on with run {other_id}, which stands there now" in said
    assert f"write the kernel's copy back (run {other_id} is set aside first)" in said
    cell(ip, "%skillnb restore")
    assert (folder.parent / f"{folder.name}~{other_id}").is_dir()
    with open_run(notebook) as run:
        assert run.id == run_id
        assert run.fact("intruder") is None


def test_new_run_starts_one_on_request_and_a_failed_resume_keeps_the_run_held(
    ip: RaisingShell, notebook: Path
) -> None:
    run_id, _ = started(ip)
    shutil.rmtree(sidecar_dir_for(notebook))
    cell(ip, "x = 1")
    with pytest.raises(Exception, match="no saved notebook to rebuild from"):
        cell(ip, "%resume")  # the notebook was never saved: nothing to rebuild from
    with pytest.raises(RunHeld):
        cell(ip, "%%formalize note2\n'y'")
    cell(ip, "%skillnb new-run")
    session = current_session(ip)
    assert session is not None
    assert session.held is None
    assert session.run.id != run_id
    cell(ip, "%%formalize note2\n'y'")
    assert session.run.fact("note2") is not None


def test_a_failing_hook_gives_one_short_warning_not_a_callback_traceback(
    ip: RaisingShell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from skillnb.jupyter.suggest.cells import CellSuggestions

    def broken(self: object, source: str, produced: object) -> list[object]:
        raise ValueError("boom")

    monkeypatch.setattr(CellSuggestions, "rank", broken)
    cell(ip, "a = 1")
    cell(ip, "b = 2")
    warned = [t for t in texts(ip) if "step failed after this cell" in t]
    assert warned == [
        "⚠ SKILL.nb: its CellSuggestions.post_run_cell step failed after this cell "
        "(ValueError: boom); the cell itself ran, and SKILL.nb goes on"
    ]
    assert ip.user_ns["b"] == 2
    assert "Error in callback" not in capsys.readouterr().out


def test_every_handler_skillnb_registers_is_guarded(ip: RaisingShell) -> None:
    cell(ip, "import skillnb\nrun = skillnb.current_run()")
    session = current_session(ip)
    assert session is not None
    session.feeds.feed(session.run)  # a live feed registers pre_execute/post_execute
    ours = [
        callback
        for callbacks in ip.events.callbacks.values()
        for callback in callbacks
        if getattr(callback, "__module__", "").startswith("skillnb")
    ]
    assert len(ours) >= 6
    for callback in ours:
        assert callback.__func__.__wrapped__ is not None, callback  # wrapped by never_raises
