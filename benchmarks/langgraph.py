"""LangGraph checkpointers: SkillnbSaver against SqliteSaver and InMemorySaver.

Run with ``.venv/bin/python benchmarks/langgraph.py [--steps 100,1000,5000] [--savers ...]``
(about 200 s of CPU, a few minutes on a quiet machine; ``--savers SkillnbSaver,SqliteSaver``
is shorter, ``--steps 100,1000,20000`` longer). One process, one run of each saver. It joins
``benchmarks/all.py``'s table: SkillnbSaver's ms per step against SqliteSaver (floor 0.5x)
and InMemorySaver (floor 1.5x) at each step count, its growth from the first to the last
count (flat: at most 1.5x), and its disk against SqliteSaver's (floor 1/10).

Workload: a one-node graph whose state is a dict channel reduced with ``operator.or_``;
each ``invoke`` on one thread adds one key (``k<n>`` -> ``n``), so after N steps the dict
holds N keys. The savers advance in turn, one invoke each, so a busy disk slows them all
alike. Every invoke is timed, in wall-clock time and in process CPU time (which leaves out
waiting on ``fsync``); "at N" is the median of the invokes from 0.9 N to N, "growth" is that
figure at the largest N over the one at the smallest. The floor is a raw ``os.write`` +
``os.fsync`` of 200 bytes, measured every 100 steps. Sizes: the sidecar folder
(SkillnbSaver), the database with its WAL (SqliteSaver), and the serialized bytes held
(InMemorySaver, which keeps no file). "LangGraph alone" is InMemorySaver with a serializer
that keeps references: the graph loop's own cost per step, which no checkpointer avoids.

SkillnbSaver uses LangGraph's default ``durability="async"`` like the others; its journal is
compacted by the run as usual while the thread grows.
"""

# ruff: noqa: E402  -- the imports below must follow the sys.path fix

from __future__ import annotations

import argparse
import operator
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _table import Row, row

# This file is named like the package it measures: keep its folder off the import path
# (``_table`` above is imported first, from beside it).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver


class State(TypedDict):
    d: Annotated[dict[str, int], operator.or_]


def add_key(state: State) -> dict[str, dict[str, int]]:
    n = len(state["d"])
    return {"d": {f"k{n}": n}}


def graph(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(State)
    builder.add_node("add", add_key)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def fsync_floor(folder: Path, n: int = 300) -> float:
    path = folder / "floor.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 199 + b"\n"
    times = []
    try:
        for _ in range(n):
            start = time.perf_counter()
            os.write(fd, line)
            os.fsync(fd)
            times.append(time.perf_counter() - start)
    finally:
        os.close(fd)
    return statistics.median(times) * 1000


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def memory_size(saver: InMemorySaver) -> int:
    total = 0
    for spaces in saver.storage.values():
        for checkpoints in spaces.values():
            for (_, cp), (_, md), _parent in checkpoints.values():
                total += len(cp) + len(md)
    for writes in saver.writes.values():
        total += sum(len(w[2][1]) for w in writes.values())
    total += sum(len(b[1]) for b in saver.blobs.values())
    return total


@contextmanager
def skillnb_saver(folder: Path) -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], int]]]:
    run = skillnb.open_run(state_dir=folder / "sidecar", memory=False)
    try:
        with SkillnbSaver(run) as saver:
            yield saver, lambda: folder_size(folder / "sidecar")
    finally:
        run.store.close()


@contextmanager
def sqlite_saver(folder: Path) -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], int]]]:
    path = folder / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield SqliteSaver(conn), lambda: folder_size(folder)
    finally:
        conn.close()


@contextmanager
def memory_saver(_folder: Path) -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], int]]]:
    saver = InMemorySaver()
    yield saver, lambda: memory_size(saver)


class ByReference:
    """A serializer that keeps objects as they are: LangGraph's own cost, nothing stored."""

    def __init__(self) -> None:
        self.kept: dict[bytes, Any] = {}

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        key = str(len(self.kept)).encode()
        self.kept[key] = obj
        return "ref", key

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.kept[data[1]]


@contextmanager
def langgraph_alone(_folder: Path) -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], int]]]:
    yield InMemorySaver(serde=ByReference()), lambda: 0


SAVERS = {
    "SkillnbSaver": skillnb_saver,
    "SqliteSaver": sqlite_saver,
    "InMemorySaver": memory_saver,
    "LangGraph alone": langgraph_alone,
}


Samples = dict[str, tuple[list[float], list[float]]]
"""Saver name -> (wall-clock seconds, process CPU seconds) of every invoke."""


def run_interleaved(
    names: list[str], steps: int, root: Path
) -> tuple[Samples, dict[str, int], dict[int, float]]:
    """Advance one thread per saver, step by step in turn, so they share the disk's moods."""
    samples: Samples = {name: ([], []) for name in names}
    floors: dict[int, float] = {}
    config: Any = {"configurable": {"thread_id": "bench"}}
    with ExitStack() as stack:
        made = {
            name: stack.enter_context(SAVERS[name](Path(tempfile.mkdtemp(dir=root))))
            for name in names
        }
        graphs = {name: graph(saver) for name, (saver, _size) in made.items()}
        for n in range(steps):
            for name in names:
                wall, cpu = time.perf_counter(), time.process_time()
                out = graphs[name].invoke({"d": {}}, config)
                samples[name][0].append(time.perf_counter() - wall)
                samples[name][1].append(time.process_time() - cpu)
                assert len(out["d"]) == n + 1
            if (n + 1) % 100 == 0:
                floors[n + 1] = fsync_floor(root, 20)
        sizes = {name: size() for name, (_saver, size) in made.items()}
    return samples, sizes, floors


