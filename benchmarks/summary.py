"""View cost: ``run.summary()`` and ``run.describe()`` of real runs that have grown large.

Run with ``.venv/bin/python benchmarks/summary.py [--facts N] [--events N] [--repeat N]``.
Each figure is the median of ``--repeat`` calls on a run opened once (the replay is not
timed; see ``benchmarks/replay.py``):

* a run of 100,000 facts (five kinds, compacted into a snapshot);
* a run of 100,000 events (fact versions over 1,000 keys, steps, batch items done);
* the baseline, measured in the same run: the same calls on a run of 100 facts and 100
  events. The ratio says how much the view grows with the run (1.0: not at all).

Target: every figure at 100,000 facts or events within 50 ms, and the summary within its
budget. Also ``render_summary`` alone over a synthetic view with 100,000 history rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _table import Row
from replay import print_rows, row, write_journal
from skillnb.core.runstate.records import EventDraft, Fact
from skillnb.core.views.summary import render_summary
from skillnb.run import Run, open_run
from skillnb.store import SidecarStore

KINDS = ("decision", "constraint", "data", "summary", "note")
BASE = datetime(2024, 5, 1, tzinfo=UTC)
TARGET_MS = 50.0
BUDGET = 4000


def write_facts(folder: Path, n_facts: int) -> None:
    """A run of ``n_facts`` distinct facts, compacted (opened from its snapshot)."""
    store = SidecarStore(folder)
    store.append(
        [EventDraft(type="run.created", at=BASE, data={"run_id": "bench"})], expected_version=0
    )
    head = 1
    for start in range(0, n_facts, 1000):
        drafts = [
            EventDraft(
                type="fact.formalized",
                at=BASE + timedelta(seconds=i),
                data={
                    "fact": Fact(
                        key=f"fact_{i:06d}",
                        kind=KINDS[i % 5],  # type: ignore[arg-type]
                        value=i,
                        version=1,
                        at=BASE + timedelta(seconds=i),
                        preview=f"value {i} " + "x" * (i % 80),
                    ).model_dump(mode="json")
                },
            )
            for i in range(start, min(start + 1000, n_facts))
        ]
        store.append(drafts, expected_version=head)
        head += len(drafts)
    store.close()
    with open_run(state_dir=folder, memory=False) as run:
        run.compact()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``fn`` over ``repeat`` calls, in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def _check(run: Run) -> None:
    out = run.summary(BUDGET)
    if len(out) > BUDGET:
        raise SystemExit(f"summary of {len(out)} chars exceeds the budget of {BUDGET}")


def _figures(run: Run, repeat: int) -> tuple[float, float]:
    _check(run)
    return (
        median_ms(lambda: run.summary(BUDGET), repeat),
        median_ms(lambda: run.describe(), repeat),
    )


def synthetic_view(n_history: int) -> dict[str, Any]:
    """A describe()-shaped view with ``n_history`` history rows and 20 facts."""
    return {
        "v": 1,
        "run_id": "bench",
        "workflow": "bench",
        "state": "a",
        "version": n_history,
        "facts": [
            {"key": f"f{i}", "kind": "data", "version": 1, "preview": str(i)} for i in range(20)
        ],
        "history": [
            {
                "seq": s,
                "type": "batch.item_done",
                "at": (BASE + timedelta(seconds=s)).isoformat(),
                "summary": f"batch docs: doc-{s:06d} done",
            }
            for s in range(1, n_history + 1)
        ],
    }


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure the views; return the rows (``benchmarks/all.py`` gathers them)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rows: list[Row] = []
    kw: dict[str, str] = {"benchmark": "summary", "baseline_name": "a 100-item run"}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        write_facts(root / "small-facts", 100)
        write_facts(root / "facts", args.facts)
        write_journal(root / "small-events", 100)
        write_journal(root / "events", args.events)
        for what, small, big, n in (
            ("facts", "small-facts", "facts", args.facts),
            ("events", "small-events", "events", args.events),
        ):
            with open_run(state_dir=root / small, memory=False) as run:
                base_summary, base_describe = _figures(run, args.repeat)
            with open_run(state_dir=root / big, memory=False) as run:
                summary, describe = _figures(run, args.repeat)
            rows.append(row(f"run.summary(), {n:,} {what}", summary, base_summary, TARGET_MS, **kw))
            rows.append(
                row(f"run.describe(), {n:,} {what}", describe, base_describe, TARGET_MS, **kw)
            )
    small = synthetic_view(20)
    big = synthetic_view(args.events)
    base = median_ms(lambda: render_summary(small, max_chars=BUDGET), args.repeat)
    render = median_ms(lambda: render_summary(big, max_chars=BUDGET), args.repeat)
    rows.append(
        row(
            f"render_summary, {args.events:,} history rows",
            render,
            base,
            TARGET_MS,
            benchmark="summary",
            baseline_name="20 rows",
        )
    )
    return rows


if __name__ == "__main__":
    print_rows(main(sys.argv[1:]))
