"""skillnb.store.folders.repair keeps every valid event, keeps damaged files aside, never
deletes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sidecar_helpers import draft, event_line, lines, state_at

from skillnb.store import NewerFormatError, SidecarStore
from skillnb.store.folders.repair import LOST_EVENT_TYPE, repair
from skillnb.store.sidecar.journal import encode_header

WHEN = datetime(2024, 6, 1, 8, 0, tzinfo=UTC)


def write_journal(folder: Path, *chunks: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "journal.jsonl"
    path.write_bytes(b"".join(chunks))
    return path


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != "lock"}


def test_damage_in_the_middle_keeps_every_valid_event(sidecar_dir: Path) -> None:
    original = [event_line(1, "a"), b"garbage\n", event_line(3, "c"), event_line(4, "d")]
    path = write_journal(sidecar_dir, *original)
    report = repair(sidecar_dir, now=WHEN)
    [fixed] = report.files
    assert fixed.path == path
    assert fixed.kept == 3
    assert fixed.damaged_lines == (2,)
    assert fixed.lost == (2,)
    assert fixed.moved_to.name == "journal.jsonl.damaged-20240601T080000000000Z"
    assert fixed.moved_to.read_bytes() == b"".join(original)
    events = SidecarStore(sidecar_dir).load().events
    assert [(e.seq, e.type) for e in events] == [(1, "a"), (2, LOST_EVENT_TYPE), (3, "c"), (4, "d")]
    assert events[1].data["file"] == fixed.moved_to.name
    assert events[1].data["damaged_lines"] == [2]
    assert "kept 3 events, 1 damaged lines, 1 events lost" in str(report)


def test_every_validating_line_is_kept_across_several_damages(sidecar_dir: Path) -> None:
    write_journal(
        sidecar_dir,
        b"x\n",
        event_line(2, "b"),
        b"y\n",
        b"z\n",
        event_line(5, "e"),
        event_line(6, "f", more=True),
        event_line(7, "g"),
        event_line(7, "g again"),
        event_line(8, "h")[:25],
    )
    [fixed] = repair(sidecar_dir, now=WHEN).files
    assert fixed.damaged_lines == (1, 3, 4, 9)
    assert fixed.dropped_lines == (8,)  # seq 7 was already kept
    assert fixed.lost == (1, 3, 4)
    store = SidecarStore(sidecar_dir)
    kept = [(e.seq, e.type) for e in store.history() if e.type != LOST_EVENT_TYPE]
    assert kept == [(2, "b"), (5, "e"), (6, "f"), (7, "g")]
    assert store.append([draft("next")], expected_version=7)[0].seq == 8


def test_a_lost_group_closer_keeps_the_group_when_more_follows(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, event_line(1, "a", more=True), b"bad\n", event_line(3, "c"))
    repair(sidecar_dir, now=WHEN)
    types = [e.type for e in SidecarStore(sidecar_dir).history()]
    assert types == ["a", LOST_EVENT_TYPE, "c"]


def test_an_unfinished_last_append_is_dropped(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, event_line(1, "a"), event_line(2, "b", more=True), b"torn")
    [fixed] = repair(sidecar_dir, now=WHEN).files
    assert fixed.kept == 1
    assert fixed.dropped_lines == (2,)
    assert fixed.lost == ()
    assert [e.type for e in SidecarStore(sidecar_dir).history()] == ["a"]


def test_a_damaged_header_is_rebuilt_from_the_events(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        store.append([draft("a"), draft("b")], expected_version=0)
        store.compact(state_at(2))
        store.append([draft("c")], expected_version=2)
    path = sidecar_dir / "journal.jsonl"
    raw = lines(path)
    path.write_bytes(b"xx\n" + raw[1])
    repair(sidecar_dir, now=WHEN)
    assert lines(path)[0] == encode_header(2, "run-test")  # the snapshot names the run
    assert [e.type for e in SidecarStore(sidecar_dir).history()] == ["a", "b", "c"]


def test_a_damaged_segment_is_repaired_within_its_range(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        for version in range(3):
            store.append([draft(f"e{version + 1}")], expected_version=version)
        store.compact(state_at(3))
    segment = sidecar_dir / "segments" / "000000000001-000000000003.jsonl"
    raw = lines(segment)
    segment.write_bytes(raw[0] + raw[1] + b"damaged last line\n")
    [fixed] = repair(sidecar_dir, now=WHEN).files
    assert fixed.path == segment
    assert fixed.lost == (3,)  # the name says the segment ends at 3
    assert [e.type for e in SidecarStore(sidecar_dir).history()] == ["e1", "e2", LOST_EVENT_TYPE]


def test_a_damaged_snapshot_is_moved_aside_and_the_history_replayed(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        store.append([draft("a"), draft("b")], expected_version=0)
        store.compact(state_at(2))
        store.append([draft("c")], expected_version=2)
    (sidecar_dir / "snapshot.json").write_bytes(b"{damaged")
    report = repair(sidecar_dir, now=WHEN)
    assert [p.name for p in report.moved_aside] == ["snapshot.json.damaged-20240601T080000000000Z"]
    loaded = SidecarStore(sidecar_dir).load()
    assert loaded.snapshot is None
    assert [e.type for e in loaded.events] == ["a", "b", "c"]


def test_a_mismatched_compaction_record_is_moved_aside(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, event_line(1))
    (sidecar_dir / "compaction.json").write_text(
        '{"v":1,"base":4,"head":6,"segment":"000000000005-000000000006.jsonl"}'
    )
    report = repair(sidecar_dir, now=WHEN)
    assert [p.name for p in report.moved_aside] == [
        "compaction.json.damaged-20240601T080000000000Z"
    ]
    assert SidecarStore(sidecar_dir).append([draft()], expected_version=1)[0].seq == 2


def test_a_clean_sidecar_is_left_alone(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        store.append([draft(), draft()], expected_version=0)
        store.compact(state_at(2))
        store.append([draft()], expected_version=2)
    before = files(sidecar_dir)
    report = repair(sidecar_dir, now=WHEN)
    assert not report.changed
    assert str(report).endswith("nothing to repair")
    assert files(sidecar_dir) == before


def test_repair_never_deletes(sidecar_dir: Path) -> None:
    original = [event_line(1), b"bad\n", event_line(3)]
    write_journal(sidecar_dir, *original)
    repair(sidecar_dir, now=WHEN)
    write_journal(sidecar_dir, *original)  # damaged again, repaired again at the same time
    repair(sidecar_dir, now=WHEN)
    kept = sorted(p.name for p in sidecar_dir.glob("journal.jsonl.damaged-*"))
    assert kept == [
        "journal.jsonl.damaged-20240601T080000000000Z",
        "journal.jsonl.damaged-20240601T080000000000Z-2",
    ]
    assert all(p.read_bytes() == b"".join(original) for p in sidecar_dir.glob("*.damaged-*"))


def test_a_newer_format_is_not_repaired(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, event_line(1), b"bad\n", event_line(3, v=2))
    before = files(sidecar_dir)
    with pytest.raises(NewerFormatError):
        repair(sidecar_dir, now=WHEN)
    assert files(sidecar_dir) == before


def test_repair_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        repair(tmp_path / "missing")