def window(times: list[float], n: int) -> float:
    """Median milliseconds of the invokes from 0.9 n to n."""
    return statistics.median(times[int(n * 0.9) : n]) * 1000


def mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def table(
    title: str, samples: Samples, which: int, steps: list[int], sizes: dict[str, int]
) -> dict[str, dict[int, float]]:
    print(f"\n{title}\n")
    header = " | ".join(f"at {n:,}" for n in steps)
    print(f"| saver | {header} | growth {steps[0]:,} -> {steps[-1]:,} | size at {steps[-1]:,} |")
    print("|---" * (len(steps) + 3) + "|")
    out = {}
    for name, both in samples.items():
        at = {n: window(both[which], n) for n in steps}
        out[name] = at
        cells = " | ".join(f"{at[n]:.2f}" for n in steps)
        print(f"| {name} | {cells} | {at[steps[-1]] / at[steps[0]]:.2f}x | {mib(sizes[name])} |")
    return out


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure the savers, print the tables, return the headline rows (``benchmarks/all.py``)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", default="100,1000,5000")
    parser.add_argument("--savers", default=",".join(SAVERS))
    args = parser.parse_args(argv)
    steps = sorted(int(s) for s in args.steps.split(","))
    names = args.savers.split(",")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        samples, sizes, floors = run_interleaved(names, steps[-1], root)
    floor_line = ", ".join(f"{floors[n]:.2f} at {n:,}" for n in steps if n in floors)
    print(f"raw write+fsync floor (ms, measured beside the windows): {floor_line}")
    wall = table(
        "Wall-clock ms per step (median of the invokes from 0.9 N to N)", samples, 0, steps, sizes
    )
    cpu = table(
        "Process CPU ms per step (all threads; leaves out waiting on the disk)",
        samples,
        1,
        steps,
        sizes,
    )
    own_costs(names, steps, wall, cpu)
    rows = headline(wall, sizes, steps)
    if rows:
        print()
        for found in rows:
            ratio = f"{found['ratio']:.3f}x" if found["ratio"] is not None else "-"
            ok = {True: "ok", False: "MISSED", None: "-"}[found["ok"]]
            print(f"{found['figure']}: {ratio} (floor {found['target']}) {ok}")
    return rows


def own_costs(
    names: list[str], steps: list[int], wall: dict[str, dict[int, float]], cpu: Any
) -> None:
    """Each saver's ms per step minus LangGraph's own (when ``LangGraph alone`` ran)."""
    base = "LangGraph alone"
    if base not in wall:
        return
    print(f"\nEach saver's own cost: its ms per step minus {base}'s\n")
    print("| saver | " + " | ".join(f"wall at {n:,}" for n in steps), end=" | ")
    print(" | ".join(f"CPU at {n:,}" for n in steps) + " | wall growth | CPU growth |")
    print("|---" * (2 * len(steps) + 3) + "|")
    for name in (n for n in names if n != base):
        own_wall = [wall[name][n] - wall[base][n] for n in steps]
        own_cpu = [cpu[name][n] - cpu[base][n] for n in steps]
        cells = " | ".join(f"{v:.2f}" for v in own_wall + own_cpu)
        growth = f"{own_wall[-1] / own_wall[0]:.2f}x | {own_cpu[-1] / own_cpu[0]:.2f}x"
        print(f"| {name} | {cells} | {growth} |")


def headline(
    wall: dict[str, dict[int, float]], sizes: dict[str, int], steps: list[int]
) -> list[Row]:
    """SkillnbSaver against the other savers measured in the same run, with the floors."""
    ours = wall.get("SkillnbSaver")
    if ours is None:
        return []
    rows = []
    for name, target in (("SqliteSaver", "<= 0.5"), ("InMemorySaver", "<= 1.5")):
        theirs = wall.get(name, {})
        for n in steps if theirs else []:
            figure = f"SkillnbSaver ms/step at {n:,} steps vs {name}"
            rows.append(
                row(
                    "langgraph",
                    figure,
                    ours[n],
                    "ms",
                    baseline=theirs[n],
                    baseline_name=name,
                    target=target,
                )
            )
    first, last = steps[0], steps[-1]
    if last != first:
        figure = f"SkillnbSaver ms/step at {last:,} vs at {first:,} (flat)"
        rows.append(
            row(
                "langgraph",
                figure,
                ours[last],
                "ms",
                baseline=ours[first],
                baseline_name=f"itself at {first:,}",
                target="<= 1.5",
            )
        )
    if "SqliteSaver" in sizes:
        figure = f"SkillnbSaver disk at {last:,} steps vs SqliteSaver"
        rows.append(
            row(
                "langgraph",
                figure,
                sizes["SkillnbSaver"] / 2**20,
                "MiB",
                baseline=sizes["SqliteSaver"] / 2**20,
                baseline_name="SqliteSaver",
                target="<= 0.1",
            )
        )
    return rows


if __name__ == "__main__":
    main()
