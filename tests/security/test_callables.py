"""Definitions read back from a sidecar or a notebook never import or call a module path."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from securitykit import bundle_output, shell_workflow, write_notebook

from skillnb.core.gates.registry import NEEDS_CALLABLE, Registry
from skillnb.core.workflow.model import Workflow
from skillnb.errors import WorkflowError
from skillnb.notebookfile.rebuild import rebuild_run
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for


def _plant(notebook: Path, sentinel: Path, gate: str = "subprocess:run") -> None:
    """What a cloned repository could hold: a sidecar whose stored definition runs a shell."""
    notebook.write_text("{}", encoding="utf-8")
    run = open_run(notebook, workflow=Workflow.from_dict(shell_workflow(gate)), memory=False)
    run.formalize("touch", 1)
    run.formalize(str(sentinel), 1)


def test_the_planted_definition_would_run_a_shell_if_it_were_trusted(tmp_path: Path) -> None:
    # The control: proves the attack below is real, so its absence there means something.
    sentinel = tmp_path / "control-sentinel"
    _plant(tmp_path / "nb.ipynb", sentinel)
    trusted = Workflow.from_dict(shell_workflow())
    run = open_run(tmp_path / "nb.ipynb", workflow=trusted, memory=False)
    run.check("publish")
    assert sentinel.exists()


def test_a_stored_definition_reports_its_callable_instead_of_importing_it(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    _plant(tmp_path / "nb.ipynb", sentinel)
    run = open_run(tmp_path / "nb.ipynb", memory=False)
    assert run.workflow is not None
    assert run.workflow.trusted is False
    report = run.check("publish")
    assert not report.passed
    assert NEEDS_CALLABLE in report.results[0].message
    with pytest.raises(WorkflowError, match="needs its callable"):
        run.fire("publish")
    assert run.state == "draft"
    assert not sentinel.exists()


def test_a_stored_resource_gate_never_imports(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    data = shell_workflow()
    data["workflow"]["gates"]["looks_fine"] = {"resource": "subprocess:run", "retries": 3}
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    open_run(notebook, workflow=Workflow.from_dict(data), memory=False).formalize(str(sentinel), 1)
    report = open_run(notebook, memory=False).check("publish")
    assert report.results[0].attempts == 1
    assert NEEDS_CALLABLE in report.results[0].message
    assert not sentinel.exists()


def test_running_the_workflow_cell_again_restores_trust(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    _plant(tmp_path / "nb.ipynb", sentinel, gate="skillnb_trust_probe")
    calls: list[Mapping[str, Any]] = []
    registry = Registry()
    registry.register_gate("skillnb_trust_probe", lambda facts: calls.append(facts) or True)
    run = open_run(tmp_path / "nb.ipynb", memory=False)
    run.gates.registry = registry
    assert run.check("publish").passed  # a registered callable is the user's own code
    run.bind(Workflow.from_dict(shell_workflow("skillnb_trust_probe")))
    assert run.workflow is not None
    assert run.workflow.trusted
    assert len(calls) == 1


def test_a_rebuilt_definition_never_imports(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    notebook = tmp_path / "nb.ipynb"
    _plant(notebook, sentinel)
    run = open_run(notebook, memory=False)
    events = list(run.store.history())
    write_notebook(notebook, [bundle_output(events, run.id)])
    shutil.rmtree(sidecar_dir_for(notebook))
    rebuilt = rebuild_run(notebook, memory=False)
    assert rebuilt.workflow is not None
    assert not rebuilt.workflow.trusted
    assert NEEDS_CALLABLE in rebuilt.check("publish").results[0].message
    assert not sentinel.exists()


def test_a_workflow_cell_read_from_a_notebook_is_display_only(tmp_path: Path) -> None:
    from skillnb.notebookfile.recover import workflow_cell

    source = "%%workflow\n" + Workflow.from_dict(shell_workflow()).to_yaml()
    nb = {"cells": [{"cell_type": "code", "source": source, "outputs": [], "metadata": {}}]}
    workflow = workflow_cell(nb, origin="nb.ipynb")
    assert workflow is not None
    assert not workflow.trusted
    assert all(not t.trusted for t in workflow.transitions)


def test_trust_is_set_by_the_loader_and_left_out_of_equality() -> None:
    data = shell_workflow()
    given = Workflow.from_dict(data)
    stored = Workflow.from_dict(data, trusted=False)
    assert given.trusted
    assert not stored.trusted
    assert Workflow.from_yaml(given.to_yaml()).trusted
    assert given == stored
    assert given.hash == stored.hash
    assert not stored.gates["looks_fine"].trusted
    assert given.gates["looks_fine"].trusted


def test_the_workflow_cell_of_a_notebook_jupyter_trusts_is_trusted(tmp_path: Path) -> None:
    import nbformat
    from nbformat.sign import NotebookNotary

    from skillnb.notebookfile.recover import workflow_cell
    from skillnb.notebookfile.trust import notebook_trusted

    nb = nbformat.v4.new_notebook()
    source = "%%workflow\n" + Workflow.from_dict(shell_workflow()).to_yaml()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    data_dir = tmp_path / "jupyter-data"
    assert not notebook_trusted(nb, data_dir)  # no key yet: nothing is created to answer
    assert not data_dir.exists()
    data_dir.mkdir()
    with NotebookNotary(data_dir=str(data_dir)) as notary:
        notary.sign(nb)
    assert notebook_trusted(nb, data_dir)
    found = workflow_cell(nb, origin="nb.ipynb", trust=lambda n: notebook_trusted(n, data_dir))
    assert found is not None
    assert found.trusted
    nb.cells[0].source += "\n# changed by someone else\n"
    assert not notebook_trusted(nb, data_dir)
