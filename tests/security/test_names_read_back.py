"""Names are checked on read as on write: a journal, segment, snapshot or notebook written by
someone else (checksums recomputed) cannot hand the run a name it would refuse to write.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from securitykit import bundle_output, event_obj, fact_data, reseal, seal, write_notebook

from skillnb.cli.main import main
from skillnb.core.limits import InvalidName, name_problem
from skillnb.core.runstate.records import Event, EventDraft
from skillnb.errors import SkillnbError, StoreCorrupted
from skillnb.notebookfile.rebuild import rebuild_run
from skillnb.run import open_run
from skillnb.store import SidecarStore
from skillnb.store.folders.repair import repair
from skillnb.store.sidecar.journal import EventRejected

RUN = "a1b2c3d4e5f6"
HOSTILE_KEYS = {
    "five-million": "k" * 5_000_000,
    "nul": "a\x00b",
    "script": "<script>alert(1)</script>",
    "svg-slash": "<svg/onload=alert(1)>",
    "img-slash": '"><img/src=x/onerror=alert(1)>',
}


def write_journal(folder: Path, events: list[dict[str, object]], run: str = RUN) -> Path:
    """A live journal: a header naming ``run``, then ``events`` (each a line, sealed)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "journal.jsonl"
    header = seal({"v": 1, "base": 0, "run": run})
    path.write_bytes(header + b"".join(seal(e) for e in events))
    return path


def good_events(n: int) -> list[dict[str, object]]:
    created = event_obj(1, "run.created", {"run_id": RUN})
    return [
        created,
        *(event_obj(i, "fact.formalized", fact_data(f"k{i}", i, i)) for i in range(2, n + 1)),
    ]


@pytest.mark.parametrize("name", ["<svg/onload=alert(1)>", '"><img/src=x/onerror=alert(1)>'])
def test_event_handlers_after_a_slash_or_quote_do_not_pass_the_name_filter(
    tmp_path: Path, name: str
) -> None:
    assert name_problem(name) is not None
    run = open_run(state_dir=tmp_path / "s", memory=False)
    with pytest.raises(InvalidName, match="active markup"):
        run.formalize(name, 1)
    assert name_problem("a<b onion") is None  # plain text with "<" and "on" still passes


@pytest.mark.parametrize("run_id", ["../../../../victim/precious", "a/b", "\x00", "<script>"])
def test_a_journal_header_naming_a_bad_run_id_is_store_corrupted(
    tmp_path: Path, run_id: str
) -> None:
    path = write_journal(tmp_path / "s", good_events(2), run=run_id)
    with pytest.raises(StoreCorrupted) as info, SidecarStore(tmp_path / "s") as store:
        store.load()
    assert (info.value.path, info.value.line) == (path, 1)
    assert "run id" in info.value.detail


def test_a_run_created_event_naming_a_bad_run_id_is_store_corrupted(tmp_path: Path) -> None:
    created = event_obj(1, "run.created", {"run_id": "../x"})
    path = write_journal(tmp_path / "s", [created])
    with pytest.raises(StoreCorrupted) as info:
        open_run(state_dir=tmp_path / "s", memory=False)
    assert (info.value.path, info.value.line) == (path, 2)
    assert "run id" in str(info.value)


@pytest.mark.parametrize("events", [3, 40], ids=["line-by-line", "in-bulk"])
@pytest.mark.parametrize("key", HOSTILE_KEYS.values(), ids=HOSTILE_KEYS.keys())
def test_a_hostile_fact_key_in_the_journal_is_store_corrupted_naming_the_line(
    tmp_path: Path, key: str, events: int
) -> None:
    lines = good_events(events)
    bad = events - 1  # the one before last: readers never stop before it
    lines[bad - 1] = event_obj(bad, "fact.formalized", fact_data(key, 1, bad))
    path = write_journal(tmp_path / "s", lines)
    with pytest.raises(StoreCorrupted) as info:
        open_run(state_dir=tmp_path / "s", memory=False)
    assert (info.value.path, info.value.line) == (path, bad + 1)  # the header is line 1
    assert "fact key" in info.value.detail
    assert len(str(info.value)) < 600  # the five-million-character key is clipped


