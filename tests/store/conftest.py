"""Fixtures for the store tests: every backend behind one interface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import Backend

from pg import PgServer, run_name
from skillnb.store import MemoryStore, SidecarStore
from skillnb.store.durable import use_file_ops
from skillnb.store.fileops import ofdlocks
from skillnb.store.fileops.portable import PortableFileOps
from skillnb.store.memory import MemoryData
from skillnb.store.postgres.store import PostgresStore


@pytest.fixture
def sidecar_dir(tmp_path: Path) -> Path:
    return tmp_path / "work" / ".skillnb" / "analysis"


@pytest.fixture(params=["memory", "sidecar", "sidecar-portable", "postgres"])
def backend(request: pytest.FixtureRequest, sidecar_dir: Path) -> Iterator[Backend]:
    if request.param == "sidecar-portable":
        # The sidecar over the portable file operations (Windows' seam), with Linux's
        # open-file-description locks standing for msvcrt's: they hold the same way.
        if not ofdlocks.available():
            pytest.skip("the portable seam runs here with Linux's open-file-description locks")
        with use_file_ops(PortableFileOps(ofdlocks.OfdLocks())):
            made = Backend("sidecar-portable", lambda: SidecarStore(sidecar_dir))
            yield made
            for store in made.opened:
                store.close()
        return
    if request.param == "memory":
        data = MemoryData()
        made = Backend("memory", lambda: MemoryStore(data))
    elif request.param == "postgres":
        server: PgServer = request.getfixturevalue("pg_server")
        name = run_name()
        made = Backend("postgres", lambda: PostgresStore(server.url, name))
    else:
        made = Backend("sidecar", lambda: SidecarStore(sidecar_dir))
    yield made
    for store in made.opened:
        store.close()
