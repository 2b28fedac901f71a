"""A formalize on a database run: one statement when nobody else wrote, right when they did.

The store trusts the head it saw last and lets the append's compare-and-swap check it
(``PostgresStore.speculate``). These tests count the statements a formalize sends on a real
server, then make that trust wrong on purpose (another writer in between) and check that
nothing is lost, doubled or wrongly refused. A refused one-event append asks for the head
and what it missed in a second statement, never with a read of the journal when it missed
little.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from pg import PgServer, run_name
from skillnb.errors import ConflictError
from skillnb.run import Run, open_run
from skillnb.store.postgres import append as pg_append
from skillnb.store.postgres.wire import Prepared


@contextmanager
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record the text of every statement the connections of this process execute.

    The one-event append goes to libpq directly (``pg_wire``): it is recorded there. Its
    ``PREPARE``, sent once per connection, is not.
    """
    sent: list[str] = []
    original = psycopg.Connection.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query.decode() if isinstance(query, bytes) else str(query)
        if not text.startswith("PREPARE skillnb_"):  # once per connection, not per write
            sent.append(" ".join(text.split()))
        return original(self, query, *args, **kwargs)

    prepared = pg_append.execute_prepared

    def execute_prepared(conn: Any, statement: Prepared, params: Any) -> Any:
        sent.append(" ".join(statement.sql.split()))
        return prepared(conn, statement, params)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Connection, "execute", execute)
        patch.setattr(pg_append, "execute_prepared", execute_prepared)
        yield sent


def _appends(sent: list[str]) -> int:
    return sum(
        s.startswith("WITH k AS MATERIALIZED") and "INSERT INTO skillnb_events" in s for s in sent
    )


def _refusals(sent: list[str]) -> int:
    return sum(s.startswith("SELECT head, missed FROM skillnb_refused") for s in sent)


def _open(url: str, name: str) -> Run:
    return open_run(store=url, name=name, memory=False)


def test_a_formalize_after_the_writers_own_write_is_one_statement(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("one")
    run = _open(pg_server.url, name)
    run.formalize("k", 0)  # creates the run
    with statements(monkeypatch) as sent:
        for n in range(1, 4):
            run.formalize("k", n)
    assert len(sent) == 3
    assert _appends(sent) == 3
    other = _open(pg_server.url, name)
    assert [f.value for f in other.fact_history("k")] == [0, 1, 2, 3]
    assert other.version == run.version == 5  # run.created and four facts


def test_another_writer_in_between_costs_two_more_statements_and_no_read(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("stale")
    mine, theirs = _open(pg_server.url, name), _open(pg_server.url, name)
    mine.formalize("k", 1)
    theirs.formalize("k", 2)  # mine's idea of the head is now two behind
    theirs.formalize("other", "x")
    with statements(monkeypatch) as sent:
        fact = mine.formalize("k", 3)
    # Refused on the stale head (nothing written), told the head and the two events it
    # missed; then committed after them, without a read of its own.
    assert len(sent) == 3
    assert (_appends(sent), _refusals(sent)) == (2, 1)
    assert fact.version == 3  # numbered after theirs, which it saw before writing
    check = _open(pg_server.url, name)
    assert [f.value for f in check.fact_history("k")] == [1, 2, 3]
    assert check.fact("other").value == "x"
    assert check.version == 5  # run.created + 4 facts: no event lost or doubled
    with statements(monkeypatch) as sent:
        mine.formalize("k", 4)  # caught up again: one statement
    assert len(sent) == 1
    theirs.formalize("other", "y")
    with statements(monkeypatch) as sent:
        fact = mine.formalize("k", 5)
    # Refused lately, so its appends answer their own refusal for a while: no head query.
    assert (len(sent), _appends(sent), _refusals(sent)) == (2, 2, 0)
    assert fact.version == 5
    assert [f.value for f in _open(pg_server.url, name).fact_history("k")] == [1, 2, 3, 4, 5]


def test_expected_version_is_judged_on_the_servers_head_not_the_cached_one(
    pg_server: PgServer,
) -> None:
    name = run_name("cas")
    mine, theirs = _open(pg_server.url, name), _open(pg_server.url, name)
    mine.formalize("n", 1)
    stale = mine.version
    theirs.formalize("n", 2)
    with pytest.raises(ConflictError) as caught:
        mine.formalize("n", 3, expected_version=stale)
    assert (caught.value.expected, caught.value.actual) == (stale, stale + 1)
    # The version another process reported is right even though this object never saw it.
    fact = mine.formalize("n", 4, expected_version=theirs.version)
    assert fact.version == 3
    assert [f.value for f in _open(pg_server.url, name).fact_history("n")] == [1, 2, 4]


def test_a_run_created_by_two_writers_at_once_gets_one_run_created_event(
    pg_server: PgServer,
) -> None:
    name = run_name("new")
    first, second = _open(pg_server.url, name), _open(pg_server.url, name)
    first.formalize("a", 1)
    second.formalize("b", 2)  # it saw an empty run: its speculative run.created is refused
    events = list(_open(pg_server.url, name).store.history())
    assert [e.type for e in events] == ["run.created", "fact.formalized", "fact.formalized"]
    assert second.id == first.id


def test_far_behind_it_reads_what_it_missed_and_still_writes_once(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("far")
    mine, theirs = _open(pg_server.url, name), _open(pg_server.url, name)
    mine.formalize("k", 0)
    for n in range(150):  # more than a refusal brings back
        theirs.formalize(f"t{n}", n)
    with statements(monkeypatch) as sent:
        fact = mine.formalize("k", 1)
    assert (_appends(sent), _refusals(sent)) == (2, 1)
    assert any(s.startswith("SELECT seq, line FROM skillnb_events") for s in sent)
    assert fact.version == 2
    assert mine.fact("t149").value == 149
    check = _open(pg_server.url, name)
    assert check.version == 153  # run.created, k, 150 facts of theirs, k again
    assert [f.value for f in check.fact_history("k")] == [0, 1]
