"""``skillnb run`` and ``%resume`` with real kernels (nbclient): durable, gated, headless.

Each test works in its own tmp folder; the autouse ``skillnb_home`` fixture points
``SKILLNB_HOME`` at a tmp folder, and ``skillnb run`` hands it to the kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from clikit import write_notebook
from nbclient import NotebookClient

from skillnb.cli.main import main
from skillnb.notebookfile.sync import BUNDLE_MIME, read_mirror
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WORKFLOW = (Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml").read_text(
    encoding="utf-8"
)

SETUP = ["%load_ext skillnb", "%%workflow\n" + WORKFLOW]
BUDGET = (
    "%%formalize budget --kind decision\n"
    "with open('side_effects.txt', 'a') as f:\n"
    "    f.write('budget\\n')\n"
    "1200"
)
SUBMIT = "%%gate submit\nprint('submitted')"
PUBLISH = "%%gate publish\nwith open('side_effects.txt', 'a') as f:\n    f.write('publish\\n')"
REPORT = "%%formalize report\nf'report within {budget}'"


def effects(folder: Path) -> list[str]:
    path = folder / "side_effects.txt"
    return path.read_text().splitlines() if path.exists() else []


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def saved(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_approval_flow_stops_with_3_then_finishes_without_rerunning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], skillnb_home: Path
) -> None:
    nb = write_notebook(tmp_path / "report.ipynb", [*SETUP, BUDGET, SUBMIT])

    # 1. the first part of the notebook: no approval was asked for yet
    assert cli(capsys, "run", nb)[0] == 0
    code, _, err = cli(capsys, "approve", nb, "publish_ok", "--by", "ed")
    assert code == 1
    assert "no approval was requested for gate 'publish_ok'" in err  # early: refused

    # 2. the notebook grows to the approval gate: the run stops there, exit 3
    write_notebook(nb, [*SETUP, BUDGET, SUBMIT, PUBLISH, REPORT])
    code, _, err = cli(capsys, "run", nb)
    assert code == 3, err
    assert err.strip() == (
        f"waiting for approval: publish_ok (run `skillnb approve {nb} publish_ok --by NAME`)"
    )
    assert effects(tmp_path) == ["budget"]  # restored on the second run, not recomputed
    mirror = read_mirror(nb)
    assert mirror is not None
    assert (mirror["state"], [p["gate"] for p in mirror["pending"]]) == ("review", ["publish_ok"])
    cells = saved(nb)["cells"]
    error = cells[4]["outputs"][-1]
    assert error["ename"] == "WaitingForApproval"  # a GateBlocked: the run waits, no failure
    assert "%skillnb approve publish_ok --by NAME" in error["evalue"]
    assert "publish_ok --by NAME" in error["traceback"][-1]
    assert cells[4]["metadata"]["skillnb"]["status"] == "waiting"
    stale = mirror["pending"][0]["id"]

    # 3. approve from the command line, run again: it finishes
    assert cli(capsys, "approve", nb, "publish_ok", "--by", "ed")[0] == 0
    code, out, err = cli(capsys, "run", nb)
    assert code == 0, err
    assert out.strip() == f"finished in state published at version {open_run(nb).version}"
    assert effects(tmp_path) == ["budget", "publish"]

    # 4. the mirror is in the saved notebook, for the notebook and for each step cell
    mirror = read_mirror(nb)
    assert mirror is not None
    assert mirror["state"] == "published"
    assert mirror["pending"] == []
    assert mirror["facts"]["budget"]["preview"] == "1200"
    assert (
        mirror["facts"]["report"]["preview"] == "'report within 1200'"
        or "1200" in (mirror["facts"]["report"]["preview"])
    )
    cells = saved(nb)["cells"]
    budget = open_run(nb).fact("budget")
    assert budget is not None
    assert cells[2]["metadata"]["skillnb"] == {
        "step": "budget",
        "version": 1,
        "source_hash": budget.source_hash,
        "status": "committed",
    }
    gate_mark = cells[4]["metadata"]["skillnb"]
    assert (gate_mark["gate"], gate_mark["status"]) == ("publish", "committed")
    assert gate_mark["source_hash"].startswith("sha256:")
    assert any(BUNDLE_MIME in o.get("data", {}) for o in cells[2]["outputs"])

    # 5. an approval for the old request, after the run moved on, is refused
    code, _, err = cli(capsys, "approve", nb, "publish_ok", "--by", "ed", "--request", stale)
    assert code == 1
    assert f"the request {stale} for 'publish_ok'" in err
    assert err.strip().endswith("the run has moved on to 'published', so it is stale")

    # 6. a third run re-runs nothing: every step is restored or done
    assert cli(capsys, "run", nb)[0] == 0
    assert effects(tmp_path) == ["budget", "publish"]
    assert any((skillnb_home / "memory").iterdir())  # the kernel used the caller's home


def test_resume_in_a_fresh_kernel_rebuilds_from_the_ipynb_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = "%config SkillNB.mirror_values = True"  # by default outputs carry previews only
    nb = write_notebook(tmp_path / "analysis.ipynb", [SETUP[0], values, *SETUP[1:], BUDGET, SUBMIT])
    assert cli(capsys, "run", nb)[0] == 0
    original = open_run(nb)
    journal = [(e.seq, e.type, e.data) for e in original.store.history()]
    shutil.rmtree(sidecar_dir_for(nb))

    probe = nbformat.v4.new_notebook()
    probe.cells = [
        nbformat.v4.new_code_cell("%load_ext skillnb"),
        nbformat.v4.new_code_cell("%resume"),
        nbformat.v4.new_code_cell("print('budget is', budget)"),
    ]
    env = {**os.environ, "SKILLNB_NOTEBOOK": str(nb)}
    client = NotebookClient(
        probe, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=env)

    printed = "".join(o.get("text", "") for o in probe.cells[2].outputs)
    assert printed.strip() == "budget is 1200"
    rebuilt = open_run(nb)
    assert rebuilt.id == original.id
    assert rebuilt.state == "review"
    history = list(rebuilt.store.history())
    # the same journal, event for event (run.created aside: its data is rebuilt), then a record
    assert [(e.seq, e.type, e.data) for e in history[1:-1]] == journal[1:]
    assert history[-1].type == "run.rebuilt"
    assert history[-1].data["skipped"] == 0
    assert effects(tmp_path) == ["budget"]


def test_a_failing_cell_exits_1_and_out_keeps_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "broken.ipynb", [*SETUP, BUDGET, "1 / 0", "print('never')"])
    before = nb.read_text()
    out = tmp_path / "executed.ipynb"
    code, _, err = cli(capsys, "run", nb, "-o", out)
    assert code == 1
    assert err.strip() == "error at cell 3: ZeroDivisionError: division by zero"
    assert nb.read_text() == before
    executed = saved(out)
    assert executed["cells"][3]["outputs"][-1]["ename"] == "ZeroDivisionError"
    assert executed["cells"][4]["outputs"] == []
    assert executed["metadata"]["skillnb"]["facts"]["budget"]["version"] == 1


def test_skillnb_run_as_a_subprocess(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "plain.ipynb", [*SETUP, BUDGET])
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "run", str(nb), "--timeout", "60"],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(Path.home()),  # the kernel must still start in the notebook's folder
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("finished in state draft")
    assert effects(tmp_path) == ["budget"]
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "run", str(nb), "--kernel", "no-such-kernel"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "no kernel named 'no-such-kernel'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("source", "argv", "code", "reason"),
    [
        ("import os\nos._exit(3)", (), 1, "error at cell 1: the kernel died"),
        (
            "import time\ntime.sleep(60)",
            ("--timeout", "2"),
            1,
            "error at cell 1: the cell ran longer than 2 s",
        ),
        (
            "%%gate --requires missing_fact\nprint('x')",
            (),
            3,
            "blocked at cell 1: GateBlocked: ",
        ),
    ],
    ids=["dead-kernel", "timeout", "blocked-gate"],
)
def test_stops_exit_with_a_one_line_reason_naming_the_cell(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    source: str,
    argv: tuple[str, ...],
    code: int,
    reason: str,
) -> None:
    nb = write_notebook(tmp_path / "stops.ipynb", ["%load_ext skillnb", source, "print('never')"])
    result, _, err = cli(capsys, "run", nb, *argv)
    assert result == code
    assert err.strip().startswith(reason)
    assert len(err.strip().splitlines()) == 1
    cells = saved(nb)["cells"]
    assert cells[0]["execution_count"] == 1
    assert cells[2]["outputs"] == []


def test_output_folder_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = write_notebook(tmp_path / "a.ipynb", ["1"])
    code, _, err = cli(capsys, "run", nb, "-o", tmp_path / "absent" / "out.ipynb")
    assert code == 2
    assert "no such folder" in err
