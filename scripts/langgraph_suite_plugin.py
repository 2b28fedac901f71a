"""A pytest plugin that runs LangGraph's own graph tests with SkillnbSaver as the checkpointer.

LangGraph's ``tests/conftest.py`` parametrises the fixtures ``sync_checkpointer`` and
``async_checkpointer`` over its savers. Loaded with ``-p langgraph_suite_plugin``
(LangGraph's tests folder as the root), this plugin replaces both, before pytest reads
that conftest's fixtures, by fixtures that give a :class:`SkillnbSaver` on a fresh run in
a temporary folder per test. ``SKILLNB_LG_SAVERS=skillnb,sqlite`` keeps some of LangGraph's
own savers as well, for comparison (names as in LangGraph's conftest).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver

_SAVERS = [s for s in os.environ.get("SKILLNB_LG_SAVERS", "skillnb").split(",") if s]


def _saver(folder: Path) -> Iterator[SkillnbSaver]:
    run = skillnb.open_run(state_dir=folder, memory=False)
    try:
        with SkillnbSaver(run) as saver:
            yield saver
    finally:
        run.store.close()


def _wrap_sync(original: Any) -> Any:
    @pytest.fixture(params=_SAVERS)
    def sync_checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
        if request.param == "skillnb":
            yield from _saver(tmp_path / "skillnb-run")
        else:
            yield from original._get_wrapped_function()(request)

    return sync_checkpointer


def _wrap_async(original: Any) -> Any:
    @pytest.fixture(params=[s if s != "sqlite" else "sqlite_aio" for s in _SAVERS])
    async def async_checkpointer(
        request: pytest.FixtureRequest, tmp_path: Path
    ) -> AsyncIterator[Any]:
        if request.param == "skillnb":
            for saver in _saver(tmp_path / "skillnb-run"):
                yield saver
        else:
            async for saver in original._get_wrapped_function()(request):
                yield saver

    return async_checkpointer


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """Swap the checkpointer fixtures of LangGraph's conftest before pytest parses them."""
    if not isinstance(plugin, ModuleType) or plugin.__name__ != "tests.conftest":
        return
    if hasattr(plugin, "sync_checkpointer"):
        plugin.sync_checkpointer = _wrap_sync(plugin.sync_checkpointer)
    if hasattr(plugin, "async_checkpointer"):
        plugin.async_checkpointer = _wrap_async(plugin.async_checkpointer)


_CHECKPOINTERS = frozenset({"sync_checkpointer", "async_checkpointer"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the tests that run a graph on a checkpointer fixture."""
    keep = [i for i in items if _CHECKPOINTERS & set(getattr(i, "fixturenames", ()))]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
