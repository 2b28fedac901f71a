"""Sidecar store benchmark: durable writes against raw write+fsync, and loading a big run.

Run with ``.venv/bin/python benchmarks/store.py`` (under a minute). Every figure is the median
of one run on this machine; ratios are against the raw ``os.write`` + ``os.fsync`` of the same
bytes, measured in the same run, so they travel between machines better than the times.

Workload: one "fact write" is an ``append`` of a single ``fact.formalized`` event whose data is
a dumped :class:`~skillnb.core.records.Fact` (about 370 bytes as a journal line). Compared stores:

* ``raw``: ``os.write`` + ``os.fsync`` of the same line on an ``O_APPEND`` file (the floor);
* ``sidecar``: :class:`skillnb.store.SidecarStore` (lock, CAS check, checksum, write, fsync);
* ``naive JSON``: rewrite one JSON file of all facts each write (temp file, fsync, rename);
* ``sqlite WAL``: ``sqlite3`` in WAL mode, ``synchronous=FULL``, one insert per transaction;
* ``run.formalize``: the whole durable path of :meth:`skillnb.run.Run.formalize` (encode,
  lock, catch up, append, fsync, fold) over a sidecar.

Batches: the cost per item of ``run.items`` (marking one item done and claiming the next is
one append), and items per second for 1, 2 and 4 processes consuming one batch of 400
items whose body sleeps 5 ms (the goal: 4 consumers at least 3 times one).

Then the team store on a local PostgreSQL (see ``benchmarks/store_postgres.py``; skip it with
``--no-postgres``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from skillnb.core.records import Event, EventDraft, Fact, RunState
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.journal import encode_events
from skillnb.store.snapshot import read_snapshot

WRITES = 200  # timed writes per measurement point (naive JSON at 10,000 facts: NAIVE_BIG)
NAIVE_BIG = 30
BIG = 10_000  # facts (and writes) for the "10,000th write" point
EVENTS = 100_000  # events behind the compacted snapshot in the load test
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def fact(key: str, version: int, seq: int) -> Fact:
    return Fact(
        key=key,
        value={"score": seq, "label": f"item {key}"},
        version=version,
        seq=seq,
        at=NOW,
        cell_id="cell-1234",
        source_hash="ab" * 16,
        preview=f"score {seq}",
    )


def fact_draft(n: int) -> EventDraft:
    return EventDraft(
        type="fact.formalized",
        at=NOW,
        data={"fact": fact(f"k{n % BIG}", 1 + n // BIG, n).model_dump(mode="json")},
    )


class Point(NamedTuple):
    """One measurement, in microseconds per write."""

    store: float
    raw: float
    store_cpu: float
    raw_cpu: float


class Raw:
    """The floor: ``os.write`` + ``os.fsync`` of one fact line on an ``O_APPEND`` file."""

    def __init__(self, folder: Path, line: bytes) -> None:
        self.line = line
        self.fd = os.open(folder / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, _: int) -> None:
        os.write(self.fd, self.line)
        os.fsync(self.fd)


def paired(write: Callable[[int], None], raw: Raw, first: int, count: int) -> Point:
    """Medians (microseconds) of ``write`` and of the raw write, measured alternately.

    Alternating keeps both under the same disk conditions (other processes, write-back). Also
    returns the CPU time per write of each (``time.process_time``): what the code costs, apart
    from waiting for the disk.
    """
    store_times, raw_times, store_cpu, raw_cpu = [], [], 0.0, 0.0
    for n in range(first, first + count):
        start, cpu = time.perf_counter(), time.process_time()
        raw.write(n)
        raw_times.append(time.perf_counter() - start)
        raw_cpu += time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        write(n)
        store_times.append(time.perf_counter() - start)
        store_cpu += time.process_time() - cpu
    return Point(
        statistics.median(store_times) * 1e6,
        statistics.median(raw_times) * 1e6,
        store_cpu / count * 1e6,
        raw_cpu / count * 1e6,
    )


def bench_sidecar(folder: Path, raw: Raw) -> tuple[Point, Point]:
    store = SidecarStore(folder / "sidecar")

    def write(n: int) -> None:
        store.append([fact_draft(n)], expected_version=n)

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    head = store.head()
    while head < BIG:  # fill quickly, in batches, to reach the 10,000th write
        batch = min(1000, BIG - head)
        store.append([fact_draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    big = paired(write, raw, head, WRITES)
    store.close()
    return small, big


def bench_naive(folder: Path, raw: Raw) -> tuple[Point, Point]:
    path = folder / "naive.json"
    facts: dict[str, object] = {}

    def write(n: int) -> None:
        facts[f"k{n}"] = fact(f"k{n}", 1, n).model_dump(mode="json")
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            f.write(json.dumps(facts).encode())
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
        dfd = os.open(folder, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    for n in range(10 + WRITES, BIG):
        facts[f"k{n}"] = fact(f"k{n}", 1, n).model_dump(mode="json")
    big = paired(write, raw, BIG, NAIVE_BIG)
    return small, big


def bench_sqlite(folder: Path, raw: Raw) -> tuple[Point, Point]:
    db = sqlite3.connect(folder / "facts.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT, data TEXT)")

    def write(n: int) -> None:
        data = json.dumps(fact_draft(n).data)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO events VALUES (?, ?, ?)", (n + 1, "fact.formalized", data))
        db.execute("COMMIT")

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    rows = (
        (n + 1, "fact.formalized", json.dumps(fact_draft(n).data)) for n in range(10 + WRITES, BIG)
    )
    db.execute("BEGIN")
    db.executemany("INSERT INTO events VALUES (?, ?, ?)", rows)
    db.execute("COMMIT")
    big = paired(write, raw, BIG, WRITES)
    db.close()
    return small, big


def bench_formalize(folder: Path, raw: Raw) -> tuple[Point, Point]:
    """``run.formalize`` end to end, at the 10th and at the 10,000th fact."""
    run = open_run(state_dir=folder / "run", memory=False)
    value = {"score": 1, "label": "item"}

    def write(n: int) -> None:
        run.formalize(f"k{n % BIG}", value)

    for n in range(10):
        write(n)
    small = paired(write, raw, 10, WRITES)
    head = run.version
    while head < BIG:
        batch = min(1000, BIG - head)
        run.store.append([fact_draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    run.refresh()
    big = paired(write, raw, head, WRITES)
    run.close()
    return small, big


def bench_batch_items(folder: Path, raw: Raw) -> Point:
    """One ``run.items`` step (item done + next claimed, one append) against a raw write."""
    run = open_run(state_dir=folder / "batch", memory=False)
    items = iter(run.items("tickets", [f"t{i:05}" for i in range(WRITES + 20)]))
    for _ in range(10):
        next(items)
    point = paired(lambda _n: next(items), raw, 0, WRITES)
    run.close()
    return point


CONSUMER = r"""
import os, sys, time
import skillnb
state, go, items = sys.argv[1], sys.argv[2], [f"t{i:03}" for i in range(int(sys.argv[3]))]
run = skillnb.open_run(state_dir=state, memory=False)
open(f"{go}.ready.{os.getpid()}", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
done = 0
for _ in run.items("tickets", items):
    time.sleep(0.005)
    done += 1
print(done, time.time())
"""


def bench_consumers(folder: Path, items: int = 400) -> dict[int, float]:
    """Items per second for 1, 2 and 4 processes consuming one batch of 5 ms items.

    The clock starts when every process has imported and opened the run, and stops when
    the last one has finished.
    """
    rates = {}
    for n in (1, 2, 4):
        state, go = folder / f"consumers{n}", folder / f"go{n}"
        with open_run(state_dir=state, memory=False) as run:
            run.formalize("ready", True)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CONSUMER, str(state), str(go), str(items)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(n)
        ]
        while len(list(folder.glob(f"go{n}.ready.*"))) < n:
            time.sleep(0.01)
        start = time.time()
        go.touch()
        results = [p.communicate()[0].split() for p in procs]
        done = sum(int(count) for count, _ in results)
        rates[n] = items / (max(float(end) for _, end in results) - start)
        assert done == items, (n, done)
    return rates


def bench_load(folder: Path) -> dict[str, float]:
    """Open and load a run of EVENTS events over BIG facts, compacted and not."""
    store = SidecarStore(folder / "big")
    head = 0
    while head < EVENTS:
        store.append([fact_draft(head + i) for i in range(1000)], expected_version=head)
        head += 1000
    timings = {}
    start = time.perf_counter()
    loaded = SidecarStore(folder / "big").load()
    timings["replay 100,000 events (no snapshot)"] = (time.perf_counter() - start) * 1e3
    assert len(loaded.events) == EVENTS
    state = RunState(
        run_id="bench",
        version=head,
        facts={f"k{i}": fact(f"k{i}", EVENTS // BIG, EVENTS - BIG + i) for i in range(BIG)},
    )
    store.compact(state)
    store.close()
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        loaded = SidecarStore(folder / "big").load()
        runs.append(time.perf_counter() - start)
    assert loaded.snapshot is not None
    assert len(loaded.snapshot.facts) == BIG
    timings["open + load, snapshot of 10,000 facts"] = statistics.median(runs) * 1e3
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        read_snapshot(folder / "big" / "snapshot.json")
        runs.append(time.perf_counter() - start)
    timings["  of which snapshot read + validation"] = statistics.median(runs) * 1e3
    size = (folder / "big" / "snapshot.json").stat().st_size
    timings["  snapshot size (KB)"] = size / 1024
    return timings


def main() -> int:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        folder = Path(tmp)
        draft = fact_draft(10)
        line = encode_events([Event(seq=11, type=draft.type, at=draft.at, data=draft.data)])
        raw = Raw(folder, line)
        rows = {
            "sidecar": bench_sidecar(folder, raw),
            "naive JSON": bench_naive(folder, raw),
            "sqlite WAL": bench_sqlite(folder, raw),
            "run.formalize": bench_formalize(folder, raw),
        }
        item = bench_batch_items(folder, raw)
        consumers = bench_consumers(folder)
        load = bench_load(folder)
    print(
        f"fact write: one {len(line)}-byte event; medians in microseconds of {WRITES} writes "
        f"({NAIVE_BIG} for naive JSON at 10,000), each alternated with a raw write+fsync of the "
        "same bytes (the 'raw' columns)\n"
    )
    head = ("store", "@10", "raw", "x raw", "@10,000", "raw", "x raw", "growth", "CPU", "raw CPU")
    print(f"{head[0]:<12}" + "".join(f"{h:>9}" for h in head[1:]))
    for name, (small, big) in rows.items():
        growth = (big.store / big.raw) / (small.store / small.raw)
        cells = (
            small.store,
            small.raw,
            small.store / small.raw,
            big.store,
            big.raw,
            big.store / big.raw,
            growth,
            (small.store_cpu + big.store_cpu) / 2,
            (small.raw_cpu + big.raw_cpu) / 2,
        )
        print(f"{name:<12}" + "".join(f"{c:>9.0f}" if c >= 10 else f"{c:>9.2f}" for c in cells))
    print(
        "\ngrowth: (x raw @10,000) / (x raw @10), how much slower the 10,000th write is than the "
        "10th once disk drift is taken out; CPU: process CPU time per write"
    )
    print(
        f"\nbatch item (done + next claim, one append): {item.store:.0f} us, "
        f"raw {item.raw:.0f} us, x raw {item.store / item.raw:.2f}, CPU {item.store_cpu:.0f} us"
    )
    print("consumers of one 400-item batch, 5 ms per item:")
    for n, rate in consumers.items():
        label = f"{n} process{'es' if n > 1 else ''}"
        print(f"  {label:<12}{rate:>7.0f} items/s  ({rate / consumers[1]:.2f}x one)")
    print()
    for label, value in load.items():
        unit = "" if "KB" in label else " ms"
        print(f"{label:<42}{value:>10.1f}{unit}")
    if "--no-postgres" not in sys.argv:
        from store_postgres import run_section

        print()
        for text in run_section(fact_draft, fact("k1", 1, 1).model_dump(mode="json")):
            print(text)
    print(f"\ntotal benchmark time: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
