"""Where a commit catches up: under the lock when alone, before it when others write too."""

from __future__ import annotations

from contextlib import AbstractContextManager

from skillnb.run import Run


def _versions_at_lock(run: Run) -> list[int]:
    """Record the run's own version each time its store's lock is taken (or re-entered)."""
    seen: list[int] = []
    store = run.journal.store
    take = store.lock

    def lock() -> AbstractContextManager[None]:
        seen.append(run.journal.state.version)
        return take()

    store.lock = lock  # type: ignore[method-assign]
    return seen


def test_alone_a_commit_reads_the_journal_once_under_the_lock(two: tuple[Run, Run]) -> None:
    """Nobody else wrote: no look at the journal before the lock."""
    first, _ = two
    first.formalize("a", 1)
    seen = _versions_at_lock(first)
    tail = first.journal.store._tail  # type: ignore[attr-defined]
    looks: list[str] = []
    for name in ("refresh", "unchanged"):  # a catch-up, or the one lstat that finds no news
        method = getattr(tail, name)
        setattr(tail, name, lambda m=method, n=name: (looks.append(n), m())[1])
    first.formalize("a", 2)
    assert set(seen) == {3}  # run.created, seed, a=1 (the append re-enters the lock)
    assert looks == ["unchanged"]  # the one look, under the lock


def test_with_others_writing_a_commit_catches_up_before_the_lock(two: tuple[Run, Run]) -> None:
    """Once a commit found others' events under the lock, the next reads them before it."""
    first, second = two
    second.formalize("b", 1)
    first.formalize("a", 1)  # finds "b" under the lock: others write here
    assert first.version == 4  # run.created, seed, b, a
    for n in range(3):
        second.formalize("b", n + 2)
    seen = _versions_at_lock(first)
    first.formalize("a", 2)
    assert seen[0] == 7  # caught up with the other's three commits before taking the lock
    assert first.fact("b").value == 4
    first.formalize("a", 3)  # nobody wrote meanwhile: back to reading under the lock only
    assert seen[-1] == 8
    assert first.fact("a").value == 3
