"""The team store on PostgreSQL (pgserver): durable writes against a raw INSERT + COMMIT.

Run with ``.venv/bin/python benchmarks/store_postgres.py`` (about a minute), or call
``main(argv)``, which prints the table and returns its rows (``benchmarks/_table.py``).
``benchmarks/store.py`` prints it after the sidecar's. Every figure is measured on one local
PostgreSQL 16 started with pgserver (``fsync`` and ``synchronous_commit`` on), beside its
baseline measured in the same run:

* ``raw``: a single-row ``INSERT`` + ``COMMIT`` (autocommit, one round trip, psycopg's
  ``execute``) of the same event data into a plain table, on a connection of its own,
  alternated write for write (for ``formalize``, the data of the event it writes);
* ``formalize``: :meth:`Run.formalize` on a database run: encode, append, fold. When this
  process wrote last, that is one statement (``skillnb.store.postgres.append``: advisory lock,
  listen key, insert whose primary key is the compare-and-swap), the goal being at most 1.5
  times raw;
* ``formalize: client CPU`` / ``server CPU``: mean CPU per write of this process and of the
  connection's server backend, beside raw's (CPU does not wait for a busy disk);
* ``append @10`` / ``@10,000``: :meth:`PostgresStore.append` of one event at the 10th and
  the 10,000th version (growth: the second ratio over the first; flat is 1);
* ``4 writers``: four processes formalizing into one run at once (a compare-and-swap lost
  to another writer is retried), writes per second, against four processes doing raw
  inserts at once; and into a run each;
* ``claim + done``: four processes consuming one 400-item batch whose body does nothing,
  items per second (each item: take the next one with ``FOR UPDATE SKIP LOCKED``, a
  statement that also reads what the others committed meanwhile, then a durable
  ``batch.item_done`` whose commit lets go of the run's lock before its disk flush), against
  one process alone; then with a body that sleeps 5 ms (the goal: four at least three times
  one). With an empty body the disk flushes of the completions set the pace whatever the
  number of consumers (coinciding ones share an ``fsync``). The clock stops when the last
  consumer reports that its loop ended; the same figure until the last process exited
  (interpreter teardown, four at once on few cores) follows, and the appends refused per
  item (a completion that lost the race to another consumer's, caught up and sent again);
* ``formalize: WAL per write``: bytes of write-ahead log per formalize, and per raw insert
  of the same data (each measured over writes of its own);
* ``LangGraph PostgresSaver``: one step of a one-node graph adding a key to a dict channel,
  checkpointed by LangGraph's own PostgreSQL saver on the same server (a reference line).

Before schema version 2 (same machine kind, a loaded moment): formalize 5.46x raw (four
round trips: catch up, head, lock + head, append), append 3.57x, 4 writers on one run 517
writes/s against 3,663 raw, claim + done with 4 consumers 268 items/s (claims were journal
events under the run's lock). Schema version 2 (one PL/pgSQL call: lock, version row
update, insert, listener lookup), a quiet moment: formalize 3.0x raw, append 2.4x; the
server's CPU per append about 100 us above raw's, against about 30 us with version 3.
Version 3 stored each event twice (the line and its payload as JSONB): 1,617 bytes of WAL
per formalize against raw's 868; version 4 stores the line only: 935 bytes.

Since then a formalize stays one statement and the rest is client Python: a refresh is one
``catch_up`` call answered from the known head (a read elsewhere: one query, where it was a
read and a head query), and a one-event append builds no lists: about 6% fewer client
instructions per formalize (callgrind, 310k to 291k), formalize 1.74x raw before and 1.55x
after in one run on a loaded machine (load 2). What stays above the floor is the journal's
record path (fact encoding, draft, fold: about 60% of the client's CPU, sampled), which the
sidecar shares, and about 20 us of server work (the run's lock, the listen key, the check
that event ``expected`` exists) that the compare-and-swap needs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pgserver
import psycopg

from _table import Row, format_table, row
from skillnb.core.runstate.records import EventDraft, Fact
from skillnb.run import open_run
from skillnb.store.postgres.store import PostgresStore

WRITES = 200
BIG = 10_000
ITEMS = 400
NAME = "store_postgres"
_NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Pair(NamedTuple):
    """Medians in microseconds: the measured write and the raw INSERT + COMMIT beside it."""

    store: float
    raw: float


def fact_value(n: int) -> dict[str, Any]:
    """A dumped fact like a notebook's (about 370 bytes as a journal line)."""
    return Fact(
        key=f"k{n % BIG}",
        value={"score": n, "label": f"item k{n}"},
        version=1 + n // BIG,
        seq=n,
        at=_NOW,
        cell_id="cell-1234",
        source_hash="ab" * 16,
        preview=f"score {n}",
    ).model_dump(mode="json")


