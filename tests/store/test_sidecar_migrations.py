"""Format versions: the golden v1 sidecar still reads, and the migration hook upgrades records."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sidecar_helpers import draft

from skillnb.errors import StoreCorrupted
from skillnb.store import NewerFormatError, SidecarStore
from skillnb.store.codec.values import decode
from skillnb.store.migrations import upgrade
from skillnb.store.sidecar import journal as journal_module

GOLDEN = Path(__file__).parent.parent / "fixtures" / "sidecar_v1" / "analysis"
GOLDEN_SEALED = Path(__file__).parent.parent / "fixtures" / "sidecar_v2" / "analysis"


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    folder = tmp_path / ".skillnb" / "analysis"
    shutil.copytree(GOLDEN, folder)
    return folder


def test_the_golden_v1_sidecar_loads(golden: Path) -> None:
    store = SidecarStore(golden)
    assert store.head() == 8
    loaded = store.load()
    assert loaded.snapshot is not None
    state = loaded.snapshot
    assert (state.run_id, state.version, state.state) == ("run-golden-1", 5, "approved")
    assert state.facts["budget"].value == 1500
    assert state.facts["summary"].value == "Résumés: 27 extraits ✓"
    assert state.firings[0].source == "draft"
    assert state.created_at == datetime(2024, 5, 1, 9, 31, tzinfo=UTC)
    assert [(e.seq, e.type) for e in loaded.events] == [
        (6, "fact.formalized"),
        (7, "batch.declared"),
        (8, "batch.item_done"),
    ]
    scan = loaded.events[0].data["fact"]
    assert decode(scan["value"], scan["encoding"], store) == b"golden blob payload\x00\x01\x02"


def test_the_golden_v1_history_and_appends(golden: Path) -> None:
    store = SidecarStore(golden)
    history = list(store.history())
    assert [e.seq for e in history] == list(range(1, 9))
    assert history[0].data == {"run_id": "run-golden-1", "workflow": "resume_extract"}
    assert history[3].data == {"trigger": "approve_budget", "from": "draft", "to": "approved"}
    assert store.append([draft("next")], expected_version=8)[0].seq == 9
    assert store.read_since(8) == [next(iter(store.read_since(8) or []))]


def test_the_golden_v1_snapshot_is_sealed_by_the_next_compaction(golden: Path) -> None:
    store = SidecarStore(golden)
    loaded = store.load()
    assert loaded.snapshot is not None
    assert not (golden / "snapshot.json").read_bytes().startswith(b'{"v":2')
    store.append([draft("next")], expected_version=8)
    store.compact(loaded.snapshot.model_copy(update={"version": 9}))
    assert (golden / "snapshot.json").read_bytes().startswith(b'{"v":2,"crc":"')
    assert store.load().snapshot == loaded.snapshot.model_copy(update={"version": 9})


def test_the_golden_sealed_snapshot_loads(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "analysis"
    shutil.copytree(GOLDEN_SEALED, folder)
    store = SidecarStore(folder)
    loaded = store.load()
    assert store.head() == 8
    assert loaded.events == []
    state = loaded.snapshot
    assert state is not None
    assert (state.run_id, state.version, state.state) == ("run-golden-1", 8, "approved")
    assert state.facts["budget"].value == 1500
    assert state.batches["resumes"].done == ["a.pdf"]
    assert [e.seq for e in store.history()] == list(range(1, 9))


def _rename_run_id(record: dict[str, Any]) -> dict[str, Any]:
    """A pretend v1 -> v2 step: v2 calls the event payload's run_id 'run'."""
    if "seq" not in record:  # the journal header: nothing else changes
        return {**record, "v": 2}
    data = dict(record.get("data", {}))
    if "run_id" in data:
        data["run"] = data.pop("run_id")
    return {**record, "v": 2, "data": data}


def test_the_migration_hook_upgrades_v1_lines(golden: Path) -> None:
    segment = golden / "segments" / "000000000001-000000000005.jsonl"
    first = json.loads(segment.read_bytes().splitlines()[0])
    del first["crc"]
    upgraded = upgrade(first, {1: _rename_run_id}, path=segment, line=1, current=2)
    assert upgraded["v"] == 2
    assert upgraded["data"] == {"run": "run-golden-1", "workflow": "resume_extract"}


def test_the_store_applies_the_migration_table(
    golden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pretend this skillnb writes v2: the golden v1 lines are now "older" and get migrated.
    monkeypatch.setattr(journal_module, "RECORD_VERSION", 2)
    monkeypatch.setattr(journal_module, "EVENT_MIGRATIONS", {1: _rename_run_id})
    history = list(SidecarStore(golden).history())
    assert history[0].v == 2
    assert history[0].data == {"run": "run-golden-1", "workflow": "resume_extract"}
    assert [e.seq for e in history] == list(range(1, 9))


def test_a_missing_migration_step_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with pytest.raises(StoreCorrupted, match="no migration from record format v1") as raised:
        upgrade({"v": 1}, {}, path=path, line=4, current=2)
    assert (raised.value.path, raised.value.line) == (path, 4)


def test_a_migration_that_skips_a_version_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StoreCorrupted, match="produced v3"):
        upgrade({"v": 1}, {1: lambda r: {**r, "v": 3}}, path=tmp_path, current=3)


@pytest.mark.parametrize("version", [0, -1, "1", 1.0, None, True])
def test_a_malformed_version_is_reported(tmp_path: Path, version: object) -> None:
    with pytest.raises(StoreCorrupted, match="not a positive integer"):
        upgrade({"v": version}, {}, path=tmp_path)


def test_a_newer_version_asks_for_an_upgrade(tmp_path: Path) -> None:
    with pytest.raises(NewerFormatError, match="upgrade skillnb") as raised:
        upgrade({"v": 3}, {}, path=tmp_path / "snapshot.json", current=2)
    assert (raised.value.found, raised.value.supported, raised.value.line) == (3, 2, None)
