"""A notebook's run follows the notebook: renames, moves, copies and ambiguity (no kernel)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from shellkit import RaisingShell, cell

from skillnb.cli.main import main
from skillnb.jupyter.banner import copied_output
from skillnb.notebookfile.identity import AmbiguousIdentity, NotebookCopied, follow, notebook_run_id
from skillnb.notebookfile.sync import apply_mirror, rebuild_run
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for


def finished(path: Path) -> str:
    """A notebook with a run of two facts and its metadata mirror, as `skillnb run` leaves it."""
    nb: dict[str, object] = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    with open_run(path) as run:
        run.formalize("budget", 5000)
        list(run.items("tickets", ["a", "b"]))
        apply_mirror(nb, run)
        run_id = run.id
    path.write_text(json.dumps(nb), encoding="utf-8")
    return run_id


def test_a_renamed_notebook_takes_its_sidecar_along(tmp_path: Path) -> None:
    run_id = finished(tmp_path / "tickets.ipynb")
    (tmp_path / "tickets.ipynb").rename(tmp_path / "triage.ipynb")
    binding = follow(tmp_path / "triage.ipynb")
    assert binding is not None
    assert binding.kind == "moved"
    assert binding.line == (
        f"bound to run {run_id} of tickets.ipynb (renamed or moved): its sidecar moved to "
        ".skillnb/triage; completed work is not redone"
    )
    assert not sidecar_dir_for(tmp_path / "tickets.ipynb").exists()
    with open_run(tmp_path / "triage.ipynb") as run:
        assert run.id == run_id
        assert list(run.items("tickets", ["a", "b"])) == []  # nothing done again
    assert follow(tmp_path / "triage.ipynb") is None  # bound once: nothing more to say


def test_a_notebook_moved_one_folder_down_or_sideways_is_bound(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run_id = finished(tmp_path / "a" / "tickets.ipynb")
    (tmp_path / "a" / "tickets.ipynb").rename(tmp_path / "b" / "tickets.ipynb")
    binding = follow(tmp_path / "b" / "tickets.ipynb")
    assert binding is not None
    assert binding.kind == "moved"
    assert "of ../a/tickets.ipynb" in binding.line
    assert notebook_run_id(tmp_path / "b" / "tickets.ipynb") == run_id
    with open_run(tmp_path / "b" / "tickets.ipynb") as run:
        assert run.id == run_id
        assert run.fact("budget") is not None


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes (to tell that nothing was written there)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_copy_is_refused_naming_fork_and_new_run(tmp_path: Path) -> None:
    run_id = finished(tmp_path / "tickets.ipynb")
    before = files(sidecar_dir_for(tmp_path / "tickets.ipynb"))
    shutil.copy(tmp_path / "tickets.ipynb", tmp_path / "copy.ipynb")
    with pytest.raises(NotebookCopied) as caught:
        follow(tmp_path / "copy.ipynb")
    assert isinstance(caught.value, AmbiguousIdentity)  # refused like every unsettled identity
    assert caught.value.original == tmp_path / "tickets.ipynb"
    assert caught.value.run_id == run_id
    assert str(caught.value) == (
        f"copy.ipynb is a copy of tickets.ipynb (run {run_id}); nothing is recorded until you "
        "choose: go on with a copy of its run, `%skillnb fork-from tickets.ipynb` (as "
        "`skillnb fork tickets.ipynb copy.ipynb`), or start fresh, `%skillnb new-run`"
    )
    output = copied_output(caught.value)
    assert output.badge == "⚠ SKILL.nb · copy.ipynb is a copy of tickets.ipynb"
    assert not any("%resume" in line for line in output.lines)
    assert files(sidecar_dir_for(tmp_path / "tickets.ipynb")) == before  # only read
    assert not sidecar_dir_for(tmp_path / "copy.ipynb").exists()


def test_two_sidecars_holding_the_run_are_refused_naming_both(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    run_id = finished(tmp_path / "tickets.ipynb")
    shutil.copytree(sidecar_dir_for(tmp_path / "tickets.ipynb"), tmp_path / "old/.skillnb/x")
    (tmp_path / "tickets.ipynb").rename(tmp_path / "triage.ipynb")
    with pytest.raises(AmbiguousIdentity) as caught:
        follow(tmp_path / "triage.ipynb")
    message = str(caught.value)
    assert f"triage.ipynb names run {run_id}" in message
    assert ".skillnb/tickets (tickets.ipynb, gone)" in message
    assert "old/.skillnb/x (old/x.ipynb, gone)" in message
    assert "`skillnb mv tickets.ipynb triage.ipynb`" in message
    assert "`skillnb mv old/x.ipynb triage.ipynb`" in message
    assert "`skillnb run triage.ipynb --new-run`" in message
    assert sidecar_dir_for(tmp_path / "tickets.ipynb").is_dir()  # nothing was changed


def test_an_own_sidecar_of_another_run_with_the_named_one_orphaned_is_refused(
    tmp_path: Path,
) -> None:
    run_id = finished(tmp_path / "tickets.ipynb")
    (tmp_path / "tickets.ipynb").rename(tmp_path / "triage.ipynb")
    with open_run(tmp_path / "triage.ipynb") as other:
        other.formalize("x", 1)
        other_id = other.id
    with pytest.raises(AmbiguousIdentity) as caught:
        follow(tmp_path / "triage.ipynb")
    message = str(caught.value)
    assert f"names run {run_id}, recorded in .skillnb/tickets under tickets.ipynb" in message
    assert f"its own sidecar .skillnb/triage holds run {other_id}" in message
    assert f"`mv .skillnb/triage .skillnb/triage~{other_id}`" in message
    assert f"`mv .skillnb/tickets .skillnb/tickets~{run_id}`" in message


def test_notebooks_without_a_run_id_or_with_their_own_sidecar_are_left_alone(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}))
    assert follow(plain) is None
    assert follow(tmp_path / "missing.ipynb") is None
    finished(tmp_path / "tickets.ipynb")
    assert follow(tmp_path / "tickets.ipynb") is None


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_skillnb_mv_moves_the_notebook_its_sidecar_and_its_runs_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = finished(tmp_path / "tickets.ipynb")
    aside = tmp_path / ".skillnb" / "tickets~0123abcd"
    shutil.copytree(sidecar_dir_for(tmp_path / "tickets.ipynb"), aside)
    (tmp_path / "done").mkdir()
    code, out, err = cli(capsys, "mv", tmp_path / "tickets.ipynb", tmp_path / "done")
    assert code == 0, err
    new = tmp_path / "done" / "tickets.ipynb"
    assert out.splitlines()[0] == f"moved {tmp_path / 'tickets.ipynb'} to {new}"
    assert f"moved its run {run_id}" in out.splitlines()[1]
    assert new.is_file()
    assert not (tmp_path / "tickets.ipynb").exists()
    assert (tmp_path / "done" / ".skillnb" / "tickets~0123abcd").is_dir()
    assert not aside.exists()
    with open_run(new) as run:
        assert run.id == run_id
        assert run.fact("budget") is not None


def test_skillnb_mv_after_a_plain_mv_moves_only_the_sidecar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = finished(tmp_path / "tickets.ipynb")
    (tmp_path / "tickets.ipynb").rename(tmp_path / "triage.ipynb")
    code, out, err = cli(capsys, "mv", tmp_path / "tickets.ipynb", tmp_path / "triage.ipynb")
    assert code == 0, err
    assert "moved its run" in out
    assert "moved " + str(tmp_path / "tickets.ipynb") + " to" not in out
    with open_run(tmp_path / "triage.ipynb") as run:
        assert run.id == run_id


def test_skillnb_mv_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finished(tmp_path / "tickets.ipynb")
    finished(tmp_path / "other.ipynb")
    code, _, err = cli(capsys, "mv", tmp_path / "tickets.ipynb", tmp_path / "other.ipynb")
    assert code == 2
    assert "exists already; nothing was moved" in err
    assert "skillnb fork" in err
    (tmp_path / "other.ipynb").unlink()
    code, _, err = cli(capsys, "mv", tmp_path / "tickets.ipynb", tmp_path / "other.ipynb")
    assert code == 2
    assert "it has a run already" in err
    assert (tmp_path / "tickets.ipynb").is_file()  # nothing moved
    code, _, err = cli(capsys, "mv", tmp_path / "nope.ipynb", tmp_path / "n2.ipynb")
    assert code == 2
    assert "no such notebook" in err


def test_a_command_on_a_renamed_notebook_names_the_sidecar_and_skillnb_mv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    finished(tmp_path / "tickets.ipynb")
    Path("tickets.ipynb").rename("triage.ipynb")
    code, _, err = cli(capsys, "status", "triage.ipynb")
    assert code == 1
    assert err.strip() == (
        "skillnb status: triage.ipynb: no run under its name yet, but its metadata names the "
        "run recorded in .skillnb/tickets for tickets.ipynb (gone); "
        "`skillnb mv tickets.ipynb triage.ipynb` binds it"
    )
    assert sidecar_dir_for(tmp_path / "tickets.ipynb").is_dir()  # a reader moves nothing
    shutil.copy("triage.ipynb", "tickets.ipynb")
    _, _, err = cli(capsys, "status", "triage.ipynb")
    assert err.strip() == (
        "skillnb status: triage.ipynb is a copy of tickets.ipynb (both name the run recorded in "
        ".skillnb/tickets) and has no run of its own yet. Go on with a copy of its run: "
        "`skillnb fork tickets.ipynb triage.ipynb`, or start fresh: "
        "`skillnb run triage.ipynb --new-run`"
    )


def test_a_copy_is_never_rebuilt_into_a_second_sidecar_of_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = finished(tmp_path / "tickets.ipynb")
    before = files(sidecar_dir_for(tmp_path / "tickets.ipynb"))
    shutil.copy("tickets.ipynb", "copy.ipynb")
    code, _, err = cli(capsys, "rebuild", "copy.ipynb")
    assert code == 1
    assert err.strip() == (
        f"skillnb rebuild: copy.ipynb is a copy of tickets.ipynb (run {run_id}), whose sidecar "
        "holds that run: nothing was rebuilt. Go on with a copy of its run: "
        "`skillnb fork tickets.ipynb copy.ipynb`, or start fresh: "
        "`skillnb run copy.ipynb --new-run`"
    )
    with pytest.raises(NotebookCopied):
        rebuild_run(tmp_path / "copy.ipynb")
    assert not sidecar_dir_for(tmp_path / "copy.ipynb").exists()
    assert files(sidecar_dir_for(tmp_path / "tickets.ipynb")) == before
    code, _, err = cli(capsys, "rebuild", "copy.ipynb", "--state-dir", "elsewhere")
    assert code == 0, err  # asked for a folder of its own: the user's word
    Path("tickets.ipynb").unlink()  # the original gone: the saved notebook is the way back
    code, _, err = cli(capsys, "rebuild", "copy.ipynb")
    assert code == 0, err


def test_a_copy_in_a_shell_is_said_once_and_plain_cells_run_quietly(
    bare_shell: RaisingShell, notebook: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = finished(notebook.with_name("report.ipynb"))
    before = files(sidecar_dir_for(notebook.with_name("report.ipynb")))
    shutil.copy(notebook.with_name("report.ipynb"), notebook)
    bare_shell.run_line_magic("load_ext", "skillnb")
    shown = [str(o["data"].get("text/plain", "")) for o in bare_shell.display_pub.outputs]
    assert shown == [
        "⚠ SKILL.nb · analysis.ipynb is a copy of report.ipynb\n"
        "its saved outputs show report.ipynb's run; this notebook has no run of its own, and "
        "nothing is recorded until you choose:\n"
        "  %skillnb fork-from report.ipynb   go on with a copy of its run (or: skillnb fork "
        "report.ipynb analysis.ipynb)\n"
        "  %skillnb new-run   start fresh: a new run of its own"
    ]
    bare_shell.display_pub.outputs.clear()
    cell(bare_shell, "total = 10_000")  # a plain cell: the suggestion hook looks for the run
    assert bare_shell.user_ns["total"] == 10_000
    assert bare_shell.display_pub.outputs == []  # said once, above: no hook warning
    assert "Error in callback" not in capsys.readouterr().out
    with pytest.raises(NotebookCopied, match=f"is a copy of report.ipynb \\(run {run_id}\\)"):
        cell(bare_shell, "%resume")
    assert not sidecar_dir_for(notebook).exists()
    assert files(sidecar_dir_for(notebook.with_name("report.ipynb"))) == before
    cell(bare_shell, "%skillnb fork-from report.ipynb")
    cell(bare_shell, "%resume")
    assert bare_shell.user_ns["budget"] == 5000
    assert files(sidecar_dir_for(notebook.with_name("report.ipynb"))) == before


def test_fork_from_refuses_what_it_cannot_copy(ip: RaisingShell, notebook: Path) -> None:
    from skillnb.errors import SkillnbError

    finished(notebook.with_name("report.ipynb"))
    notebook.with_name("empty.ipynb").write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []})
    )
    with pytest.raises(SkillnbError, match=r"no notebook 'gone\.ipynb'"):
        cell(ip, "%skillnb fork-from gone.ipynb")
    with pytest.raises(SkillnbError, match="no run to fork"):
        cell(ip, "%skillnb fork-from empty.ipynb")
    cell(ip, "%%formalize mine\n1")  # this notebook's own run
    with pytest.raises(SkillnbError, match="has a run of its own already"):
        cell(ip, "%skillnb fork-from report.ipynb")
    with open_run(notebook) as run:
        assert set(run.facts) == {"mine"}


def test_a_neighbours_torn_tail_is_not_news_when_following(tmp_path: Path) -> None:
    """Looking for a renamed notebook's run reads the sidecars nearby without warning of theirs.

    A neighbour that crashed mid-write warns when it is opened itself; a rename next to it
    says nothing about it (the search reads it only to learn which run it holds).
    """
    finished(tmp_path / "other.ipynb")
    with (sidecar_dir_for(tmp_path / "other.ipynb") / "journal.jsonl").open("ab") as journal:
        journal.write(b'{"v":1,"seq":99,"ty')  # a crashed writer's torn last line
    run_id = finished(tmp_path / "tickets.ipynb")
    (tmp_path / "tickets.ipynb").rename(tmp_path / "triage.ipynb")
    binding = follow(tmp_path / "triage.ipynb")  # warnings are errors in this suite
    assert binding is not None
    assert binding.run_id == run_id
