"""Hostile stored values: decode bombs and deep nesting end in a clear error, fast.

About 150 bytes of stored JSON must not become a 3 GiB numpy array, and JSON nested a hundred
thousand levels deep (in a journal line with a valid checksum, a snapshot, a compaction record
or a blob) is a StoreCorrupted or CodecError, never a RecursionError.
"""

from __future__ import annotations

import json
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.core.safejson import JSONTooDeep, json_depth_exceeds, load_json
from skillnb.errors import StoreCorrupted
from skillnb.store import MemoryStore, SidecarStore
from skillnb.store.codec.values import CodecError, decode
from skillnb.store.sidecar.compaction import StrayIntentWarning
from skillnb.store.sidecar.journal import MAX_DEPTH, EventRejected

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
DEEP = 100_000


def sealed(content: bytes) -> bytes:
    return content + b',"crc":"%08x"}\n' % zlib.crc32(content + b"}")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BOMBS = {
    "wide text dtype": {"dtype": "<U100000000", "shape": [8], "data": ["a"] * 8},
    "shape beyond the data": {"dtype": "<f8", "shape": [65536, 65536], "data": [1.0]},
    "negative shape": {"dtype": "<i8", "shape": [-1], "data": [1]},
    "dtype as an object": {"dtype": {"names": ["a"]}, "shape": [1], "data": [1]},
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_numpy_decode_bomb_is_refused_before_allocating(bomb: str) -> None:
    stored = BOMBS[bomb]
    assert len(json.dumps(stored)) < 200 or bomb == "wide text dtype"
    started = time.monotonic()
    with pytest.raises(CodecError, match="malformed 'numpy' value"):
        decode(stored, "numpy", MemoryStore())
    assert time.monotonic() - started < 1.0


def test_a_pandas_table_cannot_name_a_numpy_dtype_of_any_width() -> None:
    table = {
        "schema": {
            "fields": [
                {"name": "index", "type": "integer"},
                {"name": "a", "type": "any", "extDtype": "<U1000000000"},
            ],
            "primaryKey": ["index"],
        },
        "data": [{"index": i, "a": "x"} for i in range(4)],
    }
    with pytest.raises(CodecError, match="malformed 'pandas' value"):
        decode({"kind": "DataFrame", "table": table}, "pandas", MemoryStore())


def test_honest_arrays_and_frames_still_round_trip() -> None:
    from skillnb.store.codec.values import encode

    store = MemoryStore()
    values = [
        np.arange(6).reshape(2, 3),
        np.array(["ab", "c"]),
        np.array(["", ""]),
        np.zeros((0, 3)),
        np.float32(1.5),
        pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "s": ["x", "y"]}),
    ]
    for value in values:
        encoded = encode(value, store)
        back = decode(encoded.value, encoded.encoding, store)
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(back, value)
        else:
            np.testing.assert_array_equal(back, value)


def test_depth_is_measured_without_parsing() -> None:
    assert not json_depth_exceeds(nested(10), 10)
    assert json_depth_exceeds(nested(11), 10)
    assert not json_depth_exceeds('["[[[[[[[[[[[[[[[[[[[["]', 3)  # brackets inside strings
    assert not json_depth_exceeds('[{"a": [{}]}, [[]], {"b": "\\"[[["}]', 4)
    assert json_depth_exceeds('[{"a": [{"b": []}]}]', 4)
    started = time.monotonic()
    with pytest.raises(JSONTooDeep):
        load_json("[" * DEEP)
    with pytest.raises(JSONTooDeep):
        load_json(nested(DEEP).encode())
    assert time.monotonic() - started < 1.0
    assert load_json(b'{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    with pytest.raises(ValueError, match="NaN is not JSON"):
        load_json("[NaN]")


def test_a_deep_journal_line_with_a_valid_checksum_is_store_corrupted(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    line = sealed(
        b'{"v":1,"seq":1,"type":"x","at":"2024-05-01T12:00:00+00:00","data":{"a":'
        + nested(DEEP).encode()
        + b"}"
    )
    (folder / "journal.jsonl").write_bytes(line)
    started = time.monotonic()
    with SidecarStore(folder) as store, pytest.raises(StoreCorrupted, match="nested") as raised:
        store.load()
    assert raised.value.line == 1
    assert time.monotonic() - started < 1.0


def test_a_deep_snapshot_is_store_corrupted(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    with SidecarStore(folder) as store:
        store.append([EventDraft(type="x", at=NOW, data={})], expected_version=0)
    (folder / "snapshot.json").write_text(
        '{"v":1,"run_id":"r","version":1,"x":' + nested(DEEP) + "}"
    )
    with SidecarStore(folder) as store, pytest.raises(StoreCorrupted, match="nested") as raised:
        store.load()
    assert raised.value.path == folder / "snapshot.json"


def test_a_deep_compaction_record_is_set_aside(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    with SidecarStore(folder) as store:
        store.append([EventDraft(type="x", at=NOW, data={})], expected_version=0)
    intent = folder / "compaction.json"
    intent.write_text('{"v":1,"base":0,"head":1,"x":' + nested(DEEP) + "}")
    with SidecarStore(folder) as store, pytest.warns(StrayIntentWarning, match="nested"):
        store.compact(RunState(run_id="r", version=1))
    assert not intent.exists()
    assert [e.type for e in SidecarStore(folder).history()] == ["x"]


def test_a_deep_blob_is_a_codec_error(tmp_path: Path) -> None:
    with SidecarStore(tmp_path / "state") as store:
        ref = store.put_blob(nested(DEEP).encode())
        with pytest.raises(CodecError, match="nested"):
            decode({"$blob": ref, "encoding": "json", "size": 1}, "blob", store)


def test_the_writer_refuses_what_the_reader_would_not_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    # The event object and its data object are two levels; the value may take the rest.
    fits = json.loads(nested(MAX_DEPTH - 2))
    too_deep = json.loads(nested(MAX_DEPTH - 1))
    with SidecarStore(folder) as store:
        with pytest.raises(EventRejected, match=f"more than {MAX_DEPTH} levels"):
            store.append([EventDraft(type="x", at=NOW, data={"v": too_deep})], expected_version=0)
        assert store.head() == 0
        store.append([EventDraft(type="x", at=NOW, data={"v": fits})], expected_version=0)
    with SidecarStore(folder) as again:
        assert again.load().events[0].data == {"v": fits}
