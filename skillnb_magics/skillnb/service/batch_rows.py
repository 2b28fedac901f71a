"""Batch loops over a store that keeps item claims in rows (service layer).

A store that offers ``item_rows(batch)`` (the PostgreSQL store: ``SELECT ... FOR UPDATE
SKIP LOCKED``, see :mod:`skillnb.store.postgres.items`) keeps who holds which item in a row per
item instead of ``claim.taken`` events. Consumers on other machines then pick items without
queueing behind each other on the run's lock; only completions go to the journal
(``batch.item_done``, which marks the row done in the same transaction). Each item costs one
statement to take (no wait for the disk: a lost claim only frees its item again) and one
durable append to finish. A consumer takes its next item before it records the current one
done, in a statement that also reads what others committed meanwhile, so that the
completion's append starts from a fresh head and is rarely refused.

:class:`RowCursor` has the same surface as the journal cursor of
:mod:`skillnb.service.batches`: ``current``, ``waiting``, ``advance``, ``release``, and
``heartbeat`` for the lease. Execution is at least once, completion exactly once.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.service.claims import Claims, Heartbeat
from skillnb.service.owner import owner_alive, process_owner

__all__ = ["FIRST_PAUSE", "ItemRowsLike", "RowCursor", "item_rows"]

FIRST_PAUSE = 0.005
"""Seconds of the first wait for items others hold (see :meth:`RowCursor.pause`)."""


class ItemRowsLike(Protocol):
    """What a store's item rows offer (see :class:`skillnb.store.postgres.items.ItemRows`)."""

    def offer(self, items: Iterable[str], done: Iterable[str]) -> None:
        """Make sure every item has its row; mark ``done`` ones done."""

    def take(
        self,
        owner: str,
        name: str,
        lease: float,
        skip: Iterable[str] = (),
        *,
        after: int | None = None,
    ) -> str | None:
        """Claim the first free item for ``owner``; ``None`` when none is free.

        ``after``: the caller's journal version; the store may read what was committed
        after it in the same statement, so that the caller's next commit finds it.
        """

    def held(self) -> list[tuple[str, str, str]]:
        """``(item, owner id, owner for people)`` of held items not done."""

    def free(self, owner: str) -> int:
        """Free every item ``owner`` (known dead) holds."""

    def release(self, item: str, owner: str) -> None:
        """Give ``item`` back."""

    def renew(self, items: list[str], owner: str, lease: float) -> None:
        """Extend ``owner``'s hold on ``items`` by one lease from now."""


def item_rows(store: object, batch: str) -> ItemRowsLike | None:
    """The item rows of ``batch`` when ``store`` keeps claims in rows, else ``None``."""
    make = getattr(store, "item_rows", None)
    return make(batch) if callable(make) else None


class RowCursor:
    """Which item of one batch this process takes next, claims kept in rows."""

    def __init__(
        self, claims: Claims, batch: str, order: list[str], rows: ItemRowsLike, done: list[str]
    ) -> None:
        self.claims = claims
        self.batch = batch
        self.rows = rows
        self.current: str | None = None
        self.waiting: dict[str, str] = {}
        """Items of this loop another live process holds, with its owner."""
        self._mine = set(order)
        self._foreign: set[str] = set()  # items of the batch that this loop was not given
        self._done: set[str] = set()
        self._seen = 0
        self._pause = FIRST_PAUSE
        rows.offer(order, done)

    def _catch_up(self, state: RunState) -> None:
        done = state.batches[self.batch].done if self.batch in state.batches else []
        self._done.update(done[self._seen :])
        self._seen = len(done)

    def advance(self, want_next: bool) -> str | None:
        """Take the next free item, then record the current one done (one durable append).

        The take comes first: it also reads what other consumers recorded while this one
        ran its item, so that the completion's append is rarely refused (the completion
        then commits on a head at most one round trip old).
        """
        current = self.current
        self.waiting = {}
        taken = self._take(current) if want_next else None
        if current is not None:
            journal = self.claims.journal

            def make(state: RunState) -> list[EventDraft]:  # no side effects: may run twice
                self._catch_up(state)
                if current in self._done:
                    return []
                return [journal.draft("batch.item_done", batch=self.batch, item=current)]

            try:
                journal.commit(make, speculative=True)
            except BaseException:
                if taken is not None:  # not ours to run now: let another consumer have it
                    self.rows.release(taken, process_owner().id)
                raise
        self.current = taken
        return self.current

    def _take(self, current: str | None) -> str | None:
        owner = process_owner()
        while True:
            skip = self._foreign if current is None else self._foreign | {current}
            after = self.claims.journal.state.version
            taken = self.rows.take(owner.id, owner.describe(), self.claims.lease, skip, after=after)
            if taken is None:
                held, freed = self._held_elsewhere(current)
                if freed:
                    continue  # their items are free now: take one
                self.waiting = held
                return None
            if taken in self._mine:
                self._pause = FIRST_PAUSE
                return taken
            self._foreign.add(taken)  # another loop's item: give it back, never run it
            self.rows.release(taken, owner.id)

    def _held_elsewhere(self, current: str | None) -> tuple[dict[str, str], bool]:
        """Items of this loop others hold, and whether owners seen dead here were freed.

        ``current``, the item this loop is about to record done, is still held by it: it is
        nothing to wait for.
        """
        host = socket.gethostname() + ":"
        held: dict[str, str] = {}
        freed = False
        for item, owner, name in self.rows.held():
            if item not in self._mine or item == current:
                continue
            if owner.startswith(host) and not owner_alive(owner):
                freed = self.rows.free(owner) > 0 or freed
                continue
            held[item] = name
        return held, freed

    def pause(self, seconds: float) -> None:
        """Wait before looking again at the items others hold: briefly at first, then longer.

        The first looks come soon (:data:`FIRST_PAUSE`, doubling up to ``seconds``): at the
        end of a batch the items left are usually a few moments from done, and the loop
        ends once they are. A look is two short statements on the server.
        """
        time.sleep(min(self._pause, seconds))
        self._pause = min(self._pause * 2, seconds)

    def release(self) -> None:
        """Give the current item back (the body raised or the loop was left)."""
        if self.current is not None and not self.claims.journal.closed:
            self.rows.release(self.current, process_owner().id)
            self.current = None

    def heartbeat(self) -> AbstractContextManager[Heartbeat]:
        """Renew the current item's lease every third of a lease while the block runs."""
        lease = self.claims.lease

        def renew(items: list[str]) -> None:
            self.rows.renew(items, process_owner().id, lease)

        return self.claims.heartbeat(lambda: [k for k in [self.current] if k], renew)
