"""LangGraph checkpointers: SkillnbSaver against SqliteSaver and InMemorySaver.

Run with ``.venv/bin/python benchmarks/langgraph.py [--steps 100,1000,5000]`` (a few
minutes; SqliteSaver's database reaches gigabytes). One process, one run of each saver.

Workload: a one-node graph whose state is a dict channel reduced with ``operator.or_``;
each ``invoke`` on one thread adds one key (``k<n>`` -> ``n``), so after N steps the dict
holds N keys. Every invoke is timed; "ms/step at N" is the median of the invokes from 0.9 N
to N, "growth" is that figure at the largest N over the one at the smallest. The same graph
runs with each saver; the floor is a raw ``os.write`` + ``os.fsync`` of 200 bytes measured in
the same run. Sizes: the sidecar folder (SkillnbSaver), the database with its WAL
(SqliteSaver), and the serialized bytes held (InMemorySaver, which keeps no file).

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

# This file is named like the package it measures: keep its folder off the import path.
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
        yield SkillnbSaver(run), lambda: folder_size(folder / "sidecar")
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


SAVERS = {"SkillnbSaver": skillnb_saver, "SqliteSaver": sqlite_saver, "InMemorySaver": memory_saver}


def measure(make: Any, steps: list[int], root: Path) -> tuple[dict[int, float], int]:
    folder = Path(tempfile.mkdtemp(dir=root))
    times: list[float] = []
    with make(folder) as (saver, size):
        compiled = graph(saver)
        config = {"configurable": {"thread_id": "bench"}}
        for n in range(max(steps)):
            start = time.perf_counter()
            out = compiled.invoke({"d": {}}, config)
            times.append(time.perf_counter() - start)
            assert len(out["d"]) == n + 1
        at = {n: statistics.median(times[int(n * 0.9) : n]) * 1000 for n in steps}
        return at, size()


def mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="100,1000,5000")
    parser.add_argument("--savers", default=",".join(SAVERS))
    args = parser.parse_args()
    steps = sorted(int(s) for s in args.steps.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        floor = fsync_floor(root)
        print(f"raw write+fsync floor: {floor:.3f} ms\n")
        header = " | ".join(f"ms/step at {n:,}" for n in steps)
        print(f"| saver | {header} | growth | size at {steps[-1]:,} |")
        print("|---" * (len(steps) + 3) + "|")
        results = {}
        for name in args.savers.split(","):
            at, size = measure(SAVERS[name], steps, root)
            results[name] = (at, size)
            cells = " | ".join(f"{at[n]:.2f} ({at[n] / floor:.1f}x)" for n in steps)
            growth = at[steps[-1]] / at[steps[0]]
            print(f"| {name} | {cells} | {growth:.2f}x | {mib(size)} |", flush=True)
        if "SkillnbSaver" in results and "SqliteSaver" in results:
            ours, theirs = results["SkillnbSaver"], results["SqliteSaver"]
            ratios = ", ".join(f"{ours[0][n] / theirs[0][n]:.2f}" for n in steps)
            print(f"\nSkillnbSaver / SqliteSaver per step: {ratios}")
            print(f"SkillnbSaver / SqliteSaver size at {steps[-1]:,}: {ours[1] / theirs[1]:.4f}")


if __name__ == "__main__":
    main()
