"""Replay cost: opening a run whose journal holds 100,000 events and no snapshot.

Run with ``.venv/bin/python benchmarks/replay.py [--events N] [--repeat N]``. Three figures,
each the best of ``--repeat`` runs, taken in turns:

* ``store.load``: :meth:`SidecarStore.load` of the whole journal (read, checksum, parse,
  validate every line);
* ``open_run``: the same, plus folding every event into the run's state (what opening a run
  costs when nothing was compacted);
* the baselines, measured in the same run: reading the file and parsing every line, nothing
  else (the floor any replay pays to parse the JSON), with the standard library's
  ``json.loads`` and, when the ``speed`` extra is installed, with ``orjson.loads``.

The store decodes lines with msgspec when it is installed (else with orjson, else with the
standard library: the ``speed`` extra installs both); the table says which, and the store's
figures are compared with the orjson baseline when orjson is installed (else with the
standard library's).

The journal mixes what a real run writes: fact versions over 1,000 keys, steps started and
committed, and batch items done (two fifths, two fifths and one fifth). Target: ``open_run``
of 100,000 events within 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _table import Row, format_table
from _table import row as table_row
from skillnb.core.runstate.records import EventDraft, Fact
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.sidecar.fastline import HAVE_ORJSON
from skillnb.store.sidecar.structlines import HAVE_MSGSPEC

try:
    import orjson
except ImportError:  # the store reads with the standard library then
    orjson = None  # type: ignore[assignment]

EVENTS = 100_000
PARSER = "msgspec" if HAVE_MSGSPEC else "orjson" if HAVE_ORJSON else "json (stdlib)"
"""The JSON library the store reads with here."""
JSON = "read + json.loads"
ORJSON = "read + orjson.loads"
TARGET_MS = 500.0
BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CHUNK = 1000


def _fact(n: int) -> dict[str, Any]:
    key = f"k{n % 1000}"
    return Fact(
        key=key,
        value={"score": n, "label": f"item {key}"},
        version=1 + n // 1000,
        at=BASE + timedelta(seconds=n),
        cell_id="cell-1234",
        source_hash="ab" * 16,
        preview=f"score {n}",
    ).model_dump(mode="json")


def draft(n: int) -> EventDraft:
    """The ``n``-th event of the mixed workload (facts, steps, batch items)."""
    at = BASE + timedelta(seconds=n)
    match n % 5:
        case 0 | 1:
            return EventDraft(type="fact.formalized", at=at, data={"fact": _fact(n)})
        case 2:
            return EventDraft(type="step.started", at=at, data={"key": f"s{n // 5}"})
        case 3:
            return EventDraft(type="step.committed", at=at, data={"key": f"s{n // 5}"})
        case _:
            return EventDraft(
                type="batch.item_done", at=at, data={"batch": "docs", "item": f"doc-{n:06d}"}
            )


def write_journal(folder: Path, events: int) -> None:
    """Write ``events`` events into a fresh sidecar at ``folder`` (no snapshot)."""
    store = SidecarStore(folder)
    head = 0
    store.append(
        [EventDraft(type="run.created", at=BASE, data={"run_id": "bench"})], expected_version=0
    )
    head = 1
    while head < events:
        count = min(CHUNK, events - head)
        store.append([draft(head + i) for i in range(count)], expected_version=head)
        head += count
    store.close()


def interleaved(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """The best wall time of each of ``fns`` in milliseconds, measured turn about.

    Taking turns, and the best of ``repeat`` turns rather than the median, keeps a ratio fair
    on a machine that others load unevenly.
    """
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], (time.perf_counter() - start) * 1000)
    return best


def _load(folder: Path, events: int) -> None:
    store = SidecarStore(folder)
    try:
        assert len(store.load().events) == events
    finally:
        store.close()


def _open(folder: Path, events: int) -> None:
    with open_run(state_dir=folder, memory=False) as run:
        assert run.version == events


def _baseline(folder: Path, loads: Callable[[bytes], object] = json.loads) -> None:
    data = (folder / "journal.jsonl").read_bytes()
    for line in data.splitlines():
        loads(line)


def row(
    figure: str,
    ms: float,
    baseline_ms: float | None,
    target_ms: float | None,
    *,
    benchmark: str = "replay",
    baseline_name: str = "",
) -> Row:
    """One result row in milliseconds (the :class:`_table.Row` every benchmark returns)."""
    return table_row(
        benchmark,
        figure,
        round(ms, 2),
        "ms",
        baseline=None if baseline_ms is None else round(baseline_ms, 2),
        baseline_name=baseline_name if baseline_ms is not None else "",
        target="" if target_ms is None else f"<= {target_ms:g} ms",
    )


def print_rows(rows: Sequence[Row]) -> None:
    """Print rows as one table: figure, value, baseline, ratio, target, ok."""
    print(format_table(rows))


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure replay; return the rows (``benchmarks/all.py`` gathers them)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        folder = Path(tmp) / "run"
        write_journal(folder, args.events)
        n = f"{args.events:,}"
        fns: list[Callable[[], object]] = [
            lambda: _baseline(folder),
            lambda: _load(folder, args.events),
            lambda: _open(folder, args.events),
        ]
        if orjson is not None:
            fns.append(lambda: _baseline(folder, orjson.loads))
        times = interleaved(fns, args.repeat)
    baseline, load, opened = times[:3]
    target = TARGET_MS * args.events / EVENTS
    rows = [row(f"baseline: read + json.loads {n} lines", baseline, None, None)]
    name = JSON
    if orjson is not None and HAVE_ORJSON:  # the store's figures beside orjson's
        baseline, name = times[3], ORJSON
        rows.append(row(f"baseline: read + orjson.loads {n} lines", baseline, None, None))
    return [
        *rows,
        row(
            f"store.load ({PARSER}), {n} events, no snapshot",
            load,
            baseline,
            None,
            baseline_name=name,
        ),
        row(
            f"replay (open_run, {PARSER}), {n} events, no snapshot",
            opened,
            baseline,
            target,
            baseline_name=name,
        ),
    ]


if __name__ == "__main__":
    print_rows(main(sys.argv[1:]))
