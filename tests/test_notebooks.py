"""The example notebooks run top to bottom under nbval and leave the run they promise.

Each notebook is copied (with ``data/``, ``resume_extractor.py`` and the nbval settings in
``notebooks/conftest.py``) into a fresh folder and executed by ``pytest --nbval-lax`` in a
subprocess, with a private ``SKILLNB_HOME``: outputs marked ``NBVAL_CHECK_OUTPUT`` must match,
every other cell must run without an error (except those tagged ``raises-exception``). Then
the sidecar the notebook wrote is opened and checked, because a cell that went wrong quietly
(a magic that only printed a usage message, a gate that never blocked) would pass nbval.

The résumé notebook is also run headless, the way ``scripts/demo.py`` runs it: one
``skillnb run`` per working day.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest

import skillnb
from nbkit import NOTEBOOKS, clean_env, copy_notebook
from nbkit import SUPPORT as SHIPPED_SUPPORT
from skillnb.run import Run, sidecar_exists

SUPPORT = ("conftest.py", *SHIPPED_SUPPORT)
EXAMPLES = (
    "quickstart",
    "market_research",
    "resume_batch",
    "agent_context",
    "suggest_recall",
    "langgraph_agent",
)

# One nbval run (or two headless days) per test, up to 600 s on a loaded 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _nbval(notebook: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "-p",
            "no:cacheprovider",
            "--nbval-cell-timeout=120",
            "-q",
            str(notebook),
        ],
        cwd=notebook.parent,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _open(notebook: Path) -> Run:
    assert sidecar_exists(notebook), "the notebook recorded no run"
    return skillnb.open_run(notebook, memory=False)


def _events(run: Run, type_: str) -> list[dict[str, object]]:
    return [e.data for e in run.store.history() if e.type == type_]


# -- what each notebook must leave behind ------------------------------------------------------
def _quickstart(folder: Path, _home: Path) -> None:
    run = _open(folder / "quickstart.ipynb")
    assert run.state == "published"
    assert run.snapshot.visited == ["draft", "reviewed", "published"]
    budget = run.fact("budget")
    assert budget is not None
    assert budget.value == 5500
    assert budget.version == 1  # the copy of the cell restored it: no second version


def _market_research(folder: Path, _home: Path) -> None:
    run = _open(folder / "market_research.ipynb")
    assert run.state == "done"
    assert [f.version for f in run.fact_history("sources")] == [1, 2]
    reports = _events(run, "gate.reported")
    blocked = [e["report"] for e in reports if e["key"] == "gate:data_sufficient"]
    assert blocked
    assert not all(r["passed"] for r in blocked[0]["results"])
    decided = _events(run, "approval.decided")
    assert [(d["status"], d["by"], d["note"]) for d in decided] == [
        ("approved", "analyst", "last week's prices are fine"),
        ("approved", "editor", "Go"),
    ]
    escalated = [a for a in run.snapshot.approvals.values() if a.gate == "prices_fresh"]
    assert [a.message for a in escalated] == [
        "The price feed does not answer: analyse with last week's prices?"
    ]
    assert len(_events(run, "approval.consumed")) == 2
    assert run.pending() == []
    (follow_up,) = run.snapshot.follow_ups.values()
    assert (follow_up.gate, follow_up.status, follow_up.resolved_by) == (
        "quality_ok",
        "resolved",
        "analyst",
    )
    assert run.follow_ups() == []


def _resume_batch(folder: Path, home: Path) -> None:
    run = _open(folder / "resume_batch.ipynb")
    assert run.state == "archived"
    batch = run.snapshot.batches["resumes"]
    assert batch.total == 27
    assert len(set(batch.done)) == 27
    _assert_extracted_once(folder, {"session 246": 7, "session 247": 20})
    assert dict(run.key_ids) == {"last_session_id": 247, "last_batch_id": 374}
    review = run.fact("review")
    assert review is not None
    assert review.value["incomplete"] == {
        "Emma Schmidt": ["phone"],
        "Mohammed Al-Farsi": ["education"],
        "Zoë Martin": ["phone"],
    }
    manifest = json.loads((folder / "out" / "archive.json").read_text(encoding="utf-8"))
    assert len(manifest["resumes"]) == 27
    memory = skillnb.SkillMemory("doc-extract-engine", root=home)
    assert memory.get_id("last_batch_id") == 374
    assert memory.get_id("last_session_id") == 247


def _agent_context(folder: Path, home: Path) -> None:
    run = _open(folder / "agent_context.ipynb")
    assert run.state == "modelling"
    assert set(run.facts) == {"cohort", "churn_definition", "model", "customer_comment"}
    assert run.facts["customer_comment"].kind == "note"
    memory = skillnb.SkillMemory("churn-analysis", root=home)
    assert memory.get_id("ticket") == "CHURN-42"


def _langgraph_agent(folder: Path, _home: Path) -> None:
    run = _open(folder / "langgraph_agent.ipynb")
    assert run.state == "drafted"
    assert run.fact("findings") is not None
    thread = run.journal.refresh().graph_threads["weekly-brief"]
    assert thread.next == []
    assert thread.interrupts == []
    assert len(_events(run, "langgraph.checkpoint")) == thread.checkpoints
    decided = _events(run, "approval.decided")
    assert [(d["status"], d["by"]) for d in decided] == [("approved", "team-lead")]
    assert len(_events(run, "approval.consumed")) == 1
    assert run.pending() == []


def _suggest_recall(folder: Path, home: Path) -> None:
    from skillnb.memory.recall import RecallIndex

    run = _open(folder / "suggest_recall.ipynb")
    assert run.state == "analyzing"
    assert {k: f.kind for k, f in run.facts.items()} == {
        "topic": "decision",
        "budget": "constraint",
        "sources": "data",
        "pin_remember_these_three_risks": "note",
    }
    archived = RecallIndex("market-research", root=home).runs()
    assert [r["final_state"] for r in archived] == ["done", "done"]


def _assert_extracted_once(folder: Path, per_session: dict[str, int]) -> None:
    lines = (folder / "out" / "extractions.log").read_text(encoding="utf-8").splitlines()
    sessions = Counter(line.split("\t")[0] for line in lines)
    names = Counter(line.split("\t")[1] for line in lines)
    assert dict(sessions) == per_session
    assert len(names) == 27
    assert set(names.values()) == {1}
    extracted = {p.stem for p in (folder / "out" / "resumes").glob("*.json")}
    assert extracted == {Path(n).stem for n in names}


CHECKS = {
    "quickstart": _quickstart,
    "market_research": _market_research,
    "resume_batch": _resume_batch,
    "agent_context": _agent_context,
    "langgraph_agent": _langgraph_agent,
    "suggest_recall": _suggest_recall,
}


def test_every_notebook_is_tested() -> None:
    assert {p.stem for p in NOTEBOOKS.glob("*.ipynb")} == set(EXAMPLES) == set(CHECKS)


@pytest.mark.parametrize("stem", EXAMPLES)
def test_notebook_runs_under_nbval(stem: str, tmp_path: Path) -> None:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    home = tmp_path / "home"
    notebook = copy_notebook(folder, stem, SUPPORT)

    result = _nbval(notebook, home)

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
    assert "failed" not in result.stdout
    CHECKS[stem](folder, home)


@pytest.mark.parametrize("stem", EXAMPLES)
def test_committed_notebook_keeps_only_checked_outputs(stem: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert "skillnb" not in nb.metadata  # no mirror of a local run in the repository
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        checked = "NBVAL_CHECK_OUTPUT" in cell.source or bool(
            {"nbval-check-output", "nbval-ignore-output"} & set(tags)
        )
        assert checked or (cell.outputs == [] and cell.execution_count is None), cell.source
        assert "skillnb" not in cell.metadata
        for output in cell.outputs:  # no run ids, events or times of a local run
            assert not output.get("metadata"), output


@pytest.mark.parametrize("stem", EXAMPLES)
def test_committed_notebook_keeps_its_kernels_language_info(stem: str) -> None:
    # JupyterLab writes the kernel's language_info into the notebook when the kernel starts:
    # a notebook that kept less opens modified before anyone touched it.
    from ipykernel.ipkernel import IPythonKernel

    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    kept = dict(nb.metadata["language_info"])
    expected = json.loads(json.dumps(IPythonKernel.language_info))
    assert re.fullmatch(r"3\.\d+\.\d+", kept.pop("version")), nb.metadata["language_info"]
    expected.pop("version")
    assert kept == expected


def test_resume_batch_headless_takes_two_working_days(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    home = tmp_path / "home"
    notebook = copy_notebook(folder, "resume_batch", SUPPORT)
    skillnb_cli = [sys.executable, "-m", "skillnb", "run", notebook.name]

    day1 = subprocess.run(
        skillnb_cli,
        cwd=folder,
        env=clean_env(home, SKILLNB_DAILY_QUOTA="7"),
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert day1.returncode == 3, day1.stdout + day1.stderr
    assert "archive" in day1.stderr
    assert "all_covered" in day1.stderr
    run = _open(notebook)
    assert run.state == "extracting"
    assert len(run.snapshot.batches["resumes"].done) == 7
    _assert_extracted_once_so_far(folder, 7)

    day2 = subprocess.run(
        skillnb_cli,
        cwd=folder,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert day2.returncode == 0, day2.stdout + day2.stderr
    assert "finished in state archived" in day2.stdout
    _resume_batch(folder, home)


def _assert_extracted_once_so_far(folder: Path, count: int) -> None:
    lines = (folder / "out" / "extractions.log").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(set(lines)) == count
    assert {line.split("\t")[0] for line in lines} == {"session 246"}
