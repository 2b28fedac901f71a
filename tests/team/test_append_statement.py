"""The team store's append statements on a real PostgreSQL: what they write and refuse.

An append is one ``INSERT`` (``skillnb.store.postgres.append``): one event after the run's first
sends its fields apart, anything else sends the lines as a JSON array. Both must keep each
line's exact text, refuse a version that is not the head (behind it or ahead of it) without
writing, and wait for a writer that holds the run's lock.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import psycopg
import pytest

from pg import PgServer, run_name
from skillnb.core.runstate.records import Event, EventDraft, JsonValue
from skillnb.errors import ConflictError
from skillnb.store.postgres.append import one_params, takes_one
from skillnb.store.postgres.store import PostgresStore
from skillnb.store.sidecar.journal import event_text


def _draft(kind: str = "note", **data: JsonValue) -> EventDraft:
    return EventDraft(type=kind, at=datetime.now(UTC), data=data)


def _rows(url: str, name: str) -> list[tuple[int, str, bool, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT seq, type, data IS NULL, line FROM skillnb_event_data WHERE run = %s "
            "ORDER BY seq",
            (name,),
        ).fetchall()
    return [(int(s), str(t), bool(n), str(line)) for s, t, n, line in rows]


def test_payloads_with_a_nul_keep_their_line_on_both_statements(pg_server: PgServer) -> None:
    name = run_name("nul")
    store = PostgresStore(pg_server.url, name)
    written = store.append(
        [_draft("a", text="x\u0000y"), _draft("b", text="plain")], expected_version=0
    )  # the JSON array statement
    written += store.append([_draft("c", text="\u0000")], expected_version=2)  # one event
    written += store.append([_draft("d", nested={"k": ["é", 1.5]})], expected_version=3)
    rows = _rows(pg_server.url, name)
    assert [(s, t, n) for s, t, n, _ in rows] == [
        (1, "a", True),  # JSONB cannot hold a NUL: the view shows no payload
        (2, "b", False),
        (3, "c", True),
        (4, "d", False),
    ]
    assert [line for *_, line in rows] == [event_text(e).decode() for e in written]
    again = PostgresStore(pg_server.url, name)
    assert [e.data for e in again.history()] == [e.data for e in written]
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        data = conn.execute(
            "SELECT data FROM skillnb_event_data WHERE run = %s AND seq = 4", (name,)
        ).fetchone()
        listed = conn.execute("SELECT count(*) FROM skillnb_runs WHERE name = %s", (name,))
        assert listed.fetchone() == (1,)  # the first append recorded the run's name
    assert data == ({"nested": {"k": ["é", 1.5]}},)
    store.close()
    again.close()


def test_one_event_after_the_first_takes_the_short_statement() -> None:
    draft = _draft("fact.formalized", fact={"key": "k"})
    event = Event(seq=5, type=draft.type, at=draft.at, data=draft.data)
    line = event_text(event)
    assert takes_one(4, [event])
    params = one_params("r", 4, event, line)
    assert params[1] == b"4"
    assert params[3] == draft.at.isoformat().encode()  # cut out of the line too
    assert params[4] == line  # the event's one copy: its payload is read from it by the view
    assert not takes_one(0, [event])  # the run's first append also records its name
    assert not takes_one(4, [event, event])
    done = Event(seq=5, type="batch.item_done", at=draft.at, data={"batch": "b", "item": "i"})
    assert not takes_one(4, [done])  # it also marks the item done


def test_a_statement_the_server_forgot_is_prepared_again(pg_server: PgServer) -> None:
    name = run_name("forgot")
    store = PostgresStore(pg_server.url, name)
    store.append([_draft()], expected_version=0)
    store.append([_draft()], expected_version=1)  # prepared on this connection now
    store._call(lambda conn: conn.execute("DEALLOCATE ALL"))
    store.append([_draft()], expected_version=2)
    assert [seq for seq, *_ in _rows(pg_server.url, name)] == [1, 2, 3]
    store.close()


@pytest.mark.parametrize("events", [1, 2])
def test_a_version_ahead_of_the_head_is_refused_and_writes_nothing(
    pg_server: PgServer, events: int
) -> None:
    name = run_name("ahead")
    store = PostgresStore(pg_server.url, name)
    store.append([_draft()], expected_version=0)
    with pytest.raises(ConflictError) as refused:
        store.append([_draft() for _ in range(events)], expected_version=5)
    assert (refused.value.expected, refused.value.actual) == (5, 1)
    with pytest.raises(ConflictError):
        PostgresStore(pg_server.url, run_name("empty")).append([_draft()], expected_version=3)
    assert [seq for seq, *_ in _rows(pg_server.url, name)] == [1]
    store.close()


@pytest.mark.parametrize("events", [1, 3])
def test_a_version_behind_the_head_is_refused_by_the_key_and_writes_nothing(
    pg_server: PgServer, events: int
) -> None:
    name = run_name("behind")
    mine, theirs = PostgresStore(pg_server.url, name), PostgresStore(pg_server.url, name)
    mine.append([_draft("first")], expected_version=0)
    theirs.append([_draft("theirs")], expected_version=1)
    with pytest.raises(ConflictError) as refused:
        mine.append([_draft("mine") for _ in range(events)], expected_version=1)
    assert (refused.value.expected, refused.value.actual) == (1, 2)
    assert [e.type for e in mine.read_since(1)] == ["theirs"]  # brought back by the refusal
    assert [t for _, t, *_ in _rows(pg_server.url, name)] == ["first", "theirs"]
    mine.append([_draft("mine")], expected_version=2)
    assert [t for _, t, *_ in _rows(pg_server.url, name)] == ["first", "theirs", "mine"]
    mine.close()
    theirs.close()


def test_an_append_waits_for_the_writer_that_holds_the_runs_lock(pg_server: PgServer) -> None:
    name = run_name("locked")
    holder, other = PostgresStore(pg_server.url, name), PostgresStore(pg_server.url, name)
    holder.append([_draft()], expected_version=0)
    other.append([_draft()], expected_version=1)
    outcome: list[object] = []

    def append() -> None:
        try:
            outcome.append(other.append([_draft("other")], expected_version=2))
        except ConflictError as exc:
            outcome.append(exc)

    with holder.lock():
        assert holder.head() == 2
        thread = threading.Thread(target=append)
        thread.start()
        time.sleep(0.5)
        assert outcome == []  # held back by the lock, not written beside the holder's
        holder.append([_draft("holder")], expected_version=2)
    thread.join(timeout=30)
    [refused] = outcome
    assert isinstance(refused, ConflictError)  # the holder's event took version 3
    assert [t for _, t, *_ in _rows(pg_server.url, name)] == ["note", "note", "holder"]
    holder.close()
    other.close()
