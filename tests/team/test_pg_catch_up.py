"""``PostgresStore.catch_up``: what a run's journal asks on each refresh, in one query at most.

It answers what ``read_since`` and ``head`` would together: the events after a version, or
``None`` when the run ends before it (the journal then loads again). While the head is known
(inside ``speculate`` or the lock) it asks the server nothing.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from pg import PgServer, run_name
from skillnb.run import open_run
from skillnb.store.postgres.store import PostgresStore


def _queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    original = psycopg.Connection.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(query.decode() if isinstance(query, bytes) else str(query))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    return sent


def test_catch_up_reads_the_events_after_a_version_in_one_query(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("catchup")
    writer = open_run(store=pg_server.url, name=name, memory=False)
    for n in range(4):
        writer.formalize("k", n)  # run.created, then four facts: head 5
    store = PostgresStore(pg_server.url, name)
    store.head()  # connected (the schema check is not counted below)
    sent = _queries(monkeypatch)
    assert [e.seq for e in store.catch_up(2, None) or []] == [3, 4, 5]
    assert store.catch_up(5, None) == []  # at the head: nothing new
    assert store.catch_up(7, None) is None  # beyond it: another, shorter run
    assert [e.seq for e in store.catch_up(0, None) or []] == [1, 2, 3, 4, 5]
    assert len(sent) == 4  # one statement each, no separate head query
    with store.speculate():  # the head it saw last is trusted: no query at all
        assert store.catch_up(5, None) == []
        assert store.catch_up(6, None) is None
    assert len(sent) == 4
    store.close()
    writer.close()


def test_a_journal_over_a_database_catches_up_with_another_writer(pg_server: PgServer) -> None:
    name = run_name("catchup-journal")
    mine = open_run(store=pg_server.url, name=name, memory=False)
    theirs = open_run(store=pg_server.url, name=name, memory=False)
    mine.formalize("a", 1)
    theirs.formalize("b", 2)
    theirs.formalize("a", 3)
    assert mine.fact("a").value == 3  # read after a refresh that caught up
    assert mine.fact("b").value == 2
    assert mine.version == theirs.version == 4
    store = PostgresStore(pg_server.url, name)
    with store.lock():  # under the lock the head is exact: nothing to ask
        assert store.catch_up(4, None) == []
        assert [e.seq for e in store.catch_up(3, None) or []] == [4]
    for run in (mine, theirs):
        run.close()
    store.close()
