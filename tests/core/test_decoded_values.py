"""The decoded values a run keeps: the newest version of each key, not one per version."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from skillnb.run import open_run


class Mapping(dict[str, int]):
    """A plain JSON object to the codec, and one a weak reference can follow."""


def test_a_key_written_many_times_keeps_only_its_newest_value_alive(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "run", memory=False)
    first = Mapping(n=0)
    gone = weakref.ref(first)
    assert run.formalize("progress", first).value is first
    del first
    for n in range(1, 6):
        run.formalize("progress", Mapping(n=n))
    gc.collect()
    assert gone() is None  # superseded: no longer held by the run
    assert run.fact("progress").value == {"n": 5}
    run.close()


def test_the_newest_value_is_the_writers_object_and_old_versions_read_alike(
    tmp_path: Path,
) -> None:
    run = open_run(state_dir=tmp_path / "run", memory=False)
    for n in range(3):
        newest = Mapping(n=n)
        run.formalize("k", newest)
    assert run.fact("k").value is newest  # as written, not decoded again
    history = run.fact_history("k")
    assert [f.value for f in history] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert [f.value for f in run.fact_history("k")] == [f.value for f in history]
    assert run.fact("k").value is newest  # reading the history did not replace it
    run.close()


def test_another_process_newer_version_replaces_what_this_one_kept(tmp_path: Path) -> None:
    mine = open_run(state_dir=tmp_path / "run", memory=False)
    mine.formalize("k", Mapping(n=1))
    theirs = open_run(state_dir=tmp_path / "run", memory=False)
    theirs.formalize("k", Mapping(n=2))
    assert mine.fact("k").value == {"n": 2}
    assert mine.fact("k").version == 2
    mine.close()
    theirs.close()
