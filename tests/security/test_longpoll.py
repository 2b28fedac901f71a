"""Attack: a version long poll asked to wait ``nan``, ``inf``, ``-1`` or ``1e308`` seconds.

``min(max(nan, 0), 25)`` is ``nan``: such a wait never ended, and eight of them took every
thread that long polls ran on, so no other panel got its live updates. On a real ``jupyter
server`` over a real PostgreSQL (and one over sidecars), every such request must come back
within the cap while another panel's long poll is still woken by its run's change.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pg import PgServer, fresh_database
from skillnb.run import open_run
from skillnb.server.longpoll import MAX_WAIT, LongPolls, clamp_wait

pytestmark = pytest.mark.xdist_group("security-longpoll")

_UI_KIT = Path(__file__).parents[1] / "ui" / "conftest.py"
_spec = importlib.util.spec_from_file_location("skillnb_ui_kit", _UI_KIT)
assert _spec is not None
assert _spec.loader is not None
ui_kit = sys.modules.setdefault("skillnb_ui_kit", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ui_kit)

NAN_WAITS = ["nan", "NaN", "-nan", "+nan", "nan", "NAN", "nan", "nan"]  # eight, as in the attack
OTHER_WAITS = ["inf", "-inf", "1e308", "1e400", "-1", "-0"]
SLACK = 10.0  # seconds beyond the cap a loaded machine may need to answer


def _notebook(path: Path) -> Path:
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return path


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, pg_server: PgServer) -> Iterator[Any]:
    url = fresh_database(pg_server)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLNB_STORE", url)
        base = tmp_path_factory.mktemp("longpoll-team")
        with ui_kit.start_jupyter(base, app="server") as srv:
            srv.store_url = url
            yield srv


@pytest.fixture(scope="module")
def sidecars(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("SKILLNB_STORE", raising=False)
        with ui_kit.start_jupyter(tmp_path_factory.mktemp("longpoll-side"), app="server") as srv:
            yield srv


def _poll(server: Any, path: str, after: int, wait: str) -> tuple[int, Any, float]:
    started = time.monotonic()
    status, body = server.api(
        "GET", "skillnb/api/version", params={"path": path, "after": str(after), "wait": wait}
    )
    return int(status), body, time.monotonic() - started


def test_clamp_bounds_every_float() -> None:
    assert clamp_wait(float("nan")) == 0.0
    assert clamp_wait(float("-inf")) == 0.0
    assert clamp_wait(-1.0) == 0.0
    assert clamp_wait(float("inf")) == MAX_WAIT
    assert clamp_wait(1e308) == MAX_WAIT
    assert clamp_wait(3.5) == 3.5


def test_held_waits_past_the_limit_are_answered_at_once() -> None:
    polls = LongPolls(limit=2)
    release = threading.Event()
    held = [polls.submit(lambda: {"held": release.wait(10)}) for _ in range(2)]
    assert all(h is not None for h in held)
    assert polls.submit(lambda: {}) is None  # full: the caller answers without holding
    release.set()
    assert all(h is not None and h.result(5) == {"held": True} for h in held)
    assert polls.submit(lambda: {"again": True}) is not None
    polls.close()


def test_hostile_waits_on_a_team_run_end_and_other_panels_stay_live(team: Any) -> None:
    url = team.store_url
    _notebook(team.root / "target.ipynb")
    _notebook(team.root / "other.ipynb")
    target = open_run(store=url, name="target.ipynb", memory=False)
    target.formalize("x", 1)
    other = open_run(store=url, name="other.ipynb", memory=False)
    other.formalize("y", 1)
    with ThreadPoolExecutor(len(NAN_WAITS) + len(OTHER_WAITS) + 1) as pool:
        hostile = [pool.submit(_poll, team, "target.ipynb", target.version, w) for w in NAN_WAITS]
        time.sleep(1.0)  # the eight are in before the other panel asks
        live = pool.submit(_poll, team, "other.ipynb", other.version, "20")
        threading.Timer(1.5, lambda: other.formalize("y", 2)).start()
        status, body, took = live.result(timeout=30)
        assert status == 200, body
        assert body == {"exists": True, "version": other.version, "live": True}
        assert took < 15  # woken by the change, not held behind the hostile waits
        for answer in hostile:
            status, body, took = answer.result(timeout=MAX_WAIT + SLACK)
            assert status == 200, body
            assert body["version"] == target.version
            assert took < SLACK  # nan waits not at all
        others = [pool.submit(_poll, team, "target.ipynb", target.version, w) for w in OTHER_WAITS]
        for wait, answer in zip(OTHER_WAITS, others, strict=True):
            status, body, took = answer.result(timeout=MAX_WAIT + SLACK + 5)
            assert status == 200, (wait, body)
            assert took < MAX_WAIT + SLACK, wait
    target.close()
    other.close()


def test_hostile_waits_on_a_sidecar_run_are_bounded(sidecars: Any) -> None:
    """A sidecar run's check is held on the event loop: nan waits not at all, inf the cap."""
    notebook = _notebook(sidecars.root / "solo.ipynb")
    with open_run(notebook, memory=False) as run:
        run.formalize("x", 1)
        version = run.version
    with ThreadPoolExecutor(len(NAN_WAITS) + len(OTHER_WAITS)) as pool:
        nan = [pool.submit(_poll, sidecars, "solo.ipynb", version, w) for w in NAN_WAITS]
        others = [pool.submit(_poll, sidecars, "solo.ipynb", version, w) for w in OTHER_WAITS]
        for answer in nan:
            status, body, took = answer.result(timeout=MAX_WAIT + SLACK)
            assert status == 200, body
            assert body == {"exists": True, "version": version, "live": True}
            assert took < SLACK
        for wait, answer in zip(OTHER_WAITS, others, strict=True):
            status, body, took = answer.result(timeout=MAX_WAIT + SLACK + 5)
            assert status == 200, (wait, body)
            assert body["version"] == version
            assert took < MAX_WAIT + SLACK, wait
