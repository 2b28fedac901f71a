"""A real PostgreSQL for the team-store tests, started with pgserver (no mocks, no skips).

One server per test session (per xdist worker), in a temporary folder; each test uses its own
run names (:func:`run_name`) or its own database (:func:`fresh_database`).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pgserver
import psycopg
import pytest


@dataclass
class PgServer:
    """The running server: its folder, its URL, a handle to stop and restart it."""

    folder: Path
    server: Any

    @property
    def url(self) -> str:
        return str(self.server.get_uri())

    def url_for(self, database: str, user: str = "postgres", password: str | None = None) -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@/{database}?host={self.folder}"

    def sql(self, statement: str, database: str = "postgres") -> None:
        with psycopg.connect(self.url_for(database), autocommit=True) as conn:
            conn.execute(statement.encode())

    def stop(self) -> None:
        """Stop the server (fast shutdown: clients are disconnected)."""
        self.server.cleanup()

    def start(self) -> None:
        """Start it again on the same folder (same data)."""
        self.server = pgserver.get_server(self.folder, cleanup_mode="stop")


def run_name(prefix: str = "test") -> str:
    """A run name no other test uses."""
    return f"{prefix}/{uuid.uuid4().hex[:10]}"


def fresh_database(server: PgServer) -> str:
    """Create an empty database and return its URL."""
    name = f"db_{uuid.uuid4().hex[:10]}"
    server.sql(f"CREATE DATABASE {name}")
    return server.url_for(name)


@contextmanager
def started_server() -> Iterator[PgServer]:
    """A new server in its own temporary folder, stopped and removed afterwards.

    The folder is not under pytest's base temp: pytest sessions running side by side prune
    each other's old base temps, which must not happen under a live server.
    """
    folder = Path(tempfile.mkdtemp(prefix="skillnb-pg-"))
    made = PgServer(folder, pgserver.get_server(folder, cleanup_mode="stop"))
    try:
        yield made
    finally:
        made.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with started_server() as made:
        yield made


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    return pg_server.url
