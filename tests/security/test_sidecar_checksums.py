"""Every durable file read back is checked: a flipped bit in the snapshot, a stray or forged
compaction record, an edited archive record are each caught, named, and lose nothing.
"""

from __future__ import annotations

import json
import shutil
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from securitykit import seal

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store import NewerFormatError, SidecarStore
from skillnb.store.folders.repair import repair
from skillnb.store.sidecar.compaction import StrayIntentWarning
from skillnb.store.sidecar.snapshot import encode_snapshot

GOLDEN_V1 = Path(__file__).parents[1] / "fixtures" / "sidecar_v1" / "analysis"


def compacted_run(folder: Path) -> None:
    run = open_run(state_dir=folder, memory=False)
    run.formalize("budget", 5300)
    run.compact()
    run.close()


def flip_one_bit(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of ``old`` by ``new`` (they differ by one bit)."""
    assert bin(int.from_bytes(old) ^ int.from_bytes(new)).count("1") == 1
    raw = path.read_bytes()
    assert raw.count(old) == 1
    path.write_bytes(raw.replace(old, new))


def test_a_flipped_bit_in_the_snapshot_is_store_corrupted_and_repair_keeps_the_value(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "s"
    compacted_run(folder)
    snapshot = folder / "snapshot.json"
    flip_one_bit(snapshot, b'"value":5300', b'"value":4300')  # "5" ^ "4" is one bit
    with pytest.raises(StoreCorrupted) as info:
        open_run(state_dir=folder, memory=False)
    assert info.value.path == snapshot
    assert "checksum mismatch" in info.value.detail
    report = repair(folder)
    assert any(p.name.startswith("snapshot.json.damaged-") for p in report.moved_aside)
    run = open_run(state_dir=folder, memory=False)
    assert run.fact("budget").value == 5300  # type: ignore[union-attr]  # from the history


def test_a_snapshot_of_the_state_alone_is_read_as_before(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "analysis"
    shutil.copytree(GOLDEN_V1, folder)
    run = open_run(state_dir=folder, memory=False)
    assert run.fact("budget").value == 1500  # type: ignore[union-attr]
    run.compact()
    assert (folder / "snapshot.json").read_bytes().startswith(b'{"v":2,"crc":"')
    run.close()


def _rewrite_state(snapshot: Path, change: dict[str, object]) -> None:
    envelope = json.loads(snapshot.read_bytes())
    state = {**envelope["state"], **change}
    body = json.dumps(state, separators=(",", ":")).encode()
    snapshot.write_bytes(b'{"v":2,"crc":"%08x","state":%s}\n' % (zlib.crc32(body), body))


def test_a_resealed_snapshot_holding_a_hostile_key_is_store_corrupted(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    compacted_run(folder)
    snapshot = folder / "snapshot.json"
    fact = json.loads(snapshot.read_bytes())["state"]["facts"]["budget"]
    _rewrite_state(snapshot, {"facts": {"a/\x00": {**fact, "key": "a/\x00"}}})
    with pytest.raises(StoreCorrupted) as info:
        open_run(state_dir=folder, memory=False)
    assert info.value.path == snapshot
    assert "control or invisible character" in info.value.detail


def test_a_resealed_snapshot_naming_a_bad_run_id_is_store_corrupted(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    compacted_run(folder)
    _rewrite_state(folder / "snapshot.json", {"run_id": "../../../../victim/precious"})
    with pytest.raises(StoreCorrupted, match="run id"):
        SidecarStore(folder).load()


@pytest.mark.parametrize(
    ("content", "error", "detail"),
    [
        (b'{"v":3,"crc":"00000000","state":{}}\n', NewerFormatError, "v3"),
        (b'{"v":2,"crc":"00000000","state":{}}', StoreCorrupted, "malformed sealed snapshot"),
        (b'{"v": 2, "crc": "00000000", "state": {}}\n', StoreCorrupted, "cannot be checked"),
        (b'{"v":2,"crc":"00000000","state":{"v":1}}\n', StoreCorrupted, "checksum mismatch"),
    ],
)
def test_a_sealed_snapshot_that_is_not_as_written_is_refused(
    tmp_path: Path, content: bytes, error: type[Exception], detail: str
) -> None:
    folder = tmp_path / "s"
    compacted_run(folder)
    (folder / "snapshot.json").write_bytes(content)
    with pytest.raises(error, match=detail):
        SidecarStore(folder).load()


# -- the compaction record ------------------------------------------------------------------
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _drafts(*names: str) -> list[EventDraft]:
    return [EventDraft(type="note", at=NOW, data={"n": n}) for n in names]


def compacted_then_more(folder: Path) -> SidecarStore:
    """Events 1-3 archived in a segment (their only copy), events 4-6 live."""
    store = SidecarStore(folder)
    store.append(_drafts("a", "b", "c"), expected_version=0)
    store.compact(RunState(run_id="r1", version=3))
    store.append(_drafts("d", "e", "f"), expected_version=3)
    return store


def sealed_intent(base: int, head: int, segment: str) -> bytes:
    content = json.dumps(
        {"v": 1, "base": base, "head": head, "segment": segment}, separators=(",", ":")
    ).encode()[:-1]
    return content + b',"crc":"%08x"}\n' % zlib.crc32(content + b"}")


def test_a_stray_compaction_record_never_deletes_a_segment_whose_events_are_nowhere_else(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "s"
    store = compacted_then_more(folder)
    only_copy = folder / "segments" / "000000000001-000000000003.jsonl"
    kept = only_copy.read_bytes()
    intent = folder / "compaction.json"
    intent.write_bytes(sealed_intent(3, 6, only_copy.name))  # checksum recomputed
    with pytest.warns(StrayIntentWarning, match="names the segment") as warned:
        store.compact(RunState(run_id="r1", version=6))
    assert "deleted nothing" in str(warned[0].message)
    assert only_copy.read_bytes() == kept
    assert [e.data["n"] for e in store.history()] == ["a", "b", "c", "d", "e", "f"]
    [aside] = folder.glob("compaction.json.stray-*")
    assert aside.read_bytes() == sealed_intent(3, 6, only_copy.name)
    store.close()


def test_a_record_naming_a_segment_that_disagrees_with_the_journal_is_set_aside(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "s"
    store = compacted_then_more(folder)
    planted = folder / "segments" / "000000000004-000000000006.jsonl"
    planted.write_bytes(
        b"".join(  # events 4-6 of another run, well formed
            seal({"v": 1, "seq": i, "type": "note", "at": NOW.isoformat(), "data": {"n": "x"}})
            for i in (4, 5, 6)
        )
    )
    (folder / "compaction.json").write_bytes(sealed_intent(3, 6, planted.name))
    (folder / "snapshot.json").write_bytes(encode_snapshot(RunState(run_id="r1", version=6)))
    with pytest.warns(StrayIntentWarning, match="does not hold the journal's events 4..6"):
        store.compact(RunState(run_id="r1", version=6))
    assert [e.data["n"] for e in store.history()] == ["a", "b", "c", "d", "e", "f"]
    store.close()


def test_a_flipped_bit_in_the_compaction_record_sets_it_aside(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    store = compacted_then_more(folder)
    record = sealed_intent(3, 6, "000000000004-000000000006.jsonl")
    (folder / "compaction.json").write_bytes(record.replace(b'"head":6', b'"head":7'))
    with pytest.warns(StrayIntentWarning, match="checksum mismatch"):
        store.compact(RunState(run_id="r1", version=6))
    assert [e.seq for e in store.history()] == [1, 2, 3, 4, 5, 6]
    store.close()


def test_a_record_of_an_older_version_that_agrees_is_still_honoured(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    store = compacted_then_more(folder)
    name = "000000000004-000000000006.jsonl"
    live = (folder / "journal.jsonl").read_bytes().split(b"\n", 1)[1]
    (folder / "segments" / name).write_bytes(live)  # a crash after step 2 of a compaction
    (folder / "compaction.json").write_text(
        json.dumps({"v": 1, "base": 3, "head": 6, "segment": name})  # no checksum yet
    )
    store.compact(RunState(run_id="r1", version=6))  # no warning: filterwarnings fails on one
    assert not list(folder.glob("compaction.json*"))
    assert [e.seq for e in store.history()] == [1, 2, 3, 4, 5, 6]
    store.close()
