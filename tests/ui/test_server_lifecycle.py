"""The server's run cache closes what it opens, reads write nothing, replaced runs reopen.

A real ``jupyter server`` process with the SKILL.nb extension; its open file descriptors
are counted with psutil.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import skillnb
from skillnb.store import sidecar_dir_for
from skillnb.store.folders.aside import set_aside

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, jupyter_starter: Any) -> Iterator[Any]:
    token = secrets.token_hex(8)
    with jupyter_starter(tmp_path_factory.mktemp("life"), app="server", token=token) as running:
        yield running


def _server_process(server: Any) -> psutil.Process:
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    for child in psutil.Process().children(recursive=True):
        try:
            if any(arg == f"--port={port}" for arg in child.cmdline()):
                return child
        except psutil.Error:
            continue
    raise AssertionError(f"no server process on port {port}")


def _notebook(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with skillnb.open_run(path, memory=False) as run:
        run.formalize("n", name)
    return path


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_500_open_close_cycles_leave_the_fd_count_at_its_baseline(server: Any) -> None:
    folder = server.folder("cycles")
    paths = [f"cycles/{_notebook(folder, f'nb{i:02}.ipynb').name}" for i in range(40)]
    process = _server_process(server)

    def get(path: str) -> None:
        status, body = server.api("GET", "skillnb/api/run", params={"path": path})
        assert status == 200, body

    for path in paths:  # fill the cache (16 runs): the steady state
        get(path)
    baseline = process.num_fds()
    for i in range(500):  # every request past the 16th opens a run and closes the oldest
        get(paths[i % len(paths)])
    assert process.num_fds() <= baseline + 2  # sockets come and go; leaked runs would be 1000s


def test_get_routes_leave_the_sidecar_byte_identical(server: Any) -> None:
    folder = server.folder("reads")
    nb = _notebook(folder, "report.ipynb")
    sidecar = sidecar_dir_for(nb)
    before = _tree(sidecar)
    for route in ("skillnb/api/run", "skillnb/api/version"):
        for _ in range(3):
            status, _body = server.api("GET", route, params={"path": "reads/report.ipynb"})
            assert status == 200
    assert _tree(sidecar) == before
    empty = folder / "empty.ipynb"
    empty.write_text(nb.read_text())
    assert server.api("GET", "skillnb/api/version", params={"path": "reads/empty.ipynb"}) == (
        200,
        {"exists": False, "version": None},
    )
    assert not sidecar_dir_for(empty).exists()


def test_a_cached_run_set_aside_is_never_mixed_with_the_next(server: Any) -> None:
    folder = server.folder("aside")
    nb = _notebook(folder, "report.ipynb")
    path = "aside/report.ipynb"
    status, view = server.api("GET", "skillnb/api/run", params={"path": path})
    assert status == 200
    old_id = view["run_id"]
    set_aside(sidecar_dir_for(nb), old_id)
    with skillnb.open_run(nb, memory=False) as fresh:
        fresh.formalize("fresh", True)
        new_id = fresh.id
    status, view = server.api("GET", "skillnb/api/run", params={"path": path})
    assert status == 200, view
    assert (view["run_id"], [f["key"] for f in view["facts"]]) == (new_id, ["fresh"])
    status, body = server.api("POST", "skillnb/api/milestone", body={"path": path, "name": "m"})
    assert status == 200, body
    with skillnb.open_run(nb, memory=False) as now:
        assert now.id == new_id
        assert [m.facts for m in now.snapshot.milestones] == [{"fresh": 1}]
