"""The sidecar's files: layout, modes, line format, torn tails, cheap tail reads, compaction."""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sidecar_helpers import draft, event_line, lines, state_at

from skillnb.errors import StoreCorrupted
from skillnb.store import SidecarStore, sidecar_dir_for
from skillnb.store.sidecar.compaction import StrayIntentWarning
from skillnb.store.sidecar.store import TornWriteWarning


class Crash(Exception):
    """Raised by a phase hook to stop a write where a crash would."""


def crash_at(point: str) -> Callable[[str], None]:
    def hook(phase: str) -> None:
        if phase == point:
            raise Crash(phase)

    return hook


@pytest.fixture
def store(sidecar_dir: Path) -> Iterator[SidecarStore]:
    with SidecarStore(sidecar_dir) as opened:
        yield opened


def test_sidecar_dir_for_a_notebook(tmp_path: Path) -> None:
    notebook = tmp_path / "reports" / "weekly market.ipynb"
    assert sidecar_dir_for(notebook) == tmp_path / "reports" / ".skillnb" / "weekly market"


def test_reading_creates_nothing(sidecar_dir: Path) -> None:
    store = SidecarStore(sidecar_dir)
    assert store.head() == 0
    assert store.load().events == []
    assert store.read_since(0) == []
    assert list(store.history()) == []
    assert not store.exists()
    with pytest.raises(KeyError):
        store.get_blob("sha256:" + "0" * 64)
    assert not sidecar_dir.parent.parent.exists()


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277])
def test_files_are_private_whatever_the_umask(sidecar_dir: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        with SidecarStore(sidecar_dir) as store:
            store.append([draft()], expected_version=0)
            store.compact(state_at(1))
            store.append([draft()], expected_version=1)
            store.put_blob(b"blob")
    finally:
        os.umask(old)
    root = sidecar_dir.parent.parent  # the notebook's folder was created too
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    names = {p.relative_to(sidecar_dir).as_posix() for p in sidecar_dir.rglob("*")}
    assert {"journal.jsonl", "snapshot.json", "lock", "segments", "blobs"} <= names


def test_journal_lines_are_checksummed_readable_json(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft("one", text="Résumé ✓")], expected_version=0)
    store.append([draft("two"), draft("three")], expected_version=1)
    raw = lines(sidecar_dir / "journal.jsonl")
    assert len(raw) == 3
    assert "Résumé ✓".encode() in raw[0]
    for line in raw:
        body, crc = line.rstrip(b"\n").rsplit(b',"crc":"', 1)
        assert int(crc[:8], 16) == zlib.crc32(body + b"}")
    parsed = [json.loads(line) for line in raw]
    assert [p["seq"] for p in parsed] == [1, 2, 3]
    assert [p.get("more") for p in parsed] == [None, True, None]
    assert parsed[0]["data"] == {"text": "Résumé ✓"}


def test_an_append_is_one_write_and_an_fsync(
    store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append([draft()], expected_version=0)  # creates the files
    calls: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes) -> int:
        calls.append(f"write {len(bytes(data).splitlines())} lines")
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    store.append([draft(), draft(), draft()], expected_version=1)
    assert calls == ["write 3 lines", "fsync"]


def test_a_torn_last_line_is_ignored_then_moved_aside(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft("a"), draft("b")], expected_version=0)
    journal = sidecar_dir / "journal.jsonl"
    committed = journal.read_bytes()
    torn = event_line(3, "torn")[:40]
    with journal.open("ab") as f:
        f.write(torn)
    other = SidecarStore(sidecar_dir)
    with pytest.warns(TornWriteWarning, match="the next write moves them aside"):
        assert other.head() == 2
    assert [e.type for e in other.load().events] == ["a", "b"]
    assert store.read_since(0) is not None
    assert journal.read_bytes() == committed + torn  # readers move nothing
    with pytest.warns(TornWriteWarning, match=r"moved 40 bytes .* to .*journal\.jsonl\.tail-"):
        other.append([draft("c")], expected_version=2)
    assert journal.read_bytes().startswith(committed)
    assert [e.type for e in store.history()] == ["a", "b", "c"]
    [kept] = sidecar_dir.glob("journal.jsonl.tail-*")
    assert kept.read_bytes() == torn
    other.close()


def test_a_bad_complete_last_line_is_corruption_not_a_torn_write(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft("a")], expected_version=0)
    journal = sidecar_dir / "journal.jsonl"
    garbage = b'{"v":1,"seq":2,"type":"x","crc":"00000000"}\n'
    with journal.open("ab") as f:
        f.write(garbage)
    with pytest.raises(StoreCorrupted, match=r"journal\.jsonl:2: checksum mismatch"):
        SidecarStore(sidecar_dir).head()
    with pytest.raises(StoreCorrupted):
        store.append([draft("b")], expected_version=1)
    assert journal.read_bytes().endswith(garbage)
    assert not list(sidecar_dir.glob("journal.jsonl.*"))


