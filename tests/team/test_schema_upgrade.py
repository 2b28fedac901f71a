"""A database set up and written by the previous schema version, upgraded in place.

Schema version 1 is built with its own SQL (``MIGRATIONS[0]``) and written through its own
``skillnb_append`` (five arrays), as an older skillnb did; ``skillnb db upgrade`` must then
keep every event byte for byte and let today's code continue the run.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.cli.main import main
from skillnb.core.records import Event
from skillnb.errors import ConflictError
from skillnb.run import open_run
from skillnb.store.journal import event_text
from skillnb.store.pg_schema import MIGRATIONS, SCHEMA_VERSION
from skillnb.store.postgres import PostgresStore


def _v1_database(pg_server: PgServer) -> str:
    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(MIGRATIONS[0].encode())
    return url


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


def _event(seq: int, type_: str, **data: object) -> Event:
    return Event(seq=seq, type=type_, at=datetime.now(UTC), data=data)  # type: ignore[arg-type]


def test_upgrading_a_written_version_1_database_keeps_its_runs_and_lets_them_continue(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SCHEMA_VERSION == 2
    url = _v1_database(pg_server)
    name = run_name("old")
    fact = {
        "key": "k",
        "value": "Résumé \u0000 ✓",  # a NUL: kept in the line, no JSONB copy
        "encoding": "json",
        "restorable": True,
        "kind": "data",
        "version": 1,
        "at": datetime.now(UTC).isoformat(),
    }
    old = [_event(1, "run.created", run_id="abc123abc123"), _event(2, "fact.formalized", fact=fact)]
    assert _v1_append(url, name, 0, old) == (True, 2)
    with pytest.raises(Exception, match="run `skillnb db upgrade URL`"):
        PostgresStore(url, name).head()  # this skillnb asks for the upgrade, changes nothing

    assert main(["db", "upgrade", url]) == 0
    assert "upgraded from version 1 to 2" in capsys.readouterr().out
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
            "SELECT seq, data IS NULL, line FROM skillnb_events WHERE run = %s ORDER BY seq",
            (name,),
        ).fetchall()
        functions = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = 'skillnb_append'"
        ).fetchone()
    assert [(seq, nul) for seq, nul, _ in rows] == [(1, False), (2, True), (3, False)]
    assert '"value":"new"' in rows[2][2]
    assert functions == (1,)  # the version 1 function is gone, not left beside the new one
    assert main(["db", "upgrade", url]) == 0
    assert "already at version 2" in capsys.readouterr().out


def test_the_functions_spell_the_lock_key_and_channel_the_python_side_uses() -> None:
    from skillnb.store.pg_schema import CHANNEL, LOCK_CLASS

    for version in (0, 1):
        assert f"pg_advisory_xact_lock({LOCK_CLASS}, hashtext(p_run))" in MIGRATIONS[version]
        assert f"pg_notify('{CHANNEL}', p_run)" in MIGRATIONS[version]
