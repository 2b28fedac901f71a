"""End to end in real kernels (nbclient): restarts, edits, two kernels, hostile metadata."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import skillnb

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"


def notebook_of(*sources: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def client(nb: nbformat.NotebookNode, folder: Path) -> NotebookClient:
    return NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )


def execute(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    client(nb, folder).execute()
    return nb


def plain(cell: nbformat.NotebookNode) -> list[str]:
    return [o["data"]["text/plain"] for o in cell.outputs if MIME in o.get("data", {})]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder whose notebook the kernels are told about (fresh sidecar, fresh home)."""
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(tmp_path / "work.ipynb"))
    monkeypatch.setenv("SKILLNB_HOME", str(tmp_path / "home"))
    return tmp_path


def effects(folder: Path) -> list[str]:
    path = folder / "effects.txt"
    return path.read_text().split() if path.exists() else []


BUDGET = "%%formalize budget --kind decision\nopen('effects.txt', 'a').write('budget ')\n5000"
PLAN = "%%formalize plan\nopen('effects.txt', 'a').write('plan ')\nf'plan for {budget}'"
GATE = "%%gate --requires budget,plan\nopen('effects.txt', 'a').write('gate ')"


def test_restart_restores_completed_cells_and_reruns_edited_ones(folder: Path) -> None:
    execute(notebook_of("%load_ext skillnb", BUDGET, PLAN, GATE), folder)
    assert effects(folder) == ["budget", "plan", "gate"]

    again = execute(notebook_of("%load_ext skillnb", BUDGET, PLAN, GATE), folder)  # new kernel
    assert effects(folder) == ["budget", "plan", "gate"]
    assert plain(again.cells[0])[0].startswith("▶ resumed run at version ")
    assert plain(again.cells[1])[0].startswith("↺ budget v1\nrestored v1 into `budget`")
    assert plain(again.cells[3])[0].startswith("✓ gated cell (done)")

    edited = PLAN.replace("plan for", "the plan for")
    third = execute(notebook_of("%load_ext skillnb", BUDGET, edited, GATE), folder)
    assert effects(folder) == ["budget", "plan", "gate", "plan"]
    assert plain(third.cells[2]) == ["📌 plan v2\ndata = the plan for 5000"]
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.fact("plan").value == "the plan for 5000"  # type: ignore[union-attr]
    output = next(o for o in third.cells[2].outputs if MIME in o.get("data", {}))
    assert "fact.formalized" in [e["type"] for e in output["metadata"][MIME]["events"]]
    assert "events" not in output["data"][MIME]


def test_a_blocked_gate_stops_run_all_with_a_short_error(folder: Path) -> None:
    nb = notebook_of(
        "%load_ext skillnb",
        "%%gate --name publish --requires report\nopen('effects.txt', 'a').write('published ')",
        "open('effects.txt', 'a').write('after ')",
    )
    with pytest.raises(CellExecutionError) as caught:
        execute(nb, folder)
    assert caught.value.ename == "GateBlocked"
    assert effects(folder) == []
    error = next(o for o in nb.cells[1].outputs if o["output_type"] == "error")
    assert error["traceback"] == [
        "✗ GateBlocked: this cell is blocked (publish.requires: missing facts: report "
        "(formalize them first)); see above"
    ]
    assert "publish.requires (requires): missing facts: report" in error["evalue"]
    assert "✗ publish.requires: missing facts: report" in plain(nb.cells[1])[0]


def test_a_blocked_cell_tagged_raises_exception_does_not_claim_run_all_stops(
    folder: Path,
) -> None:
    nb = notebook_of(
        "%load_ext skillnb",
        "%%gate --name publish --requires report\nopen('effects.txt', 'a').write('published ')",
        "open('effects.txt', 'a').write('after ')",
    )
    nb.cells[1].metadata["tags"] = ["raises-exception"]
    nbformat.write(nb, folder / "work.ipynb")  # the kernel reads the tags from the saved file
    execute(nb, folder)
    assert effects(folder) == ["after"]  # Run All went on
    error = next(o for o in nb.cells[1].outputs if o["output_type"] == "error")
    assert error["traceback"] == [
        "✗ GateBlocked: this cell is blocked (publish.requires: missing facts: report "
        "(formalize them first)); see above. "
        "Run All goes on: the cell is tagged raises-exception (see above)."
    ]
    [badge] = plain(nb.cells[1])
    assert "Run All" not in badge  # said once, in the error


def test_two_kernels_formalizing_into_one_sidecar_lose_nothing(folder: Path) -> None:
    def writer(tag: str) -> nbformat.NotebookNode:
        # Each kernel formalizes its own keys through the magic, and both write one shared
        # fact directly (two cells formalizing the same key at once would each see the
        # other's step in flight, which a step cannot tell from a crash).
        loop = (
            "from skillnb.jupyter.extension import current_run\n"
            "for i in range(20):\n"
            f"    get_ipython().run_cell_magic('formalize', '{tag}_' + str(i), str(i))\n"
            f"    current_run().formalize('shared', '{tag}')\n"
        )
        return notebook_of("%load_ext skillnb", loop)

    async def both() -> None:
        await asyncio.gather(
            client(writer("a"), folder).async_execute(), client(writer("b"), folder).async_execute()
        )

    asyncio.run(both())
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    keys = set(run.facts)
    assert {f"a_{i}" for i in range(20)} | {f"b_{i}" for i in range(20)} <= keys
    assert run.fact("shared").version == 40  # type: ignore[union-attr]
    seqs = [e.seq for e in run.store.history()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_hostile_notebook_metadata_is_ignored_with_a_warning(folder: Path) -> None:
    marker = folder / "pwned"
    nb = notebook_of("%load_ext skillnb", "import os\nos.path.exists('pwned')")
    nb.metadata["skillnb"] = {
        "v": 1,
        "run_id": "<script>alert(1)</script>",
        "state": {"$eval": f"__import__('os').system('touch {marker}')"},
        "facts": {"x": {"version": "9" * 5000, "preview": "<img src=x onerror=alert(1)>"}},
    }
    path = folder / "work.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    execute(nb, folder)
    shown = [o["data"] for o in nb.cells[0].outputs if MIME in o.get("data", {})]
    warning = next(d for d in shown if d[MIME]["status"] == "warning")
    assert "ignoring the SKILL.nb metadata mirror" in warning["text/plain"]
    assert all("<script>" not in d["text/html"] and "<img" not in d["text/html"] for d in shown)
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "False"
    assert not marker.exists()
    assert not (folder / ".skillnb").exists()
