"""Summary rendering cost: ``render_summary`` of views with many facts and history entries,
against ``json.dumps`` of the same view (a baseline that touches every value once), both
measured in this run on this machine.

Target: a view with 10,000 facts renders well under a second (in practice a small multiple
of the JSON baseline), and the result never exceeds the budget.

    .venv/bin/python benchmarks/summary.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from skillnb.core.summary import render_summary

KINDS = ("decision", "constraint", "data", "summary", "note")
BASE = datetime(2024, 5, 1, tzinfo=UTC)


def view(n_facts: int, n_history: int) -> dict[str, Any]:
    """A describe()-shaped view with ``n_facts`` facts and ``n_history`` history entries."""
    return {
        "v": 1,
        "run_id": "bench",
        "workflow": "bench",
        "state": "a",
        "version": n_history,
        "states": ["a", "b"],
        "visited": ["a"],
        "next": [],
        "pending": [],
        "uncertain": [],
        "batches": [],
        "milestones": [],
        "last_report": None,
        "key_ids": {"session": "s"},
        "facts": [
            {
                "key": f"fact_{i:06d}",
                "kind": KINDS[i % 5],
                "version": 1,
                "preview": f"value {i} " + "x" * (i % 80),
                "at": (BASE + timedelta(seconds=i)).isoformat(),
            }
            for i in range(n_facts)
        ],
        "history": [
            {
                "seq": s,
                "type": "fact.formalized",
                "at": (BASE + timedelta(seconds=s)).isoformat(),
                "summary": f"formalized fact_{s:06d}",
            }
            for s in range(1, n_history + 1)
        ],
    }


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'facts':>8} {'history':>8} {'budget':>7} {'render ms':>10} {'json ms':>8} {'ratio':>6}"
    )
    for n_facts, n_history, budget in [
        (100, 20, 4000),
        (1_000, 20, 4000),
        (10_000, 20, 4000),
        (10_000, 20, 100_000),
        (10_000, 100_000, 4000),
        (100_000, 20, 4000),
    ]:
        v = view(n_facts, n_history)
        out = render_summary(v, max_chars=budget)
        if len(out) > budget:
            raise SystemExit(f"summary of {len(out)} chars exceeds the budget of {budget}")
        render = _median_ms(lambda v=v, b=budget: render_summary(v, max_chars=b), args.repeat)
        baseline = _median_ms(lambda v=v: json.dumps(v), args.repeat)
        print(
            f"{n_facts:>8,} {n_history:>8,} {budget:>7,} {render:>10.1f} {baseline:>8.1f}"
            f" {render / baseline:>6.1f}"
        )


if __name__ == "__main__":
    main()