def test_an_unfinished_append_is_invisible_then_removed(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft("a")], expected_version=0)
    journal = sidecar_dir / "journal.jsonl"
    with journal.open("ab") as f:  # the first two lines of a three-event append
        f.write(event_line(2, "b", more=True) + event_line(3, "c", more=True))
    reader = SidecarStore(sidecar_dir)
    assert reader.head() == 1
    assert reader.read_since(0) == store.load().events
    store.append([draft("d")], expected_version=1)
    assert [(e.seq, e.type) for e in reader.history()] == [(1, "a"), (2, "d")]
    assert len(lines(journal)) == 2
    reader.close()


def test_head_and_read_since_read_only_new_bytes(
    sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = SidecarStore(sidecar_dir)
    writer.append([draft("bulk", i=i, pad="x" * 200) for i in range(2000)], expected_version=0)
    reader = SidecarStore(sidecar_dir)
    assert reader.head() == 2000
    read: list[int] = []
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", pread)
    assert reader.head() == 2000
    assert sum(read) == 0  # nothing new: only a stat
    [new] = writer.append([draft("new")], expected_version=2000)
    assert reader.head() == 2001
    assert reader.read_since(2000) == [new]
    assert sum(read) < 200  # the new line, not the 500 KB journal
    assert [e.seq for e in reader.read_since(1990) or []] == list(range(1991, 2002))
    writer.close()
    reader.close()


def test_each_reader_of_new_events_owns_what_it_gets(sidecar_dir: Path) -> None:
    """The reader that catches up takes the events read; another gets its own, read again."""
    writer, reader = SidecarStore(sidecar_dir), SidecarStore(sidecar_dir)
    writer.append([draft("a", items=["x"])], expected_version=0)
    assert reader.head() == 1
    writer.append([draft("b", items=["y"]), draft("c", items=["z"])], expected_version=1)
    assert reader.head() == 3  # read now, taken below
    writer.append([draft("d", items=["w"])], expected_version=3)
    first = reader.read_since(0) or []  # takes the events its refreshes read
    assert [e.type for e in first] == ["a", "b", "c", "d"]
    second = reader.read_since(1) or []  # none left unread: read again from the file
    assert [e.type for e in second] == ["b", "c", "d"]
    first[1].data["items"].append("changed by the first reader")
    assert second[0].data["items"] == ["y"]
    assert first[1] is not second[0]
    assert [e.data for e in reader.read_since(1) or []] == [e.data for e in second]
    writer.close()
    reader.close()


def test_events_read_by_two_refreshes_are_taken_together(sidecar_dir: Path) -> None:
    writer, reader = SidecarStore(sidecar_dir), SidecarStore(sidecar_dir)
    writer.append([draft("a")], expected_version=0)
    assert reader.head() == 1
    writer.append([draft("b")], expected_version=1)
    assert reader.head() == 2
    writer.append([draft("c")], expected_version=2)
    assert [e.type for e in reader.catch_up(1, None) or []] == ["b", "c"]
    assert reader.catch_up(3, None) == []
    writer.close()
    reader.close()


def test_read_since_after_another_object_compacted(sidecar_dir: Path) -> None:
    writer, reader = SidecarStore(sidecar_dir), SidecarStore(sidecar_dir)
    writer.append([draft(), draft()], expected_version=0)
    assert reader.head() == 2
    writer.compact(state_at(2))
    assert reader.read_since(1) is None
    assert reader.read_since(2) == []
    writer.append([draft("after")], expected_version=2)
    assert reader.head() == 3
    assert [e.type for e in reader.read_since(2) or []] == ["after"]
    assert reader.read_since(0) is None
    writer.close()
    reader.close()


def test_compaction_archives_the_journal_in_a_segment(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft("a"), draft("b")], expected_version=0)
    store.append([draft("c")], expected_version=2)
    live = (sidecar_dir / "journal.jsonl").read_bytes()
    store.compact(state_at(3))
    segment = sidecar_dir / "segments" / "000000000001-000000000003.jsonl"
    assert segment.read_bytes() == live  # byte for byte, checksums kept
    [header] = lines(sidecar_dir / "journal.jsonl")
    crc = json.loads(header)["crc"]
    assert json.loads(header) == {"v": 1, "base": 3, "run": "run-test", "crc": crc}
    assert json.loads((sidecar_dir / "snapshot.json").read_text())["state"]["version"] == 3
    assert not (sidecar_dir / "compaction.json").exists()


