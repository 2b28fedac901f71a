"""Claims with real processes: parallel consumers, a SIGKILLed owner, leases, one approval.

At-least-once execution, exactly-once completion: every item is completed once; the body
of an item whose process died mid-item runs again elsewhere.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

import skillnb
from skillnb.core.runstate.claims import item_claim_key, step_claim_key
from skillnb.core.runstate.records import Claim, Owner
from skillnb.errors import StepInProgress, StoreCorrupted
from skillnb.service.owner import claim_held, process_owner

pytestmark = pytest.mark.slow

CONSUMER = r"""
import os, socket, sys, time
if os.environ.get("FAKE_HOST"):  # this consumer plays a process on another machine
    socket.gethostname = lambda: os.environ["FAKE_HOST"]
import skillnb

state_dir, log_path, n, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
kill_on = sys.argv[5] if len(sys.argv) > 5 else ""
go = os.path.join(os.path.dirname(log_path), "go")
while not os.path.exists(go):
    time.sleep(0.005)
run = skillnb.open_run(state_dir=state_dir, memory=False)
count = 0
for item in run.items("tickets", [f"t{i:03}" for i in range(n)]):
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {item}\n")
    if item == kill_on:
        open(log_path + ".claimed", "w").close()
        time.sleep(60)  # killed here, mid-item
    time.sleep(delay)
    count += 1
