"""Faults of a team store on a real PostgreSQL: a server that stops, refuses or forbids writes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pg import PgServer, run_name, started_server
from skillnb.core.runstate.records import EventDraft
from skillnb.errors import StoreUnavailable
from skillnb.run import open_run
from skillnb.store.postgres.session import StoreReadOnly
from skillnb.store.postgres.store import PostgresStore
from skillnb.store.postgres.url import redact, scrub

SECRET = "pa55-w0rd:with@odd/chars"  # noqa: S105  # a test password, checked never to be shown


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    """A server this test may stop and restart without disturbing the others."""
    with started_server() as server:
        yield server


def _events(url: str, name: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, type FROM skillnb_events WHERE run = %s ORDER BY seq", (name,)
        ).fetchall()
    return [(int(s), str(t)) for s, t in rows]


def test_redaction_hides_passwords_in_every_form() -> None:
    url = f"postgresql://ann:{SECRET.replace('@', '%40').replace('/', '%2F')}@db:5432/x"
    assert redact(url) == "postgresql://ann:***@db:5432/x"
    assert redact("postgresql://db/x?user=ann&password=hunter2&sslmode=require") == (
        "postgresql://db/x?user=ann&password=***&sslmode=require"
    )
    assert redact("host=db password=hunter2 user=ann") == "host=db password=*** user=ann"
    assert redact("postgresql://ann@db/x") == "postgresql://ann@db/x"
    assert SECRET not in scrub(f"failed for {SECRET} at {url}", url)


def test_an_unreachable_server_is_store_unavailable_with_the_password_redacted(
    tmp_path: Path,
) -> None:
    url = f"postgresql://ann:{SECRET.replace('@', '%40').replace('/', '%2F')}@/db?host={tmp_path}"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as raised:
        open_run(store=url, name="market/weekly", memory=False)
    assert time.monotonic() - started < 10  # retried with backoff, then gave up
    text = str(raised.value)
    assert "postgresql://ann:***@/db" in text
    assert raised.value.location.startswith("postgresql://ann:***@")
    for shown in (text, raised.value.location, raised.value.detail, repr(raised.value)):
        assert "pa55" not in shown
    assert raised.value.__cause__ is None  # the driver's exception (with its DSN) is not chained


def test_a_server_stopped_mid_run_fails_cleanly_and_the_same_code_continues(
    own_server: PgServer,
) -> None:
    name = run_name("stop")
    run = open_run(store=own_server.url, name=name, memory=False)
    run.formalize("before", 1)
    version = run.version
    own_server.stop()
    with pytest.raises(StoreUnavailable, match="is unavailable"):
        run.formalize("during", 2)
    with pytest.raises(StoreUnavailable):
        _ = run.version  # reads see other writers' commits, so they need the server too
    own_server.start()
    assert run.version == version
    assert run.fact("during") is None
    assert _events(own_server.url, name)[-1] == (version, "fact.formalized")  # no partial write
    run.formalize("after", 3)  # same objects, new connection
    assert run.version == version + 1
    assert [t for _, t in _events(own_server.url, name)][-2:] == [
        "fact.formalized",
        "fact.formalized",
    ]
    again = open_run(store=own_server.url, name=name, memory=False)
    assert sorted(again.facts) == ["after", "before"]


def test_a_short_outage_is_ridden_out_by_retrying(own_server: PgServer) -> None:
    name = run_name("blip")
    run = open_run(store=own_server.url, name=name, memory=False)
    run.formalize("a", 1)
    own_server.stop()
    restart = threading.Timer(0.3, own_server.start)
    restart.start()
    try:
        run.formalize("b", 2)  # waits with backoff (0.05 s, 0.1 s, ... 1.6 s) for the server
    finally:
        restart.join()
    assert run.fact("b") is not None
    assert [t for _, t in _events(own_server.url, name)].count("fact.formalized") == 2


def test_a_connection_lost_under_the_lock_fails_instead_of_writing_unlocked(
    pg_server: PgServer,
) -> None:
    store = PostgresStore(pg_server.url, run_name("kill"))
    store.append([EventDraft(type="a", at=_now())], expected_version=0)
    with store.lock():
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks "
                "WHERE locktype = 'advisory' AND granted AND objid = (hashtext(%s)::bigint "
                "& 4294967295)::text::oid",
                (store.name,),
            )
        with pytest.raises(StoreUnavailable, match="while holding the run's lock"):
            store.append([EventDraft(type="b", at=_now())], expected_version=1)
    assert store.head() == 1  # reconnects outside the lock
    store.append([EventDraft(type="b", at=_now())], expected_version=1)
    assert store.head() == 2
    store.close()


def test_a_read_only_role_reads_and_gets_a_clear_error_on_writing(pg_server: PgServer) -> None:
    name = run_name("ro")
    open_run(store=pg_server.url, name=name, memory=False).formalize("budget", 5)
    role = f"reader_{name.rsplit('/', 1)[1]}"
    pg_server.sql(
        f"CREATE ROLE {role} LOGIN PASSWORD 'hunter2-ro'; "
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"
    )
    url = pg_server.url_for("postgres", user=role, password="hunter2-ro")  # noqa: S106
    reader = open_run(store=url, name=name, memory=False)
    assert reader.fact("budget").value == 5
    shown = [
        json.dumps(reader.describe()),
        reader.summary(),
        repr(reader),
        repr(reader.store),
        reader.store.location,
        json.dumps([e.model_dump(mode="json") for e in reader.history(50)]),
    ]
    assert all("hunter2" not in text for text in shown)
    assert "postgres" in reader.store.location
    with pytest.raises(StoreReadOnly) as raised:
        reader.formalize("budget", 6)
    assert "read-only for this role" in str(raised.value)
    assert "permission denied" in str(raised.value)
    assert "hunter2" not in str(raised.value)
    assert reader.fact("budget").value == 5


def test_a_writer_without_superuser_rights_completes_batch_items(pg_server: PgServer) -> None:
    name = run_name("plain-writer")
    open_run(store=pg_server.url, name=name, memory=False).formalize("ready", True)
    role = f"writer_{name.rsplit('/', 1)[1]}"
    pg_server.sql(
        f"CREATE ROLE {role} LOGIN PASSWORD 'hunter2-rw' NOSUPERUSER; "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}; "
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"
    )
    url = pg_server.url_for("postgres", user=role, password="hunter2-rw")  # noqa: S106
    writer = open_run(store=url, name=name, memory=False)
    done = list(writer.items("tickets", ["a", "b", "c"]))  # each completion waits for the disk
    assert done == ["a", "b", "c"]
    again = open_run(store=pg_server.url, name=name, memory=False)
    assert again.journal.refresh().batches["tickets"].done == ["a", "b", "c"]
    writer.close()
    again.close()


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.now(UTC)
