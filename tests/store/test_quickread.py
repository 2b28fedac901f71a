"""A listing reads a healthy sidecar's row events only, and leaves every other to the full load.

Each run is read both ways (:func:`quick_read` through :func:`read_state`, and the store's
full load with the quick read turned off): the rows are the same, for runs with a snapshot,
a pending request, a blocked gate and a batch. A sidecar that is not plainly healthy (a damaged
line, an append whose last line never came, a torn tail, a journal without a header) is not
read quickly, so the full load names what is wrong, as before.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from skillnb import Workflow, open_run
from skillnb.core.runstate.records import EventDraft
from skillnb.core.views.listing import Listed, run_row
from skillnb.errors import GateBlocked, StoreCorrupted
from skillnb.store.folders import discover
from skillnb.store.folders.discover import read_state
from skillnb.store.sidecar import quickread
from skillnb.store.sidecar.quickread import quick_read
from skillnb.store.sidecar.store import SidecarStore, TornWriteWarning

WORKFLOW = {
    "name": "report",
    "states": ["draft", "review", "done"],
    "initial": "draft",
    "transitions": [
        {"from": "draft", "to": "review", "trigger": "submit", "gates": ["rows_ok"]},
        {"from": "review", "to": "done", "trigger": "publish", "gates": ["editor_ok"]},
    ],
    "gates": {
        "rows_ok": {"check": "rows > 2"},
        "editor_ok": {"approval": "Publish it?"},
    },
}
FOLDED = discover._FOLDED


def _run(folder: Path, *, compact: bool = False, extra: int = 0) -> Path:
    wf = Workflow.from_dict(WORKFLOW)
    with open_run(state_dir=folder, workflow=wf) as run:
        run.formalize("rows", 1)
        with pytest.raises(GateBlocked):
            run.fire("submit")  # a blocked gate's report
        run.formalize("rows", 3)
        run.fire("submit")
        if compact:
            run.compact()
        with pytest.raises(GateBlocked):
            run.fire("publish")  # a pending request
        for n in range(extra):
            run.formalize(f"k{n}", n)
    with SidecarStore(folder) as store:
        at = datetime.now(UTC)
        store.append(
            [
                EventDraft(type="batch.declared", at=at, data={"batch": "b", "items": ["x", "y"]}),
                EventDraft(type="batch.item_done", at=at, data={"batch": "b", "item": "x"}),
                EventDraft(
                    type="fact.formalized",
                    at=at,
                    data={
                        "fact": {
                            "key": "last",
                            "value": 1,
                            "encoding": "json",
                            "restorable": True,
                            "kind": "data",
                            "version": 1,
                            "at": at.isoformat(),
                        }
                    },
                ),
            ],
            expected_version=store.head(),
        )
    return folder


def _row_both_ways(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    listed = Listed("r", "folder", ())
    quick = read_state(folder)
    with monkeypatch.context() as m:
        m.setattr(quickread, "quick_read", lambda *_a: None)
        full = read_state(folder)
    return (
        run_row(listed, quick, quick.version, quick.updated_at).model_dump(),
        run_row(listed, full, full.version, full.updated_at).model_dump(),
    )


@pytest.mark.parametrize("compact", [False, True])
def test_the_quick_read_gives_the_rows_of_the_full_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact: bool
) -> None:
    folder = _run(tmp_path / "run", compact=compact, extra=5)
    assert (folder / "snapshot.json").exists() == compact
    quick, full = _row_both_ways(folder, monkeypatch)
    assert quick == full
    assert quick["waiting"] == ["editor_ok"]  # type: ignore[index]
    assert quick["batches"] == [{"name": "b", "done": 1, "total": 2}]  # type: ignore[index]
    assert quick["updated_at"] is not None  # type: ignore[index]


def test_a_healthy_sidecar_is_read_without_the_full_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _run(tmp_path / "run", extra=20)
    found = quick_read(folder, FOLDED)
    assert found is not None
    assert {e.type for e in found.events} <= set(FOLDED)  # no fact was built
    assert found.head == SidecarStore(folder).head()

    def refused(*_a: object) -> None:
        raise AssertionError("the full load ran")

    monkeypatch.setattr(SidecarStore, "load", refused)
    assert read_state(folder).state == "review"


def _lines(folder: Path) -> list[bytes]:
    return (folder / "journal.jsonl").read_bytes().splitlines(keepends=True)


def _write(folder: Path, lines: list[bytes]) -> None:
    (folder / "journal.jsonl").write_bytes(b"".join(lines))


def test_a_damaged_line_is_left_to_the_full_load_which_names_it(tmp_path: Path) -> None:
    folder = _run(tmp_path / "run")
    lines = _lines(folder)
    lines[3] = lines[3].replace(b'"v":1', b'"v":1 ', 1)  # same layout, checksum now wrong
    _write(folder, lines)
    assert quick_read(folder, FOLDED) is None
    with pytest.raises(StoreCorrupted, match=r"journal.jsonl:4"):
        read_state(folder)
    lines[3] = lines[3][:-11] + b'zzzzzzzz"}\n'  # a checksum that is not one
    _write(folder, lines)
    assert quick_read(folder, FOLDED) is None
    with pytest.raises(StoreCorrupted, match=r"journal.jsonl:4"):
        read_state(folder)
    header = _lines(folder)
    header[0] = header[0].replace(b'"base":0', b'"base":-1', 1)
    _write(folder, header)
    assert quick_read(folder, FOLDED) is None


def test_unfinished_and_torn_tails_and_old_journals_are_left_to_the_full_load(
    tmp_path: Path,
) -> None:
    folder = _run(tmp_path / "run")
    whole = _lines(folder)
    head = SidecarStore(folder).head()
    _write(folder, whole[:-1])  # the append's last line never came: its first ones don't count
    assert quick_read(folder, FOLDED) is None
    with pytest.warns(TornWriteWarning, match="unfinished write"):
        assert read_state(folder).version == head - 3
    _write(folder, [*whole, b'{"v":1,"seq":'])  # a torn fragment
    assert quick_read(folder, FOLDED) is None
    with pytest.warns(TornWriteWarning, match="unfinished write"):
        assert read_state(folder).version == head
    _write(folder, whole[1:])  # no header
    assert quick_read(folder, FOLDED) is None
    _write(folder, whole)
    assert quick_read(folder, FOLDED) is not None


def test_a_journal_that_is_a_link_or_open_to_others_is_left_to_the_full_load(
    tmp_path: Path,
) -> None:
    folder = _run(tmp_path / "run")
    (folder / "journal.jsonl").chmod(0o602)  # anyone may write it
    assert quick_read(folder, FOLDED) is None
    (folder / "journal.jsonl").chmod(0o600)
    other = _run(tmp_path / "other")
    (folder / "journal.jsonl").unlink()
    (folder / "journal.jsonl").symlink_to(other / "journal.jsonl")
    assert quick_read(folder, FOLDED) is None
