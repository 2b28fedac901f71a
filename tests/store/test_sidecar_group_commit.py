"""Group commit and the per-hold journal check of the sidecar store, on real files.

An append's lines are written under the writer lock and fsynced just after the lock is let
go; nothing is acknowledged before that fsync. Processes are killed (``SIGKILL``) while
several write to one folder at once, and a writer dies at the worst moment: lock released,
lines written, fsync not yet done.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from sidecar_helpers import draft

from skillnb.errors import UnsafePath
from skillnb.store import SidecarStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork, flock and SIGKILL")

CRASHED = 86


def journal_inode(folder: Path) -> int:
    return (folder / "journal.jsonl").stat().st_ino


def lock_is_free(folder: Path) -> bool:
    """Probe the writer lock from another open file description, without waiting."""
    fd = os.open(folder / "lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def record_fsyncs(folder: Path, seen: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Note each fsync of ``folder``'s journal in ``seen``, with whether the lock was free."""
    inode = journal_inode(folder)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.fstat(fd).st_ino == inode:
            seen.append(f"fsync, lock free: {lock_is_free(folder)}")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_the_fsync_comes_after_the_lock_is_let_go_and_before_control_returns(
    sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    store = SidecarStore(sidecar_dir, phase_hook=seen.append)
    store.append([draft("first")], expected_version=0)  # creates the journal (synced whole)
    record_fsyncs(sidecar_dir, seen, monkeypatch)
    seen.clear()
    with store.lock():
        store.append([draft("a")], expected_version=1)
        store.append([draft("b"), draft("c")], expected_version=2)
        assert seen == ["append.written", "append.written"]  # nothing synced yet
        assert not lock_is_free(sidecar_dir)
    assert seen == [
        "append.written",
        "append.written",
        "append.unlocked",
        "fsync, lock free: True",  # one fsync for both appends, the lock already let go
        "append.synced",
    ]
    seen.clear()
    store.append([draft("d")], expected_version=4)  # alone: synced before it returns
    assert seen == ["append.written", "append.unlocked", "fsync, lock free: True", "append.synced"]
    store.close()


def test_without_group_commit_the_fsync_is_under_the_lock(
    sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    store = SidecarStore(sidecar_dir, phase_hook=seen.append, group_commit=False)
    store.append([draft("first")], expected_version=0)
    record_fsyncs(sidecar_dir, seen, monkeypatch)
    seen.clear()
    store.append([draft("a")], expected_version=1)
    assert seen == ["append.written", "fsync, lock free: False", "append.synced"]
    store.close()


def test_a_failed_fsync_after_the_lock_is_reported_and_the_journal_read_again(
    sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines cannot be cut any more (others may follow them): the writer hears of it."""
    store = SidecarStore(sidecar_dir)
    store.append([draft("first")], expected_version=0)
    inode = journal_inode(sidecar_dir)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.fstat(fd).st_ino == inode:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output error"):
        store.append([draft("a")], expected_version=1)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert lock_is_free(sidecar_dir)
    other = SidecarStore(sidecar_dir)
    assert [e.type for e in other.load().events] == ["first", "a"]  # visible, durability unknown
    assert store.head() == 2
    store.append([draft("b")], expected_version=2)  # the writer carries on
    assert [e.type for e in other.load().events] == ["first", "a", "b"]
    store.close()
    other.close()


def test_threads_sharing_one_object_each_get_their_lines_synced(sidecar_dir: Path) -> None:
    store = SidecarStore(sidecar_dir)
    store.append([draft("first")], expected_version=0)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for i in range(30):
                with store.lock():
                    store.append([draft(name, i=i)], expected_version=store.head())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = SidecarStore(sidecar_dir).load().events
    assert [e.seq for e in events] == list(range(1, 92))
    for name in ("t0", "t1", "t2"):
        assert [e.data["i"] for e in events if e.type == name] == list(range(30))
    store.close()


def writer(folder: Path, acks: Path, name: str, die_at: str | None = None) -> None:
    """Append one event at a time forever, acknowledging each once the lock block is left."""
    store = SidecarStore(folder, phase_hook=lambda p: os._exit(CRASHED) if p == die_at else None)
    ack = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    n = 0
    while True:
        with store.lock():
            events = store.append([draft("w", name=name, n=n)], expected_version=store.head())
        os.write(ack, f"{name} {n} {events[0].seq}\n".encode())
        n += 1


def check(folder: Path, acks: Path) -> int:
    """Every acknowledged append is there, whole, at its number; return the head."""
    acknowledged = acks.read_text().splitlines(keepends=True)  # before the journal: see below
    store = SidecarStore(folder)
    events = store.load().events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    where = {(e.data["name"], e.data["n"]): e.seq for e in events if e.type == "w"}
    for line in acknowledged:  # each acknowledged before the journal was read: it must be there
        if line.endswith("\n"):
            name, n, seq = line.split()
            assert where.get((name, int(n))) == int(seq), f"acknowledged {line!r} is lost"
    head = store.head()
    store.close()
    return head


def spawn(folder: Path, acks: Path, name: str, die_at: str | None = None) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            writer(folder, acks, name, die_at)
        finally:
            os._exit(99)
    return pid


def test_a_writer_dying_between_unlock_and_fsync_loses_nothing_acknowledged(
    sidecar_dir: Path, tmp_path: Path
) -> None:
    """The worst moment of group commit: lines written, lock let go, fsync not done."""
    acks = tmp_path / "acks"
    sidecar_dir.mkdir(parents=True)
    SidecarStore(sidecar_dir).append([draft("first")], expected_version=0)
    for round_ in range(5):
        steady = [spawn(sidecar_dir, acks, f"steady{round_}-{i}") for i in range(2)]
        doomed = spawn(sidecar_dir, acks, f"doomed{round_}", die_at="append.unlocked")
        status = os.waitpid(doomed, 0)[1]
        assert os.waitstatus_to_exitcode(status) == CRASHED
        time.sleep(0.05)  # the others go on appending after it
        for pid in steady:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        head = check(sidecar_dir, acks)
        # the dead writer's last lines were written before it died: they are in the journal
        events = SidecarStore(sidecar_dir).load().events
        assert any(e.data.get("name") == f"doomed{round_}" for e in events)
        assert head == len(events)


def test_concurrent_writers_killed_at_random_moments(sidecar_dir: Path, tmp_path: Path) -> None:
    acks = tmp_path / "acks"
    sidecar_dir.mkdir(parents=True)
    SidecarStore(sidecar_dir).append([draft("first")], expected_version=0)
    rng = random.Random(20261201)  # noqa: S311 - test timing, not secrets
    pids = {f"w{i}": spawn(sidecar_dir, acks, f"w{i}") for i in range(3)}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not acks.exists() or acks.read_bytes().count(b"\n") < 20
    ):
        time.sleep(0.005)  # let them get going, however loaded the machine is
    for round_ in range(25):
        name = rng.choice(sorted(pids))
        time.sleep(rng.uniform(0, 0.02))
        os.kill(pids[name], signal.SIGKILL)
        os.waitpid(pids[name], 0)
        pids[name] = spawn(sidecar_dir, acks, f"{name}r{round_}")
        check(sidecar_dir, acks)
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert check(sidecar_dir, acks) > 20


def test_a_journal_swapped_for_a_symlink_between_writes_is_refused(tmp_path: Path) -> None:
    """The open descriptor and the per-hold check never write through a planted symlink."""
    folder = tmp_path / "work" / ".skillnb" / "nb"
    store = SidecarStore(folder)
    store.append([draft("first")], expected_version=0)
    store.append([draft("second")], expected_version=1)  # the descriptor is open and cached
    decoy = tmp_path / "decoy.jsonl"
    decoy.write_bytes(b"someone else's data\n")
    journal = folder / "journal.jsonl"
    journal.rename(tmp_path / "moved.jsonl")
    journal.symlink_to(decoy)
    with pytest.raises(UnsafePath, match="symbolic link"):
        store.append([draft("third")], expected_version=2)
    with pytest.raises(UnsafePath, match="symbolic link"), store.lock():
        store.head()
    assert decoy.read_bytes() == b"someone else's data\n"
    assert (tmp_path / "moved.jsonl").read_bytes().count(b"\n") == 2  # the two lines, untouched
    store.close()
