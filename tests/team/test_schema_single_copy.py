"""Schema version 4 keeps each event once; a version 3 database is upgraded in place.

The version 3 database is built with its own SQL (``MIGRATIONS[0..2]``) and written the way
version 3's appends wrote, with the payload's JSONB copy beside the line. After
``skillnb db upgrade`` every event reads back byte for byte, the view answers the payload
queries the column used to, and today's code continues the run. An upgrade that fails half
way (an object of the team's own that depends on the dropped column) changes nothing.
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

_V3_INSERT = (
    "INSERT INTO skillnb_events (run, seq, type, at, data, line) "
    "VALUES (%s, %s, %s, %s, %s::jsonb -> 'data', %s)"
)


def _v3_database(pg_server: PgServer) -> str:
    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        for step in range(3):
            conn.execute(MIGRATIONS[step].encode())
        conn.execute("UPDATE skillnb_schema SET version = 3")
    return url


def _v3_write(url: str, name: str, events: list[Event]) -> list[str]:
    """Write ``events`` as version 3 did (line and JSONB payload); return their lines."""
    lines = [event_text(e).decode() for e in events]
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("INSERT INTO skillnb_runs (name) VALUES (%s) ON CONFLICT DO NOTHING", (name,))
        for event, line in zip(events, lines, strict=True):
            plain = "\\u0000" not in line  # JSONB cannot hold a NUL: version 3 kept no copy
            data = line if plain else None
            conn.execute(_V3_INSERT, (name, event.seq, event.type, event.at, data, line))
    return lines


def _event(seq: int, type_: str, **data: object) -> Event:
    return Event(seq=seq, type=type_, at=datetime.now(UTC), data=data)  # type: ignore[arg-type]


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


def _written_v3_run(url: str, name: str) -> list[str]:
    old = [
        _event(1, "run.created", run_id="fed789fed789"),
        _event(2, "fact.formalized", fact=_fact("Résumé ✓")),
        _event(3, "fact.formalized", fact=_fact("with a \u0000 inside")),
        _event(4, "batch.declared", batch="b", items=["i1", "i2"]),
    ]
    lines = _v3_write(url, name, old)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO skillnb_items (run, batch, item, pos) VALUES (%s, 'b', 'i1', 1), "
            "(%s, 'b', 'i2', 2)",
            (name, name),
        )
    return lines


def _columns(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'skillnb_events' ORDER BY ordinal_position"
        ).fetchall()
    return [str(r[0]) for r in rows]


def test_upgrading_a_written_version_3_database_keeps_each_event_once_and_continues(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SCHEMA_VERSION >= 4
    url = _v3_database(pg_server)
    name = run_name("v3")
    lines = _written_v3_run(url, name)
    with pytest.raises(Exception, match="run `skillnb db upgrade URL`"):
        PostgresStore(url, name).head()

    assert main(["db", "upgrade", url]) == 0
    assert f"upgraded from version 3 to {SCHEMA_VERSION}" in capsys.readouterr().out
    assert _columns(url) == ["run", "seq", "type", "at", "line"]
    store = PostgresStore(url, name)
    assert [event_text(e).decode() for e in store.history()] == lines  # byte for byte
    with psycopg.connect(url, autocommit=True) as conn:
        payloads = conn.execute(
            "SELECT seq, data -> 'fact' ->> 'value', data IS NULL FROM skillnb_event_data "
            "WHERE run = %s AND type = 'fact.formalized' ORDER BY seq",
            (name,),
        ).fetchall()
    assert payloads == [(2, "Résumé ✓", False), (3, None, True)]  # a NUL: no JSONB payload
    with pytest.raises(ConflictError):
        store.append([EventDraft(type="note", at=datetime.now(UTC))], expected_version=3)
    done = EventDraft(
        type="batch.item_done", at=datetime.now(UTC), data={"batch": "b", "item": "i2"}
    )
    store.append([done], expected_version=4)  # the completion marks its row, read from the line
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT item, done FROM skillnb_items WHERE run = %s ORDER BY pos", (name,)
        ).fetchall()
    assert rows == [("i1", False), ("i2", True)]

    run = open_run(store=url, name=name, memory=False)
    assert run.id == "fed789fed789"
    assert run.fact("k").value == "with a \u0000 inside"
    run.formalize("k", "v4")
    run.formalize("k", "v4 again")  # the one-event statement
    assert open_run(store=url, name=name, memory=False).fact("k").value == "v4 again"
    run.close()
    assert main(["db", "upgrade", url]) == 0
    assert f"already at version {SCHEMA_VERSION}" in capsys.readouterr().out


def test_an_upgrade_that_fails_half_way_leaves_version_3_as_it_was(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _v3_database(pg_server)
    name = run_name("v3")
    lines = _written_v3_run(url, name)
    with psycopg.connect(url, autocommit=True) as conn:  # a team's report on the old column
        conn.execute("CREATE VIEW team_report AS SELECT run, data FROM skillnb_events")

    assert main(["db", "upgrade", url]) == 1
    err = capsys.readouterr().err
    assert "team_report" in err  # the server names what is in the way
    assert _columns(url) == ["run", "seq", "type", "at", "data", "line"]
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT (SELECT max(version) FROM skillnb_schema), "
            "to_regclass('skillnb_event_data') IS NULL, "
            "(SELECT array_agg(line ORDER BY seq) FROM skillnb_events WHERE run = %s)",
            (name,),
        ).fetchone()
        assert found == (3, True, lines)
        conn.execute("DROP VIEW team_report")
    assert main(["db", "upgrade", url]) == 0
    assert f"upgraded from version 3 to {SCHEMA_VERSION}" in capsys.readouterr().out
    store = PostgresStore(url, name)
    assert [event_text(e).decode() for e in store.history()] == lines
    store.close()
