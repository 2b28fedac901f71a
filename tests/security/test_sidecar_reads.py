"""Reading never writes: every read of the store leaves the sidecar byte-identical.

No folder, no lock file, no mode change, no torn fragment moved: the whole tree (names, modes,
bytes, times) is the same after each read as before, on a full run, on a run with a torn last
write, and on a folder that does not exist.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.store import SidecarStore

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
RUN = "run-reads"


def draft(type_: str, **data: object) -> EventDraft:
    return EventDraft(type=type_, at=NOW, data=data)


def snapshot_tree(top: Path) -> dict[str, tuple[int, int, str]]:
    """Mode, modification time and content hash of ``top`` and everything under it."""
    out: dict[str, tuple[int, int, str]] = {}
    for path in [top, *sorted(top.rglob("*"))]:
        info = os.lstat(path)
        body = path.read_bytes() if path.is_file() else b""
        out[str(path)] = (info.st_mode, info.st_mtime_ns, hashlib.sha256(body).hexdigest())
    return out


def full_run(folder: Path) -> str:
    with SidecarStore(folder) as store:
        store.append([draft("run.created", run_id=RUN)], expected_version=0)
        store.append([draft("note", n=1), draft("note", n=2)], expected_version=1)
        store.compact(RunState(run_id=RUN, version=3))
        store.append([draft("note", n=3)], expected_version=3)
        return store.put_blob(b"a blob")


READS: dict[str, Callable[[SidecarStore, str], object]] = {
    "exists": lambda s, _: s.exists(),
    "head": lambda s, _: s.head(),
    "run_id": lambda s, _: s.run_id(),
    "load": lambda s, _: s.load(),
    "read_since": lambda s, _: s.read_since(0),
    "history": lambda s, _: list(s.history()),
    "get_blob": lambda s, ref: s.get_blob(ref),
}


@pytest.mark.parametrize("torn", [False, True], ids=["whole", "torn last write"])
def test_every_read_leaves_the_sidecar_byte_identical(tmp_path: Path, torn: bool) -> None:
    folder = tmp_path / "work" / ".skillnb" / "nb"
    ref = full_run(folder)
    if torn:
        with (folder / "journal.jsonl").open("ab") as f:
            f.write(b'{"v":1,"seq":5,"ty')
    before = snapshot_tree(tmp_path)
    for name, read in READS.items():
        with SidecarStore(folder) as store, warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            read(store, ref)
        assert snapshot_tree(tmp_path) == before, name
        if torn and name in ("head", "load", "read_since", "run_id"):
            assert any("ignoring 18 bytes" in str(w.message) for w in seen), name


def test_reading_a_folder_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "work" / ".skillnb" / "nb"
    (tmp_path / "work").mkdir()
    before = snapshot_tree(tmp_path)
    with SidecarStore(folder) as store:
        assert not store.exists()
        assert store.head() == 0
        assert store.run_id() is None
        assert store.load().snapshot is None
        assert store.read_since(0) == []
        assert list(store.history()) == []
        with pytest.raises(KeyError):
            store.get_blob("sha256:" + "0" * 64)
    assert snapshot_tree(tmp_path) == before


def test_a_reader_does_not_warn_about_a_write_in_progress(tmp_path: Path) -> None:
    """Bytes after the last line while a writer holds the lock are its append, not damage."""
    folder = tmp_path / ".skillnb" / "nb"
    full_run(folder)
    writer = SidecarStore(folder)
    with writer.lock():
        with (folder / "journal.jsonl").open("ab") as f:
            f.write(b'{"v":1,"seq":5,"ty')  # what a reader can see mid-write
        with SidecarStore(folder) as reader, warnings.catch_warnings():
            warnings.simplefilter("error")
            assert reader.head() == 4
    writer.close()
