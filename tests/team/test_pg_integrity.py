"""What the team store trusts, and what it checks instead of row checksums (real PostgreSQL).

The database rows carry no checksum: whoever may edit a row may recompute one, and the
server checks its own pages and WAL. What skillnb's writers never do, the schema refuses: an
event row is never updated or deleted (so a deleted last row cannot hand its sequence number
to the next write), and a run is created only by its event 1; a reader also refuses a line
that creates the run again.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store.postgres.store import PostgresStore


def _written(url: str) -> str:
    name = run_name("integrity")
    with open_run(store=url, name=name, memory=False) as run:
        run.formalize("budget", 5300)
        run.formalize("owner", "ann")
    return name


def test_event_rows_cannot_be_edited_deleted_or_truncated(pg_server: PgServer) -> None:
    url = fresh_database(pg_server)
    name = _written(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in (
            "UPDATE skillnb_events SET line = replace(line, '5300', '4300') WHERE run = %s",
            "DELETE FROM skillnb_events WHERE run = %s AND seq = 3",
        ):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
                conn.execute(statement.encode(), (name,))
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
            conn.execute("TRUNCATE skillnb_events")
    with open_run(store=url, name=name, memory=False) as run:
        assert run.fact("budget").value == 5300
        assert run.version == 3
        run.formalize("budget", 5400)  # the next write takes a new number, never a reused one
        assert run.version == 4


def test_a_second_run_created_is_refused_on_write_and_on_read(pg_server: PgServer) -> None:
    url = fresh_database(pg_server)
    name = _written(url)
    forged = {"v": 1, "seq": 4, "type": "run.created", "at": "2024-01-01T00:00:00Z"}
    forged["data"] = {"run_id": "someone-else"}
    line = json.dumps(forged, separators=(",", ":"))
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO skillnb_events (run, seq, type, at, line) "
                "VALUES (%s, 4, 'run.created', now(), %s)",
                (name, line),
            )
        # A row whose type column hides what its line says: the reader refuses it.
        conn.execute(
            "INSERT INTO skillnb_events (run, seq, type, at, line) "
            "VALUES (%s, 4, 'note.added', now(), %s)",
            (name, line),
        )
    with pytest.raises(StoreCorrupted, match="event 4 creates the run again"):
        PostgresStore(url, name).load()