COMPACTION_POINTS = [
    "compact.intent.tmp",
    "compact.intent",
    "compact.segment.tmp",
    "compact.segment",
    "compact.snapshot.tmp",
    "compact.snapshot",
    "compact.journal.tmp",
    "compact.journal",
    "compact.done",
]


@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_a_compaction_cut_short_loses_and_duplicates_nothing(sidecar_dir: Path, point: str) -> None:
    with SidecarStore(sidecar_dir) as setup:
        setup.append([draft("a"), draft("b")], expected_version=0)
        setup.compact(state_at(2, last_operation="first"))
        setup.append([draft("c"), draft("d")], expected_version=2)
    with SidecarStore(sidecar_dir, phase_hook=crash_at(point)) as crashing, pytest.raises(Crash):
        crashing.compact(state_at(4, last_operation="second"))
    reader = SidecarStore(sidecar_dir)
    loaded = reader.load()
    assert loaded.snapshot is not None
    after = loaded.snapshot.version
    assert (after, loaded.snapshot.last_operation) in {(2, "first"), (4, "second")}
    assert [e.seq for e in loaded.events] == list(range(after + 1, 5))
    assert [e.type for e in reader.history()] == ["a", "b", "c", "d"]
    assert reader.head() == 4
    # Appends carry on from whatever state the crash left ...
    with SidecarStore(sidecar_dir) as writer:
        writer.append([draft("e")], expected_version=4)
        assert [e.type for e in reader.history()] == ["a", "b", "c", "d", "e"]
        assert [e.type for e in writer.load().events][-1] == "e"
        # ... and the next compaction finishes or abandons the one cut short first.
        writer.compact(state_at(5, last_operation="third"))
    assert not (sidecar_dir / "compaction.json").exists()
    assert not [p for p in sidecar_dir.rglob(".tmp-*")]
    assert [e.type for e in reader.history()] == ["a", "b", "c", "d", "e"]
    segments = sorted(p.name for p in (sidecar_dir / "segments").iterdir())
    assert segments[0] == "000000000001-000000000002.jsonl"
    assert segments[-1] in ("000000000003-000000000005.jsonl", "000000000005-000000000005.jsonl")
    assert reader.load().events == []
    reader.close()


def test_a_compaction_record_that_does_not_match_is_set_aside(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft()], expected_version=0)
    intent = sidecar_dir / "compaction.json"
    intent.write_text('{"v":1,"base":7,"head":9,"segment":"000000000008-000000000009.jsonl"}')
    with pytest.warns(StrayIntentWarning, match="does not match the journal"):
        store.compact(state_at(1))
    assert not intent.exists()
    assert len(list(sidecar_dir.glob("compaction.json.stray-*"))) == 1


def test_a_missing_journal_continues_after_the_snapshot(
    store: SidecarStore, sidecar_dir: Path
) -> None:
    store.append([draft(), draft()], expected_version=0)
    store.compact(state_at(2))
    (sidecar_dir / "journal.jsonl").unlink()
    other = SidecarStore(sidecar_dir)
    assert other.head() == 2
    assert other.read_since(2) == []
    assert other.append([draft()], expected_version=2)[0].seq == 3
    assert [e.seq for e in other.history()] == [1, 2, 3]
    other.close()


def test_an_empty_journal_file_is_an_empty_run(sidecar_dir: Path) -> None:
    sidecar_dir.mkdir(parents=True)
    (sidecar_dir / "journal.jsonl").write_bytes(b"")
    store = SidecarStore(sidecar_dir)
    assert store.head() == 0
    assert not store.exists()
    assert store.load().events == []
    assert store.append([draft()], expected_version=0)[0].seq == 1


def test_a_closed_store_refuses_to_work(sidecar_dir: Path) -> None:
    store = SidecarStore(sidecar_dir)
    store.append([draft()], expected_version=0)
    store.close()
    with pytest.raises(ValueError, match="closed"):
        store.head()
    with pytest.raises(ValueError, match="closed"):
        store.append([draft()], expected_version=1)
    assert SidecarStore(sidecar_dir).head() == 1


def test_a_damaged_blob_is_reported(store: SidecarStore, sidecar_dir: Path) -> None:
    ref = store.put_blob(b"original")
    path = sidecar_dir / "blobs" / ref.removeprefix("sha256:")
    path.write_bytes(b"tampered")
    with pytest.raises(StoreCorrupted, match="does not match") as raised:
        store.get_blob(ref)
    assert raised.value.path == path
    assert store.put_blob(b"original") == ref  # putting it again heals it
    assert store.get_blob(ref) == b"original"
