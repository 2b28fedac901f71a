"""The Store contract, run against every backend (memory and sidecar)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from backends import Backend
from sidecar_helpers import NOW, draft, state_at

from skillnb.core.runstate.records import EventDraft
from skillnb.errors import ConflictError, StoreCorrupted
from skillnb.store import Store


def test_backends_implement_the_protocol(backend: Backend) -> None:
    assert isinstance(backend.open(), Store)


def test_an_empty_store(backend: Backend) -> None:
    store = backend.open()
    assert store.head() == 0
    assert not store.exists()
    loaded = store.load()
    assert loaded.snapshot is None
    assert loaded.events == []
    assert store.read_since(0) == []
    assert list(store.history()) == []


def test_append_numbers_events_from_one(backend: Backend) -> None:
    store = backend.open()
    first = store.append([draft("a", n=1)], expected_version=0)
    more = store.append([draft("b", n=2), draft("c", n=3)], expected_version=1)
    assert [e.seq for e in first + more] == [1, 2, 3]
    assert [(e.type, e.data) for e in more] == [("b", {"n": 2}), ("c", {"n": 3})]
    assert all(e.at == NOW and e.v == 1 for e in first + more)
    assert store.head() == 3
    assert store.exists()
    assert store.load().events == first + more
    assert list(store.history()) == first + more


def test_values_round_trip_exactly(backend: Backend) -> None:
    store = backend.open()
    data = {
        "text": 'Résumé ✓ 日本語 \n\t "quoted" \\ \u2028',
        "nested": {"list": [1, 2.5, None, True, False, {"deep": []}]},
        "big": 2**62,
        "small": -1e-300,
    }
    at = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-5)))
    [written] = store.append([EventDraft(type="x.y", at=at, data=data)], expected_version=0)
    [read] = backend.open().load().events
    assert read == written
    assert read.data == data
    assert read.at == at
    assert read.at.utcoffset() == timedelta(hours=-5)


def test_stale_expected_version_is_a_conflict_and_writes_nothing(backend: Backend) -> None:
    store = backend.open()
    store.append([draft()], expected_version=0)
    with pytest.raises(ConflictError) as raised:
        store.append([draft("late")], expected_version=0)
    assert (raised.value.expected, raised.value.actual) == (0, 1)
    with pytest.raises(ConflictError):
        store.append([draft("ahead")], expected_version=5)
    assert [e.type for e in store.history()] == ["note"]


def test_an_empty_append_checks_the_version_and_writes_nothing(backend: Backend) -> None:
    store = backend.open()
    store.append([draft()], expected_version=0)
    assert store.append([], expected_version=1) == []
    with pytest.raises(ConflictError):
        store.append([], expected_version=0)
    assert store.head() == 1


def test_non_json_data_is_refused_and_nothing_is_written(backend: Backend) -> None:
    store = backend.open()
    for bad in ({"x": float("nan")}, {"x": {1, 2}}, {"x": "\ud800"}):
        with pytest.raises(ValueError, match="JSON"):
            store.append(
                [draft("ok"), EventDraft(type="bad", at=NOW, data=bad)], expected_version=0
            )
    assert store.head() == 0
    assert store.append([draft()], expected_version=0)[0].seq == 1


def test_read_since_returns_what_came_after(backend: Backend) -> None:
    store = backend.open()
    events = store.append([draft(str(i)) for i in range(5)], expected_version=0)
    assert store.read_since(0) == events
    assert store.read_since(3) == events[3:]
    assert store.read_since(5) == []
    assert store.read_since(99) == []


def test_a_second_object_sees_the_first_ones_writes(backend: Backend) -> None:
    one, two = backend.open(), backend.open()
    assert two.head() == 0
    written = one.append([draft("a"), draft("b")], expected_version=0)
    assert two.head() == 2
    assert two.read_since(0) == written
    assert two.read_since(1) == written[1:]
    assert two.load().events == written
    later = two.append([draft("c")], expected_version=2)
    assert one.head() == 3
    assert one.read_since(2) == later
    assert list(one.history()) == written + later


def test_a_stale_object_gets_a_conflict_never_a_lost_update(backend: Backend) -> None:
    one, two = backend.open(), backend.open()
    seen = two.head()
    one.append([draft("first")], expected_version=0)
    with pytest.raises(ConflictError) as raised:
        two.append([draft("second")], expected_version=seen)
    assert raised.value.actual == 1
    assert [e.type for e in two.history()] == ["first"]


def test_compaction_keeps_the_snapshot_and_the_events_after_it(backend: Backend) -> None:
    store = backend.open()
    early = store.append([draft(str(i)) for i in range(3)], expected_version=0)
    store.compact(state_at(3, last_operation="three"))
    late = store.append([draft("d"), draft("e")], expected_version=3)
    loaded = backend.open().load()
    assert loaded.snapshot is not None
    assert loaded.snapshot.version == 3
    assert loaded.snapshot.last_operation == "three"
    assert loaded.events == late
    assert list(store.history()) == early + late
    assert store.head() == 5
    assert store.read_since(3) == late
    assert store.read_since(4) == late[1:]


def test_compaction_of_a_stale_state_is_a_conflict(backend: Backend) -> None:
    store = backend.open()
    store.append([draft(), draft()], expected_version=0)
    with pytest.raises(ConflictError) as raised:
        store.compact(state_at(1))
    assert (raised.value.expected, raised.value.actual) == (1, 2)
    assert store.load().snapshot is None


def test_compaction_twice_and_at_an_unchanged_head(backend: Backend) -> None:
    store = backend.open()
    store.append([draft("a")], expected_version=0)
    store.compact(state_at(1, last_operation="one"))
    store.compact(state_at(1, last_operation="one again"))
    store.append([draft("b")], expected_version=1)
    store.compact(state_at(2))
    store.append([draft("c")], expected_version=2)
    loaded = store.load()
    assert loaded.snapshot is not None
    assert loaded.snapshot.version == 2
    assert [e.type for e in loaded.events] == ["c"]
    assert [(e.seq, e.type) for e in store.history()] == [(1, "a"), (2, "b"), (3, "c")]


def test_compaction_at_version_zero(backend: Backend) -> None:
    store = backend.open()
    store.compact(state_at(0))
    assert store.exists()
    assert store.head() == 0
    assert store.load().snapshot == state_at(0)
    assert store.append([draft()], expected_version=0)[0].seq == 1


def test_other_objects_follow_a_compaction(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    writer.append([draft("a"), draft("b")], expected_version=0)
    assert reader.head() == 2
    writer.compact(state_at(2))
    writer.append([draft("c")], expected_version=2)
    assert reader.head() == 3
    archived = reader.read_since(0)
    # A backend may drop archived events from the live journal: then it says so with None.
    assert archived is None or [e.type for e in archived] == ["a", "b", "c"]
    assert [e.type for e in reader.read_since(2) or []] == ["c"]
    loaded = reader.load()
    assert loaded.snapshot is not None
    assert loaded.snapshot.version == 2
    assert [e.type for e in loaded.events] == ["c"]
    with pytest.raises(ConflictError):
        reader.append([draft()], expected_version=2)
    assert reader.append([draft("d")], expected_version=3)[0].seq == 4


def test_returned_events_are_not_the_stored_ones(backend: Backend) -> None:
    store = backend.open()
    [event] = store.append([draft(items=[1])], expected_version=0)
    event.data["items"].append(2)
    store.load().events[0].data["items"].append(3)
    other = backend.open()
    for reader in (store, other, other):
        (reader.read_since(0) or [])[0].data["items"].append(4)
    assert next(iter(store.history())).data == {"items": [1]}
    assert (other.read_since(0) or [])[0].data == {"items": [1]}


def test_the_lock_is_reentrant(backend: Backend) -> None:
    store = backend.open()
    with store.lock(), store.lock():
        store.append([draft()], expected_version=store.head())
        with store.lock():
            store.append([draft()], expected_version=store.head())
    assert store.head() == 2


def test_the_lock_excludes_other_objects(backend: Backend) -> None:
    holder, other = backend.open(), backend.open()
    order: list[str] = []
    held = holder.lock()
    held.__enter__()  # released below, after the other writer has started waiting

    def write() -> None:
        with other.lock():
            order.append("other locked")
            other.append([draft("other")], expected_version=other.head())

    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(0.2)
    order.append("holder writes")
    holder.append([draft("holder")], expected_version=holder.head())
    held.__exit__(None, None, None)
    thread.join(timeout=10)
    assert order == ["holder writes", "other locked"]
    assert [e.type for e in holder.history()] == ["holder", "other"]


def test_read_validate_append_under_the_lock(backend: Backend) -> None:
    one, two = backend.open(), backend.open()
    one.append([draft("set", value=1)], expected_version=0)
    version = two.head()
    for store in (one, two, one):
        with store.lock():
            new = store.read_since(version - 1) or []
            value = new[-1].data["value"]
            version = store.append([draft("set", value=value + 1)], expected_version=version)[
                -1
            ].seq
    assert [e.data["value"] for e in one.history()] == [1, 2, 3, 4]


def test_blobs_are_content_addressed(backend: Backend) -> None:
    store = backend.open()
    ref = store.put_blob(b"payload \x00\xff")
    assert ref.startswith("sha256:")
    assert len(ref) == 71
    assert store.put_blob(b"payload \x00\xff") == ref
    assert store.get_blob(ref) == b"payload \x00\xff"
    assert backend.open().get_blob(ref) == b"payload \x00\xff"
    assert store.put_blob(b"") != ref
    with pytest.raises(KeyError):
        store.get_blob("sha256:" + "0" * 64)


@pytest.mark.parametrize(
    "ref",
    [
        "sha256:../../../../etc/passwd" + "0" * 36,
        "sha256:" + "0" * 63 + "/",
        "sha256:" + "A" * 64,
        "sha256:" + "0" * 63,
        "sha256:" + "0" * 65,
        "/etc/passwd",
        "md5:" + "0" * 32,
        "sha256:" + "0" * 64 + "\n",
        "",
    ],
)
def test_malformed_blob_references_are_refused(backend: Backend, ref: str) -> None:
    with pytest.raises(StoreCorrupted, match="malformed blob reference"):
        backend.open().get_blob(ref)


def test_events_of_one_append_share_the_draft_times(backend: Backend) -> None:
    store = backend.open()
    times = [NOW, NOW + timedelta(seconds=1), datetime(2030, 1, 1, tzinfo=UTC)]
    events = store.append([EventDraft(type="t", at=t) for t in times], expected_version=0)
    assert [e.at for e in events] == times
    assert [e.at for e in backend.open().load().events] == times
