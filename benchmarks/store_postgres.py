"""The team store on PostgreSQL (pgserver): durable writes against a raw INSERT + COMMIT.

Imported by ``benchmarks/store.py``, which prints this section after the sidecar's. Every
figure is a median measured on one local PostgreSQL 16 started with pgserver (fsync and
synchronous_commit on), alternated with the baseline: a raw single-row ``INSERT`` + ``COMMIT``
of the same event into a plain table on the same server and a connection of its own.

Rows:

* ``append``: :meth:`PostgresStore.append` of one event (one statement: advisory lock, CAS,
  insert, version, NOTIFY);
* ``formalize``: :meth:`Run.formalize` on a database run (lock, catch up, encode, append,
  unlock): what a notebook cell pays;
* ``4 writers``: four processes formalizing into one run at once (CAS retried on conflict),
  total writes per second, against four processes doing raw inserts at once.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pgserver
import psycopg

from skillnb.core.records import EventDraft
from skillnb.run import open_run
from skillnb.store.postgres import PostgresStore

WRITES = 200
BIG = 10_000


class Pair(NamedTuple):
    """Medians in microseconds: the measured write and the raw INSERT + COMMIT beside it."""

    store: float
    raw: float


class RawInsert:
    """The floor: one row into a plain table, autocommit (INSERT + COMMIT in one round trip)."""

    def __init__(self, url: str, payload: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_raw (seq bigint PRIMARY KEY, type text, data jsonb)"
        )
        self.payload = payload
        self.seq = int(self.conn.execute("SELECT count(*) FROM bench_raw").fetchone()[0])  # type: ignore[index]

    def write(self) -> None:
        self.seq += 1
        self.conn.execute(
            "INSERT INTO bench_raw VALUES (%s, 'fact.formalized', %s)", (self.seq, self.payload)
        )


def paired(write: Callable[[int], None], raw: RawInsert, first: int, count: int) -> Pair:
    mine, base = [], []
    for n in range(first, first + count):
        start = time.perf_counter()
        raw.write()
        base.append(time.perf_counter() - start)
        start = time.perf_counter()
        write(n)
        mine.append(time.perf_counter() - start)
    return Pair(statistics.median(mine) * 1e6, statistics.median(base) * 1e6)


def bench_append(url: str, raw: RawInsert, draft: Callable[[int], EventDraft]) -> tuple[Pair, Pair]:
    store = PostgresStore(url, "bench/append")

    def write(n: int) -> None:
        store.append([draft(n)], expected_version=n)

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    head = store.head()
    while head < BIG:
        batch = min(1000, BIG - head)
        store.append([draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    big = paired(write, raw, head, WRITES)
    store.close()
    return small, big


def bench_formalize(url: str, raw: RawInsert, value: object) -> Pair:
    run = open_run(store=url, name="bench/formalize", memory=False)
    for n in range(10):
        run.formalize(f"k{n}", value)
    pair = paired(lambda n: run.formalize(f"k{n % 500}", value), raw, 10, WRITES)
    run.store.close()
    return pair


_WRITER = textwrap.dedent(
    """
    import sys, time, psycopg
    from skillnb.errors import ConflictError
    from skillnb.run import open_run
    url, mode, seconds, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    if mode == "raw":
        conn = psycopg.connect(url, autocommit=True)
        write = lambda n: conn.execute(
            "INSERT INTO bench_raw_concurrent (data) VALUES (%s)", ('{"n": %d}' % n,))
    else:
        run = open_run(store=url, name=name, memory=False)
        def write(n):
            while True:
                try:
                    return run.formalize("k%d" % (n % 100), n)
                except ConflictError:
                    continue
    sys.stdin.readline()
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        write(n)
        n += 1
    print(n)
    """
)


def bench_writers(url: str, mode: str, seconds: float = 5.0, *, one_run: bool = True) -> float:
    """Writes per second of four processes writing at once (into one run, or a run each)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_raw_concurrent (id bigserial PRIMARY KEY, data jsonb)"
        )
    names = ["bench/writers" if one_run else f"bench/writer-{i}" for i in range(4)]
    for name in set(names):
        open_run(store=url, name=name, memory=False).formalize("k0", 0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, mode, str(seconds), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    time.sleep(1.0)  # let them import and connect
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    total = sum(int(proc.communicate(timeout=120)[0]) for proc in procs)
    return total / seconds


_CONSUMER = textwrap.dedent(
    """
    import sys, time
    from skillnb.run import open_run
    url, n = sys.argv[1], int(sys.argv[2])
    run = open_run(store=url, name="bench/claims", memory=False)
    sys.stdin.readline()
    done = sum(1 for _ in run.items("tickets", [f"t{i:05}" for i in range(n)]))
    print(done)
    """
)


def bench_claims(url: str, items: int = 400) -> float | None:
    """Items per second of four consumers sharing one batch (claim + done per item).

    ``None`` when this skillnb has no claims (batches are then one consumer's).
    """
    try:
        import skillnb.core.claims  # noqa: F401
    except ImportError:
        return None
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CONSUMER, url, str(items)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    time.sleep(1.5)  # let them import, connect and declare the batch
    started = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    total = sum(int(proc.communicate(timeout=600)[0]) for proc in procs)
    elapsed = time.perf_counter() - started
    assert total == items, f"{total} items done for {items}"
    return items / elapsed


def bench_langgraph(url: str, raw: RawInsert) -> Pair | None:
    """LangGraph's PostgresSaver per step (one node adding one key to a dict), if installed.

    Measured over steps 10..110 of one thread, each alternated with a raw insert.
    """
    try:
        import operator
        from typing import Annotated, TypedDict

        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.graph import END, START, StateGraph
        from psycopg.rows import dict_row
    except ImportError:
        return None

    # Built with the call syntax: this module's annotations are strings, resolved nowhere.
    State = TypedDict(  # noqa: UP013
        "State", {"facts": Annotated[dict[str, int], operator.or_], "n": int}
    )

    def step(state: Any) -> dict[str, object]:
        n = state["n"]
        return {"facts": {f"k{n}": n}}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(conn)  # type: ignore[arg-type]
    saver.setup()
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}}
    for n in range(10):
        app.invoke({"facts": {}, "n": n}, config)  # type: ignore[arg-type]
    pair = paired(
        lambda n: app.invoke({"facts": {}, "n": n}, config),  # type: ignore[arg-type]
        raw,
        10,
        100,
    )
    conn.close()
    return pair


