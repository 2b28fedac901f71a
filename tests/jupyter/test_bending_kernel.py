"""Profiles and follow-ups in real kernels (nbclient): ``%config SkillNB.profile``, the
permission gate it bypasses, and ``%skillnb follow-ups`` / ``%skillnb resolve``."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import skillnb

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"

WORKFLOW = """%%workflow
workflow:
  name: Permits
  states: [draft, unlocked, done]
  profiles: [demo]
  transitions:
    - {from: draft, to: unlocked, trigger: unlock, gates: [has_publisher_role]}
    - {from: unlocked, to: done, trigger: finish, gates: [enough_sources]}
  gates:
    has_publisher_role: {python: has_publisher_role, bypass_in: [demo]}
    enough_sources: {check: "len(sources) >= 3", severity: warn, follow_up: "Add sources"}
"""

ROLE = """import skillnb

@skillnb.gate("has_publisher_role")
def has_publisher_role(facts):
    return False, "needs the publisher role"
"""


def notebook_of(*sources: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def execute(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return nb


def plain(cell: nbformat.NotebookNode) -> str:
    return "\n".join(o["data"]["text/plain"] for o in cell.outputs if MIME in o.get("data", {}))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(tmp_path / "work.ipynb"))
    monkeypatch.setenv("SKILLNB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SKILLNB_PROFILE", raising=False)
    return tmp_path


def test_a_permission_gate_blocks_by_default_and_is_bypassed_under_demo(folder: Path) -> None:
    cells = ["%load_ext skillnb", ROLE, WORKFLOW, "%%gate unlock\nprint('unlocked')"]
    with pytest.raises(CellExecutionError, match="GateBlocked"):
        execute(notebook_of(*cells), folder)
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.state == "draft"
    assert not [e for e in run.history(50) if e.type == "gate.bypassed"]

    demo = ['%config SkillNB.profile = "demo"', *cells]
    nb = execute(notebook_of(*demo), folder)
    assert "↷ has_publisher_role (python): bypassed (profile demo)" in plain(nb.cells[4])
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.state == "unlocked"
    (audit,) = [e for e in run.history(50) if e.type == "gate.bypassed"]
    assert (audit.data["gate"], audit.data["profile"], audit.data["key"]) == (
        "has_publisher_role",
        "demo",
        "gate:unlock",
    )


def test_a_follow_up_is_listed_in_the_notebook_until_resolved(folder: Path) -> None:
    nb = execute(
        notebook_of(
            '%config SkillNB.profile = "demo"',
            "%load_ext skillnb",
            ROLE,
            WORKFLOW,
            "%%formalize sources\n['one']",
            "%%gate unlock\npass",
            "%%gate finish\npass",
            "%skillnb follow-ups",
            "%skillnb status",
            "%skillnb resolve enough_sources --note 'two more found'",
            "%skillnb follow-ups",
            "%skillnb resolve enough_sources",
        ),
        folder,
    )
    listed = plain(nb.cells[7])
    assert "follow-ups (1 open)" in listed
    assert "Add sources (gate enough_sources, state unlocked" in listed
    assert "resolve with %skillnb resolve enough_sources" in listed
    status = str(nb.cells[8].outputs)
    assert "profile demo" in status
    assert "Add sources" in status
    assert "follow-up of enough_sources resolved by" in plain(nb.cells[9])
    assert "follow-ups (0 open)" in plain(nb.cells[10])
    again = plain(nb.cells[11])  # Run All passes the resolve cell again: not an error
    assert "follow-up of enough_sources already resolved" in again
    assert "nothing to do" in again
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.follow_ups() == []
    (resolved,) = run.snapshot.follow_ups.values()
    assert resolved.note == "two more found"
