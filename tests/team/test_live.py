"""Live updates of team runs: LISTEN/NOTIFY wakes waiters and views, on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from pg import PgServer, run_name
from skillnb.core.runstate.records import EventDraft
from skillnb.jupyter.follow import ChangeFollower, loop_scheduler
from skillnb.store.postgres.store import PostgresStore


def _draft(kind: str = "note") -> EventDraft:
    return EventDraft(type=kind, at=datetime.now(UTC))


def test_a_waiter_wakes_when_another_connection_commits(pg_server: PgServer) -> None:
    name = run_name("live")
    waiter, writer, other = (
        PostgresStore(pg_server.url, name),
        PostgresStore(pg_server.url, name),
        PostgresStore(pg_server.url, run_name("other")),
    )
    assert waiter.wait_for_change(0, timeout=0.2) == 0  # nothing happened: the timeout
    woke: list[tuple[int, float]] = []

    def wait() -> None:
        started = time.monotonic()
        woke.append((waiter.wait_for_change(0, timeout=60), time.monotonic() - started))

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.5)
    other.append([_draft()], expected_version=0)  # another run's change does not wake it
    time.sleep(0.3)
    assert woke == []
    writer.append([_draft(), _draft()], expected_version=0)
    thread.join(timeout=60)
    [(head, waited)] = woke
    assert head == 2
    assert waited < 30  # woken by the notification, long before the timeout
    assert waiter.wait_for_change(1, timeout=5) == 2  # already past: returns at once
    for store in (waiter, writer, other):
        store.close()


def test_a_follower_hands_changes_to_the_event_loop(pg_server: PgServer) -> None:
    name = run_name("follow")
    writer = PostgresStore(pg_server.url, name)
    writer.append([_draft()], expected_version=0)
    seen: list[str] = []
    done = threading.Event()

    async def follow() -> None:
        schedule = loop_scheduler()
        assert schedule is not None
        loop_thread = threading.current_thread().name

        def on_change() -> None:
            seen.append(threading.current_thread().name)
            if len(seen) == 2:
                done.set()

        follower = ChangeFollower(writer.watcher(), on_change, schedule)
        await asyncio.sleep(0.5)
        writer.append([_draft()], expected_version=1)
        while len(seen) < 1:
            await asyncio.sleep(0.05)
        writer.append([_draft()], expected_version=2)
        while not done.is_set():
            await asyncio.sleep(0.05)
        follower.stop()
        assert seen == [loop_thread, loop_thread]  # run in the loop's thread, not the follower's
        assert follower.changes == 2

    asyncio.run(asyncio.wait_for(follow(), timeout=60))
    assert loop_scheduler() is None  # outside a loop there is nowhere to hand changes to
    writer.close()


def test_views_of_a_team_run_share_one_feed_woken_by_notify(pg_server: PgServer) -> None:
    from skillnb.jupyter.live import RunFeed
    from skillnb.jupyter.views.widgets import RunView
    from skillnb.run import open_run

    name = run_name("feed")
    run = open_run(store=pg_server.url, name=name, user="kernel", memory=False)
    run.formalize("budget", 1)
    handed: list[Callable[[], None]] = []
    feed = RunFeed(run, schedule=handed.append, refresh_interval=0.0)
    views = [RunView(run, feed=feed), RunView(run, feed=feed)]
    assert feed.watching
    other = open_run(store=pg_server.url, name=name, user="cli", memory=False)
    time.sleep(0.3)  # the watcher is listening
    other.formalize("owner", "carol")  # another machine's change
    deadline = time.monotonic() + 30
    while not handed and time.monotonic() < deadline:
        time.sleep(0.02)
    for callback in handed:
        callback()
    assert feed.publishes == 1
    assert all("owner" in view.facts.value for view in views)
    for view in views:
        view.close()
    assert not feed.watching
    feed.close()
    other.close()
    run.close()


def _listed(url: str, name: str) -> int:
    """How many sessions hold the run's listen key (shared), as appends see it."""
    import psycopg

    from skillnb.store.postgres.schema import LISTEN_CLASS

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND mode = 'ShareLock' AND classid = %s::bigint::oid "
            "AND objid = (hashtext(%s)::bigint & 4294967295)::oid AND objsubid = 2",
            (LISTEN_CLASS, name),
        )
        return int(row.fetchone()[0])  # type: ignore[index]


def test_only_runs_someone_listens_to_are_notified(pg_server: PgServer) -> None:
    import psycopg

    watched, unwatched = run_name("watched"), run_name("unwatched")
    raw = psycopg.connect(pg_server.url, autocommit=True)  # hears every notification
    raw.execute("LISTEN skillnb_changes")
    waiter = PostgresStore(pg_server.url, watched)
    assert waiter.wait_for_change(0, timeout=0.1) == 0  # listening (and listed) from now on
    assert _listed(pg_server.url, watched) == 1
    writers = [PostgresStore(pg_server.url, n) for n in (watched, unwatched)]
    for writer in writers:
        writer.append([_draft()], expected_version=0)
    heard = [n.payload for n in raw.notifies(timeout=1.0)]
    assert heard == [watched]  # nobody listens to the other run: no NOTIFY, no wait for it
    assert waiter.wait_for_change(0, timeout=5) == 1
    waiter.close()
    assert _listed(pg_server.url, watched) == 0  # unlisted when it closes
    writers[0].append([_draft()], expected_version=1)
    assert [n.payload for n in raw.notifies(timeout=0.5)] == []
    for writer in writers:
        writer.close()
    raw.close()