@pytest.mark.parametrize("events", [4, 40])  # read line by line, and all at once
def test_a_hostile_note_on_a_key_read_before_is_store_corrupted_naming_the_line(
    tmp_path: Path, events: int
) -> None:
    lines = good_events(events)
    bad = events - 1
    hostile = fact_data("k2", 2, bad)
    hostile["fact"]["note"] = "n" * 100_000  # k2 passed at line 3 without a note
    lines[bad - 1] = event_obj(bad, "fact.formalized", hostile)
    path = write_journal(tmp_path / "s", lines)
    with pytest.raises(StoreCorrupted) as info:
        open_run(state_dir=tmp_path / "s", memory=False)
    assert (info.value.path, info.value.line) == (path, bad + 1)
    assert "note" in info.value.detail


def test_a_hostile_name_in_an_appended_line_is_refused_by_a_reader_catching_up(
    tmp_path: Path,
) -> None:
    path = write_journal(tmp_path / "s", good_events(2))
    run = open_run(state_dir=tmp_path / "s", memory=False)
    with path.open("ab") as f:
        f.write(seal(event_obj(3, "batch.declared", {"batch": "b\x1b[2J", "items": ["x"]})))
    with pytest.raises(StoreCorrupted) as info:
        run.refresh()
    assert (info.value.path, info.value.line) == (path, 4)
    assert "batch name" in info.value.detail


def test_a_hostile_name_in_a_segment_is_store_corrupted_naming_the_segment(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "s"
    run = open_run(state_dir=folder, memory=False)
    run.formalize("fine", 1)
    run.formalize("also_fine", 2)
    run.compact()
    run.close()
    [segment] = (folder / "segments").iterdir()
    reseal(segment, "also_fine", "<script>x</script>")
    with pytest.raises(StoreCorrupted) as info, SidecarStore(folder) as store:
        list(store.history())
    assert info.value.path == segment
    assert info.value.line == 3


def test_the_writer_refuses_what_the_reader_would_refuse(tmp_path: Path) -> None:
    with SidecarStore(tmp_path / "s") as store:
        bad = EventDraft(type="run.created", at=datetime.now(UTC), data={"run_id": "a/b"})
        with pytest.raises(EventRejected, match="run id"):
            store.append([bad], expected_version=0)
        assert store.head() == 0


def test_repair_sets_a_line_with_a_hostile_name_aside_and_the_run_opens(tmp_path: Path) -> None:
    lines = good_events(4)
    lines[2] = event_obj(3, "fact.formalized", fact_data("<script>", 1, 3))
    write_journal(tmp_path / "s", lines)
    report = repair(tmp_path / "s")
    [fixed] = report.files
    assert fixed.damaged_lines == (4,)
    run = open_run(state_dir=tmp_path / "s", memory=False)
    assert set(run.facts) == {"k2", "k4"}
    assert fixed.moved_to.exists()  # the original is kept, never deleted


def _notebook_with(tmp_path: Path, events: list[Event], run_id: str) -> Path:
    return write_notebook(tmp_path / "nb.ipynb", [bundle_output(events, run_id)])


def _event(seq: int, type_: str, data: dict[str, object]) -> Event:
    return Event.model_validate(event_obj(seq, type_, data))


def test_rebuild_refuses_a_notebook_naming_a_run_id_that_names_files(tmp_path: Path) -> None:
    bad = "../../../../victim/precious"
    events = [
        _event(1, "run.created", {"run_id": bad}),
        _event(2, "fact.formalized", fact_data("k")),
    ]
    notebook = _notebook_with(tmp_path, events, bad)
    with pytest.raises(SkillnbError, match="not a run id"):
        rebuild_run(notebook, memory=False)
    assert not (tmp_path / ".skillnb" / "nb" / "journal.jsonl").exists()
    assert main(["rebuild", str(notebook)]) != 0
    assert not (tmp_path / ".skillnb" / "nb" / "journal.jsonl").exists()


def test_rebuild_skips_events_holding_names_the_run_would_refuse(tmp_path: Path) -> None:
    events = [
        _event(1, "run.created", {"run_id": RUN}),
        _event(2, "fact.formalized", fact_data("good", 1, 2)),
        _event(3, "fact.formalized", fact_data("k" * 5_000_000, 2, 3)),
        _event(4, "fact.formalized", fact_data("<svg/onload=alert(1)>", 3, 4)),
    ]
    run = rebuild_run(_notebook_with(tmp_path, events, RUN), memory=False)
    assert run.id == RUN
    assert set(run.facts) == {"good"}
    [rebuilt] = [e for e in run.history(50) if e.type == "run.rebuilt"]
    assert rebuilt.data["skipped"] == 2
    run.close()
    shutil.rmtree(tmp_path / ".skillnb")
