"""Crash tests: a writer process dies at each write phase (``os._exit``) and at random moments
(``SIGKILL``). After each death the sidecar opens, every append the writer acknowledged is
there, every append is all-or-nothing, and the next writer carries on."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sidecar_helpers import draft, fork, state_at

from skillnb.core.runstate.records import Event
from skillnb.store import SidecarStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL")

CRASHED = 86


def run_child(work: Callable[[], None]) -> int:
    """Run ``work`` in a forked process; return its exit code (negative: killed by a signal)."""
    return os.waitstatus_to_exitcode(os.waitpid(fork(work), 0)[1])


def writer(
    folder: Path,
    acks: Path,
    *,
    seed: int,
    ops: int,
    phase: str | None = None,
    nth: int = 1,
    torn: bool = False,
    compact_chance: float = 0.3,
) -> None:
    """Append groups of 1-3 events, acknowledge each durably, compact now and then.

    With ``phase``, exit abruptly the ``nth`` time the store reaches it; with ``torn``, first
    cut the journal inside the lines just written (what a power cut can leave).
    """
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    hits = 0
    store: SidecarStore

    def hook(reached: str) -> None:
        nonlocal hits
        if reached != phase:
            return
        hits += 1
        if hits < nth:
            return
        if torn:
            journal = folder / "journal.jsonl"
            start = store._tail.end  # where this append's lines begin
            os.truncate(journal, rng.randint(start + 1, journal.stat().st_size - 1))
        os._exit(CRASHED)

    store = SidecarStore(folder, phase_hook=hook)
    ack = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    for op in range(ops):
        n = rng.randint(1, 3)
        token = f"{seed}:{op}"
        with store.lock():
            head = store.head()
            drafts = [draft("write", token=token, i=i, n=n) for i in range(n)]
            events = store.append(drafts, expected_version=head)
        os.write(ack, f"{token} {events[0].seq} {n}\n".encode())
        os.fsync(ack)
        if rng.random() < compact_chance:
            head = store.head()
            store.compact(state_at(head, key_ids={"head": head}))


def check(folder: Path, acks: Path) -> int:
    """Assert the sidecar is whole; return how many events it holds."""
    store = SidecarStore(folder)
    loaded = store.load()
    history = list(store.history())
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    assert store.head() == len(history)
    groups: dict[str, list[Event]] = {}
    for event in history:
        if "token" in event.data:
            groups.setdefault(event.data["token"], []).append(event)
    for token, events in groups.items():  # all-or-nothing, contiguous
        n = events[0].data["n"]
        assert [e.data["i"] for e in events] == list(range(n)), token
        assert [e.seq for e in events] == list(range(events[0].seq, events[0].seq + n)), token
    acknowledged = [line.split() for line in acks.read_text().splitlines(keepends=True)]
    for token, first, n in (a for a in acknowledged if len(a) == 3):
        assert token in groups, f"acknowledged append {token} is lost"
        assert (groups[token][0].seq, len(groups[token])) == (int(first), int(n))
    after = 0
    if loaded.snapshot is not None:
        after = loaded.snapshot.version
        assert loaded.snapshot.key_ids.get("head", 0) == after
    assert loaded.events == history[after:]
    # The next writer carries on; the next compaction finishes what was cut short.
    store.append([draft("check")], expected_version=len(history))
    store.compact(state_at(len(history) + 1, key_ids={"head": len(history) + 1}))
    assert not (folder / "compaction.json").exists()
    assert not list(folder.rglob(".tmp-*"))
    assert [e.seq for e in store.history()] == list(range(1, len(history) + 2))
    store.close()
    return len(history) + 1


APPEND_POINTS = [
    ("append.written", False),
    ("append.written", True),
    ("append.unlocked", False),  # group commit: lock let go, lines written, fsync not yet done
    ("append.synced", False),
]
COMPACTION_POINTS = [
    (f"compact.{step}{suffix}", False)
    for step in ("intent", "segment", "snapshot", "journal")
    for suffix in (".tmp", "")
] + [("compact.done", False)]


@pytest.mark.parametrize(("phase", "torn"), APPEND_POINTS + COMPACTION_POINTS)
def test_a_writer_dying_at_each_phase(tmp_path: Path, phase: str, torn: bool) -> None:
    folder, acks = tmp_path / ".skillnb" / "nb", tmp_path / "acks"
    crashes = 0
    for nth in (1, 2, 4):
        code = run_child(
            lambda nth=nth: writer(  # type: ignore[misc]
                folder, acks, seed=nth, ops=10, phase=phase, nth=nth, torn=torn
            )
        )
        assert code in (0, CRASHED)
        crashes += code == CRASHED
        check(folder, acks)
    assert crashes >= 2


def acknowledged(acks: Path) -> int:
    return acks.read_bytes().count(b"\n") if acks.exists() else 0


def test_writers_killed_at_random_moments(tmp_path: Path) -> None:
    folder, acks = tmp_path / ".skillnb" / "nb", tmp_path / "acks"
    rng = random.Random(20240501)  # noqa: S311 - test timing, not secrets
    for round_ in range(60):
        before = acknowledged(acks)
        pid = os.fork()
        if pid == 0:
            try:
                writer(folder, acks, seed=1000 + round_, ops=10**6, compact_chance=0.15)
            finally:
                os._exit(99)
        deadline = time.monotonic() + 30
        while acknowledged(acks) == before and time.monotonic() < deadline:
            time.sleep(0.001)  # let it get going, however loaded the machine is
        time.sleep(rng.uniform(0, 0.04))
        os.kill(pid, signal.SIGKILL)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == -signal.SIGKILL
        assert acknowledged(acks) > before
        check(folder, acks)


def test_a_writer_dying_while_creating_the_journal(tmp_path: Path) -> None:
    """The journal is created whole (header and first lines) or not at all."""
    folder, acks = tmp_path / ".skillnb" / "nb", tmp_path / "acks"
    code = run_child(lambda: writer(folder, acks, seed=7, ops=3, phase="append.create.tmp"))
    assert code == CRASHED
    assert not (folder / "journal.jsonl").exists()
    assert list(folder.glob(".tmp-journal.jsonl-*"))  # the new file never replaced anything
    assert SidecarStore(folder).head() == 0
    assert check(folder, acks) == 1
    code = run_child(lambda: writer(folder, acks, seed=8, ops=5, phase="append.create.tmp"))
    assert code == 0  # the journal exists now: later appends never create it again
    check(folder, acks)
