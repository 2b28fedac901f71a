"""Engine overhead: ``check`` + ``fire`` of a transition with three cheap gates, against the
raw durable append of the sidecar store, both measured in this run on this machine.

Target: the engine adds at most 0.5 ms over the store append.

    .venv/bin/python benchmarks/engine.py [--n 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import skillnb
from skillnb.core.runstate.records import EventDraft
from skillnb.store.sidecar.store import SidecarStore

WORKFLOW = {
    "workflow": {
        "name": "bench",
        "states": ["a", "b"],
        "transitions": [
            {"from": "a", "to": "b", "trigger": "go", "gates": ["in_a", "has_n", "n_small"]},
            {"from": "b", "to": "a", "trigger": "back"},
        ],
        "gates": {
            "in_a": {"state": ["a"]},
            "has_n": {"requires": ["n"]},
            "n_small": {"check": "n < 10 and len(items) >= 2"},
        },
    }
}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SidecarStore(Path(tmp) / "raw")
        draft = EventDraft(
            type="transition.fired",
            at=datetime.now(UTC),
            data={"trigger": "go", "from": "a", "to": "b", "action": None},
        )
        append: list[float] = []
        for _ in range(args.n):
            head = store.head()
            t0 = time.perf_counter()
            store.append([draft], expected_version=head)
            append.append(time.perf_counter() - t0)

        run = skillnb.open_run(
            state_dir=Path(tmp) / "run", workflow=skillnb.Workflow.from_dict(WORKFLOW), memory=False
        )
        run.formalize("n", 3)
        run.formalize("items", [1, 2, 3])
        check: list[float] = []
        fire: list[float] = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            report = run.check("go")
            t1 = time.perf_counter()
            run.fire("go")
            t2 = time.perf_counter()
            assert report.passed
            run.fire("back")
            check.append(t1 - t0)
            fire.append(t2 - t1)

    a, c, f = _median_ms(append), _median_ms(check), _median_ms(fire)
    print(f"{'operation':<40}{'median ms':>12}{'vs append':>12}")
    print(f"{'store append (1 event, fsync)':<40}{a:>12.3f}{1:>12.2f}")
    print(f"{'run.check (3 gates, no write)':<40}{c:>12.3f}{c / a:>12.2f}")
    print(f"{'run.fire (3 gates + append)':<40}{f:>12.3f}{f / a:>12.2f}")
    print(f"{'check + fire':<40}{c + f:>12.3f}{(c + f) / a:>12.2f}")
    print(
        f"engine overhead over the append: {f - a:.3f} ms for fire, {c + f - a:.3f} ms for "
        f"check + fire (target <= 0.5 ms); n={args.n}"
    )


if __name__ == "__main__":
    main()
