"""Events handed out from the tail's cache are copies: a reader that changes one changes no
other reader's, nor the cache."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from skillnb.core.runstate.records import EventDraft
from skillnb.store.sidecar.store import SidecarStore

AT = datetime(2026, 12, 1, tzinfo=UTC)


def test_a_changed_catch_up_leaves_the_next_one_as_written(tmp_path: Path) -> None:
    """Nested dicts and lists are copied: changing a copy's leaves the cache as written."""
    writer = SidecarStore(tmp_path / "run")
    data = {"fact": {"key": "k", "value": {"items": [1, {"deep": ["x"]}]}}, "odd": [1, [2]]}
    [written] = writer.append([EventDraft(type="note", at=AT, data=data)], expected_version=0)
    first = writer.catch_up(0, None)
    assert first == [written]
    assert first is not None
    first[0].data["fact"]["value"]["items"][1]["deep"].append("changed")
    first[0].data["odd"][1].append(3)
    first[0].data["new"] = Decimal(1)
    second = writer.catch_up(0, None)
    assert second == [written]
    assert second is not None
    assert second[0].data["fact"]["value"]["items"][1]["deep"] == ["x"]
    assert second[0].data["odd"] == [1, [2]]
    assert "new" not in second[0].data
    writer.close()
