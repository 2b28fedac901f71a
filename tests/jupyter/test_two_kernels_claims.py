"""Two real kernels on one notebook at once: one gate body, each batch item once.

Both kernels reach the gated cell together (a barrier in the cell before it); one runs the
body, the other shows ``StepInProgress``. Then both consume one 50-item batch at the same
time: every item is done once, and a kernel that skips items held by the other says so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import skillnb

pytestmark = pytest.mark.slow

BARRIER = """
import os, time
open(f"ready-{{os.getpid()}}-{name}", "w").close()
deadline = time.time() + 90
while len([f for f in os.listdir(".") if f.endswith("-{name}")]) < 2 and time.time() < deadline:
    time.sleep(0.01)
"""

GATE = """%%gate --name send_report
import os, time
open("gate.log", "a").write(f"{os.getpid()}\\n")
time.sleep(3)
"""

BATCH = """
import os, time
for ticket in run.items("tickets", [f"t{i:02}" for i in range(50)]):
    open("items.log", "a").write(f"{os.getpid()} {ticket}\\n")
    time.sleep(0.05)
"""


def _notebook() -> nbformat.NotebookNode:
    cells = [
        "%load_ext skillnb\nimport skillnb\nrun = skillnb.current_run()",
        BARRIER.format(name="gate"),
        GATE,
        BARRIER.format(name="batch"),
        BATCH,
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])


async def _both(folder: Path) -> list[nbformat.NotebookNode]:
    notebooks = [_notebook(), _notebook()]
    clients = [
        NotebookClient(
            nb,
            timeout=180,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
        )
        for nb in notebooks
    ]
    await asyncio.gather(*(c.async_execute() for c in clients))
    return notebooks


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        elif "text/plain" in out.get("data", {}):
            parts.append(out["data"]["text/plain"])
    return "\n".join(parts)


def test_two_kernels_run_one_gate_body_and_share_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(tmp_path / "work.ipynb"))
    monkeypatch.setenv("SKILLNB_HOME", str(tmp_path / "home"))
    with skillnb.open_run(tmp_path / "work.ipynb", memory=False) as run:
        run.formalize("seed", 1)  # the run exists before both kernels open it
    notebooks = asyncio.run(_both(tmp_path))

    assert len((tmp_path / "gate.log").read_text().split()) == 1  # one gate body
    gate_outputs = [_text(nb.cells[2]) for nb in notebooks]
    assert sum("StepInProgress" in text for text in gate_outputs) == 1, gate_outputs
    assert any("send_report" in text and "another process" in text for text in gate_outputs)

    lines = [line.split() for line in (tmp_path / "items.log").read_text().splitlines()]
    items = [item for _, item in lines]
    assert sorted(items) == [f"t{i:02}" for i in range(50)]  # each item once
    assert len({pid for pid, _ in lines}) == 2  # both kernels did some
    batch_outputs = [_text(nb.cells[4]) for nb in notebooks]
    assert any("another process is working on them" in text for text in batch_outputs)
    with skillnb.open_run(tmp_path / "work.ipynb", memory=False) as run:
        assert len(run.snapshot.batches["tickets"].done) == 50
        assert run.snapshot.claims == {}
