"""Durable batches: each item processed exactly once across sessions (service layer).

``run.items("resumes", files)`` declares the items (by key), then yields those not yet done.
An item is marked done, durably, when the loop asks for the next item or ends normally; an
item whose body raised, was left with ``break``, or was in flight when the process died is
yielded again by the next call.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from skillnb.core.records import EventDraft, RunState
from skillnb.errors import SkillnbError
from skillnb.service.journal import RunJournal

__all__ = ["ProgressFactory", "ProgressSink", "item_key", "iterate"]

T = TypeVar("T")

_MEMORY_EVERY_S = 2.0


class ProgressSink(Protocol):
    """What an edge's progress bar offers (tqdm's bars fit)."""

    def update(self, n: int = 1) -> Any:
        """Advance by ``n`` items."""

    def close(self) -> None:
        """The loop is over."""


def item_key(item: object) -> str:
    """The key that identifies ``item`` in a batch across sessions.

    Strings, numbers and paths are their own text; JSON-compatible containers their canonical
    JSON. Anything else needs an explicit ``key=`` function.
    """
    if isinstance(item, str):
        return item
    if isinstance(item, os.PathLike):
        return str(os.fspath(item))
    if isinstance(item, bool | int | float):
        return repr(item)
    try:
        return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise SkillnbError(
            f"cannot derive a batch key from {type(item).__name__}; pass key=lambda item: ..."
        ) from exc


ProgressFactory = Callable[[str, int, int], ProgressSink]
"""Makes a progress bar for ``(batch, total, already_done)``."""


def iterate(
    journal: RunJournal,
    batch: str,
    items: Iterable[T],
    *,
    key: Callable[[T], str] | None = None,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
) -> Iterator[T]:
    """Declare ``items`` in ``batch`` and yield the ones not yet done (see module docs)."""
    pairs: list[tuple[str, T]] = []
    seen: set[str] = set()
    for item in items:
        k = key(item) if key is not None else item_key(item)
        if k not in seen:
            seen.add(k)
            pairs.append((k, item))

    def declare(state: RunState) -> list[EventDraft]:
        known = set(state.batches[batch].items) if batch in state.batches else set()
        new = [k for k, _ in pairs if k not in known]
        return [journal.draft("batch.declared", batch=batch, items=new)] if new else []

    if limit is not None and limit < 0:
        raise SkillnbError(f"limit must be zero or more, not {limit}")
    journal.commit(declare)
    return _loop(journal, batch, pairs, limit, progress)


def _loop(
    journal: RunJournal,
    batch: str,
    pairs: list[tuple[str, T]],
    limit: int | None,
    progress: ProgressFactory | None,
) -> Iterator[T]:
    state = journal.state
    done = set(state.batches[batch].done) if batch in state.batches else set()
    todo = [(k, item) for k, item in pairs if k not in done][:limit]
    bar = progress(batch, len(pairs), sum(k in done for k, _ in pairs)) if progress else None
    finished: list[str] = []
    last_memory = time.monotonic()
    try:
        for k, item in todo:
            yield item
            _mark_done(journal, batch, k)
            finished.append(k)
            if bar is not None:
                bar.update(1)
            if time.monotonic() - last_memory > _MEMORY_EVERY_S:
                _remember(journal, batch, finished)
                last_memory = time.monotonic()
    finally:
        if bar is not None:
            bar.close()
        if finished:
            _remember(journal, batch, finished)


def _mark_done(journal: RunJournal, batch: str, k: str) -> None:
    def make(state: RunState) -> list[EventDraft]:
        if batch in state.batches and k in state.batches[batch].done:
            return []
        return [journal.draft("batch.item_done", batch=batch, item=k)]

    journal.commit(make)


def _remember(journal: RunJournal, batch: str, finished: list[str]) -> None:
    state = journal.state
    b = state.batches[batch]
    summary = f"{batch}: {len(b.done)}/{b.total} done ({len(finished)} this session)"
    journal.remember("batch_progress", summary, files=list(finished[-50:]))