print(count)
"""


def _consumer(
    tmp_path: Path, n: int, delay: float, kill_on: str = "", env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    args = [str(tmp_path / "state"), str(tmp_path / "log"), str(n), str(delay), kill_on]
    return subprocess.Popen(
        [sys.executable, "-c", CONSUMER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _log(tmp_path: Path) -> list[tuple[str, str]]:
    lines = (tmp_path / "log").read_text().split("\n")
    return [(p, i) for p, i in (line.split() for line in lines if line)]


def test_four_processes_share_one_batch_and_do_each_item_once(tmp_path: Path) -> None:
    procs = [_consumer(tmp_path, 400, 0.005) for _ in range(4)]
    (tmp_path / "go").touch()
    outputs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    log = _log(tmp_path)
    items = [i for _, i in log]
    assert len(items) == 400
    assert sorted(items) == [f"t{i:03}" for i in range(400)]
    by_process = {p for p, _ in log}
    assert len(by_process) == 4, "every process did some"
    assert sum(int(out) for out, _ in outputs) == 400
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        batch = run.snapshot.batches["tickets"]
        assert (len(batch.done), len(set(batch.done)), batch.remaining()) == (400, 400, [])
        assert run.snapshot.claims == {}


def test_an_item_held_by_a_killed_consumer_is_done_by_another(tmp_path: Path) -> None:
    victim = _consumer(tmp_path, 20, 0.0, kill_on="t005")
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 60
    while not (tmp_path / "log.claimed").exists():
        assert time.monotonic() < deadline, victim.communicate()
        time.sleep(0.01)
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        held = run.snapshot.claims[item_claim_key("tickets", "t005")]
        assert held.owner.pid == victim.pid
        assert claim_held(held, run.journal.clock())
    victim.send_signal(signal.SIGKILL)  # not reaped yet: a zombie, which counts as dead
    _until_zombie(victim.pid)
    heir = _consumer(tmp_path, 20, 0.0)
    out, err = heir.communicate(timeout=60)
    assert heir.returncode == 0, err
    assert out.split() == ["15"]  # t005 (again) and the 14 never started
    victim.wait()
    log = _log(tmp_path)
    assert [p for p, i in log if i == "t005"] == [str(victim.pid), str(heir.pid)]
    assert sorted({i for _, i in log}) == [f"t{i:03}" for i in range(20)]
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        assert len(run.snapshot.batches["tickets"].done) == 20


def test_an_item_held_by_a_killed_consumer_on_another_host_waits_for_its_lease(
    tmp_path: Path,
) -> None:
    remote = {"FAKE_HOST": "elsewhere.example", "SKILLNB_LEASE_SECONDS": "8"}
    victim = _consumer(tmp_path, 6, 0.0, kill_on="t002", env=remote)
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 60
    while not (tmp_path / "log.claimed").exists():
        assert time.monotonic() < deadline, victim.communicate()
        time.sleep(0.01)
    victim.kill()
    victim.wait()  # gone for good; but from "another host" only its lease can tell
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        held = run.snapshot.claims[item_claim_key("tickets", "t002")]
        assert held.owner.host == "elsewhere.example"
        expires = held.until
    heir = _consumer(tmp_path, 6, 0.0)
    out, err = heir.communicate(timeout=60)
    assert heir.returncode == 0, err
    assert out.split() == ["4"]  # t003..t005, then t002 once its lease expired
    assert "another process is working on them" in err
    log = _log(tmp_path)
    assert [p for p, i in log if i == "t002"] == [str(victim.pid), str(heir.pid)]
    assert [i for p, i in log if p == str(heir.pid)][-1] == "t002"  # skipped, then taken
    finished = datetime.fromtimestamp((tmp_path / "log").stat().st_mtime, UTC)
    assert finished >= expires


def test_a_heartbeat_keeps_a_long_step_claimed_past_its_lease(tmp_path: Path) -> None:
    script = (
        "import os, socket, sys, time\n"
        "socket.gethostname = lambda: 'elsewhere.example'\n"
        "import skillnb\n"
        "run = skillnb.open_run(state_dir=sys.argv[1], memory=False, lease=0.6)\n"
        "run.gates.run_gated(None, lambda: time.sleep(3), key='gate:long', subject=run)\n"
    )
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        run.formalize("seed", 1)
        worker = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "state")])
        deadline = time.monotonic() + 30
        while step_claim_key("gate:long") not in run.journal.refresh().claims:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        first = run.journal.state.claims[step_claim_key("gate:long")].until
        for _ in range(4):  # 2 s: more than three leases
            time.sleep(0.5)
            with pytest.raises(StepInProgress):
                run.gates.run_gated(None, lambda: None, key="gate:long", subject=run)
        assert run.snapshot.claims[step_claim_key("gate:long")].until > first  # renewed
        assert worker.wait(timeout=30) == 0
        assert run.snapshot.claims == {}
        assert run.snapshot.steps["gate:long"].status == "committed"


def _until_zombie(pid: int) -> None:
    deadline = time.monotonic() + 10
    while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _foreign_claim(key: str, lease: float) -> Claim:
    now = datetime.now(UTC)
    owner = Owner(host="elsewhere.example", pid=os.getpid(), started=1.0, session="kernel x")
    return Claim(key=key, owner=owner, since=now, until=now + timedelta(seconds=lease))


def test_a_claim_from_another_host_binds_until_its_lease_expires(tmp_path: Path) -> None:
    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    claim = _foreign_claim(item_claim_key("tickets", "a"), lease=1.5)
    run.journal.commit(
        lambda _s: [run.journal.draft("claim.taken", claim=claim.model_dump(mode="json"))]
    )
    started = time.monotonic()
    seen = [(item, time.monotonic() - started) for item in run.items("tickets", ["a", "b"])]
    assert [item for item, _ in seen] == ["b", "a"]  # a is skipped, then taken when expired
    assert seen[1][1] >= 1.0
    assert run.snapshot.batches["tickets"].remaining() == []
    run.close()


def test_a_live_foreign_step_claim_is_in_progress_then_uncertain(tmp_path: Path) -> None:
    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    claim = _foreign_claim(step_claim_key("gate:send"), lease=1.0)
    run.journal.commit(
        lambda _s: [
            run.journal.draft("step.started", key="gate:send", owner=claim.owner.id),
            run.journal.draft("claim.taken", claim=claim.model_dump(mode="json")),
        ]
    )
    with pytest.raises(StepInProgress) as info:
        run.gates.run_gated(None, lambda: 1, key="gate:send", subject=run)
    assert "elsewhere.example" in str(info.value)
    assert "kernel x" in str(info.value)
    assert run.steps.uncertain() == []
    time.sleep(1.2)
    assert run.steps.uncertain() == ["gate:send"]  # the lease expired: its owner counts as gone
    run.close()


FIRE = r"""
import os, sys, time
import skillnb