def run_section(draft: Callable[[int], EventDraft], value: object) -> list[str]:
    """Start a server, measure, and return the lines of the section's table."""
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="skillnb-pgbench-") as tmp:
        server = pgserver.get_server(Path(tmp), cleanup_mode="stop")
        try:
            url = str(server.get_uri())
            payload = json.dumps(draft(10).data)
            raw = RawInsert(url, payload)
            small, big = bench_append(url, raw, draft)
            formalize = bench_formalize(url, raw, value)
            writers = bench_writers(url, "store")
            own_runs = bench_writers(url, "store", one_run=False)
            langgraph = bench_langgraph(url, raw)
            claims = bench_claims(url)
            raw_writers = bench_writers(url, "raw")
            raw.conn.close()
        finally:
            server.cleanup()
    head = ("postgres", "µs", "raw µs", "x raw")
    lines.append(f"{head[0]:<28}" + "".join(f"{h:>9}" for h in head[1:]))
    for label, pair in (
        ("append @10", small),
        ("append @10,000", big),
        ("formalize (Run, durable)", formalize),
    ):
        lines.append(f"{label:<28}{pair.store:>9.0f}{pair.raw:>9.0f}{pair.store / pair.raw:>9.2f}")
    if claims is not None:
        lines.append(f"{'claim + done, 4 consumers/s':<28}{claims:>9.0f}")
    if langgraph is not None:
        lines.append(
            f"{'LangGraph PostgresSaver step':<28}{langgraph.store:>9.0f}{langgraph.raw:>9.0f}"
            f"{langgraph.store / langgraph.raw:>9.2f}"
        )
    growth = (big.store / big.raw) / (small.store / small.raw)
    lines.append(f"{'growth @10,000 / @10':<28}{'':>9}{'':>9}{growth:>9.2f}")
    lines.append(
        f"{'4 writers, writes/s':<28}{writers:>9.0f}{raw_writers:>9.0f}"
        f"{raw_writers / writers if writers else float('inf'):>9.2f}"
    )
    lines.append(
        f"{'4 writers, a run each, w/s':<28}{own_runs:>9.0f}{raw_writers:>9.0f}"
        f"{raw_writers / own_runs if own_runs else float('inf'):>9.2f}"
    )
    lines.append(
        "raw: a single-row INSERT + COMMIT on the same server; 4 writers: four processes "
        "formalizing into one run (lock held through each commit; CAS) or into a run each, "
        "vs four doing raw inserts; their x raw is raw/store throughput"
    )
    return lines
