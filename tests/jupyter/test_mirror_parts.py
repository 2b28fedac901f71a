"""The notebook mirror's facts and pending approvals, rebuilt only where they changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import skillnb
from skillnb.core.gates.evaluate import GateSpec
from skillnb.core.workflow.model import Workflow
from skillnb.errors import GateBlocked
from skillnb.notebookfile import mirror_parts
from skillnb.notebookfile.mirror import build_mirror
from skillnb.service.steps import formalize_step

FLOW = Workflow.from_dict(
    {
        "name": "mirror_parts_flow",
        "states": ["a", "b"],
        "transitions": [
            {"from": "a", "to": "b", "trigger": "go"},
            {"from": "b", "to": "a", "trigger": "back"},
        ],
    }
)


def _rebuilt(run: Any) -> dict[str, Any]:
    """The mirror built from scratch (nothing remembered)."""
    mirror_parts._parts_of.clear()
    mirror_parts._entries.clear()
    return build_mirror(run, fresh=False)


def _blocked(run: Any, trigger: str, gate: GateSpec) -> None:
    with pytest.raises(GateBlocked):
        run.gates.run_gated(trigger, gates=[gate], subject=run)


def test_each_step_of_a_run_gives_the_mirror_a_rebuild_gives(tmp_path: Path) -> None:
    with skillnb.open_run(state_dir=tmp_path / "s", memory=False) as run:
        run.bind(FLOW)
        approval = GateSpec("sign", "approval", approval="ok?")
        steps = [
            lambda: run.formalize("budget", 5000),
            lambda: run.formalize("team", ["a", "b"]),
            lambda: formalize_step(run.steps, "budget", lambda: 6000, force=True),
            lambda: run.gates.run_gated(None, lambda: None, key="gate:plain", subject=run),
            lambda: run.fire("go"),
            lambda: _blocked(run, "back", approval),
            lambda: run.approve("sign"),
            lambda: run.formalize("budget", 7000),
            lambda: run.gates.run_gated("back", gates=[approval], subject=run),
            lambda: run.milestone("half"),
            lambda: run.set_key_ids(ticket="T-1"),
        ]
        build_mirror(run, fresh=False)  # remembered from here on
        for step in steps:
            step()
            incremental = build_mirror(run, fresh=False)
            assert incremental == _rebuilt(run)
            build_mirror(run, fresh=False)
        assert build_mirror(run)["facts"]["budget"]["version"] == 3


def test_the_facts_are_shared_until_a_fact_changes(tmp_path: Path) -> None:
    with skillnb.open_run(state_dir=tmp_path / "s", memory=False) as run:
        run.formalize("x", 1)
        first = build_mirror(run, fresh=False)
        run.gates.run_gated(None, lambda: None, key="gate:one", subject=run)
        second = build_mirror(run, fresh=False)
        assert second["version"] > first["version"]
        assert second["facts"] is first["facts"]  # no fact changed: not rebuilt
        run.formalize("y", 2)
        third = build_mirror(run, fresh=False)
        assert third["facts"] is not second["facts"]
        assert list(third["facts"]) == ["x", "y"]
        assert list(second["facts"]) == ["x"]  # an earlier mirror is never changed


def test_another_writer_and_a_reload_are_seen(tmp_path: Path) -> None:
    with (
        skillnb.open_run(state_dir=tmp_path / "s", memory=False) as run,
        skillnb.open_run(state_dir=tmp_path / "s", memory=False) as other,
    ):
        run.formalize("x", 1)
        build_mirror(run)
        other.formalize("z", 3)
        assert set(build_mirror(run)["facts"]) == {"x", "z"}
        run.compact()
        run.journal.reload()  # a new state object: rebuilt whole
        assert build_mirror(run) == _rebuilt(run)
