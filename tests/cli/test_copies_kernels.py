"""A duplicated notebook (a file browser's *Duplicate*) in real kernels and headless.

The copy names the original's run in its metadata while the original, and its sidecar, are
still there: nothing in the copy may take that run, rebuild it, or do its work again, until
the user chooses a copy of the run (`fork`) or a new one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from clikit import cli, write_notebook
from nbclient import NotebookClient

from skillnb.run import open_run
from skillnb.store import sidecar_dir_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPORT = [
    "%load_ext skillnb",
    "%%formalize budget\nprint('computing the budget')\n5000",
    "import skillnb\nrun = skillnb.current_run()\n"
    "for t in run.items('mails', ['a', 'b', 'c']):\n"
    "    with open('sent.log', 'a') as f:\n"
    "        f.write(t + '\\n')\n",
]


def sent(folder: Path) -> int:
    return len((folder / "sent.log").read_text().splitlines())


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def texts(cell: Any) -> str:
    found = []
    for o in cell.get("outputs", []):
        found.append(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")))
        found.extend(o.get("traceback", []))
    return "\n".join(found)


def errors(cell: Any) -> list[str]:
    return [o["ename"] for o in cell.get("outputs", []) if o["output_type"] == "error"]


@pytest.fixture
def report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    """report.ipynb run to the end: its run id (the folder is the working folder)."""
    monkeypatch.chdir(tmp_path)
    nb = write_notebook(tmp_path / "report.ipynb", REPORT)
    code, _, err = cli(capsys, "run", nb)
    assert code == 0, err
    assert sent(tmp_path) == 3
    return str(json.loads(nb.read_text())["metadata"]["skillnb"]["run_id"])


def duplicate(folder: Path, name: str) -> Path:
    """What JupyterLab's File Browser → Duplicate does: the file copied byte for byte."""
    copy = folder / name
    copy.write_bytes((folder / "report.ipynb").read_bytes())
    return copy


def execute(path: Path, cells: list[str]) -> Any:
    """Run ``cells`` in a kernel opened on notebook ``path``, as JupyterLab's kernel for it."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [nbformat.v4.new_code_cell(s) for s in cells]
    client = NotebookClient(
        nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute(env={**os.environ, "SKILLNB_NOTEBOOK": str(path)})
    return nb


def test_a_copy_opened_in_a_kernel_says_so_and_takes_nothing(tmp_path: Path, report: str) -> None:
    original = files(sidecar_dir_for(tmp_path / "report.ipynb"))
    copy = duplicate(tmp_path, "report-Copy1.ipynb")
    nb = execute(copy, ["%load_ext skillnb", "%resume", *REPORT[1:]])
    greeting = texts(nb.cells[0])
    assert "⚠ SKILL.nb · report-Copy1.ipynb is a copy of report.ipynb" in greeting
    assert "%skillnb fork-from report.ipynb" in greeting
    assert "skillnb fork report.ipynb report-Copy1.ipynb" in greeting
    assert "%skillnb new-run" in greeting
    assert "%resume" not in greeting
    assert "sidecar is missing" not in greeting
    assert errors(nb.cells[1]) == ["NotebookCopied"]
    refused = texts(nb.cells[1])
    assert f"report-Copy1.ipynb is a copy of report.ipynb (run {report})" in refused
    assert "%resume" not in refused
    assert errors(nb.cells[2]) == ["NotebookCopied"]
    assert "computing the budget" not in texts(nb.cells[2])  # the work is not done again
    assert errors(nb.cells[3]) == ["NotebookCopied"]
    assert sent(tmp_path) == 3
    assert not any("Error in callback" in texts(c) or "step failed" in texts(c) for c in nb.cells)
    assert not sidecar_dir_for(copy).exists()  # nothing rebuilt into the copy
    assert files(sidecar_dir_for(tmp_path / "report.ipynb")) == original  # nor written there

    # fork-from: the copy goes on from the original's run; nothing is done again
    nb = execute(copy, ["%load_ext skillnb", "%skillnb fork-from report.ipynb", *REPORT[1:]])
    assert errors(nb.cells[1]) == [], texts(nb.cells[1])
    assert "forked the run of report.ipynb" in texts(nb.cells[1])
    assert "restored v1" in texts(nb.cells[2])
    assert "computing the budget" not in texts(nb.cells[2])
    assert errors(nb.cells[3]) == []
    assert sent(tmp_path) == 3
    with open_run(copy) as run:
        assert run.id == report
        assert run.fact("budget").value == 5000  # type: ignore[union-attr]
    assert files(sidecar_dir_for(tmp_path / "report.ipynb")) == original

    # new-run: another copy starts fresh when asked, and does its own work
    second = duplicate(tmp_path, "report-Copy2.ipynb")
    nb = execute(second, ["%load_ext skillnb", "%skillnb new-run", *REPORT[1:]])
    assert errors(nb.cells[1]) == [], texts(nb.cells[1])
    assert "new run started" in texts(nb.cells[1])
    assert "previous run" not in texts(nb.cells[1])  # there was none here to set aside
    assert "computing the budget" in texts(nb.cells[2])
    assert sent(tmp_path) == 6
    with open_run(second) as run:
        assert run.id != report
    assert files(sidecar_dir_for(tmp_path / "report.ipynb")) == original


def test_a_copy_run_headless_runs_nothing_until_told(
    tmp_path: Path, report: str, capsys: pytest.CaptureFixture[str]
) -> None:
    original = files(sidecar_dir_for(tmp_path / "report.ipynb"))
    copy = duplicate(tmp_path, "report-Copy1.ipynb")
    saved = copy.read_bytes()
    code, out, err = cli(capsys, "run", "report-Copy1.ipynb")
    assert code == 5
    assert out == ""
    assert err.strip() == (
        f"report-Copy1.ipynb is a copy of report.ipynb (run {report}): nothing was run (it "
        "would do report.ipynb's work again, unasked). Go on with a copy of its run: "
        "`skillnb fork report.ipynb report-Copy1.ipynb`, or start fresh: "
        "`skillnb run report-Copy1.ipynb --new-run`"
    )
    assert copy.read_bytes() == saved  # the copy is not rewritten either
    assert sent(tmp_path) == 3
    assert not sidecar_dir_for(copy).exists()

    code, _, err = cli(capsys, "status", "report-Copy1.ipynb")
    assert code == 1
    assert "report-Copy1.ipynb is a copy of report.ipynb" in err
    assert "`skillnb fork report.ipynb report-Copy1.ipynb`" in err
    assert "%resume" not in err
    assert "rebuild" not in err

    code, _, err = cli(capsys, "fork", "report.ipynb", "report-Copy1.ipynb")
    assert code == 0, err
    code, out, err = cli(capsys, "run", "report-Copy1.ipynb")
    assert code == 0, err
    assert sent(tmp_path) == 3  # goes on from the original's run: nothing sent again
    with open_run(copy) as run:
        assert run.id == report

    second = duplicate(tmp_path, "report-Copy2.ipynb")
    code, out, err = cli(capsys, "run", "report-Copy2.ipynb", "--new-run")
    assert code == 0, err
    assert "%resume" not in out
    assert sent(tmp_path) == 6  # a new run, asked for: its own work
    with open_run(second) as run:
        assert run.id != report
    assert json.loads(second.read_text())["metadata"]["skillnb"]["run_id"] != report
    assert files(sidecar_dir_for(tmp_path / "report.ipynb")) == original
