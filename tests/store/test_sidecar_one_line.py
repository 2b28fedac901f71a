"""The usual append (to a journal the store has open), in every state of the file.

That append takes a shorter path than others: it writes when the journal is exactly as this
store last saw it, and otherwise hands over to the general path, which looks again. Each case
here changes the file behind the store's back, as another writer, a compaction, a crash or a
stranger would, and checks the append does what the general path did: catch up, refuse a
stale version, move a torn tail aside, refuse a symlink, and write the same bytes.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sidecar_helpers import state_at

from skillnb.core.runstate.records import CheckedDraft, EventDraft
from skillnb.errors import ConflictError, UnsafePath
from skillnb.store import SidecarStore, TornWriteWarning
from skillnb.store.sidecar.journal import encode_events

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def checked(n: int) -> CheckedDraft:
    return CheckedDraft.of("note", NOW, {"n": n, "text": f"note {n}"})


def opened(folder: Path, count: int = 3) -> SidecarStore:
    """A store whose journal holds ``count`` events and is open (the state of a busy writer)."""
    store = SidecarStore(folder)
    for n in range(count):
        store.append([checked(n)], expected_version=n)
    return store


def test_it_writes_what_the_general_path_writes_in_the_same_phases(tmp_path: Path) -> None:
    phases: list[str] = []
    store = SidecarStore(tmp_path / "a", phase_hook=phases.append)
    for n in range(3):
        store.append([checked(n)], expected_version=n)
    phases.clear()
    [event] = store.append([checked(3)], expected_version=3)
    assert phases == ["append.written", "append.unlocked", "append.synced"]
    assert event.seq == 4
    assert event.data == {"n": 3, "text": "note 3"}
    journal = (tmp_path / "a" / "journal.jsonl").read_bytes()
    assert journal.endswith(encode_events([event]))  # the general path's encoder, same bytes
    assert SidecarStore(tmp_path / "a").load().events[-1] == event


def test_another_writer_in_between_is_caught_up_with(tmp_path: Path) -> None:
    mine, theirs = opened(tmp_path), SidecarStore(tmp_path)
    theirs.append([checked(10)], expected_version=3)
    with pytest.raises(ConflictError):
        mine.append([checked(11)], expected_version=3)  # stale: nothing written
    assert mine.head() == 4
    mine.append([checked(11)], expected_version=4)
    assert [e.data["n"] for e in theirs.load().events] == [0, 1, 2, 10, 11]


def test_a_compaction_by_another_object_is_followed(tmp_path: Path) -> None:
    mine, theirs = opened(tmp_path), SidecarStore(tmp_path)
    theirs.compact(state_at(3))  # the journal is replaced by a new file
    mine.append([checked(3)], expected_version=3)
    loaded = SidecarStore(tmp_path).load()
    assert loaded.snapshot is not None
    assert loaded.snapshot.version == 3
    assert [e.seq for e in loaded.events] == [4]


def test_a_torn_tail_left_by_a_crash_is_moved_aside_not_written_after(tmp_path: Path) -> None:
    store = opened(tmp_path)
    with (tmp_path / "journal.jsonl").open("ab") as f:
        f.write(b'{"v":1,"seq":4,"type":"no')  # a writer died mid-line
    with pytest.warns(TornWriteWarning, match="moved 25 bytes"):
        store.append([checked(3)], expected_version=3)
    assert [e.seq for e in SidecarStore(tmp_path).load().events] == [1, 2, 3, 4]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges there")
def test_a_journal_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    store = opened(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere.jsonl"
    journal = tmp_path / "run" / "journal.jsonl"
    journal.replace(elsewhere)
    journal.symlink_to(elsewhere)
    size = elsewhere.stat().st_size
    with pytest.raises(UnsafePath):
        store.append([checked(3)], expected_version=3)
    assert elsewhere.stat().st_size == size  # nothing written through the link


def test_a_journal_cut_behind_the_store_is_read_again(tmp_path: Path) -> None:
    store = opened(tmp_path)
    journal = tmp_path / "journal.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # the same inode
    with pytest.raises(ConflictError):
        store.append([checked(3)], expected_version=3)
    store.append([checked(3)], expected_version=2)
    assert [e.data["n"] for e in SidecarStore(tmp_path).load().events] == [0, 1, 3]


def test_inside_a_held_lock_the_fsync_waits_for_the_outermost_release(tmp_path: Path) -> None:
    phases: list[str] = []
    store = SidecarStore(tmp_path, phase_hook=phases.append)
    store.append([checked(0)], expected_version=0)
    phases.clear()
    with store.lock():
        store.append([checked(1)], expected_version=1)
        store.append([EventDraft(type="note", at=NOW, data={"n": 2})], expected_version=2)
        assert phases == ["append.written", "append.written"]
    assert phases[2:] == ["append.unlocked", "append.synced"]
    assert store.head() == 3


def test_a_failed_fsync_is_raised_and_the_journal_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opened(tmp_path)

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="Input/output"):
        store.append([checked(3)], expected_version=3)
    monkeypatch.undo()
    assert store.head() == 4  # the line stays (others may follow it): read back from the file
    store.append([checked(4)], expected_version=4)
    assert [e.seq for e in SidecarStore(tmp_path).load().events] == [1, 2, 3, 4, 5]


def shortened(store: SidecarStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the general path's first step fail: what follows takes the shorter one."""

    def general(*_args: object) -> None:
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(store, "_prepare_append", general)


def test_several_events_are_written_at_once_as_the_general_path_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phases: list[str] = []
    store = SidecarStore(tmp_path / "a", phase_hook=phases.append)
    for n in range(3):
        store.append([checked(n)], expected_version=n)
    phases.clear()
    shortened(store, monkeypatch)
    events = store.append([checked(3), checked(4), checked(5)], expected_version=3)
    assert phases == ["append.written", "append.unlocked", "append.synced"]
    assert [e.seq for e in events] == [4, 5, 6]
    journal = (tmp_path / "a" / "journal.jsonl").read_bytes()
    assert journal.endswith(encode_events(events))  # "more" on all lines but the last
    assert journal.count(b'"more":true') == 2
    assert store.head() == 6
    assert SidecarStore(tmp_path / "a").load().events[-3:] == events
    store.append([checked(6)], expected_version=6)  # the tail knows where each line begins
    assert [e.seq for e in store.read_since(4) or []] == [5, 6, 7]


def test_a_marker_not_synced_is_written_without_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phases: list[str] = []
    store = SidecarStore(tmp_path, phase_hook=phases.append)
    for n in range(3):
        store.append([checked(n)], expected_version=n)
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    phases.clear()
    shortened(store, monkeypatch)
    [marker] = store.append([checked(3)], expected_version=3, sync=False)
    assert phases == ["append.written", "append.synced"]  # as the general path says it
    assert not fsyncs
    assert SidecarStore(tmp_path).head() == 4  # other readers see it at once
    store.append([checked(4)], expected_version=4)  # the next durable append covers it
    assert len(fsyncs) == 1
    assert [e.seq for e in SidecarStore(tmp_path).load().events] == [1, 2, 3, 4, 5]
    assert marker.seq == 4