def fact_draft(n: int) -> EventDraft:
    """One ``fact.formalized`` event (the workload of every write here)."""
    return EventDraft(type="fact.formalized", at=_NOW, data={"fact": fact_value(n)})


class RawInsert:
    """The floor: one row into a plain table, autocommit (INSERT + COMMIT in one round trip)."""

    def __init__(self, url: str, payload: str, table: str = "bench_raw") -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (seq bigint PRIMARY KEY, type text, data jsonb)"
        )
        self.payload = payload
        self.insert = f"INSERT INTO {table} VALUES (%s, 'fact.formalized', %s)"  # noqa: S608
        self.seq = int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]  # noqa: S608

    def write(self) -> None:
        self.seq += 1
        self.conn.execute(self.insert, (self.seq, self.payload))


def paired(write: Callable[[int], None], raw: RawInsert, first: int, count: int) -> Pair:
    """Medians of ``count`` writes, each followed by a raw insert (so load hits both alike)."""
    mine, base = [], []
    for n in range(first, first + count):
        start = time.perf_counter()
        raw.write()
        base.append(time.perf_counter() - start)
        start = time.perf_counter()
        write(n)
        mine.append(time.perf_counter() - start)
    return Pair(statistics.median(mine) * 1e6, statistics.median(base) * 1e6)


def bench_append(url: str, raw: RawInsert) -> tuple[Pair, Pair]:
    """One-event appends at the 10th version, then at the 10,000th."""
    store = PostgresStore(url, "bench/append")

    def write(n: int) -> None:
        store.append([fact_draft(n)], expected_version=n)

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    head = store.head()
    while head < BIG:
        batch = min(1000, BIG - head)
        store.append([fact_draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    big = paired(write, raw, head, WRITES)
    store.close()
    return small, big


class Cpu(NamedTuple):
    """Mean CPU microseconds per write (this process's, the server backend's), WAL bytes."""

    client: float
    server: float
    wal: float


def _backend_cpu(pid: int) -> float:
    """Seconds of CPU the server process ``pid`` used so far (Linux ``schedstat``, in ns)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _wal(conn: psycopg.Connection[Any]) -> int:
    """The server's write-ahead log position, in bytes."""
    return int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])  # type: ignore[index]


def wal_per_write(conn: psycopg.Connection[Any], write: Callable[[int], None]) -> float:
    """Mean bytes of write-ahead log per ``write``, over writes nobody else interleaves."""
    before = _wal(conn)
    for n in range(WRITES):
        write(n)
    return (_wal(conn) - before) / WRITES


def bench_formalize(url: str) -> tuple[Pair, Cpu, Cpu]:
    """:meth:`Run.formalize` of a fact-sized value, this process the run's only writer.

    Its raw inserts carry the data of the event a formalize writes (the fact, its value
    inside), not the smaller one of the append figures. Besides the median wall times, the
    mean CPU per write of this process and of each connection's server backend (for
    formalize, then for raw): CPU is what the writes cost, whatever the disk's load makes
    their waits.
    """
    run = open_run(store=url, name="bench/formalize", memory=False)
    value = fact_value(1)
    for n in range(10):
        run.formalize(f"k{n}", value)
    written = run.store.read_since(run.version - 1)[-1].data
    raw = RawInsert(url, json.dumps(written, separators=(",", ":")), table="bench_raw_formalize")
    pids = (run.store._call(lambda c: c.info.backend_pid), raw.conn.info.backend_pid)  # type: ignore[attr-defined]
    servers = [_backend_cpu(pid) for pid in pids]
    clients = [0.0, 0.0]

    def write(n: int) -> None:
        start = time.process_time()
        run.formalize(f"k{n % 500}", value)
        clients[0] += time.process_time() - start

    def raw_write() -> None:
        start = time.process_time()
        RawInsert.write(raw)
        clients[1] += time.process_time() - start

    raw.write = raw_write  # type: ignore[method-assign]
    pair = paired(write, raw, 10, WRITES)
    servers = [_backend_cpu(pid) - before for pid, before in zip(pids, servers, strict=True)]
    wal = (wal_per_write(raw.conn, write), wal_per_write(raw.conn, lambda _n: raw.write()))
    raw.conn.close()
    run.close()
    mine, base = (Cpu(clients[i] / WRITES * 1e6, servers[i] / WRITES * 1e6, wal[i]) for i in (0, 1))
    return pair, mine, base


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
    print("ready", flush=True)
    sys.stdin.readline()
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        write(n)
        n += 1
    print(n, flush=True)
    """
)


@contextmanager
def started(script: str, argvs: list[list[str]]) -> Iterator[list[subprocess.Popen[str]]]:
    """Start one process per argv, wait until each says ``ready``; stop any left over."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"benchmark process failed: {proc.communicate()}")
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def go(procs: list[subprocess.Popen[str]], timeout: float) -> list[int]:
    """Tell every process to start; return the number each prints when it is done."""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return [int(proc.communicate(timeout=timeout)[0]) for proc in procs]


