"""Batch item completions on a real PostgreSQL: the run's lock is not held through the flush.

A completion (``batch.item_done``) commits without waiting for the disk, so that completions
by several consumers of one run do not queue one ``fsync`` each behind the run's lock, and
then waits for the disk in a statement of its own before it is reported done. These tests
check what is sent, and that a completion reported done survives a crash of the server
right after it (without the flush, it would still be in the server's memory).
"""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from pg import PgServer, run_name, started_server
from skillnb.core.runstate.records import EventDraft
from skillnb.store.postgres import append as pg_append
from skillnb.store.postgres.store import PostgresStore


def _done(item: str) -> EventDraft:
    return EventDraft(
        type="batch.item_done", at=datetime.now(UTC), data={"batch": "b", "item": item}
    )


def _note() -> EventDraft:
    return EventDraft(type="note", at=datetime.now(UTC), data={})


def test_a_completion_commits_lazily_then_waits_for_the_disk(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_server.url, run_name("lazy"))
    store.append([_note()], expected_version=0)
    sent: list[bytes] = []
    original = psycopg.Connection.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(query if isinstance(query, bytes) else str(query).encode())
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    store.append([_done("x")], expected_version=1)
    assert len(sent) == 2
    assert b"set_config('synchronous_commit', 'off', true)" in sent[0]
    assert sent[1] == pg_append.FLUSH
    sent.clear()
    store.append([_note(), _note()], expected_version=2)  # anything else: durable at commit
    assert len(sent) == 1
    assert b"synchronous_commit" not in sent[0]
    store.close()


def _crash(server: PgServer) -> None:
    """Stop the server the way a crash does: no checkpoint, unwritten log lost."""
    pid = server.server.get_pid()
    os.kill(pid, signal.SIGQUIT)  # PostgreSQL's immediate shutdown
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    server.server.ensure_postgres_running()  # recovers from the log, as after a crash


def test_a_completion_reported_done_survives_a_server_crash_right_after() -> None:
    with started_server() as server:
        name = run_name("crash")
        store = PostgresStore(server.url, name)
        store.append([_note()], expected_version=0)
        store.append([_done("x")], expected_version=1)
        _crash(server)
        store.close()
        with psycopg.connect(server.url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT seq, type FROM skillnb_events WHERE run = %s ORDER BY seq", (name,)
            ).fetchall()
        assert rows == [(1, "note"), (2, "batch.item_done")]
