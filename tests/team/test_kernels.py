"""Two real kernels (nbclient) in different folders share one run through a team store."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import skillnb
from pg import PgServer, run_name

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"

WORKFLOW = """%%workflow
workflow:
  name: weekly_report
  states: [draft, review, published]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [has_budget]}
    - {from: review, to: published, trigger: publish, gates: [editor_ok]}
  gates:
    has_budget: {requires: [budget]}
    editor_ok: {approval: "Publish the report?"}
"""
BUDGET = "%%formalize budget --kind decision\nopen('effects.txt', 'a').write('budget ')\n5000"


def _execute(folder: Path, *sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    return nb


def _plain(cell: nbformat.NotebookNode) -> str:
    return "\n".join(o["data"]["text/plain"] for o in cell.outputs if MIME in o.get("data", {}))


def _effects(folder: Path) -> list[str]:
    path = folder / "effects.txt"
    return path.read_text().split() if path.exists() else []


def test_two_kernels_in_different_folders_share_one_run(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyst, editor = tmp_path / "analyst", tmp_path / "editor"
    analyst.mkdir()
    editor.mkdir()
    name = run_name("team/weekly")
    monkeypatch.setenv("SKILLNB_STORE", pg_server.url)
    monkeypatch.setenv("SKILLNB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SKILLNB_NOTEBOOK", raising=False)
    use = f"%skillnb use --name {name}"

    first = _execute(
        analyst,
        "%load_ext skillnb",
        use,
        WORKFLOW,
        BUDGET,
        "%%gate submit\n'submitted'",
        "%%gate publish --on-block skip\nopen('effects.txt', 'a').write('published ')",
    )
    assert _effects(analyst) == ["budget"]
    assert _plain(first.cells[5]).startswith("⏳ publish waits for approval: editor_ok")

    second = _execute(
        editor,
        "%load_ext skillnb",
        use,
        BUDGET,  # same cell: restored from the shared run, not executed again
        "budget",
        "%skillnb approve editor_ok --by editor --note 'fine'",
    )
    assert _effects(editor) == []
    assert _plain(second.cells[2]).startswith("↺ budget v1\nrestored v1 into `budget`")
    assert second.cells[3].outputs[0]["data"]["text/plain"] == "5000"

    _execute(
        analyst,
        "%load_ext skillnb",
        use,
        "%%gate publish\nopen('effects.txt', 'a').write('published ')",
    )
    assert _effects(analyst) == ["budget", "published"]
    run = skillnb.open_run(store=pg_server.url, name=name, memory=False)
    assert run.state == "published"
    decided = [e for e in run.history(50) if e.type.startswith("approval.")]
    assert any(e.data.get("by") == "editor" for e in decided)
