"""Claims over a team store: four consumers on four connections, a killed one, leases.

Here the claims are rows taken with ``SELECT ... FOR UPDATE SKIP LOCKED`` (not journal
events under the run's lock, as on a sidecar), with every consumer on a connection of its
own, as workers on other machines would be. At-least-once execution, exactly-once
completion.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

import skillnb
from pg import PgServer, run_name
from skillnb.store.postgres.items import ItemRows
from skillnb.store.postgres.store import PostgresStore

pytestmark = pytest.mark.slow

CONSUMER = textwrap.dedent(
    r"""
    import os, socket, sys, time
    if os.environ.get("FAKE_HOST"):  # this consumer plays a process on another machine
        socket.gethostname = lambda: os.environ["FAKE_HOST"]
    import skillnb

    url, name, log_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    kill_on = sys.argv[5] if len(sys.argv) > 5 else ""
    go = os.path.join(os.path.dirname(log_path), "go")
    while not os.path.exists(go):
        time.sleep(0.005)
    run = skillnb.open_run(store=url, name=name, memory=False)
    count = 0
    for item in run.items("tickets", [f"t{i:03}" for i in range(n)]):
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {item}\n")
        if item == kill_on:
            open(log_path + ".claimed", "w").close()
            time.sleep(60)  # killed here, mid-item
        count += 1
    print(count)
    """
)


def _consumer(
    tmp_path: Path,
    url: str,
    name: str,
    n: int,
    kill_on: str = "",
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CONSUMER, url, name, str(tmp_path / "log"), str(n), kill_on],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _log(tmp_path: Path) -> list[tuple[str, str]]:
    lines = (tmp_path / "log").read_text().split("\n")
    return [(p, i) for p, i in (line.split() for line in lines if line)]


def test_four_consumers_on_four_connections_process_a_400_item_batch_once(
    tmp_path: Path, pg_server: PgServer
) -> None:
    name = run_name("batch")
    procs = [_consumer(tmp_path, pg_server.url, name, 400) for _ in range(4)]
    (tmp_path / "go").touch()
    outputs = [p.communicate(timeout=280) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    items = [i for _, i in _log(tmp_path)]
    assert sorted(items) == [f"t{i:03}" for i in range(400)]  # each once, none lost
    assert sum(int(out) for out, _ in outputs) == 400
    assert len({p for p, _ in _log(tmp_path)}) >= 2, "the work was shared"
    with skillnb.open_run(store=pg_server.url, name=name, memory=False) as run:
        batch = run.snapshot.batches["tickets"]
        assert (len(batch.done), len(set(batch.done)), batch.remaining()) == (400, 400, [])
        assert run.snapshot.claims == {}
        types = {e.type for e in run.store.history()}
    assert "claim.taken" not in types  # the claims were rows, not journal events
    with psycopg.connect(pg_server.url) as conn:
        rows = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE done), count(owner) FROM skillnb_items "
            "WHERE run = %s AND batch = 'tickets'",
            (name,),
        ).fetchone()
    assert rows == (400, 400, 0)


def test_a_consumer_killed_on_this_host_has_its_item_taken_at_once_not_after_its_lease(
    tmp_path: Path, pg_server: PgServer
) -> None:
    name = run_name("dead")
    victim = _consumer(
        tmp_path, pg_server.url, name, 4, kill_on="t001", env={"SKILLNB_LEASE_SECONDS": "600"}
    )
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 120
    while not (tmp_path / "log.claimed").exists():
        assert time.monotonic() < deadline, victim.communicate()
        time.sleep(0.01)
    victim.kill()
    victim.wait()
    heir = _consumer(tmp_path, pg_server.url, name, 4)
    out, err = heir.communicate(timeout=60)  # far less than the 600 s lease
    assert heir.returncode == 0, err
    assert out.split() == ["3"]  # t001 (its owner is seen dead), t002, t003
    assert [p for p, i in _log(tmp_path) if i == "t001"] == [str(victim.pid), str(heir.pid)]


def test_an_item_whose_body_raised_is_given_back_and_done_by_the_next_loop(
    pg_server: PgServer,
) -> None:
    name = run_name("raise")
    with skillnb.open_run(store=pg_server.url, name=name, memory=False) as run:

        def fail_on_first() -> None:
            for item in run.items("b", ["x", "y"]):
                raise RuntimeError(item)

        with pytest.raises(RuntimeError):
            fail_on_first()
        assert list(run.items("b", ["x", "y"])) == ["x", "y"]
        assert run.snapshot.batches["b"].done == ["x", "y"]
        assert list(run.items("b", ["x", "y", "z"])) == ["z"]  # a later item joins the batch


def test_a_consumer_killed_on_another_host_has_its_item_done_after_its_lease(
    tmp_path: Path, pg_server: PgServer
) -> None:
    name = run_name("lease")
    remote = {"FAKE_HOST": "elsewhere.example", "SKILLNB_LEASE_SECONDS": "6"}
    victim = _consumer(tmp_path, pg_server.url, name, 6, kill_on="t002", env=remote)
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 120
    while not (tmp_path / "log.claimed").exists():
        assert time.monotonic() < deadline, victim.communicate()
        time.sleep(0.01)
    victim.kill()  # SIGKILL mid-item
    victim.wait()
    with PostgresStore(pg_server.url, name) as store:
        [(item, owner, _)] = store.item_rows("tickets").held()
    assert item == "t002"
    assert owner.startswith("elsewhere.example:")  # only its lease can tell it is gone
    heir = _consumer(tmp_path, pg_server.url, name, 6)
    out, err = heir.communicate(timeout=120)
    assert heir.returncode == 0, err
    assert out.split() == ["4"]  # t003..t005, then t002 once its lease expired
    log = _log(tmp_path)
    assert [p for p, i in log if i == "t002"] == [str(victim.pid), str(heir.pid)]
    with skillnb.open_run(store=pg_server.url, name=name, memory=False) as run:
        assert run.snapshot.batches["tickets"].remaining() == []
        assert json.dumps(sorted(run.snapshot.batches["tickets"].done)) == json.dumps(
            [f"t{i:03}" for i in range(6)]
        )


def test_a_pushed_run_half_through_a_batch_goes_on_with_the_rest_only(
    tmp_path: Path, pg_server: PgServer
) -> None:
    from skillnb.store import SidecarStore
    from skillnb.store.transfer import copy_run

    folder = tmp_path / "state"
    with skillnb.open_run(state_dir=folder, memory=False) as run:
        for item in run.items("docs", ["a", "b", "c", "d"]):
            if item == "c":
                break
    name = run_name("pushed")
    with SidecarStore(folder) as source, PostgresStore(pg_server.url, name) as target:
        copy_run(source, target)
    with skillnb.open_run(store=pg_server.url, name=name, memory=False) as run:
        assert list(run.items("docs", ["a", "b", "c", "d"])) == ["c", "d"]  # rows follow it
        assert run.snapshot.batches["docs"].done == ["a", "b", "c", "d"]


def test_offering_a_batch_again_locks_no_row_that_others_take(pg_url: str) -> None:
    name = run_name("offer")
    items = [f"t{i:03}" for i in range(20)]
    with skillnb.open_run(store=pg_url, name=name, memory=False) as run:
        run.formalize("k", 1)
    store = PostgresStore(pg_url, name)
    try:
        store.item_rows("tickets").offer(items, [])
        # A second consumer offers the same batch in a transaction that is still open...
        with psycopg.connect(pg_url) as conn:
            offering = ItemRows(lambda op: op(conn), name, "tickets")
            offering.offer(items, ["t000"])
            # ...and a third takes an item meanwhile: SKIP LOCKED must still find free rows
            # (an upsert that locks every row it meets made it see none, and stop early).
            taken = store.item_rows("tickets").take("third", "third", 30.0)
            assert taken is not None
            assert taken != "t000"  # being marked done by the open offer: locked, skipped
            conn.commit()
        rows = store.item_rows("tickets")
        assert rows.take("fourth", "fourth", 30.0) not in {None, taken, "t000"}
    finally:
        store.close()
