"""``skillnb runs FOLDER`` and ``skillnb inbox FOLDER`` over real sidecars.

A folder tree holds healthy runs (notebooks' sidecars, an explicit state folder, a sidecar
whose notebook was moved away), a damaged journal, a sidecar another user may not read, a
hidden folder and a symbolic link: the damaged and the unreadable ones are one ``?`` line
each, the hidden folder and the link are not entered, the others are listed, and nothing is
created or changed by reading.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import warnings
from pathlib import Path

import pytest

from skillnb import Workflow, open_run
from skillnb.cli.main import main
from skillnb.errors import GateBlocked
from skillnb.store.ownership import ForeignSidecarWarning

WORKFLOW = {
    "name": "report",
    "states": ["draft", "review", "done"],
    "initial": "draft",
    "transitions": [
        {"from": "draft", "to": "review", "trigger": "submit"},
        {"from": "review", "to": "done", "trigger": "publish", "gates": ["editor_ok"]},
    ],
    "gates": {
        "editor_ok": {"approval": "Publish it?"},
    },
}
NOBODY = 65534


def _notebook(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return path


def _run(*, notebook: Path | None = None, state_dir: Path | None = None, ask: bool) -> None:
    wf = Workflow.from_dict(WORKFLOW)
    with open_run(notebook, state_dir=state_dir, workflow=wf) as run:
        run.formalize("rows", 3)
        run.fire("submit")
        if ask:
            with pytest.raises(GateBlocked):
                run.fire("publish")


def _tree(root: Path) -> Path:
    proj = root / "proj"
    _run(notebook=_notebook(proj / "a.ipynb"), ask=True)
    _run(notebook=_notebook(proj / "team" / "b.ipynb"), ask=False)
    _run(state_dir=proj / "explicit", ask=True)
    _run(notebook=_notebook(proj / "gone.ipynb"), ask=False)
    (proj / "gone.ipynb").unlink()  # the sidecar alone is still a run
    bad = _notebook(proj / "team" / "bad.ipynb")
    _run(notebook=bad, ask=True)
    journal = proj / "team" / ".skillnb" / "bad" / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:3], b'{"garbage": true}\n', *lines[3:]]))
    _run(notebook=_notebook(proj / ".hidden" / "c.ipynb"), ask=True)
    outside = root / "outside"
    _run(notebook=_notebook(outside / "d.ipynb"), ask=True)
    (proj / "link").symlink_to(outside, target_is_directory=True)
    return proj


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat(follow_symlinks=False).st_mtime_ns, p.stat(follow_symlinks=False).st_size)
        for p in folder.rglob("*")
    }


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_runs_lists_every_run_and_one_question_mark_line_for_a_damaged_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _tree(tmp_path)
    before = _files(tmp_path)
    lines = _out(["runs", str(proj)], capsys).splitlines()
    names = [line[2:].split(" · ")[0].split(":")[0] for line in lines]
    assert names == ["a.ipynb", "explicit", "gone.ipynb", "team/b.ipynb", "team/bad.ipynb"]
    assert lines[0].startswith("  a.ipynb · report @ review · v")
    assert "⏳ waiting: editor_ok" in lines[0]
    assert lines[4].startswith("? team/bad.ipynb: ")
    assert "bad/journal.jsonl:4: " in lines[4]  # the damaged line, named

    rows = json.loads(_out(["runs", str(proj), "--json"], capsys))
    by_name = {r["name"]: r for r in rows}
    assert by_name["a.ipynb"]["target"] == [str(proj / "a.ipynb")]
    assert by_name["explicit"]["target"] == ["--state-dir", str(proj / "explicit")]
    assert by_name["gone.ipynb"]["target"] == ["--state-dir", str(proj / ".skillnb" / "gone")]
    assert by_name["team/b.ipynb"]["state"] == "review"
    assert by_name["team/b.ipynb"]["waiting"] == []

    waiting = json.loads(_out(["runs", str(proj), "--waiting", "--json"], capsys))
    assert [r["name"] for r in waiting] == ["a.ipynb", "explicit", "team/bad.ipynb"]
    assert waiting[2]["problem"]  # unknown: kept, as a problem
    assert _out(["runs", str(proj), "--state", "done"], capsys).splitlines() == [lines[4]]
    assert (
        _out(["runs", str(proj), "--since", "1d", "--workflow", "report"], capsys).count("report @")
        == 4
    )
    assert _out(["runs", str(proj), "--since", "2999-01-01"], capsys).splitlines() == [lines[4]]
    assert _files(tmp_path) == before  # reading created and changed nothing


def test_inbox_lists_the_open_requests_oldest_first_with_commands_that_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = _tree(tmp_path)
    inbox = json.loads(_out(["inbox", str(proj), "--user", "ann", "--json"], capsys))
    assert [i["run"] for i in inbox["items"]] == ["a.ipynb", "explicit"]
    first = inbox["items"][0]
    assert (first["gate"], first["message"], first["asked_by"]) == (
        "editor_ok",
        "Publish it?",
        "publish",
    )
    assert first["since"] <= inbox["items"][1]["since"]
    assert first["commands"] == [
        f"skillnb approve {shlex.quote(str(proj / 'a.ipynb'))} editor_ok --by ann",
        f"skillnb reject {shlex.quote(str(proj / 'a.ipynb'))} editor_ok --by ann",
    ]
    assert [p["name"] for p in inbox["problems"]] == ["team/bad.ipynb"]

    text = _out(["inbox", str(proj)], capsys)
    assert "⏳ a.ipynb · approve editor_ok: Publish it?" in text
    assert "? team/bad.ipynb: " in text
    second = inbox["items"][1]["commands"][0]
    assert main(shlex.split(second)[1:]) == 0  # approve --state-dir ... as printed
    capsys.readouterr()
    left = json.loads(_out(["inbox", str(proj), "--json"], capsys))
    assert [i["run"] for i in left["items"]] == ["a.ipynb"]


def test_an_empty_folder_and_a_missing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _out(["runs", str(tmp_path)], capsys).strip() == "no runs"
    assert _out(["inbox", str(tmp_path)], capsys).strip() == "nothing waits"
    assert main(["runs", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


def _as_nobody(folder: Path, argv: list[str]) -> tuple[int, str]:
    """``skillnb ARGV`` in a child process that runs as user nobody, from inside ``folder``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, run the command, hand its output back
        os.close(read)
        code = 1
        try:
            os.chdir(folder)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with os.fdopen(write, "w") as out, warnings.catch_warnings():
                # root's sidecars, read by nobody: the planted-sidecar warning is not the point
                warnings.simplefilter("ignore", ForeignSidecarWarning)
                sys.stdout = out  # pytest captures sys.stdout, not the descriptor
                code = main(argv)
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        out = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_a_sidecar_the_user_may_not_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = tmp_path / "proj"
    _run(notebook=_notebook(proj / "open.ipynb"), ask=True)
    _run(notebook=_notebook(proj / "private.ipynb"), ask=True)
    _run(notebook=_notebook(proj / "zz.ipynb"), ask=True)
    for path in [proj, *proj.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (proj / ".skillnb" / "private").chmod(0o700)  # root's own: nobody may not enter
    main(["runs", ".", "--json"])  # the same code path once as root: imports are warm
    capsys.readouterr()

    code, out = _as_nobody(proj, ["runs", ".", "--json"])
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["open.ipynb", "private.ipynb", "zz.ipynb"]
    assert rows[0]["waiting"] == ["editor_ok"]
    assert rows[1]["problem"].startswith("not allowed to read")
    assert rows[2]["waiting"] == ["editor_ok"]
    code, out = _as_nobody(proj, ["inbox", "."])
    assert code == 0
    assert "? private.ipynb: not allowed to read" in out
    assert out.count("skillnb approve") == 2
