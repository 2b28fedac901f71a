"""Databases set up and written by previous schema versions, upgraded in place.

Schema versions 1 and 2 are built with their own SQL (``MIGRATIONS[0]``, ``MIGRATIONS[1]``)
and written through their own ``skillnb_append`` functions (five arrays; one JSON text), as
older skillnbs did; ``skillnb db upgrade`` must then keep every event byte for byte and let
today's code continue the run.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.cli.main import main
from skillnb.core.runstate.records import Event, EventDraft
from skillnb.errors import ConflictError
from skillnb.run import open_run
from skillnb.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from skillnb.store.postgres.store import PostgresStore
from skillnb.store.sidecar.journal import event_text


def _database_at(pg_server: PgServer, version: int) -> str:
    """A new database whose schema is at ``version``, built as that skillnb built it."""
    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        for step in range(version):
            conn.execute(MIGRATIONS[step].encode())
        conn.execute("UPDATE skillnb_schema SET version = %s", (version,))
    return url


def _v1_database(pg_server: PgServer) -> str:
    return _database_at(pg_server, 1)


def _v1_append(url: str, name: str, expected: int, events: list[Event]) -> tuple[bool, int]:
    lines = [event_text(e).decode() for e in events]
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT ok, head FROM skillnb_append(%s, %s, %s, %s, %s, %s)",
            (
                name,
                expected,
                [e.type for e in events],
                [e.at.isoformat() for e in events],
                lines,
                ["\\u0000" not in line for line in lines],
            ),
        ).fetchone()
    assert row is not None
    return bool(row[0]), int(row[1])


def _v2_append(url: str, name: str, expected: int, events: list[Event]) -> tuple[bool, int]:
    lines = ",".join(event_text(e).decode() for e in events)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT ok, head FROM skillnb_append(%s, %s, %s)", (name, expected, f"[{lines}]")
        ).fetchone()
    assert row is not None
    return bool(row[0]), int(row[1])


def _fact(value: str) -> dict[str, object]:
    return {
        "key": "k",
        "value": value,
        "encoding": "json",
        "restorable": True,
        "kind": "data",
        "version": 1,
        "at": datetime.now(UTC).isoformat(),
    }


def _event(seq: int, type_: str, **data: object) -> Event:
    return Event(seq=seq, type=type_, at=datetime.now(UTC), data=data)  # type: ignore[arg-type]


def test_upgrading_a_written_version_1_database_keeps_its_runs_and_lets_them_continue(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _v1_database(pg_server)
    name = run_name("old")
    fact = _fact("Résumé \u0000 ✓")  # a NUL: kept in the line, no JSONB copy
    old = [_event(1, "run.created", run_id="abc123abc123"), _event(2, "fact.formalized", fact=fact)]
    assert _v1_append(url, name, 0, old) == (True, 2)
    with pytest.raises(Exception, match="run `skillnb db upgrade URL`"):
        PostgresStore(url, name).head()  # this skillnb asks for the upgrade, changes nothing

    assert main(["db", "upgrade", url]) == 0
    assert f"upgraded from version 1 to {SCHEMA_VERSION}" in capsys.readouterr().out
    store = PostgresStore(url, name)
    assert [event_text(e) for e in store.history()] == [event_text(e) for e in old]
    with pytest.raises(ConflictError):
        store.append([], expected_version=1)
    store.close()

    run = open_run(store=url, name=name, memory=False)
    assert run.id == "abc123abc123"
    assert run.fact("k").value == "Résumé \u0000 ✓"
    run.formalize("k", "new")
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT seq, data IS NULL, line FROM skillnb_event_data WHERE run = %s ORDER BY seq",
            (name,),
        ).fetchall()
        functions = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = 'skillnb_append'"
        ).fetchone()
    assert [(seq, nul) for seq, nul, _ in rows] == [(1, False), (2, True), (3, False)]
    assert '"value":"new"' in rows[2][2]
    assert functions == (0,)  # appends are statements now: no function is left behind
    assert main(["db", "upgrade", url]) == 0
    assert f"already at version {SCHEMA_VERSION}" in capsys.readouterr().out


def test_upgrading_a_written_version_2_database_keeps_its_runs_items_and_listening(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _database_at(pg_server, 2)
    name = run_name("v2")
    old = [
        _event(1, "run.created", run_id="def456def456"),
        _event(2, "fact.formalized", fact=_fact("Résumé ✓")),
    ]
    assert _v2_append(url, name, 0, old) == (True, 2)
    more = [_event(3, "note", text="written by schema version 2")]
    assert _v2_append(url, name, 2, more) == (True, 3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO skillnb_items (run, batch, item, pos) VALUES (%s, 'b', 'i1', 0)", (name,)
        )
    with pytest.raises(Exception, match="run `skillnb db upgrade URL`"):
        PostgresStore(url, name).head()

    assert main(["db", "upgrade", url]) == 0
    assert f"upgraded from version 2 to {SCHEMA_VERSION}" in capsys.readouterr().out
    with psycopg.connect(url, autocommit=True) as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM pg_proc WHERE proname = 'skillnb_append'), "
            "to_regclass('skillnb_listeners') IS NULL, "
            "(SELECT count(*) FROM information_schema.columns "
            "WHERE table_name = 'skillnb_runs' AND column_name IN ('version', 'updated_at')), "
            "(SELECT count(*) FROM pg_constraint WHERE conname = 'skillnb_events_run_fkey')"
        ).fetchone()
    assert left == (0, True, 0, 0)

    store, waiter = PostgresStore(url, name), PostgresStore(url, name)
    assert store.head() == 3
    assert store.exists()
    assert [event_text(e) for e in store.history()] == [event_text(e) for e in old + more]
    assert waiter.wait_for_change(3, timeout=0.1) == 3  # listening from now on
    with pytest.raises(ConflictError):
        store.append([EventDraft(type="note", at=datetime.now(UTC))], expected_version=2)
    store.append(
        [
            EventDraft(
                type="batch.item_done", at=datetime.now(UTC), data={"batch": "b", "item": "i1"}
            )
        ],
        expected_version=3,
    )
    assert waiter.wait_for_change(3, timeout=30) == 4  # woken by the append's notification
    with psycopg.connect(url, autocommit=True) as conn:
        done = conn.execute("SELECT done FROM skillnb_items WHERE run = %s", (name,)).fetchone()
    assert done == (True,)
    store.close()
    waiter.close()
    run = open_run(store=url, name=name, memory=False)
    assert run.id == "def456def456"
    assert run.fact("k").value == "Résumé ✓"
    assert run.formalize("k", "v3 \u0000").version == 2  # version 2 could not write a NUL
    assert open_run(store=url, name=name, memory=False).fact("k").value == "v3 \u0000"
    assert run.version == 5


def test_the_functions_spell_the_lock_key_and_channel_the_python_side_uses() -> None:
    from skillnb.store.postgres.schema import CHANNEL, LOCK_CLASS

    for version in (0, 1):
        assert f"pg_advisory_xact_lock({LOCK_CLASS}, hashtext(p_run))" in MIGRATIONS[version]
        assert f"pg_notify('{CHANNEL}', p_run)" in MIGRATIONS[version]
