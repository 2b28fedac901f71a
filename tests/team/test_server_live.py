"""The server extension over a team store: runs by notebook path, version as a long poll."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from pg import PgServer, fresh_database
from skillnb.run import open_run
from skillnb.server.runs import RunRegistry
from skillnb.server.teamruns import team_access


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "reports").mkdir(parents=True)
    (root / "reports" / "weekly.ipynb").write_text("{}")
    (root / "solo.ipynb").write_text("{}")
    return root


def test_the_panel_reads_team_runs_and_waits_for_their_changes(
    tmp_path: Path, pg_server: PgServer
) -> None:
    root = _root(tmp_path)
    # A database of its own: the run name is the notebook's path from the root.
    url = fresh_database(pg_server)
    access = team_access({"SKILLNB_STORE": url}, root)
    assert access is not None
    assert team_access({}, root) is None  # no store: sidecars, as before
    registry = RunRegistry(root, access=access)
    writer = open_run(store=url, name="reports/weekly.ipynb", memory=False)
    writer.formalize("budget", 1)

    async def scenario() -> None:
        assert await registry.version("solo.ipynb") == {"exists": False, "version": None}
        now = await registry.version("reports/weekly.ipynb")
        assert now == {"exists": True, "version": writer.version}
        described = await registry.describe("reports/weekly.ipynb")
        assert [f["key"] for f in described["facts"]] == ["budget"]

        threading.Timer(0.5, lambda: writer.formalize("budget", 2)).start()
        started = time.monotonic()
        moved = await registry.wait_version("reports/weekly.ipynb", now["version"], 20)
        assert moved == {"exists": True, "version": now["version"] + 1, "live": True}
        assert time.monotonic() - started < 15  # woken by NOTIFY, not by the 20 s limit
        quiet = await registry.wait_version("reports/weekly.ipynb", moved["version"], 0.3)
        assert quiet["version"] == moved["version"]

    asyncio.run(scenario())
    registry.close()


def test_a_sidecar_run_past_the_panels_version_answers_at_once(tmp_path: Path) -> None:
    root = _root(tmp_path)
    open_run(root / "solo.ipynb", memory=False).formalize("x", 1)
    registry = RunRegistry(root)

    async def scenario() -> None:
        started = time.monotonic()
        answer = await registry.wait_version("solo.ipynb", 0, 20)
        assert time.monotonic() - started < 10  # not held: the run is past version 0
        assert answer["live"] is True  # a sidecar run can be held too (its journal wakes it)
        assert answer["version"] >= 1

    asyncio.run(scenario())
    registry.close()
