"""What a journal keeps in memory of its latest events: the ones after a version, or none."""

from __future__ import annotations

from pathlib import Path

from skillnb.run import open_run
from skillnb.service.journal import RECENT


def test_the_events_after_a_version_come_from_memory_in_order(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "run", memory=False)
    for n in range(RECENT + 20):
        run.formalize(f"k{n % 7}", n)
    journal = run.journal
    head = journal.state.version
    kept = journal.recent_in_memory()
    assert [e.seq for e in kept] == list(range(head - RECENT + 1, head + 1))
    assert journal.folded_after(head) == []
    for back in (1, 2, 3, RECENT - 1, RECENT):
        after = journal.folded_after(head - back)
        assert after is not None
        assert [e.seq for e in after] == list(range(head - back + 1, head + 1))
        assert after == kept[-back:]
    assert journal.folded_after(head - RECENT - 1) is None  # older than what memory keeps
    assert journal.folded_after(head + 1) is None  # a version this state does not follow
    run.close()


def test_a_reopened_run_keeps_what_it_read(tmp_path: Path) -> None:
    first = open_run(state_dir=tmp_path / "run", memory=False)
    for n in range(5):
        first.formalize("x", n)
    first.close()
    run = open_run(state_dir=tmp_path / "run", memory=False)
    head = run.journal.state.version
    after = run.journal.folded_after(head - 2)
    assert after is not None
    assert [e.seq for e in after] == [head - 1, head]
    run.close()
