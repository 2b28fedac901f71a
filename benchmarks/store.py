"""Sidecar store benchmark: durable writes against raw write+fsync, and loading a big run.

Run with ``.venv/bin/python benchmarks/store.py`` (under a minute). Every figure is the median
of one run on this machine; ratios are against the raw ``os.write`` + ``os.fsync`` of the same
bytes, measured in the same run, so they travel between machines better than the times. The
sidecar and ``run.formalize`` are measured at both sizes in the same minutes (a write at the
10th fact, then one at the 10,000th, in turn, each beside a raw write of its own): the
machine's speed drifts by a fifth within minutes here, and two sizes measured one after the
other showed that drift as growth. On a disk busy with other writers, where the raw fsync
takes milliseconds, every ratio tends to 1: read the CPU figures then (``run.formalize CPU``
beside the raw write's).

Workload: one "fact write" is an ``append`` of a single ``fact.formalized`` event whose data is
a dumped :class:`~skillnb.core.runstate.records.Fact` (about 370 bytes as a journal line). Compared
stores:

* ``raw``: ``os.write`` + ``os.fsync`` of the same line on an ``O_APPEND`` file (the floor);
* ``sidecar``: :class:`skillnb.store.SidecarStore` (lock, CAS check, checksum, write, fsync);
* ``naive JSON``: rewrite one JSON file of all facts each write (temp file, fsync, rename);
* ``sqlite WAL``: ``sqlite3`` in WAL mode, ``synchronous=FULL``, one insert per transaction;
* ``run.formalize``: the whole durable path of :meth:`skillnb.run.Run.formalize` (encode,
  lock, catch up, append, fsync, fold) over a sidecar.

Batches: the cost per item of ``run.items`` (marking one item done and claiming the next is
one append), with the appends and fsyncs of the journal counted per item (the goal: one
durable write per item), and items per second for 1, 2 and 4 processes consuming one batch of
400 items whose body sleeps 5 ms (the goal: 4 consumers at least 3 times one).

Group commit: ``run.formalize`` by 1 and by 4 processes writing to one run, appends per
second, with the sidecar's group commit (fsync just after the lock is let go) and without it
(``group_commit=False``: fsync under the lock); and one writer's latency in both modes,
alternated in one process. The goal: 4 writers at least 1.5 times faster, one writer no
slower. The two modes run back to back in each of ``GROUP_ROUNDS`` rounds (which goes first
alternates), and the figures are those of the median round by gain: on a disk shared with
other writers, fsync times swing by ten times from one second to the next, so a round's two
runs see the same disk more often than two best-of figures taken apart do. The gain of every
round is printed too.

``main(argv)`` returns the headline figures as rows (see ``benchmarks/_table.py``) for
``benchmarks/all.py``.

Loading: a journal of 100,000 fact events read by a fresh store, without a snapshot (the
median of ``LOADS`` loads, each by a store of its own; one load alone swings by a third from
run to run here), then with the snapshot of its 10,000 facts.

Memory: the bytes a run holds more for each version of one key written over (a new 4 KB value
each time), between 1,000 and 2,000 versions (the goal: a few bytes, the journal's line index;
a run that kept every version's value held about 4.5 KB each).

Then the team store on a local PostgreSQL (see ``benchmarks/store_postgres.py``; skip it with
``--no-postgres``).
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from _table import Row, format_table, row
from skillnb.core.runstate.records import CheckedDraft, Event, EventDraft, Fact, RunState, json_time
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.sidecar.journal import encode_events
from skillnb.store.sidecar.snapshot import read_snapshot

GROUP_ROUNDS = 5  # rounds of the group commit race, each with both modes back to back
WRITES = 200  # timed writes per measurement point (naive JSON at 10,000 facts: NAIVE_BIG)
NAIVE_BIG = 30
BIG = 10_000  # facts (and writes) for the "10,000th write" point
EVENTS = 100_000  # events behind the compacted snapshot in the load test
LOADS = 3  # loads of the 100,000-event journal; the figure is their median
VERSIONS = 1000  # versions of one key per step of the memory measurement
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


_NOW_JSON = json_time(NOW)


def fact_draft(n: int) -> EventDraft:
    """The ``fact.formalized`` draft of write ``n``, built as the writer builds it: a plain record.

    The same data as ``fact(...).model_dump(mode="json")`` (key order included: the same
    journal line), made without a model, as :func:`skillnb.service.facts.write_fact` does.
    """
    record = {
        "v": 1,
        "key": f"k{n % BIG}",
        "value": {"score": n, "label": f"item k{n % BIG}"},
        "encoding": "json",
        "restorable": True,
        "kind": "data",
        "version": 1 + n // BIG,
        "seq": n,
        "at": _NOW_JSON,
        "cell_id": "cell-1234",
        "source_hash": "ab" * 16,
        "note": None,
        "preview": f"score {n}",
    }
    return CheckedDraft.of("fact.formalized", NOW, {"fact": record})


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


def paired(
    write: Callable[[int], None], raw: Raw | Callable[[int], None], first: int, count: int
) -> Point:
    """Medians (microseconds) of ``write`` and of the raw write (or another baseline), alternated.

    Alternating keeps both under the same disk conditions (other processes, write-back), and
    which of the two goes first alternates too (an fsync right after another may wait for the
    file system's journal commit of the first). Also returns the CPU time per write of each
    (``time.process_time``): what the code costs, apart from waiting for the disk.
    """
    store_times: list[float] = []
    raw_times: list[float] = []
    cpu = {"store": 0.0, "raw": 0.0}
    baseline = raw.write if isinstance(raw, Raw) else raw

    def timed(name: str, fn: Callable[[int], None], n: int, into: list[float]) -> None:
        start, began = time.perf_counter(), time.process_time()
        fn(n)
        into.append(time.perf_counter() - start)
        cpu[name] += time.process_time() - began

    for n in range(first, first + count):
        pair = [("raw", baseline, raw_times), ("store", write, store_times)]
        for name, fn, into in pair if n % 2 else reversed(pair):
            timed(name, fn, n, into)
    store_cpu, raw_cpu = cpu["store"], cpu["raw"]
    return Point(
        statistics.median(store_times) * 1e6,
        statistics.median(raw_times) * 1e6,
        store_cpu / count * 1e6,
        raw_cpu / count * 1e6,
    )


def paired_sizes(
    small: Callable[[int], None],
    big: Callable[[int], None],
    raw: Raw,
    count: int,
    first: int = 0,
) -> tuple[Point, Point]:
    """:func:`paired` of a write at the 10th fact and of one at the 10,000th, interleaved.

    Write ``n`` of each size goes in the same round (which size goes first alternates), each
    beside a raw write of its own: both sizes see the same minutes of the disk and of the
    machine, so their ratio (the growth) is about the code, not about when it ran.
    """
    points: dict[str, list[Point]] = {"small": [], "big": []}
    for n in range(first, first + count):
        pair = [("small", small), ("big", big)]
        for name, write in pair if n % 2 else reversed(pair):
            points[name].append(paired(write, raw, n, 1))
    return _median_point(points["small"]), _median_point(points["big"])


def _median_point(points: list[Point]) -> Point:
    """The medians of single-write points (CPU: the mean, as :func:`paired` gives it)."""
    return Point(
        statistics.median(p.store for p in points),
        statistics.median(p.raw for p in points),
        statistics.fmean(p.store_cpu for p in points),
        statistics.fmean(p.raw_cpu for p in points),
    )


def bench_sidecar(folder: Path, raw: Raw) -> tuple[Point, Point]:
    """The store alone, at the 10th and at the 10,000th fact (two stores, sampled in turn)."""
    small, big = (SidecarStore(folder / f"sidecar-{size}") for size in (10, BIG))
    for n in range(10):
        small.append([fact_draft(n)], expected_version=n)
    head = 0
    while head < BIG:  # fill quickly, in batches, to reach the 10,000th write
        batch = min(1000, BIG - head)
        big.append([fact_draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    points = paired_sizes(_writer(small, 10), _writer(big, BIG), raw, WRITES)
    small.close()
    big.close()
    return points


def _writer(store: SidecarStore, head: int) -> Callable[[int], None]:
    """One fact write after another to ``store``, whose head is ``head``."""
    seqs = itertools.count(head)

    def write(_: int) -> None:
        n = next(seqs)
        store.append([fact_draft(n)], expected_version=n)

    return write


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
    """``run.formalize`` end to end, at the 10th and at the 10,000th fact (sampled in turn)."""
    small_run = open_run(state_dir=folder / "run-10", memory=False)
    big_run = open_run(state_dir=folder / "run-10000", memory=False)
    value = {"score": 1, "label": "item"}
    for n in range(10):
        small_run.formalize(f"k{n}", value)
        big_run.formalize(f"k{n}", value)
    head = big_run.version
    while head < BIG:
        batch = min(1000, BIG - head)
        big_run.store.append([fact_draft(head + i) for i in range(batch)], expected_version=head)
        head += batch
    big_run.refresh()
    points = paired_sizes(
        lambda n: small_run.formalize(f"k{n}", value),  # a new fact each write, from the 11th
        lambda n: big_run.formalize(f"k{n % BIG}", value),  # a new version of one of 10,000
        raw,
        WRITES,
        first=10,
    )
    small_run.close()
    big_run.close()
    return points


class Counted(NamedTuple):
    """Durable writes of the journal during a measurement."""

    appends: int
    fsyncs: int


def bench_batch_items(folder: Path, raw: Raw) -> tuple[Point, Counted]:
    """One ``run.items`` step (item done + next claimed) against a raw write; writes counted.

    Appends are counted by the store's phase hook, fsyncs by wrapping ``os.fsync`` (the real
    one still runs) and keeping those of the journal's file.
    """
    counts = {"append.written": 0}
    store = SidecarStore(
        folder / "batch", phase_hook=lambda p: counts.__setitem__(p, counts.get(p, 0) + 1)
    )
    run = open_run(store=store, memory=False)
    items = iter(run.items("tickets", [f"t{i:05}" for i in range(WRITES + 20)]))
    for _ in range(10):
        next(items)
    journal = (folder / "batch" / "journal.jsonl").stat().st_ino
    fsyncs = 0
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        nonlocal fsyncs
        fsyncs += os.fstat(fd).st_ino == journal
        real_fsync(fd)

    before = counts["append.written"]
    os.fsync = fsync
    try:
        point = paired(lambda _n: next(items), raw, 0, WRITES)
    finally:
        os.fsync = real_fsync
    counted = Counted(counts["append.written"] - before, fsyncs)
    run.close()
    return point, counted


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
        done, seconds = race(CONSUMER, [str(state), str(items)], go, n)
        assert done == items, (n, done)
        rates[n] = items / seconds
    return rates


def race(script: str, args: list[str], go: Path, procs: int) -> tuple[int, float]:
    """Start ``procs`` copies of ``script`` and let them go at once; return (done, seconds).

    Each copy gets ``args[0]``, ``go``, then ``args[1:]``; it touches ``<go>.ready.<pid>``,
    waits for ``go`` to exist, works, and prints how much it did and when it finished. The
    time runs from the go signal to the last copy's end.
    """
    popen = [
        subprocess.Popen(
            [sys.executable, "-c", script, args[0], str(go), *args[1:]],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(procs)
    ]
    while len(list(go.parent.glob(f"{go.name}.ready.*"))) < procs:
        time.sleep(0.01)
    start = time.time()
    go.touch()
    results = [p.communicate()[0].split() for p in popen]
    done = sum(int(count) for count, _ in results)
    return done, max(float(end) for _, end in results) - start


WRITER = r"""
import os, sys, time, warnings
warnings.simplefilter("ignore")  # the capacity warning of a run of many facts
import skillnb
from skillnb.store import SidecarStore
state, go, n, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "group"
run = skillnb.open_run(store=SidecarStore(state, group_commit=group), memory=False)
open(f"{go}.ready.{os.getpid()}", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(n):
    run.formalize(f"w{os.getpid()}_{i % 20}", {"i": i})
print(n, time.time())
"""


def bench_writers(folder: Path, procs: int, group: bool, writes: int = 400) -> float:
    """Appends per second of ``procs`` processes formalizing into one run at once."""
    mode = "group" if group else "lock"
    state, go = folder / f"writers-{mode}-{procs}", folder / f"go-{mode}-{procs}"
    with open_run(store=SidecarStore(state, group_commit=group), memory=False) as run:
        run.formalize("ready", True)
    each = writes // procs
    done, seconds = race(WRITER, [str(state), str(each), mode], go, procs)
    assert done == each * procs, (procs, done)
    return done / seconds


class GroupCommit(NamedTuple):
    """The writers' race: the median round's rates, and every round's gain."""

    rates: dict[tuple[int, bool], float]
    """(processes, group commit) -> appends per second, in the median round by gain."""
    gains: dict[int, list[float]]
    """processes -> group commit's gain (appends/s with it / without it) of each round."""


def bench_group_commit(folder: Path) -> tuple[GroupCommit, Point]:
    """Writers' throughput in both modes (median of GROUP_ROUNDS paired rounds), one's latency.

    The latency pairs a run with group commit against one without, alternated in one process:
    ``Point.store`` is with group commit, ``Point.raw`` without.
    """
    rounds: dict[int, list[tuple[float, float]]] = {1: [], 4: []}
    for round_ in range(GROUP_ROUNDS):
        for procs in (1, 4):
            order = (False, True) if round_ % 2 == 0 else (True, False)
            rate = {
                group: bench_writers(folder / f"round{round_}", procs, group) for group in order
            }
            rounds[procs].append((rate[False], rate[True]))
    rates: dict[tuple[int, bool], float] = {}
    for procs, pairs in rounds.items():
        median = sorted(pairs, key=lambda pair: pair[1] / pair[0])[len(pairs) // 2]
        rates[procs, False], rates[procs, True] = median
    gains = {
        procs: [grouped / locked for locked, grouped in pairs] for procs, pairs in rounds.items()
    }
    with (
        open_run(store=SidecarStore(folder / "lat-group"), memory=False) as grouped,
        open_run(
            store=SidecarStore(folder / "lat-lock", group_commit=False), memory=False
        ) as locked,
    ):
        value = {"score": 1, "label": "item"}
        latency = paired(
            lambda n: grouped.formalize(f"k{n % 20}", value),
            lambda n: locked.formalize(f"k{n % 20}", value),
            0,
            WRITES,
        )
    return GroupCommit(rates, gains), latency


def bench_memory(folder: Path) -> float:
    """Bytes a run holds more for each version of one key written over, from VERSIONS to twice.

    Each version's value is a new object of about 4 KB. A run keeps the newest value of each
    key (and a few recent events), so what may grow per version is the journal's line index:
    a few bytes. Measured with ``tracemalloc`` after a collection, in this process.
    """
    run = open_run(state_dir=folder / "memory", memory=False)
    held = []
    tracemalloc.start()
    try:
        for versions in (VERSIONS, 2 * VERSIONS):
            while run.version < versions:
                n = run.version
                run.formalize("progress", {"n": n, "text": f"{n:06}" + "x" * 4090})
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        run.close()
    return (held[1] - held[0]) / VERSIONS


def bench_load(folder: Path) -> dict[str, float]:
    """Open and load a run of EVENTS events over BIG facts, compacted and not."""
    store = SidecarStore(folder / "big")
    head = 0
    while head < EVENTS:
        store.append([fact_draft(head + i) for i in range(1000)], expected_version=head)
        head += 1000
    timings = {}
    runs = []
    for _ in range(LOADS):  # a fresh store each time: nothing of the last load is kept
        start = time.perf_counter()
        loaded = SidecarStore(folder / "big").load()
        runs.append(time.perf_counter() - start)
        assert len(loaded.events) == EVENTS
        del loaded
    timings["replay 100,000 events (no snapshot)"] = statistics.median(runs) * 1e3
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


def main(argv: list[str] | None = None) -> list[Row]:
    """Run every measurement, print the detailed tables, return the headline rows."""
    argv = sys.argv[1:] if argv is None else argv
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        folder = Path(tmp)
        draft = fact_draft(10)
        line = encode_events([Event(seq=11, type=draft.type, at=draft.at, data=draft.data)])
        raw = Raw(folder, line)
        points = {
            "sidecar": bench_sidecar(folder, raw),
            "naive JSON": bench_naive(folder, raw),
            "sqlite WAL": bench_sqlite(folder, raw),
            "run.formalize": bench_formalize(folder, raw),
        }
        item, counted = bench_batch_items(folder, raw)
        consumers = bench_consumers(folder)
        race, latency = bench_group_commit(folder)
        load = bench_load(folder)
        memory = bench_memory(folder)
    print_writes(len(line), points)
    print(
        f"\nbatch item (done + next claim, one append): {item.store:.0f} us, "
        f"raw {item.raw:.0f} us, x raw {item.store / item.raw:.2f}, CPU {item.store_cpu:.0f} us; "
        f"per item: {counted.appends / WRITES:.2f} appends, {counted.fsyncs / WRITES:.2f} fsyncs "
        "of the journal"
    )
    print("consumers of one 400-item batch, 5 ms per item:")
    for n, rate in consumers.items():
        label = f"{n} process{'es' if n > 1 else ''}"
        print(f"  {label:<12}{rate:>7.0f} items/s  ({rate / consumers[1]:.2f}x one)")
    print_group_commit(race, latency)
    print()
    for label, value in load.items():
        unit = "" if "KB" in label else " ms"
        print(f"{label:<42}{value:>10.1f}{unit}")
    print(f"{'memory held per version of one key':<42}{memory:>10.0f} bytes")
    if "--no-postgres" not in argv:
        from store_postgres import run_section

        print()
        for text in run_section(fact_draft, fact("k1", 1, 1).model_dump(mode="json")):
            print(text)
    print(f"\ntotal benchmark time: {time.perf_counter() - started:.0f} s")
    found = rows(points, item, counted, consumers, race.rates, latency, load)
    label = f"memory per version of one key ({VERSIONS:,} to {2 * VERSIONS:,})"
    found.append(row("store", label, memory, "bytes", target="<= 256 bytes"))
    return found


def print_writes(size: int, points: dict[str, tuple[Point, Point]]) -> None:
    print(
        f"fact write: one {size}-byte event; medians in microseconds of {WRITES} writes "
        f"({NAIVE_BIG} for naive JSON at 10,000), each alternated with a raw write+fsync of the "
        "same bytes (the 'raw' columns)\n"
    )
    head = ("store", "@10", "raw", "x raw", "@10,000", "raw", "x raw", "growth", "CPU", "raw CPU")
    print(f"{head[0]:<14}" + "".join(f"{h:>9}" for h in head[1:]))
    for name, (small, big) in points.items():
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
        print(f"{name:<14}" + "".join(f"{c:>9.0f}" if c >= 10 else f"{c:>9.2f}" for c in cells))
    print(
        "\ngrowth: (x raw @10,000) / (x raw @10), how much slower the 10,000th write is than the "
        "10th once disk drift is taken out; CPU: process CPU time per write"
    )


def print_group_commit(race: GroupCommit, latency: Point) -> None:
    print(f"run.formalize into one run, appends/s (median of {GROUP_ROUNDS} paired rounds):")
    print(f"  {'':<12}{'fsync under lock':>18}{'group commit':>14}{'gain':>7}   every round")
    for procs in (1, 4):
        locked, grouped = race.rates[procs, False], race.rates[procs, True]
        label = f"{procs} process{'es' if procs > 1 else ''}"
        every = " ".join(f"{gain:.2f}" for gain in race.gains[procs])
        print(f"  {label:<12}{locked:>18.0f}{grouped:>14.0f}{grouped / locked:>6.2f}x   {every}")
    print(
        f"one writer's run.formalize, alternated: group commit {latency.store:.0f} us, "
        f"fsync under lock {latency.raw:.0f} us ({latency.store / latency.raw:.2f}x)"
    )


def rows(
    points: dict[str, tuple[Point, Point]],
    item: Point,
    counted: Counted,
    consumers: dict[int, float],
    writers: dict[tuple[int, bool], float],
    latency: Point,
    load: dict[str, float],
) -> list[Row]:
    """The headline figures, each beside its same-run baseline and its target."""
    raw = "raw write+fsync"
    found = []
    for name, target in (("sidecar", "<= 1.3"), ("sqlite WAL", ""), ("run.formalize", "<= 1.5")):
        small, big = points[name]
        for at, point in (("@10", small), ("@10,000", big)):
            found.append(
                row(
                    "store",
                    f"{name} {at}",
                    point.store,
                    "us",
                    baseline=point.raw,
                    baseline_name=raw,
                    target=target,
                )
            )
    small, big = points["run.formalize"]
    found.append(  # apart from the disk: what the code itself costs beside a raw write
        row(
            "store",
            "run.formalize CPU",
            (small.store_cpu + big.store_cpu) / 2,
            "us",
            baseline=(small.raw_cpu + big.raw_cpu) / 2,
            baseline_name="raw write+fsync CPU",
        )
    )
    found += [
        row(
            "store",
            "batch item: done + next claim",
            item.store,
            "us",
            baseline=item.raw,
            baseline_name=raw,
        ),
        row(
            "store",
            "batch: journal fsyncs per item",
            counted.fsyncs / WRITES,
            "fsync",
            target="<= 1 fsync",
        ),
        row(
            "store",
            "batch: journal appends per item",
            counted.appends / WRITES,
            "append",
            target="<= 1 append",
        ),
        row(
            "store",
            "batch: 4 consumers",
            consumers[4],
            "items/s",
            baseline=consumers[1],
            baseline_name="1 consumer",
            target=">= 3",
        ),
        row(
            "store",
            "4 writers, group commit",
            writers[4, True],
            "appends/s",
            baseline=writers[4, False],
            baseline_name="fsync under lock",
            target=">= 1.5",
        ),
        row(
            "store",
            "1 writer latency, group commit",
            latency.store,
            "us",
            baseline=latency.raw,
            baseline_name="fsync under lock",
            target="<= 1.1",
        ),
        row(
            "store",
            "replay 100,000 events",
            load["replay 100,000 events (no snapshot)"],
            "ms",
            target="<= 500 ms",
        ),
        row(
            "store",
            "open + load, 10,000-fact snapshot",
            load["open + load, snapshot of 10,000 facts"],
            "ms",
        ),
    ]
    return found


if __name__ == "__main__":
    table = main()
    print()
    print(format_table(table))
