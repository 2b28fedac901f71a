"""The panel's held version check of a sidecar run: answered as soon as the run changes.

Real sidecars on disk and the server's real :class:`RunRegistry`; the change comes from
another thread, as the CLI or a kernel would make it from another process.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from pathlib import Path

import pytest
from test_labextension_server import run_async

import skillnb
from skillnb.server.longpoll import clamp_wait
from skillnb.server.runs import RunRegistry


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "report.ipynb"
    path.write_text("{}")
    with skillnb.open_run(path, memory=False) as run:
        run.formalize("budget", 6000)
    return path


def commit_later(notebook: Path, delay: float) -> threading.Thread:
    def commit() -> None:
        time.sleep(delay)
        with skillnb.open_run(notebook, memory=False) as run:
            run.formalize("budget", 7000)

    thread = threading.Thread(target=commit)
    thread.start()
    return thread


def test_a_held_check_answers_once_the_run_changes(notebook: Path) -> None:
    registry = RunRegistry(notebook.parent)
    try:
        now = run_async(registry.version("report.ipynb"))
        thread = commit_later(notebook, 0.5)
        started = time.monotonic()
        answer = run_async(registry.wait_version("report.ipynb", now["version"], 20))
        waited = time.monotonic() - started
        thread.join()
        assert answer["live"] is True
        assert answer["version"] > now["version"]
        assert 0.4 <= waited < 10  # woken by the change, long before the 20 s wait ends
    finally:
        registry.close()


def test_a_held_check_of_an_unchanged_run_ends_with_its_wait(notebook: Path) -> None:
    registry = RunRegistry(notebook.parent)
    try:
        version = run_async(registry.version("report.ipynb"))["version"]
        started = time.monotonic()
        answer = run_async(registry.wait_version("report.ipynb", version, 0.6))
        assert time.monotonic() - started >= 0.5
        assert answer == {"exists": True, "version": version, "live": True}
        # Behind the panel: a version it does not have yet is answered at once.
        assert run_async(registry.wait_version("report.ipynb", version - 1, 20))["version"] == (
            version
        )
    finally:
        registry.close()


@pytest.mark.parametrize("wait", [math.nan, -math.inf, -5.0, 0.0])
def test_a_wait_that_is_no_number_or_negative_waits_not_at_all(notebook: Path, wait: float) -> None:
    assert clamp_wait(wait) == 0.0
    registry = RunRegistry(notebook.parent)
    try:
        version = run_async(registry.version("report.ipynb"))["version"]
        started = time.monotonic()
        answer = run_async(registry.wait_version("report.ipynb", version, wait))
        assert time.monotonic() - started < 5
        assert answer["version"] == version
    finally:
        registry.close()


def test_many_held_checks_hold_no_thread_and_leave_other_requests_free(notebook: Path) -> None:
    registry = RunRegistry(notebook.parent)

    async def scenario() -> float:
        version = (await registry.version("report.ipynb"))["version"]
        held = [
            asyncio.ensure_future(registry.wait_version("report.ipynb", version, 3))
            for _ in range(16)
        ]
        await asyncio.sleep(0.3)
        started = time.monotonic()
        await registry.describe("report.ipynb")  # another panel's request
        took = time.monotonic() - started
        await asyncio.gather(*held)
        return took

    try:
        took = run_async(scenario())
        assert took < 2.5  # answered while sixteen checks were held, not after them
    finally:
        registry.close()
