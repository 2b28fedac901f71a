"""Group commit with several writer processes at once, on real files with real fsync.

A writer lets the writer lock go before its fsync, so another process appends while the first
still waits for the disk, and the fsyncs of several writers overlap (the file system commits
them together). Nothing is acknowledged before its own lines are durable, and every append
lands exactly once, in sequence, whichever mode the writers use.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sidecar_helpers import draft, fork

from skillnb.run import open_run
from skillnb.store import SidecarStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork and flock")

WAIT = 60.0  # seconds a process waits for another's signal file, however loaded the machine


def wait_for(path: Path) -> None:
    """Wait until ``path`` exists; fail (rather than hang) after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.002)


def exit_code(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_writer_appends_while_another_still_waits_for_its_fsync(
    sidecar_dir: Path, tmp_path: Path
) -> None:
    """B takes the lock and writes between A's unlock and A's fsync; both end durable, in order."""
    SidecarStore(sidecar_dir).append([draft("first")], expected_version=0)
    a_unlocked, b_written = tmp_path / "a-unlocked", tmp_path / "b-written"
    a_phases = tmp_path / "a-phases"

    def a_hook(phase: str) -> None:
        with a_phases.open("a") as out:
            out.write(f"{phase} b-written={b_written.exists()}\n")
        if phase == "append.unlocked":
            a_unlocked.touch()
            wait_for(b_written)  # A's lines are written, its fsync not yet done

    def writer_a() -> None:
        store = SidecarStore(sidecar_dir, phase_hook=a_hook)
        store.append([draft("a")], expected_version=1)
        store.close()

    def writer_b() -> None:
        wait_for(a_unlocked)
        store = SidecarStore(
            sidecar_dir, phase_hook=lambda p: b_written.touch() if p == "append.written" else None
        )
        store.append([draft("b")], expected_version=2)
        store.close()

    pids = [fork(writer_a), fork(writer_b)]
    assert [exit_code(pid) for pid in pids] == [0, 0]
    assert a_phases.read_text().splitlines() == [
        "append.written b-written=False",
        "append.unlocked b-written=False",
        "append.synced b-written=True",  # A's fsync came after B's write, and covered it too
    ]
    events = SidecarStore(sidecar_dir).load().events
    assert [(e.seq, e.type) for e in events] == [(1, "first"), (2, "a"), (3, "b")]


WRITER = r"""
import os, sys, time
import skillnb
from skillnb.store import SidecarStore
state, go, name, n, group = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
run = skillnb.open_run(store=SidecarStore(state, group_commit=group == "group"), memory=False)
open(f"{go}.ready.{name}", "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.001)
for i in range(n):
    run.formalize(f"{name}_{i}", {"by": name, "i": i})
run.close()
"""


@pytest.mark.parametrize("mode", ["group", "lock"])
@pytest.mark.timeout(420)  # its writer processes get 300 s on a loaded machine
def test_processes_formalizing_into_one_run_keep_every_fact_once(tmp_path: Path, mode: str) -> None:
    """Four processes formalize into one run at once: every fact once, every version in order."""
    state, go = tmp_path / ".skillnb" / "race", tmp_path / "go"
    with open_run(store=SidecarStore(state), memory=False) as run:
        run.formalize("ready", True)
    names, each = [f"w{n}" for n in range(4)], 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(state), str(go), name, str(each), mode],
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    deadline = time.monotonic() + WAIT
    while len(list(tmp_path.glob("go.ready.*"))) < len(names) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    events = list(SidecarStore(state).history())
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    with open_run(store=SidecarStore(state), memory=False) as run:
        written = {key: fact.value for key, fact in run.facts.items() if key != "ready"}
        assert written == {
            f"{name}_{i}": {"by": name, "i": i} for name in names for i in range(each)
        }
        assert all(len(run.fact_history(key)) == 1 for key in written)  # none written twice
