"""Every durable file read back is checked: a flipped bit in the snapshot, a stray or forged
compaction record, an edited archive record are each caught, named, and lose nothing.
"""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest

from skillnb.errors import StoreCorrupted
from skillnb.run import open_run
from skillnb.store import NewerFormatError, SidecarStore, repair

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
