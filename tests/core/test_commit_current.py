"""A commit that skips the catch-up writes only when nothing changed, and folds what a reader folds.

A fact write on a sidecar asks the store to append on the state as last folded
(``SidecarStore.append_current``): one ``lstat`` under the lock tells whether another writer, a
compaction or another run came meanwhile, and then nothing is written and the usual path
catches up and decides again. The fact it folds is the one its draft holds: the same fact,
field for field, that a reader folding the record from the file builds.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from skillnb.core.runstate.records import EventDraft, Fact
from skillnb.errors import ConflictError, RunReplaced, UnsafePath
from skillnb.run import Run, open_run
from skillnb.service import journal as journal_module


def _same(live: Fact, read: Fact) -> None:
    """``live`` is ``read`` as validation and folding build it: values, types, sets, order."""
    assert live == read
    assert list(live.__dict__) == list(read.__dict__)
    for name, value in read.__dict__.items():
        assert type(live.__dict__[name]) is type(value), name
    assert type(live.at.tzinfo) is type(read.at.tzinfo)
    assert live.model_fields_set == read.model_fields_set


ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), ZoneInfo("America/Sao_Paulo")]
VALUES: list[Any] = [1, "text", {"a": [1, 2.5, None]}, [True, {"b": "c"}], 2**70, "x" * 100_000]


@pytest.mark.parametrize("zone", ZONES, ids=["utc", "plus-0530", "sao-paulo"])
def test_the_fact_folded_on_write_is_the_fact_read_back(
    tmp_path: Path, zone: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    moments = iter(datetime(2026, 12, 7, 3, 4, 5, m, tzinfo=zone) for m in range(1000))
    run = open_run(state_dir=tmp_path / "run", memory=False, clock=lambda: next(moments))
    held: list[bool] = []  # each commit: folded from the fact its draft holds, or not
    apply = journal_module.apply_written
    monkeypatch.setattr(
        journal_module, "apply_written", lambda *a: held.append(apply(*a)) or held[-1]
    )
    for i, value in enumerate(VALUES * 2):
        note, cell = (f"note {i}", f"cell-{i}") if i % 2 else (None, None)
        run.formalize(f"k{i % 4}", value, kind="decision", note=note, cell_id=cell)
    assert held == [False] + [True] * (len(VALUES) * 2 - 1)  # the first creates the run
    live = run.journal.state
    run.close()
    with open_run(state_dir=tmp_path / "run", memory=False) as again:
        read = again.journal.state
        assert set(live.facts) == set(read.facts)
        for key, fact in read.facts.items():
            _same(live.facts[key], fact)
        assert live.version == read.version
        assert live.last_operation == read.last_operation


def test_another_writer_meanwhile_is_caught_up_with(two: tuple[Run, Run]) -> None:
    first, second = two
    second.formalize("b", 1)
    fact = first.formalize("a", 1)  # on its state without b: refused, then the usual path
    assert fact.seq == 4
    assert first.fact("b").value == 1  # type: ignore[union-attr]
    assert [e.type for e in first.journal.store.history()].count("fact.formalized") == 3


def test_a_version_expected_on_old_news_is_refused(two: tuple[Run, Run]) -> None:
    first, second = two
    seen = first.version
    second.formalize("b", 1)
    with pytest.raises(ConflictError):
        first.formalize("a", 1, expected_version=seen)
    second.refresh()
    assert second.version == seen + 1  # nothing written


def test_unchanged_is_judged_on_the_latest_version(two: tuple[Run, Run]) -> None:
    """``if_changed`` on old news writes what the latest state needs, no more, no less."""
    first, second = two
    first.formalize("k", 1)
    second.refresh()
    second.formalize("k", 2)
    first.formalize("k", 2, if_changed=True)  # first saw 1: the latest is 2 already
    second.refresh()
    assert second.journal.state.facts["k"].version == 2
    second.formalize("k", 3)
    first.formalize("k", 2, if_changed=True)  # first saw 2: the latest is 3
    second.refresh()
    assert second.journal.state.facts["k"].version == 4
    assert first.fact("k").value == 2  # type: ignore[union-attr]


def test_a_compaction_by_another_handle_is_caught_up_with(two: tuple[Run, Run]) -> None:
    first, second = two
    second.formalize("b", 1)
    second.compact()  # a new journal file: the one first appended to is archived
    first.formalize("a", 1)
    assert first.version == 4
    with open_run(state_dir=first.journal.store.path, memory=False) as again:  # type: ignore[attr-defined]
        assert {k: f.value for k, f in again.journal.state.facts.items()} == {
            "seed": 0,
            "b": 1,
            "a": 1,
        }


def test_another_run_at_the_same_version_is_never_written(tmp_path: Path) -> None:
    """A folder that holds another run now, which this store even appended to: refused."""
    here, other = tmp_path / "run", tmp_path / "other"
    first = open_run(state_dir=here, memory=False)
    first.formalize("seed", 0)  # version 2: run.created and one fact
    with open_run(state_dir=other, memory=False) as stranger:
        stranger.journal.create()  # version 1: run.created alone
    shutil.rmtree(here)
    other.rename(here)
    store = first.journal.store
    note = EventDraft(type="run.noted", at=datetime.now(UTC), data={})
    store.append([note], expected_version=1)  # low level, on the other run: now at 2 too
    theirs = (here / "journal.jsonl").read_bytes()
    with pytest.raises(RunReplaced):
        first.formalize("mine", 1)
    assert (here / "journal.jsonl").read_bytes() == theirs
    first.close()


def test_a_journal_swapped_for_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    """The journal this store has open becomes a symlink: refused, the target untouched."""
    run = open_run(state_dir=tmp_path / "run", memory=False)
    run.formalize("seed", 0)
    journal = tmp_path / "run" / "journal.jsonl"
    decoy = tmp_path / "precious.jsonl"
    decoy.write_bytes(journal.read_bytes())
    journal.unlink()
    journal.symlink_to(decoy)
    before = decoy.read_bytes()
    with pytest.raises(UnsafePath):
        run.formalize("a", 1)
    assert decoy.read_bytes() == before
    run.close()
