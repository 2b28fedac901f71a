"""The one-event append's common path on a real PostgreSQL: lean, and still safe to retry.

An append on an open, idle connection goes straight to its statement; the retry machinery
(backoff delays, reconnecting, recognising a write whose reply was lost) only starts once
that statement fails. These tests check both halves: nothing of the retry path runs when
nothing fails, and a reply lost with its connection after the commit is recognised on the
new connection, neither written twice nor refused as a conflict.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pydantic import ValidationError

from pg import PgServer, run_name
from skillnb.core.runstate.records import CheckedDraft, Event, EventDraft, JsonValue
from skillnb.store.postgres import wire as pg_wire
from skillnb.store.postgres.session import Retry
from skillnb.store.postgres.store import PostgresStore


def _draft(kind: str) -> EventDraft:
    return EventDraft(type=kind, at=datetime.now(UTC), data={"kind": kind})


def _types(url: str, name: str) -> list[tuple[int, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT seq, type FROM skillnb_events WHERE run = %s ORDER BY seq", (name,)
        ).fetchall()
    return [(int(s), str(t)) for s, t in rows]


def test_appends_on_an_open_connection_skip_the_retry_bookkeeping(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_server.url, run_name("lean"))
    store.append([_draft("a")], expected_version=0)  # connects (the retry path does that)

    def delays(_self: Retry) -> list[float]:
        raise AssertionError("an append that did not fail computed its retry delays")

    monkeypatch.setattr(Retry, "delays", delays)
    for n in range(1, 4):
        store.append([_draft(f"e{n}")], expected_version=n)
    assert store.head() == 4
    store.close()


def test_a_reply_lost_with_its_connection_is_recognised_not_written_twice(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("lost-reply")
    store = PostgresStore(pg_server.url, name)
    store.append([_draft("a")], expected_version=0)
    store.append([_draft("b")], expected_version=1)  # the one-event statement, prepared
    real = pg_wire._round_trip
    lost: list[int] = []

    def commit_then_lose_the_reply(conn: Any, statement: Any, params: Any) -> Any:
        result = real(conn, statement, params)  # committed on the server
        if lost:
            return result
        lost.append(conn.info.backend_pid)
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        conn.close()
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(pg_wire, "_round_trip", commit_then_lose_the_reply)
    written = store.append([_draft("c")], expected_version=2)
    assert lost  # the reply was lost once
    assert [e.seq for e in written] == [3]
    assert _types(pg_server.url, name) == [(1, "a"), (2, "b"), (3, "c")]
    store.append([_draft("d")], expected_version=3)  # and the new connection goes on
    assert _types(pg_server.url, name)[-1] == (4, "d")
    store.close()


def test_a_checked_draft_becomes_its_event_without_validating_again(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_server.url, run_name("checked"))
    store.append([_draft("a")], expected_version=0)
    data: dict[str, JsonValue] = {"fact": {"key": "k", "value": [1, "two"]}}
    checked = CheckedDraft(type="fact.formalized", at=datetime.now(UTC), data=data)
    plain = EventDraft(type="note", at=datetime.now(UTC), data={})
    plain.data[1] = "a key that is not text"  # type: ignore[index]  # changed after it was made
    validated = Event(seq=2, type=checked.type, at=checked.at, data=checked.data)

    def no_validation(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a checked draft's event was validated again")

    with monkeypatch.context() as patch:
        patch.setattr(Event, "__init__", no_validation)
        [event] = store.append([checked], expected_version=1)
    assert event == validated
    assert event.data is not checked.data  # the event owns its data
    with pytest.raises(ValidationError):
        store.append([plain], expected_version=2)  # other drafts are validated anew
    assert store.head() == 2
    store.close()
