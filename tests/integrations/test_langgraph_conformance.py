"""SkillnbSaver passes LangGraph's checkpointer conformance suite, every capability it declares.

The suite (``langgraph-checkpoint-conformance``) drives the async methods; each capability
gets a fresh run in its own sidecar folder. The report is printed, so a failure shows which
tests failed and why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, Capability

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver


def _registered(tmp_path: Path) -> Any:
    folders = iter(range(100))

    @checkpointer_test(name="SkillnbSaver")
    async def saver() -> AsyncIterator[SkillnbSaver]:
        run = skillnb.open_run(state_dir=tmp_path / f"run{next(folders)}", memory=False)
        try:
            with SkillnbSaver(run) as checkpointer:
                yield checkpointer
        finally:
            run.store.close()

    return saver


def test_every_capability_passes(tmp_path: Path) -> None:
    report = asyncio.run(validate(_registered(tmp_path)))
    report.print_report()
    failures = {
        cap: result.failures for cap, result in report.results.items() if result.passed is not True
    }
    assert not failures, f"failed capabilities: {failures}"
    assert {c.value for c in ALL_CAPABILITIES} == {
        cap for cap, result in report.results.items() if result.detected
    }
    assert report.conformance_level() == "FULL"
    counts = {cap: r.tests_passed for cap, r in report.results.items()}
    assert sum(counts.values()) >= 80, counts


def test_delta_channel_history_passes_when_the_suite_has_it(tmp_path: Path) -> None:
    """The newer capability (DeltaChannel's parent-chain walk), run by name when installed."""
    if "delta_channel_history" not in {c.value for c in Capability}:
        pytest.skip(
            f"langgraph-checkpoint-conformance {version('langgraph-checkpoint-conformance')} "
            "has no delta_channel_history capability"
        )
    report = asyncio.run(validate(_registered(tmp_path), capabilities={"delta_channel_history"}))
    report.print_report()
    result = report.results["delta_channel_history"]
    assert result.passed is True, result.failures
    assert result.tests_passed > 0
