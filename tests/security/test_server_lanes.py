"""Attack: one notebook's slow view makes every other panel's poll wait.

The server ran every run operation on one worker thread, so a notebook whose view evaluates
many slow checks (each within its own budget) made another notebook's version poll wait 28 s.
A notebook's operations now run in its own lane: a poll of another notebook answers at once,
and the slow view itself is bounded by the checks' total budget.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from skillnb.core.expr.budget import TOTAL_SECONDS
from skillnb.core.workflow.model import Workflow
from skillnb.run import open_run
from skillnb.server.runs import RunAccess, RunRegistry

VIEW_S = 3.0
"""How long the slow notebook's view takes at least (its run is slowed down on purpose)."""


class SlowView:
    """A run whose view takes :data:`VIEW_S` more: a stand-in for a costly definition."""

    def __init__(self, run: Any) -> None:
        self._run = run

    def describe(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(VIEW_S)
        return self._run.describe(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)


def _slowed(read: Any) -> Any:
    def open_(notebook: Path) -> Any:
        run = read(notebook)
        return SlowView(run) if notebook.name == "slow.ipynb" else run

    return open_


def _slow_workflow() -> Workflow:
    names = {f"g{i}": {"check": "[x] * 40 == [x] * 40"} for i in range(100)}
    return Workflow.from_dict(
        {
            "workflow": {
                "name": "slow",
                "states": ["a", "b"],
                "transitions": [{"from": "a", "to": "b", "trigger": "go", "gates": list(names)}],
                "gates": names,
            }
        }
    )


def _notebook(path: Path) -> Path:
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return path


def test_a_slow_view_does_not_hold_back_another_notebooks_poll(tmp_path: Path) -> None:
    slow = _notebook(tmp_path / "slow.ipynb")
    quick = _notebook(tmp_path / "quick.ipynb")
    with open_run(slow, workflow=_slow_workflow(), memory=False) as run:
        run.formalize("x", list(range(100_000)))
    with open_run(quick, memory=False) as run:
        run.formalize("y", 1)
    plain = RunAccess()
    registry = RunRegistry(
        tmp_path, access=RunAccess(open=_slowed(plain.open), read=_slowed(plain.read))
    )

    async def scenario() -> tuple[float, float]:
        started = time.monotonic()
        views = [asyncio.ensure_future(registry.describe("slow.ipynb")) for _ in range(3)]
        await asyncio.sleep(0.2)  # the slow views are under way
        asked = time.monotonic()
        answer = await registry.version("quick.ipynb")
        polled = time.monotonic() - asked
        assert answer["exists"] is True
        assert not any(v.done() for v in views[1:])  # still queued behind the first
        described = await asyncio.gather(*views)
        for view in described:
            assert view["next"][0]["status"] == "blocked"
        return polled, time.monotonic() - started

    polled, total = asyncio.run(scenario())
    registry.close()
    assert polled < 1.5, polled  # not behind the slow notebook's views
    # each view bounded by the checks' total budget (plus the delay added here)
    assert total < 3 * (TOTAL_SECONDS + VIEW_S + 3), total
