"""Several processes, each with its own connection, sharing one run in PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pg import PgServer, run_name
from skillnb.run import open_run
from skillnb.store.postgres.store import PostgresStore

pytestmark = pytest.mark.slow

_INCREMENT = textwrap.dedent(
    """
    import json, sys
    from skillnb.errors import ConflictError
    from skillnb.run import open_run

    url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    run = open_run(store=url, name=name, memory=False)
    sys.stdin.readline()  # start together
    conflicts = 0
    for _ in range(count):
        while True:
            version = run.version
            fact = run.fact("n")
            try:
                run.formalize("n", (fact.value if fact else 0) + 1, expected_version=version)
                break
            except ConflictError:
                conflicts += 1
    print(json.dumps({"conflicts": conflicts}))
    """
)


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_processes_doing_150_compare_and_swap_increments_end_at_600(
    pg_server: PgServer,
) -> None:
    name = run_name("cas")
    open_run(store=pg_server.url, name=name, memory=False).formalize("n", 0)
    workers = [_start(_INCREMENT, pg_server.url, name, "150") for _ in range(4)]
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
        results.append(json.loads(out))
    run = open_run(store=pg_server.url, name=name, memory=False)
    assert run.fact("n").value == 600
    history = run.fact_history("n")
    assert [f.value for f in history] == list(range(601))  # no lost and no doubled update
    assert len(results) == 4


def test_a_writer_killed_mid_append_leaves_whole_appends_only(
    pg_server: PgServer, tmp_path: Path
) -> None:
    """SIGKILL a process appending 20-event groups: every group is all there or not at all."""
    name = run_name("kill")
    script = textwrap.dedent(
        """
        import sys
        from datetime import UTC, datetime
        from skillnb.core.runstate.records import EventDraft
        from skillnb.store.postgres.store import PostgresStore

        store = PostgresStore(sys.argv[1], sys.argv[2])
        head = store.head()
        print("ready", flush=True)
        while True:
            drafts = [EventDraft(type="g", at=datetime.now(UTC), data={"i": i, "pad": "x" * 500})
                      for i in range(20)]
            head = store.append(drafts, expected_version=head)[-1].seq
        """
    )
    worker = _start(script, pg_server.url, name)
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    worker.kill()
    worker.communicate(timeout=30)
    store = PostgresStore(pg_server.url, name)
    events = list(store.history())
    assert events, "the writer appended nothing in a second"
    assert len(events) % 20 == 0
    assert [e.data["i"] for e in events] == list(range(20)) * (len(events) // 20)
    assert store.head() == len(events)
    store.close()
