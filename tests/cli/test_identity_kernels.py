"""Renames, copies and deleted sidecars in real kernels (``skillnb run``, nbclient, papermill)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from clikit import cli, write_notebook
from nbclient import NotebookClient

from skillnb.run import open_run
from skillnb.store import sidecar_dir_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TICKETS = [
    "%load_ext skillnb",
    "%%workflow\nworkflow:\n  name: Triage\n  states: [open, done]\n  transitions:\n"
    "    - {from: open, to: done, trigger: finish, gates: [ok]}\n"
    "  gates:\n    ok: {approval: 'Ship the labels?'}\n",
    "import skillnb\nrun = skillnb.current_run()\n"
    "for t in run.items('tickets', [f't{i}' for i in range(40)]):\n"
    "    with open('labels.log', 'a') as f:\n"
    "        f.write(t + '\\n')\n",
    "%%gate finish\nprint('finished')",
]


def labels(folder: Path) -> int:
    return len((folder / "labels.log").read_text().splitlines())


def approvals_asked(notebook: Path) -> int:
    with open_run(notebook) as run:
        return sum(e.type == "approval.requested" for e in run.history(10_000))


def texts(nb: Any) -> list[str]:
    found = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            found.append(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")))
            found.extend(o.get("traceback", []))
    return found


def finished_tickets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    nb = write_notebook(tmp_path / "tickets.ipynb", TICKETS)
    assert cli(capsys, "run", nb)[0] == 3  # the approval is asked
    assert cli(capsys, "approve", nb, "ok", "--by", "ed")[0] == 0
    code, _, err = cli(capsys, "run", nb)
    assert code == 0, err
    assert labels(tmp_path) == 40
    return nb


def test_a_renamed_notebook_goes_on_with_its_run_in_every_client(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tickets = finished_tickets(tmp_path, capsys)
    run_id = json.loads(tickets.read_text())["metadata"]["skillnb"]["run_id"]
    asked = approvals_asked(tickets)

    # skillnb run: binds before the kernel starts, says so, labels nothing again
    triage = tickets.rename(tmp_path / "triage.ipynb")
    code, out, err = cli(capsys, "run", triage)
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"bound to run {run_id} of tickets.ipynb (renamed or moved): its sidecar moved to "
        ".skillnb/triage; completed work is not redone"
    )
    assert out.splitlines()[-1].startswith("finished in state done")
    assert labels(tmp_path) == 40
    assert approvals_asked(triage) == asked  # the approval is not asked again

    # nbclient with no SKILLNB_NOTEBOOK (as jupyter execute, nbconvert, nbmake): %load_ext binds
    renamed = triage.rename(tmp_path / "labelled.ipynb")
    nb = nbformat.read(renamed, as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "SKILLNB_NOTEBOOK"}
    client = NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env)
    assert any("SKILL.nb · bound to run " + run_id in t for t in texts(nb))
    assert labels(tmp_path) == 40
    assert sidecar_dir_for(renamed).is_dir()
    assert not sidecar_dir_for(triage).exists()

    # papermill's engine, from another folder, the notebook moved one folder down
    import papermill

    (tmp_path / "moved").mkdir()
    moved = renamed.rename(tmp_path / "moved" / "final.ipynb")
    shutil.copy(tmp_path / "labels.log", tmp_path / "moved" / "labels.log")
    papermill.execute_notebook(
        str(moved), str(tmp_path / "out.ipynb"), engine_name="skillnb", cwd=str(moved.parent)
    )
    assert labels(tmp_path / "moved") == 40
    with open_run(moved) as run:
        assert run.id == run_id
        assert run.state == "done"


def test_a_copy_labels_nothing_again_until_a_new_run_is_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tickets = finished_tickets(tmp_path, capsys)
    copy = tmp_path / "copy.ipynb"
    shutil.copy(tickets, copy)
    code, _out, err = cli(capsys, "run", copy)
    assert code == 5  # nothing ran: the original's tickets are not labelled again
    assert f"{copy} is a copy of {tickets} (run " in err
    assert f"`skillnb fork {tickets} {copy}`" in err
    assert labels(tmp_path) == 40
    code, _, err = cli(capsys, "run", copy, "--new-run")
    assert code == 3, err  # its own run, asked for, which asks its own approval
    assert labels(tmp_path) == 80
    with open_run(tickets) as original, open_run(copy) as own:
        assert original.id != own.id
        assert original.state == "done"


def test_an_ambiguous_identity_is_refused_before_a_kernel_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tickets = finished_tickets(tmp_path, capsys)
    (tmp_path / "old").mkdir()
    shutil.copytree(sidecar_dir_for(tickets), tmp_path / "old" / ".skillnb" / "x")
    triage = tickets.rename(tmp_path / "triage.ipynb")
    code, _, err = cli(capsys, "run", triage)
    assert code == 1
    assert "`skillnb mv tickets.ipynb triage.ipynb`" in err
    assert "`skillnb mv old/x.ipynb triage.ipynb`" in err
    assert labels(tmp_path) == 40  # nothing ran
    code, _out, err = cli(capsys, "mv", tmp_path / "tickets.ipynb", triage)
    assert code == 0, err
    code, _out, err = cli(capsys, "run", triage)
    assert code == 0, err
    assert labels(tmp_path) == 40


def test_a_sidecar_deleted_under_a_live_kernel(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "%load_ext skillnb",
            TICKETS[1],
            "%%formalize note1\n'x'",
            "import shutil\nshutil.rmtree('.skillnb/nb')",
            "x = 1",
            "%%formalize note2\n'y'",
            "%skillnb restore",
            "%%formalize note2\n'y'",
        ],
    )
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env={**os.environ, "SKILLNB_NOTEBOOK": str(path)})
    shown = texts(nb)
    assert sum("⚠ SKILL.nb · the sidecar of run" in t for t in shown) == 1
    assert not any("Error in callback" in t for t in shown)
    assert [o["ename"] for o in nb.cells[5].outputs if o["output_type"] == "error"] == ["RunHeld"]
    assert any("run written back" in t for t in shown)
    with open_run(path) as run:
        assert set(run.facts) == {"note1", "note2"}
        assert run.workflow is not None
        assert run.state == "open"