@skillnb.action("send_report")
def send(run):
    with open(sys.argv[2], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(1.0)

go = os.path.join(os.path.dirname(sys.argv[2]), "go")
while not os.path.exists(go):
    time.sleep(0.005)
run = skillnb.open_run(state_dir=sys.argv[1], workflow=skillnb.Workflow.from_yaml(sys.argv[3]),
                       memory=False)
try:
    run.fire("send")
    print("fired")
except skillnb.errors.SkillnbError as exc:
    print(type(exc).__name__)
"""

SENDING = """
workflow:
  name: sending
  states: [draft, sent]
  transitions:
    - {from: draft, to: sent, trigger: send, gates: [boss], action: send_report}
  gates:
    boss: {approval: "send it?"}
"""


def test_two_processes_firing_one_approved_trigger_run_the_action_once(tmp_path: Path) -> None:
    wf = skillnb.Workflow.from_yaml(SENDING)
    with skillnb.open_run(state_dir=tmp_path / "state", workflow=wf, memory=False) as run:
        with pytest.raises(skillnb.errors.GateBlocked):
            run.fire("send")
        run.approve("boss", by="ana")
    args = [str(tmp_path / "state"), str(tmp_path / "log"), SENDING]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FIRE, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    (tmp_path / "go").touch()
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert len((tmp_path / "log").read_text().split()) == 1  # the action ran once
    results = [out.strip() for out, _ in outputs]
    assert results.count("fired") == 1, outputs
    other = next(r for r in results if r != "fired")
    assert other in {"StepInProgress", "TransitionNotAllowed", "WaitingForApproval"}
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        assert run.state == "sent"
        assert [a.status for a in run.snapshot.approvals.values()] == ["consumed"]


def test_a_zombie_owner_is_dead(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    owner = Owner(
        host=socket.gethostname(), pid=child.pid, started=psutil.Process(child.pid).create_time()
    )
    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    now = run.journal.clock()
    claim = Claim(key=step_claim_key("s"), owner=owner, since=now, until=now + timedelta(hours=1))
    run.journal.commit(
        lambda _s: [
            run.journal.draft("step.started", key="s", owner=owner.id),
            run.journal.draft("claim.taken", claim=claim.model_dump(mode="json")),
        ]
    )
    assert claim_held(claim, now)
    assert run.steps.uncertain() == []
    _until_zombie(child.pid)
    assert not claim_held(claim, run.journal.clock())  # exited, not reaped: dead all the same
    assert run.steps.uncertain() == ["s"]
    child.wait()
    run.close()


def test_a_forked_child_speaks_with_its_own_identity() -> None:
    parent = process_owner()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  # the child reports and leaves at once
        os.close(read)
        os.write(write, process_owner().model_dump_json().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = Owner.model_validate_json(pipe.read())
    os.waitpid(pid, 0)
    assert parent.pid == os.getpid()
    assert child.pid == pid != parent.pid
    assert child.started >= parent.started


def test_a_damaged_claim_record_is_store_corrupted(tmp_path: Path) -> None:
    run = skillnb.open_run(state_dir=tmp_path / "state", memory=False)
    run.formalize("x", 1)
    bad = run.journal.draft("claim.taken", claim={"key": "step:s", "owner": "not an owner"})
    run.store.append([bad], expected_version=run.store.head())
    run.close()
    with pytest.raises(StoreCorrupted, match=r"claim\.taken"):
        skillnb.open_run(state_dir=tmp_path / "state", memory=False)
