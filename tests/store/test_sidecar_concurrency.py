"""Concurrent writers on one sidecar: compare-and-swap increments from several processes and
threads end at exactly the expected count, with no gap and no lost update."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from pathlib import Path

import pytest
from sidecar_helpers import draft, state_at

from skillnb.errors import ConflictError
from skillnb.store import SidecarStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork")

INCREMENTS = 40


class Counter:
    """A client that keeps the counter's value and version, like the run layer keeps state."""

    def __init__(self, store: SidecarStore) -> None:
        self.store = store
        self.version = 0
        self.value = 0
        self.reload()

    def reload(self) -> None:
        loaded = self.store.load()
        if loaded.snapshot is not None:
            self.version = loaded.snapshot.version
            self.value = loaded.snapshot.key_ids.get("value", 0)
        else:
            self.version, self.value = 0, 0
        self.fold(loaded.events)

    def fold(self, events: list) -> None:  # type: ignore[type-arg]
        for event in events:
            assert event.seq == self.version + 1
            self.version, self.value = event.seq, event.data["value"]

    def catch_up(self) -> None:
        new = self.store.read_since(self.version)
        if new is None:  # another writer compacted: start again from the snapshot
            self.reload()
        else:
            self.fold(new)

    def increment(self, who: str, *, locked: bool) -> int:
        """Add one; return how many conflicts it took."""
        conflicts = 0
        while True:
            try:
                if locked:
                    with self.store.lock():
                        self.catch_up()
                        self._append(who)
                else:
                    self.catch_up()
                    self._append(who)
                return conflicts
            except ConflictError:
                conflicts += 1

    def _append(self, who: str) -> None:
        [event] = self.store.append(
            [draft("inc", value=self.value + 1, by=who)], expected_version=self.version
        )
        self.fold([event])

    def compact(self) -> None:
        # Someone may have written meanwhile: compaction is only an optimisation, skip it then.
        with contextlib.suppress(ConflictError):
            self.store.compact(state_at(self.version, key_ids={"value": self.value}))


def worker(folder: Path, who: str, *, locked: bool, compact: bool) -> None:
    counter = Counter(SidecarStore(folder))
    for n in range(INCREMENTS):
        counter.increment(who, locked=locked)
        if compact and n % 7 == 6:
            counter.compact()


def assert_counted(folder: Path, writers: list[str]) -> None:
    history = list(SidecarStore(folder).history())
    total = INCREMENTS * len(writers)
    assert [e.seq for e in history] == list(range(1, total + 1))
    assert [e.data["value"] for e in history] == list(range(1, total + 1))  # no lost update
    for who in writers:
        assert sum(e.data["by"] == who for e in history) == INCREMENTS
    assert Counter(SidecarStore(folder)).value == total


def test_processes_increment_with_compare_and_swap(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "counter"
    plans = {
        "optimistic-a": {"locked": False, "compact": False},
        "optimistic-b": {"locked": False, "compact": True},
        "locked": {"locked": True, "compact": False},
        "locked-compacting": {"locked": True, "compact": True},
    }
    pids = []
    for who, plan in plans.items():
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                worker(folder, who, **plan)
            except BaseException:  # noqa: BLE001 - report anything, then leave the child
                traceback.print_exc()
                code = 1
            os._exit(code)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    assert codes == [0] * len(plans)
    assert_counted(folder, list(plans))


def test_threads_share_one_store_object(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "counter"
    store = SidecarStore(folder)
    errors: list[BaseException] = []

    def run(who: str) -> None:
        try:
            counter = Counter(store)
            for _ in range(INCREMENTS):
                counter.increment(who, locked=who.endswith("locked"))
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in ("t1", "t2-locked", "t3")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert_counted(folder, ["t1", "t2-locked", "t3"])
    store.close()
