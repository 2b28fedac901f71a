"""What a commit asks of a sidecar's size, in one look, is what the two questions answer."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from skillnb.core.runstate.records import EventDraft
from skillnb.run import open_run
from skillnb.store import SidecarStore

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_usage_bytes_is_live_bytes_and_snapshot_bytes(tmp_path: Path) -> None:
    store = SidecarStore(tmp_path / "sc")
    assert store.usage_bytes() == (0, 0)
    with open_run(store=store, memory=False) as run:
        for i in range(5):
            run.formalize(f"k{i}", {"i": i})
        before = store.usage_bytes()
        assert before == (store.live_bytes(), store.snapshot_bytes())
        assert before[0] == (tmp_path / "sc" / "journal.jsonl").stat().st_size
        assert before[1] == 0
        run.compact()
        after = store.usage_bytes()
        assert after == (store.live_bytes(), store.snapshot_bytes())
        assert after[1] == (tmp_path / "sc" / "snapshot.json").stat().st_size > 0
        assert after[0] < before[0]


def test_usage_bytes_sees_another_writers_lines(tmp_path: Path) -> None:
    ours, theirs = SidecarStore(tmp_path / "sc"), SidecarStore(tmp_path / "sc")
    theirs.append([EventDraft(type="x.y", at=AT, data={"n": 1})], expected_version=0)
    live, _ = ours.usage_bytes()
    theirs.append([EventDraft(type="x.y", at=AT, data={"n": 2})], expected_version=1)
    assert ours.usage_bytes()[0] > live
    assert ours.usage_bytes() == (theirs.live_bytes(), theirs.snapshot_bytes())
    ours.close()
    theirs.close()