def bench_writers(url: str, mode: str, seconds: float = 4.0, *, one_run: bool = True) -> float:
    """Writes per second of four processes writing at once (into one run, or a run each)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_raw_concurrent (id bigserial PRIMARY KEY, data jsonb)"
        )
    names = ["bench/writers" if one_run else f"bench/writer-{i}" for i in range(4)]
    for name in set(names):
        with open_run(store=url, name=name, memory=False) as run:
            run.formalize("k0", 0)
    with started(_WRITER, [[url, mode, str(seconds), name] for name in names]) as procs:
        return sum(go(procs, 120)) / seconds


_CONSUMER = textwrap.dedent(
    """
    import sys, time
    import skillnb.store.postgres.store as pg
    from skillnb.run import open_run
    url, name, n, body = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    refused, append = [0], pg.run_append
    def counted(*args, **kwargs):  # appends refused by another consumer's completion
        try:
            return append(*args, **kwargs)
        except pg.Refused:
            refused[0] += 1
            raise
    pg.run_append = counted
    run = open_run(store=url, name=name, memory=False)
    items = run.items("tickets", [f"t{i:05}" for i in range(n)])  # declared now
    print("ready", flush=True)
    sys.stdin.readline()
    done = 0
    for _ in items:
        if body:
            time.sleep(body)
        done += 1
    print(done, refused[0], flush=True)
    """
)


class Claims(NamedTuple):
    """A batch consumed: items per second until the last consumer's loop ended (and until
    the last process exited), appends refused per item."""

    rate: float
    rate_to_exit: float
    refused: float


def bench_claims(url: str, consumers: int, body: float = 0.0, items: int = ITEMS) -> Claims:
    """Items per second of ``consumers`` processes sharing one batch (claim + done per item).

    ``body``: seconds each item's body sleeps (0: the claim and the completion alone). The
    clock stops when the last consumer reports that its loop ended (every item is done
    then); the processes' exits (interpreter teardown, several at once on few cores) are
    timed apart.
    """
    name = f"bench/claims-{consumers}-{body}"
    with started(_CONSUMER, [[url, name, str(items), str(body)]] * consumers) as procs:
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [proc.stdout.readline().split() for proc in procs if proc.stdout]
        elapsed = time.perf_counter() - start
        for proc in procs:
            proc.communicate(timeout=600)
        to_exit = time.perf_counter() - start
    done = sum(int(r[0]) for r in reports)
    if done != items:
        raise RuntimeError(f"{done} items done for {items}")
    return Claims(items / elapsed, items / to_exit, sum(int(r[1]) for r in reports) / items)


@contextmanager
def _real_langgraph() -> Iterator[None]:
    """Import the ``langgraph`` package, not ``benchmarks/langgraph.py`` beside this file."""
    here = Path(__file__).resolve().parent
    saved_path = sys.path[:]
    shadow = sys.modules.get("langgraph")
    if shadow is not None and not hasattr(shadow, "__path__"):
        del sys.modules["langgraph"]  # the benchmark script, imported under that name
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        yield
    finally:
        sys.path[:] = saved_path


def bench_langgraph(url: str, raw: RawInsert) -> Pair | None:
    """LangGraph's PostgresSaver per step (one node adding one key to a dict), if installed.

    Measured over steps 10..110 of one thread, each alternated with a raw insert.
    """
    with _real_langgraph():
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


def measure(url: str) -> list[Row]:
    """Every figure of this benchmark on the server at ``url``, as table rows."""
    raw = RawInsert(url, json.dumps(fact_draft(10).data))
    small, big = bench_append(url, raw)
    formalize, cpu, raw_cpu = bench_formalize(url)
    langgraph = bench_langgraph(url, raw)
    raw.conn.close()
    writers = bench_writers(url, "store")
    own_runs = bench_writers(url, "store", one_run=False)
    raw_writers = bench_writers(url, "raw")
    one, four = bench_claims(url, 1), bench_claims(url, 4)
    slow_one, slow_four = bench_claims(url, 1, 0.005), bench_claims(url, 4, 0.005)
    insert = "raw INSERT+COMMIT"
    rows = [
        row(NAME, "formalize (Run, durable)", formalize.store, "us", baseline=formalize.raw,
            baseline_name=insert, target="<= 1.5"),
        row(NAME, "formalize: client CPU", cpu.client, "us", baseline=raw_cpu.client,
            baseline_name="raw's"),
        row(NAME, "formalize: server CPU", cpu.server, "us", baseline=raw_cpu.server,
            baseline_name="raw's"),
        row(NAME, "formalize: WAL per write", cpu.wal, "bytes", baseline=raw_cpu.wal,
            baseline_name="raw's"),
        row(NAME, "append @10", small.store, "us", baseline=small.raw, baseline_name=insert),
        row(NAME, "append @10,000", big.store, "us", baseline=big.raw, baseline_name=insert),
        row(NAME, "growth: x raw @10,000 / @10", (big.store / big.raw) / (small.store / small.raw),
            "x", target="<= 1.25 x"),
        row(NAME, "4 writers, one run", writers, "writes/s", baseline=raw_writers,
            baseline_name="4 raw inserters"),
        row(NAME, "4 writers, a run each", own_runs, "writes/s", baseline=raw_writers,
            baseline_name="4 raw inserters"),
        row(NAME, "claim + done, 4 consumers", four.rate, "items/s", baseline=one.rate,
            baseline_name="1 consumer"),
        row(NAME, "4 consumers, 5 ms body", slow_four.rate, "items/s", baseline=slow_one.rate,
            baseline_name="1 consumer", target=">= 3"),
        row(NAME, "  the same, until every exit", slow_four.rate_to_exit, "items/s",
            baseline=slow_one.rate_to_exit, baseline_name="1 consumer"),
        row(NAME, "4 consumers: refused per item", slow_four.refused, "appends"),
        row(NAME, "  the same, empty body", four.refused, "appends"),
    ]  # fmt: skip
    if langgraph is not None:
        rows.append(
            row(NAME, "LangGraph PostgresSaver step", langgraph.store, "us",
                baseline=langgraph.raw, baseline_name=insert)
        )  # fmt: skip
    return rows


def measured() -> list[Row]:
    """Start a server in a temporary folder, measure on it, stop it: the rows."""
    with tempfile.TemporaryDirectory(prefix="skillnb-pgbench-") as tmp:
        server = pgserver.get_server(Path(tmp), cleanup_mode="stop")
        try:
            return measure(str(server.get_uri()))
        finally:
            server.cleanup()


def main(argv: list[str] | None = None) -> list[Row]:
    """Start a server, measure, print the table and return its rows.

    ``argv`` is accepted for the shared benchmark contract; this benchmark takes no options.
    """
    del argv
    rows = measured()
    print(format_table(rows))
    print(
        "raw: a single-row INSERT + COMMIT on the same server, alternated write for write; "
        "4 writers: four processes formalizing at once vs four doing raw inserts; "
        "claim + done: a 400-item batch with an empty body, then with a 5 ms one"
    )
    return rows


def run_section(_draft: object = None, _value: object = None) -> list[str]:
    """The table as lines, for ``benchmarks/store.py`` (which prints it after its own)."""
    return format_table(measured()).splitlines()


if __name__ == "__main__":
    main(sys.argv[1:])
