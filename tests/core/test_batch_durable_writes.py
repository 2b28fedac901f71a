"""A batch loop costs one durable write per item: item i done and item i+1 claimed together.

Counted on a real sidecar (real files, real fsync): the appends the store makes, what each
holds, and the fsyncs of the journal file. Then a consumer is killed (SIGKILL) at the worst
moment of that write, and a fresh process completes every item exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from skillnb.core.runstate.records import Event, EventDraft
from skillnb.run import open_run
from skillnb.store import SidecarStore


class RecordingStore(SidecarStore):
    """A real sidecar store that remembers the event types of each append it makes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends: list[tuple[list[str], bool]] = []

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        events = super().append(drafts, expected_version=expected_version, sync=sync)
        self.appends.append(([d.type for d in drafts], sync))
        return events


def test_each_item_is_one_append_and_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RecordingStore(tmp_path / "state")
    run = open_run(store=store, memory=False)
    run.formalize("ready", True)  # the journal exists: its fsyncs can be told apart
    journal = (tmp_path / "state" / "journal.jsonl").stat().st_ino
    fsyncs = 0
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        nonlocal fsyncs
        fsyncs += os.fstat(fd).st_ino == journal
        real_fsync(fd)

    items = [f"t{i}" for i in range(10)]
    loop = iter(run.items("tickets", items))  # declares the items: one append
    store.appends.clear()
    monkeypatch.setattr(os, "fsync", fsync)
    done = []
    for item in loop:
        done.append(item)
    monkeypatch.setattr(os, "fsync", real_fsync)

    assert done == items
    assert store.appends == [
        (["claim.taken"], True),  # the first item
        *[(["batch.item_done", "claim.taken"], True)] * 9,  # item i done + item i+1, together
        (["batch.item_done"], True),  # the last one
    ]
    assert fsyncs == len(items) + 1  # one durable write per item (and one to start)
    assert run.journal.refresh().batches["tickets"].done == items
    assert run.journal.state.claims == {}
    run.close()


CONSUMER = r"""
import os, signal, sys
import skillnb
from skillnb.store import SidecarStore

state, log, die_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
written = 0

def hook(phase):
    global written
    if phase == "append.written":
        written += 1
        if written == die_at:  # lines written, not yet fsynced, nothing acknowledged
            os.kill(os.getpid(), signal.SIGKILL)

run = skillnb.open_run(store=SidecarStore(state, phase_hook=hook), memory=False)
for item in run.items("tickets", [f"t{i:02}" for i in range(12)]):
    with open(log, "a", encoding="utf-8") as f:
        f.write(item + "\n")
print("finished")
"""


@pytest.mark.parametrize("die_at", [2, 6])  # the 1st and the 5th "done + next claim" write
def test_a_consumer_killed_inside_the_combined_write_loses_no_item(
    tmp_path: Path, die_at: int
) -> None:
    state, log = tmp_path / "state", tmp_path / "log"

    def consume(die: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", CONSUMER, str(state), str(log), str(die)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    first = consume(die_at)
    assert first.returncode == -9, first.stderr
    second = consume(0)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "finished"
    items = [f"t{i:02}" for i in range(12)]
    ran = log.read_text().split()
    assert set(ran) == set(items)  # every item's body ran
    assert len(ran) - len(items) <= 1  # at most the one in flight when the first died ran twice
    with open_run(state_dir=state, memory=False) as run:
        assert sorted(run.journal.refresh().batches["tickets"].done) == items  # each completed once
        assert run.journal.state.claims == {}
