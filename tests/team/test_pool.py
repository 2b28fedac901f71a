"""Short-lived stores borrowing connections from the process's pool (a server's requests)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.run import open_run
from skillnb.store.choose import open_store
from skillnb.store.postgres.pool import MAX_SIZE, close_pools
from skillnb.store.postgres.schema import LOCK_CLASS


@pytest.fixture
def url(pg_server: PgServer) -> Iterator[str]:
    made = fresh_database(pg_server)
    yield made
    close_pools()


def _backends(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'skillnb' "
            "AND datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else -1


def _advisory_locks(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        # Run locks only: a listener elsewhere on the server holds its listen key meanwhile.
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid",
            (LOCK_CLASS,),
        ).fetchone()
    return int(row[0]) if row else -1


def test_fifty_requests_share_a_few_connections_and_leave_no_lock_behind(url: str) -> None:
    name = run_name("pool")
    for n in range(50):
        store = open_store(url, name, pooled=True)
        with open_run(store=store, memory=False) as run:  # a request: open, write, close
            run.formalize("n", n)
            run.milestone(f"m{n}")  # a commit under the run's lock
        assert _backends(url) <= MAX_SIZE
        assert _advisory_locks(url) == 0
    assert _backends(url) >= 1  # kept for the next request
    check = open_store(url, name)
    with open_run(store=check, memory=False) as run:
        assert run.fact("n").value == 49
        assert len(run.fact_history("n")) == 50
    close_pools()
    deadline = time.monotonic() + 10
    while _backends(url) and time.monotonic() < deadline:
        time.sleep(0.05)  # a closed connection's backend exits a moment after the client
    assert _backends(url) == 0


def test_a_pooled_store_refuses_a_newer_schema_like_any_other(url: str) -> None:
    open_store(url, "x", pooled=True).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE skillnb_schema (version integer NOT NULL)")
        conn.execute("INSERT INTO skillnb_schema VALUES (99)")
    close_pools()
    store = open_store(url, "x", pooled=True)
    with pytest.raises(Exception, match="newer than this skillnb knows"):
        store.head()
    store.close()
