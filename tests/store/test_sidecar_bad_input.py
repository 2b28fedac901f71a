"""Damaged or foreign sidecar files give a StoreCorrupted naming the file and line, never a raw
json, pydantic or UnicodeDecodeError traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sidecar_helpers import draft, event_line, header_line, lines, seal, state_at

from skillnb.errors import SkillnbError, StoreCorrupted
from skillnb.store import NewerFormatError, SidecarStore
from skillnb.store.sidecar import journal as journal_module
from skillnb.store.sidecar.compaction import StrayIntentWarning
from skillnb.store.sidecar.store import TornWriteWarning


def write_journal(folder: Path, *chunks: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "journal.jsonl"
    path.write_bytes(b"".join(chunks))
    return path


def assert_names(error: SkillnbError, path: Path, line: int | None) -> None:
    assert getattr(error, "path", None) == path
    assert getattr(error, "line", None) == line
    where = f"{path}:{line}" if line is not None else str(path)
    assert where in str(error)


def load_error(folder: Path) -> SkillnbError:
    with pytest.raises(SkillnbError) as raised:
        SidecarStore(folder).load()
    return raised.value


GOOD = [event_line(1, "a"), event_line(2, "b")]
LAST = event_line(3, "c")

DAMAGED_MIDDLE_LINES = {
    "truncated": event_line(2, "b")[:30] + b"\n",
    "garbage": b"\x00\x00\x00 not json at all\n",
    "bad checksum": event_line(2, "b").replace(b'"b"', b'"B"'),
    "empty line": b"\n",
    "type as a list": event_line(2, ["b"]),  # type: ignore[arg-type]
    "not an object": seal(b'[{"v":1'),
    "seq as text": event_line("2", "b"),  # type: ignore[arg-type]
    "data as a list": event_line(2, "b", data=[1, 2]),  # type: ignore[arg-type]
    "at not a date": seal(b'{"v":1,"seq":2,"type":"b","at":"yesterday","data":{}'),
    "unknown field": event_line(2, "b", colour="red"),
    "missing seq": seal(b'{"v":1,"type":"b","at":"2024-05-01T12:00:00+00:00","data":{}'),
    "version zero": event_line(2, "b", v=0),
    "version as text": event_line(2, "b", v="1"),
    "not utf-8": seal(
        b'{"v":1,"seq":2,"type":"\xff\xfe","at":"2024-05-01T12:00:00+00:00","data":{}'
    ),
    "NaN literal": seal(b'{"v":1,"seq":2,"type":"b","at":"2024-05-01T12:00:00+00:00","data":NaN'),
    "header in the middle": header_line(1),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_MIDDLE_LINES))
def test_damage_in_the_middle_names_the_line(sidecar_dir: Path, damage: str) -> None:
    path = write_journal(sidecar_dir, GOOD[0], DAMAGED_MIDDLE_LINES[damage], LAST)
    error = load_error(sidecar_dir)
    assert isinstance(error, StoreCorrupted)
    assert_names(error, path, 2)
    with pytest.raises(StoreCorrupted):
        SidecarStore(sidecar_dir).head()
    with pytest.raises(StoreCorrupted):
        SidecarStore(sidecar_dir).append([draft()], expected_version=3)
    assert path.read_bytes().endswith(LAST)  # a writer never cuts valid lines


# A valid header is never torn (it is misplaced), and an empty last line is a trailing newline.
TORN = sorted(set(DAMAGED_MIDDLE_LINES) - {"header in the middle", "empty line"})


@pytest.mark.parametrize("damage", TORN)
def test_the_same_damage_on_the_last_complete_line_is_corruption(
    sidecar_dir: Path, damage: str
) -> None:
    path = write_journal(sidecar_dir, *GOOD, DAMAGED_MIDDLE_LINES[damage])
    before = path.read_bytes()
    error = load_error(sidecar_dir)
    assert isinstance(error, StoreCorrupted)
    assert_names(error, path, 3)
    with pytest.raises(StoreCorrupted):  # the next write must not reuse its sequence number
        SidecarStore(sidecar_dir).append([draft("c")], expected_version=2)
    assert path.read_bytes() == before


@pytest.mark.parametrize("damage", TORN)
def test_the_same_damage_without_its_newline_is_a_torn_write(
    sidecar_dir: Path, damage: str
) -> None:
    fragment = DAMAGED_MIDDLE_LINES[damage].rstrip(b"\n")
    path = write_journal(sidecar_dir, *GOOD, fragment)
    store = SidecarStore(sidecar_dir)
    with pytest.warns(TornWriteWarning, match=r"journal.jsonl:3: ignoring \d+ bytes"):
        assert [e.type for e in store.load().events] == ["a", "b"]
    assert path.read_bytes().endswith(fragment)  # reading moved nothing
    with pytest.warns(TornWriteWarning, match="moved") as warned:
        assert store.append([draft("c")], expected_version=2)[0].seq == 3
    [kept] = sidecar_dir.glob("journal.jsonl.tail-*")
    assert str(kept) in str(warned[0].message)
    assert kept.read_bytes() == fragment
    assert path.read_bytes() == b"".join(GOOD) + lines(path)[-1]
    store.close()


def test_a_huge_line_in_the_middle(sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "MAX_LINE_BYTES", 1000)
    path = write_journal(sidecar_dir, GOOD[0], event_line(2, "big", data={"x": "y" * 5000}), LAST)
    error = load_error(sidecar_dir)
    assert_names(error, path, 2)
    assert "over the 1000-byte limit" in str(error)


def test_writing_a_line_over_the_limit_is_refused(
    sidecar_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "MAX_LINE_BYTES", 1000)
    store = SidecarStore(sidecar_dir)
    with pytest.raises(ValueError, match="blobs"):
        store.append([draft(x="y" * 5000)], expected_version=0)
    assert store.head() == 0


def test_a_huge_garbage_file_is_reported_not_loaded_as_json(sidecar_dir: Path) -> None:
    path = write_journal(sidecar_dir, b"[" * 100_000 + b"\n", LAST)
    assert_names(load_error(sidecar_dir), path, 1)


@pytest.mark.parametrize(
    ("chunks", "line", "detail"),
    [
        ([event_line(1), event_line(3)], 2, "sequence number 3 where 2 was expected (gap)"),
        ([event_line(1), event_line(1)], 2, "duplicate or out of order"),
        ([event_line(2)], 1, "sequence number 2 where 1 was expected"),
        ([header_line(5), event_line(5)], 2, "sequence number 5 where 6 was expected"),
    ],
)
def test_sequence_numbers_must_follow_each_other(
    sidecar_dir: Path, chunks: list[bytes], line: int, detail: str
) -> None:
    path = write_journal(sidecar_dir, *chunks)
    error = load_error(sidecar_dir)
    assert_names(error, path, line)
    assert detail in str(error)


def test_a_line_from_a_newer_skillnb_asks_for_an_upgrade(sidecar_dir: Path) -> None:
    path = write_journal(sidecar_dir, GOOD[0], event_line(2, "b", v=2, shiny=True))
    error = load_error(sidecar_dir)
    assert isinstance(error, NewerFormatError)
    assert not isinstance(error, StoreCorrupted)  # repairing would throw good data away
    assert_names(error, path, 2)
    assert "written by a newer skillnb" in str(error)
    assert "upgrade skillnb" in str(error)
    assert (error.found, error.supported) == (2, 1)


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"", "empty snapshot file"),
        (b"   \n", "empty snapshot file"),
        (b"{not json", "not JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "a JSON list, not a run state"),
        (b'{"v": 1, "run_id": 5, "version": 3}', "run_id"),
        (b'{"v": 1, "run_id": "r", "version": "3"}', "version"),
        (b'{"v": 1, "run_id": "r", "version": 3, "extra": true}', "extra"),
        (b'{"v": null, "run_id": "r", "version": 3}', "format version 'v' is None"),
    ],
)
def test_a_damaged_snapshot_names_the_file(sidecar_dir: Path, content: bytes, detail: str) -> None:
    write_journal(sidecar_dir, header_line(3))
    (sidecar_dir / "snapshot.json").write_bytes(content)
    error = load_error(sidecar_dir)
    assert isinstance(error, StoreCorrupted)
    assert_names(error, sidecar_dir / "snapshot.json", None)
    assert detail in error.detail


def test_a_snapshot_from_a_newer_skillnb_asks_for_an_upgrade(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, header_line(3))
    (sidecar_dir / "snapshot.json").write_text(json.dumps({"v": 7, "run_id": "r", "version": 3}))
    error = load_error(sidecar_dir)
    assert isinstance(error, NewerFormatError)
    assert "v7" in str(error)


def test_a_snapshot_ahead_of_the_journal_is_reported(sidecar_dir: Path) -> None:
    write_journal(sidecar_dir, *GOOD)
    (sidecar_dir / "snapshot.json").write_bytes(state_at(9).model_dump_json().encode())
    error = load_error(sidecar_dir)
    assert_names(error, sidecar_dir / "snapshot.json", None)
    assert "journal ends at 2" in str(error)


def test_a_damaged_segment_names_its_file_and_line(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        store.append([draft(), draft(), draft()], expected_version=0)
        store.compact(state_at(3))
    segment = sidecar_dir / "segments" / "000000000001-000000000003.jsonl"
    raw = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(raw[0] + b"garbage\n" + raw[2])
    with pytest.raises(StoreCorrupted) as raised:
        list(SidecarStore(sidecar_dir).history())
    assert_names(raised.value, segment, 2)
    assert SidecarStore(sidecar_dir).load().snapshot is not None  # the run itself still opens


def test_a_segment_that_ends_early_is_reported(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        for version in range(3):
            store.append([draft()], expected_version=version)
        store.compact(state_at(3))
    segment = sidecar_dir / "segments" / "000000000001-000000000003.jsonl"
    segment.write_bytes(b"".join(segment.read_bytes().splitlines(keepends=True)[:2]))
    with pytest.raises(StoreCorrupted, match=r"named for events 1\.\.3 ends at 2") as raised:
        list(SidecarStore(sidecar_dir).history())
    assert_names(raised.value, segment, 3)


def test_missing_segments_are_reported(sidecar_dir: Path) -> None:
    with SidecarStore(sidecar_dir) as store:
        store.append([draft(), draft()], expected_version=0)
        store.compact(state_at(2))
    (sidecar_dir / "segments" / "000000000001-000000000002.jsonl").unlink()
    with pytest.raises(StoreCorrupted, match=r"events 1\.\.2 are missing") as raised:
        list(SidecarStore(sidecar_dir).history())
    assert raised.value.path == sidecar_dir / "segments"


@pytest.mark.parametrize(
    "content", [b"", b"{", b"[]", b'{"v":1,"base":"x","head":2,"segment":"s"}', b"\xff"]
)
def test_a_damaged_compaction_record_is_set_aside_naming_the_file(
    sidecar_dir: Path, content: bytes
) -> None:
    write_journal(sidecar_dir, *GOOD)
    intent = sidecar_dir / "compaction.json"
    intent.write_bytes(content)
    with pytest.warns(StrayIntentWarning, match=re.escape(str(intent))):
        SidecarStore(sidecar_dir).compact(state_at(2))
    [aside] = sidecar_dir.glob("compaction.json.stray-*")
    assert aside.read_bytes() == content  # kept as it was, never deleted
    assert not intent.exists()
    assert [e.seq for e in SidecarStore(sidecar_dir).history()] == [1, 2]
