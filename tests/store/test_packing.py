"""Packing archived segments into one gzip segment: history unchanged, crash-safe order."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store.folders.repair import repair
from skillnb.store.sidecar.layout import SidecarLayout


def _run_with_segments(folder: Path, rounds: int = 3) -> list[int]:
    run = open_run(state_dir=folder, memory=False)
    for r in range(rounds):
        for n in range(5):
            run.formalize("k", f"round {r} value {n} " * 10)
        run.compact()
    run.formalize("live", 1)
    seqs = [e.seq for e in run.store.history()]
    run.store.close()
    return seqs


def test_pack_replaces_segments_and_history_reads_it(tmp_path: Path) -> None:
    seqs = _run_with_segments(tmp_path)
    layout = SidecarLayout(tmp_path)
    before = sum(s.path.stat().st_size for s in layout.list_segments())
    run = open_run(state_dir=tmp_path, memory=False)
    assert run.store.pack() == 3  # type: ignore[attr-defined]
    (packed,) = layout.list_segments()
    assert packed.packed
    assert packed.first == 1
    assert packed.path.stat().st_size < before
    assert [e.seq for e in run.store.history()] == seqs
    assert run.store.pack() == 0  # type: ignore[attr-defined]  # nothing left to do
    run.formalize("more", 2)
    run.compact()
    assert run.store.pack() == 2  # type: ignore[attr-defined]  # the old pack and the new segment
    assert [e.seq for e in run.store.history()][: len(seqs)] == seqs


def test_a_crash_between_writing_the_pack_and_removing_segments_duplicates_nothing(
    tmp_path: Path,
) -> None:
    seqs = _run_with_segments(tmp_path)
    layout = SidecarLayout(tmp_path)
    keep = tmp_path / "kept"
    shutil.copytree(layout.segments, keep)
    run = open_run(state_dir=tmp_path, memory=False)
    run.store.pack()  # type: ignore[attr-defined]
    for p in keep.iterdir():  # as if the process died before removing the old segments
        shutil.copy2(p, layout.segments / p.name)
    assert [e.seq for e in run.store.history()] == seqs
    assert run.store.pack() == 3  # type: ignore[attr-defined]
    assert len(layout.list_segments()) == 1


def test_a_damaged_pack_is_reported_and_left_alone_by_repair(tmp_path: Path) -> None:
    _run_with_segments(tmp_path)
    run = open_run(state_dir=tmp_path, memory=False)
    run.store.pack()  # type: ignore[attr-defined]
    run.store.close()
    (packed,) = SidecarLayout(tmp_path).list_segments()
    data = gzip.decompress(packed.path.read_bytes())
    packed.path.write_bytes(gzip.compress(data.replace(b"round 1", b"round 9"), mtime=0))
    with pytest.raises(StoreCorrupted, match=r"checksum|damaged"):
        list(open_run(state_dir=tmp_path, memory=False).store.history())
    packed.path.write_bytes(b"not gzip")
    with pytest.raises(StoreCorrupted, match="packed segment is damaged"):
        list(open_run(state_dir=tmp_path, memory=False).store.history())
    repair(tmp_path)
    assert packed.path.read_bytes() == b"not gzip"
