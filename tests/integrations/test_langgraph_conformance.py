"""SkillnbSaver passes LangGraph's checkpointer conformance suite, every capability it declares.

The suite (``langgraph-checkpoint-conformance``) drives the async methods; each capability
gets a fresh run in its own sidecar folder. The report is printed, so a failure shows which
tests failed and why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver


def test_every_capability_passes(tmp_path: Path) -> None:
    folders = iter(range(100))

    @checkpointer_test(name="SkillnbSaver")
    async def saver() -> AsyncIterator[SkillnbSaver]:
        run = skillnb.open_run(state_dir=tmp_path / f"run{next(folders)}", memory=False)
        try:
            with SkillnbSaver(run) as checkpointer:
                yield checkpointer
        finally:
            run.store.close()

    report = asyncio.run(validate(saver))
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
