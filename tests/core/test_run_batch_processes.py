"""The product brief's scenario with real processes: 27 documents, a kill after the 7th.

A first process extracts documents through ``run.items`` and is killed (SIGKILL, no cleanup)
when the loop asks for the 8th; a fresh process continues with the remaining 20. Every
document is completed exactly once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillnb.service.steps import formalize_step

pytestmark = pytest.mark.slow

WORKER = r"""
import os, signal, sys
import skillnb

state_dir, log_path = sys.argv[1], sys.argv[2]
kill_at, kill_mid = int(sys.argv[3]), sys.argv[4] == "mid"
docs = [f"resume_{i:02}.txt" for i in range(1, 28)]
run = skillnb.open_run(state_dir=state_dir, memory=False)
count = 0
for doc in run.items("resumes", docs):
    count += 1
    if count == kill_at and not kill_mid:
        os.kill(os.getpid(), signal.SIGKILL)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(doc + "\n")
        log.flush()
        os.fsync(log.fileno())
    run.formalize("extracted:" + doc, {"name": doc, "ok": True})
    if count == kill_at and kill_mid:
        os.kill(os.getpid(), signal.SIGKILL)
print("finished", count)
"""


def _worker(tmp_path: Path, kill_at: int, where: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            WORKER,
            str(tmp_path / "state"),
            str(tmp_path / "log"),
            str(kill_at),
            where,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_killed_after_the_seventh_the_next_process_does_the_other_twenty(tmp_path: Path) -> None:
    first = _worker(tmp_path, kill_at=8, where="before")
    assert first.returncode == -9, first.stderr
    done_day_1 = (tmp_path / "log").read_text().split()
    assert len(done_day_1) == 7

    second = _worker(tmp_path, kill_at=0, where="before")
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["finished", "20"]

    processed = (tmp_path / "log").read_text().split()
    assert sorted(processed) == [f"resume_{i:02}.txt" for i in range(1, 28)]
    assert len(processed) == len(set(processed)) == 27

    import skillnb

    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    batch = run.snapshot.batches["resumes"]
    assert (len(batch.done), batch.total, batch.remaining()) == (27, 27, [])
    assert len([k for k in run.facts if k.startswith("extracted:")]) == 27


def test_an_item_in_flight_when_the_process_dies_is_yielded_again(tmp_path: Path) -> None:
    first = _worker(tmp_path, kill_at=3, where="mid")
    assert first.returncode == -9, first.stderr
    second = _worker(tmp_path, kill_at=0, where="mid")
    assert second.stdout.split() == ["finished", "25"]
    processed = (tmp_path / "log").read_text().split()
    # the third document was in flight: its work was done, but not its "done" mark
    assert processed.count("resume_03.txt") == 2
    assert sorted(set(processed)) == [f"resume_{i:02}.txt" for i in range(1, 28)]


SAME_KEY = r"""
import sys, time
import skillnb
from skillnb.service.steps import formalize_step

run = skillnb.open_run(state_dir=sys.argv[1], memory=False)
time.sleep(float(sys.argv[2]))
outcome = formalize_step(
    run.steps,
    "shared", lambda: time.sleep(0.6) or sys.argv[3], source_hash="h", wait=30
)
print(outcome.status, outcome.fact.version, outcome.fact.value)
"""


def test_two_processes_formalizing_one_key_at_once_compute_it_once(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_KEY, str(tmp_path / "state"), delay, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for delay, name in (("0", "first"), ("0.2", "second"))
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    import skillnb

    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    history = [f.value for f in run.fact_history("shared")]
    assert len(history) == 1  # computed once, by whichever process claimed it first
    # the other waited for that claim, then restored what was recorded
    assert sorted(out.strip() for out, _ in outputs) == [
        f"computed 1 {history[0]}",
        f"restored 1 {history[0]}",
    ]
    assert run.steps.uncertain() == []


DIES_MID_STEP = r"""
import os, signal, sys
import skillnb
from skillnb.service.steps import formalize_step

run = skillnb.open_run(state_dir=sys.argv[1], memory=False)
formalize_step(run.steps, "report", lambda: os.kill(os.getpid(), signal.SIGKILL), source_hash="h")
"""


def test_a_process_killed_mid_step_leaves_it_uncertain(tmp_path: Path) -> None:
    died = subprocess.run(
        [sys.executable, "-c", DIES_MID_STEP, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert died.returncode == -9, died.stderr
    import skillnb
    from skillnb.errors import UncertainStep

    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    assert run.steps.uncertain() == ["formalize:report"]
    with pytest.raises(UncertainStep):
        formalize_step(run.steps, "report", lambda: "again", source_hash="h")
    run.steps.clear("formalize:report", by="tester")
    assert (
        formalize_step(run.steps, "report", lambda: "again", source_hash="h").fact.value == "again"
    )
