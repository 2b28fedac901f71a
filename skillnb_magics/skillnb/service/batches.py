"""Durable batches: at-least-once execution, exactly-once completion (service layer).

``run.items("resumes", files)`` declares the items (by key), then yields those not yet done.
Before an item is yielded it is *claimed* for this process (see
:mod:`skillnb.service.claims`); it is marked done, durably, when the loop asks for the next
item or ends normally, in the same append that claims the next one (one fsync per item).

Several processes may consume one batch at once: each skips the items another live process
holds and offers them later if that process releases them or dies, so when nothing crashes
each item runs once. An item whose body raised or was left with ``break`` is released; one
in flight when its process died is offered again (to this or another process) once its
owner is seen dead or its lease expired: at-least-once execution, exactly-once completion.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from skillnb.core.runstate.claims import item_claim_key
from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.errors import SkillnbError
from skillnb.service.batch_rows import RowCursor, item_rows
from skillnb.service.claims import Claims, Heartbeat
from skillnb.service.journal import RunJournal

__all__ = ["ProgressFactory", "ProgressSink", "item_key", "iterate"]

T = TypeVar("T")

_MEMORY_EVERY_S = 2.0
_POLL_S = 0.05
logger = logging.getLogger(__name__)


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
    claims: Claims,
    batch: str,
    items: Iterable[T],
    *,
    key: Callable[[T], str] | None = None,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
) -> Iterator[T]:
    """Declare ``items`` in ``batch`` and yield the ones not yet done (see module docs)."""
    journal = claims.journal
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
    return _loop(claims, batch, pairs, limit, progress)


class _Cursor:
    """Which item of one batch this process takes next, and the claims in its way."""

    def __init__(self, claims: Claims, batch: str, order: list[str]) -> None:
        self.claims = claims
        self.batch = batch
        self.order = order
        self.current: str | None = None
        self.waiting: dict[str, str] = {}
        """Items another live process holds, with its owner (the last time we looked)."""
        self._done: set[str] = set()
        self._alive: dict[str, float] = {}
        self._seen = 0
        self._start = 0

    def _catch_up(self, state: RunState) -> None:
        done = state.batches[self.batch].done if self.batch in state.batches else []
        self._done.update(done[self._seen :])
        self._seen = len(done)
        while self._start < len(self.order) and self.order[self._start] in self._done:
            self._start += 1

    def advance(self, want_next: bool) -> str | None:
        """Mark the current item done and claim the next free one, in one append."""
        journal = self.claims.journal
        chosen: list[str] = []

        def make(state: RunState) -> list[EventDraft]:
            self._catch_up(state)
            drafts = []
            current = self.current
            if current is not None and current not in self._done:
                drafts.append(journal.draft("batch.item_done", batch=self.batch, item=current))
            if want_next:
                k = self._pick(state, current)
                if k is not None:
                    chosen.append(k)
                    drafts.append(self.claims.taken(item_claim_key(self.batch, k)))
            return drafts

        journal.commit(make)
        self.current = chosen[0] if chosen else None
        return self.current

    def _pick(self, state: RunState, current: str | None) -> str | None:
        held = self.claims.held_elsewhere(state, self.claims.journal.clock(), self._alive)
        self.waiting = {}
        for k in self.order[self._start :]:
            if k in self._done or k == current:
                continue
            claim_key = item_claim_key(self.batch, k)
            if claim_key in held:
                self.waiting[k] = state.claims[claim_key].owner.describe()
                continue
            return k
        return None

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` before looking again at the items others hold."""
        time.sleep(seconds)

    def heartbeat(self) -> AbstractContextManager[Heartbeat]:
        """Renew the current item's claim every third of a lease while the block runs."""
        return self.claims.heartbeat(
            lambda: [item_claim_key(self.batch, k) for k in [self.current] if k]
        )

    def release(self) -> None:
        """Give the current item back (the body raised or the loop was left).

        A run closed meanwhile releases nothing: its claim ends with this process.
        """
        if self.current is not None and not self.claims.journal.closed:
            self.claims.release(item_claim_key(self.batch, self.current))
            self.current = None


def _ended_as_planned(bar: object) -> None:
    """Tell a bar that offers ``planned_stop()`` that its loop ended normally, not in error.

    (A loop that stops at its ``limit`` ends before the total; a notebook bar would draw that
    red, as if it had failed.)
    """
    planned_stop = getattr(bar, "planned_stop", None)
    if callable(planned_stop):
        planned_stop()


def _loop(
    claims: Claims,
    batch: str,
    pairs: list[tuple[str, T]],
    limit: int | None,
    progress: ProgressFactory | None,
) -> Iterator[T]:
    journal = claims.journal
    state = journal.state
    done = set(state.batches[batch].done) if batch in state.batches else set()
    items = {k: item for k, item in pairs if k not in done}
    rows = item_rows(journal.store, batch)
    cursor: _Cursor | RowCursor = (
        _Cursor(claims, batch, list(items))
        if rows is None
        else RowCursor(claims, batch, list(items), rows, sorted(done))
    )
    bar = progress(batch, len(pairs), len(pairs) - len(items)) if progress else None
    finished: list[str] = []
    last_memory = time.monotonic()
    told = False
    try:
        with cursor.heartbeat():
            while True:
                previous = cursor.current
                want = limit is None or len(finished) + (previous is not None) < limit
                k = cursor.advance(want_next=want)
                if previous is not None:
                    finished.append(previous)
                    if bar is not None:
                        bar.update(1)
                if cursor.waiting and not told:
                    told = _tell_skipped(batch, cursor.waiting)
                if k is None and want and cursor.waiting:
                    cursor.pause(_POLL_S)
                    continue
                if k is None:
                    break
                yield items[k]
                if time.monotonic() - last_memory > _MEMORY_EVERY_S:
                    _remember(journal, batch, finished)
                    last_memory = time.monotonic()
        _ended_as_planned(bar)
    finally:
        cursor.release()
        if bar is not None:
            bar.close()
        if finished:
            _remember(journal, batch, finished)


def _tell_skipped(batch: str, waiting: dict[str, str]) -> bool:
    owners = ", ".join(sorted(set(waiting.values())))
    logger.warning(
        "batch %r: %d item(s) skipped for now, another process is working on them (%s); "
        "this loop offers them again if that process releases them or dies",
        batch,
        len(waiting),
        owners,
    )
    return True


def _remember(journal: RunJournal, batch: str, finished: list[str]) -> None:
    state = journal.state
    b = state.batches[batch]
    summary = f"{batch}: {len(b.done)}/{b.total} done ({len(finished)} this session)"
    journal.skill.remember("batch_progress", summary, files=list(finished[-50:]))
