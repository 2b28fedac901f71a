"""Run every benchmark and print one table of their headline figures.

    .venv/bin/python benchmarks/all.py [--only store,cells] [--skip langgraph] [--no-postgres]

Each benchmark runs in a process of its own (so one's imports, shells and servers never
weigh on another's timings), one after the other, its own detailed output shown as it
goes. A module that offers ``main(argv) -> list[Row]`` (see ``benchmarks/_table.py``) hands
its rows back as JSON; the others are run as scripts and only their output is shown (they are
listed under the table). The table then has one line per figure: benchmark, figure, value,
baseline from the same run, ratio, target and whether it is met.

``--no-postgres`` skips the PostgreSQL figures (``store_postgres``, ``team``). The exit status is
non-zero when a benchmark fails to run, not when a figure misses its target.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import Row, check, format_table

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "store",
    "store_postgres",
    "team",
    "cells",
    "summary",
    "replay",
    "engine",
    "suggest",
    "langgraph",
)
"""In the order they run (``store`` runs without its PostgreSQL section: ``store_postgres``)."""

_KEYS = set(Row.__annotations__)


def offers_rows(name: str) -> bool:
    """Tell whether ``benchmarks/<name>.py`` defines ``main`` taking an argument list."""
    tree = ast.parse((HERE / f"{name}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            return bool(node.args.args)
    return False


def _load(name: str) -> Any:
    """Import ``benchmarks/<name>.py`` under a name of its own.

    ``langgraph.py`` is named like the package it measures: imported as ``langgraph`` it
    would hide that package from itself.
    """
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", HERE / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load benchmarks/{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def one(name: str, rows_file: Path, argv: list[str]) -> int:
    """In a child process: run ``name``'s ``main(argv)`` and write its rows as JSON."""
    rows = _load(name).main(argv)
    for found in rows:
        missing = _KEYS - set(found)
        if missing:
            raise ValueError(f"benchmarks/{name}.py returned a row without {sorted(missing)}")
    rows_file.write_text(json.dumps(rows), encoding="utf-8")
    return 0


def run(name: str, argv: list[str], tmp: Path) -> tuple[list[Row] | None, int, float]:
    """Run one benchmark in a child process; its rows (``None``: it offers none)."""
    started = time.perf_counter()
    rows_file = tmp / f"{name}.json"
    if offers_rows(name):
        command = [sys.executable, str(HERE / "all.py"), "--one", name, "--rows", str(rows_file)]
        command += ["--", *argv]
    else:
        command = [sys.executable, str(HERE / f"{name}.py"), *argv]
    print(f"\n=== benchmarks/{name}.py {' '.join(argv)}".rstrip(), flush=True)
    code = subprocess.run(command, check=False).returncode
    rows: list[Row] | None = None
    if rows_file.exists():
        rows = json.loads(rows_file.read_text(encoding="utf-8"))
        for found in rows or []:  # recomputed here: one rule for every benchmark
            found["ok"] = check(found["target"], found["value"], found["ratio"])
    return rows, code, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks chosen by ``argv`` and print the combined table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated benchmarks to run")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL figures")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return one(args.one, args.rows, args.rest)
    chosen = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    unknown = set(chosen) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    skipped = args.skip.split(",") + (["store_postgres", "team"] if args.no_postgres else [])
    chosen = [n for n in chosen if n not in skipped]
    table: list[Row] = []
    notes: list[str] = []
    failed = False
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="skillnb-bench-") as tmp:
        for name in chosen:
            extra = ["--no-postgres"] if name == "store" else []  # store_postgres runs alone
            rows, code, seconds = run(name, extra, Path(tmp))
            failed |= code != 0
            if code != 0:
                notes.append(f"{name}: FAILED (exit {code}) after {seconds:.0f} s")
            elif rows is None:
                notes.append(f"{name}: no rows (its own output above), {seconds:.0f} s")
            else:
                table += rows
                notes.append(f"{name}: {len(rows)} figures, {seconds:.0f} s")
            loads.append(os.getloadavg()[0])
    print("\n=== all benchmarks\n")
    print(format_table(table) if table else "(no figures)")
    print()
    for note in notes:
        print(note)
    print(busy(loads, os.cpu_count() or 1))
    return 1 if failed else 0


def busy(loads: list[float], cores: int) -> str:
    """A line on the machine's load while the benchmarks ran (a busy disk slows every fsync).

    Ratios to a raw write+fsync shrink when other processes keep the disk busy (each fsync
    then waits for theirs), so figures taken with a load above the number of cores are
    flagged: compare them with care.
    """
    peak = max(loads)
    line = f"load average (1 min) {min(loads):.1f}-{peak:.1f} on {cores} cores"
    if peak > cores:
        line += ": BUSY (others shared CPU and disk; fsync ratios look better than they are)"
    return line


if __name__ == "__main__":
    sys.exit(main())
