"""A cell's mirror found by its cell id through the index equals the one a scan finds.

The reference below looks at every fact and every step, as matching a cell once did. Runs
write facts again from other cells, run steps again, put one cell id on a fact and a gate
step, record gate steps without facts; another writer's events are caught up; the run is
compacted and opened again. Every time, each cell's mirror equals the reference's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.runstate.records import RunState
from skillnb.notebookfile.ipynb import cell_source
from skillnb.notebookfile.mirror import _gate_cell_mirror, build_cell_mirror, cell_magic
from skillnb.run import Run, open_run
from skillnb.service.steps import formalize_step

IDS = ["c-a", "c-b", "c-c", "c-gate", "c-new", "", None, "c-unknown"]
SOURCES = [
    "%%formalize a\n1",
    "%%formalize b\n2",
    "%%formalize missing\n3",
    "%%gate go\npass",
    "%%gate --name nightly\npass",
    "x = 1",
]


def scanned_cell_mirror(state: RunState, cell: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cell's mirror, finding its fact and step by looking at every one of them."""
    cell_id = cell.get("id") if isinstance(cell.get("id"), str) else None
    magic = cell_magic(cell_source(cell))
    fact = None
    if cell_id:
        fact = next((f for f in state.facts.values() if f.cell_id == cell_id), None)
    if fact is None and magic is not None and magic[0] == "formalize":
        fact = state.facts.get(magic[1])
    if fact is not None:
        step = state.steps.get(f"formalize:{fact.key}")
        return {
            "step": fact.key,
            "version": fact.version,
            "source_hash": fact.source_hash,
            "status": step.status if step is not None else "committed",
        }
    key = None
    if cell_id:
        key = next(
            (
                s.key
                for s in state.steps.values()
                if s.cell_id == cell_id and not s.key.startswith("formalize:")
            ),
            None,
        )
    if key is None and magic is not None and magic[0] == "gate":
        key = magic[1]
    return _gate_cell_mirror(state, key, cell) if key is not None else None


def assert_mirrors_as_a_scan(state: RunState) -> int:
    """Compare every (cell id, source) pair; return how many are step cells."""
    marked = 0
    for cell_id in IDS:
        for source in SOURCES:
            cell = {"id": cell_id, "source": source}
            found = build_cell_mirror(state, cell)
            assert found == scanned_cell_mirror(state, cell), cell
            marked += found is not None
    return marked


def _formalize(run: Run, key: str, value: int, cell_id: str) -> None:
    formalize_step(run.steps, key, lambda: value, cell_id=cell_id, source_hash=f"h-{key}-{value}")


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return open_run(state_dir=tmp_path / "state", memory=False)


def test_cells_mirror_as_a_scan_through_rewrites_reruns_and_other_writers(
    tmp_path: Path, run: Run
) -> None:
    assert_mirrors_as_a_scan(run.journal.state)  # the index is built on an empty run
    run.formalize("a", 1, cell_id="c-a")
    run.formalize("b", 2, cell_id="c-a")  # two facts of one cell: the first counts
    assert_mirrors_as_a_scan(run.journal.state)
    run.formalize("a", 3, cell_id="c-b")  # written again from another cell
    _formalize(run, "c", 4, "c-c")  # a fact with its formalize step
    run.gates.run_gated(None, key="gate:go", cell_id="c-gate", subject=run)  # a step, no fact
    run.gates.run_gated(None, key="gate:nightly", cell_id="c-a", subject=run)  # id of a fact
    assert_mirrors_as_a_scan(run.journal.state)
    run.gates.run_gated(None, key="gate:go", cell_id="c-new", subject=run)  # run again elsewhere
    _formalize(run, "c", 5, "c-gate")  # a fact and a gate step on one cell id
    assert_mirrors_as_a_scan(run.journal.state)

    with open_run(state_dir=tmp_path / "state", memory=False) as other:
        other.formalize("b", 6, cell_id="c-new")
        other.gates.run_gated(None, key="gate:other", cell_id="c-b", subject=other)
        _formalize(other, "d", 7, "c-unknown")
    caught_up = run.journal.refresh()
    assert caught_up.facts["b"].cell_id == "c-new"  # the other writer's events are in
    assert assert_mirrors_as_a_scan(caught_up) > 20

    run.compact()
    assert_mirrors_as_a_scan(run.journal.refresh())
    run.formalize("a", 8, cell_id="c-c")
    assert_mirrors_as_a_scan(run.journal.state)
    run.close()
    with open_run(state_dir=tmp_path / "state", memory=False) as reopened:
        state = reopened.journal.state
        assert_mirrors_as_a_scan(state)
        assert build_cell_mirror(state, {"id": "c-c", "source": "x = 1"}) == {
            "step": "a",
            "version": state.facts["a"].version,
            "source_hash": None,
            "status": "committed",
        }


def test_a_snapshot_whose_keys_disagree_with_its_records_mirrors_as_a_scan() -> None:
    # A snapshot is someone else's file: its dict keys need not be its records' keys.
    state = RunState.model_validate(
        {
            "run_id": "r",
            "version": 9,
            "facts": {
                "alias": {"key": "a", "value": 1, "version": 3, "at": "2026-03-02T09:00:00Z"},
                "b": {
                    "key": "b",
                    "value": 2,
                    "version": 4,
                    "cell_id": "c-b",
                    "at": "2026-03-02T09:00:00Z",
                },
            },
            "steps": {
                "gate:alias": {"key": "gate:go", "cell_id": "c-gate", "status": "committed"},
                "gate:hidden": {"key": "formalize:x", "cell_id": "c-c"},
                "gate:nightly": {"key": "gate:nightly", "cell_id": "c-c", "started_seq": 2},
            },
        }
    )
    assert assert_mirrors_as_a_scan(state) > 0
    found = build_cell_mirror(state, {"id": "c-c", "source": "x = 1"})
    assert found == scanned_cell_mirror(state, {"id": "c-c", "source": "x = 1"})
    assert found is not None
    assert (found["gate"], found["version"]) == ("nightly", 2)
