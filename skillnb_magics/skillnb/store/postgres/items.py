"""Batch items as rows, taken with ``FOR UPDATE SKIP LOCKED`` (store layer).

A team run's batch items live in ``skillnb_items`` (see :mod:`skillnb.store.postgres.schema`) as
well as in the journal: the journal says which are declared and done (``batch.declared``,
``batch.item_done``), the rows say who holds which, until when. Consumers on any machine
take the next free item in one statement that skips the rows another consumer is taking at
that moment, so none waits for another and no two take the same item; a holder that dies
stops renewing, and its item is free again once the lease has run out (at once when its
process is seen dead on this very host).

:class:`ItemRows` is what the batch loop (``skillnb.service.batch_rows``) receives from
:meth:`PostgresStore.item_rows <skillnb.store.postgres.store.PostgresStore.item_rows>`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from skillnb.store.postgres.append import MISSED_MAX
from skillnb.store.postgres.session import Conn

__all__ = ["CaughtUp", "Held", "ItemRows"]

T = TypeVar("T")
Held = tuple[str, str, str]
"""An item another owner holds: ``(item, owner id, owner for people)``."""
CaughtUp = Callable[[int, int, list[str] | None], None]
"""Told ``(after, head, lines)`` by a take that also read the run's head: the journal lines
after version ``after`` up to the head when they are at most :data:`MISSED_MAX`."""
_SHOWN = 500  # held items listed when nothing is free
_TAKE = "SELECT taken FROM skillnb_take_item(%s, %s, %s, %s, %s, %s)"
_TAKE_CATCHING_UP = (
    "SELECT t.taken, r.head, r.missed FROM skillnb_take_item(%s, %s, %s, %s, %s, %s) AS t, "
    "skillnb_refused(%s, %s, %s) AS r"
)


class ItemRows:
    """The item rows of one batch of one run.

    Args:
        call: runs an operation on the store's connection (with its retries and errors).
        run: the run's name.
        batch: the batch's name.
        caught_up: told what a take that catches up read (see :meth:`take`).

    """

    def __init__(
        self,
        call: Callable[[Callable[[Conn], Any]], Any],
        run: str,
        batch: str,
        caught_up: CaughtUp | None = None,
    ) -> None:
        self._call = call
        self.run = run
        self.batch = batch
        self._caught_up = caught_up

    def offer(self, items: Iterable[str], done: Iterable[str]) -> None:
        """Make sure every item has its row, in this order; mark ``done`` ones done.

        Idempotent (each consumer offers the batch it declared); an existing row keeps its
        place and holder. ``done`` comes from the journal, so rows made before a run moved
        here (a pushed run) agree with it.
        """
        params = (
            self.run,
            self.batch,
            json.dumps(list(items), ensure_ascii=False),
            json.dumps(sorted(set(done)), ensure_ascii=False),
        )
        # DO NOTHING, not DO UPDATE: an upsert locks every row it meets, and while one
        # consumer offers the batch the others' SKIP LOCKED takes would find every row
        # locked, read "nothing free" and stop. Only rows to mark done are locked (by the
        # UPDATE), usually none.
        self._call(
            lambda c: c.execute(
                "WITH d AS (SELECT value AS item FROM json_array_elements_text(%s::json)), "
                "marked AS (UPDATE skillnb_items AS t SET done = true, owner = NULL, "
                "owner_name = NULL, until = NULL WHERE t.run = %s AND t.batch = %s "
                "AND NOT t.done AND t.item IN (SELECT item FROM d) RETURNING t.item) "
                "INSERT INTO skillnb_items (run, batch, item, pos, done) "
                "SELECT %s, %s, i.value, i.ordinality, i.value IN (SELECT item FROM d) "
                "FROM json_array_elements_text(%s::json) WITH ORDINALITY AS i "
                "ON CONFLICT (run, batch, item) DO NOTHING",
                (params[3], params[0], params[1], params[0], params[1], params[2]),
            )
        )

    def take(
        self,
        owner: str,
        name: str,
        lease: float,
        skip: Iterable[str] = (),
        *,
        after: int | None = None,
    ) -> str | None:
        """Claim the first free item for ``owner`` for ``lease`` seconds; ``None``: none free.

        Free: not done, not in ``skip``, and held by nobody, by ``owner`` itself or by a
        lease that has run out. Rows another consumer is taking at this instant are skipped,
        not waited for.

        ``after``: the version the caller's journal is at. The same statement then reads the
        run's head and the lines after ``after`` (when they are few), and tells them to
        ``caught_up``: a consumer about to record a completion learns what the others
        recorded meanwhile without asking again, so its append is rarely refused.
        """
        skipped = json.dumps(list(skip), ensure_ascii=False)
        params = (self.run, self.batch, owner, name, lease, skipped)
        if after is None or self._caught_up is None:
            row = self._call(lambda c: c.execute(_TAKE, params).fetchone())
        else:
            row = self._call(
                lambda c: c.execute(
                    _TAKE_CATCHING_UP, (*params, self.run, after, MISSED_MAX)
                ).fetchone()
            )
            if row is not None:
                missed = [str(line) for line in row[2]] if row[2] is not None else None
                self._caught_up(after, int(row[1]), missed)
        return str(row[0]) if row and row[0] is not None else None

    def held(self) -> list[Held]:
        """Items not done that an owner holds (the first few hundred, in batch order)."""
        rows = self._call(
            lambda c: c.execute(
                "SELECT item, owner, coalesce(owner_name, owner) FROM skillnb_items "
                "WHERE run = %s AND batch = %s AND NOT done AND owner IS NOT NULL "
                "ORDER BY pos LIMIT %s",
                (self.run, self.batch, _SHOWN),
            ).fetchall()
        )
        return [(str(i), str(o), str(n)) for i, o, n in rows]

    def free(self, owner: str) -> int:
        """Free every item ``owner`` holds (it is known dead); return how many."""
        return int(
            self._call(
                lambda c: (
                    c.execute(
                        "UPDATE skillnb_items SET owner = NULL, owner_name = NULL, until = NULL "
                        "WHERE run = %s AND batch = %s AND owner = %s AND NOT done",
                        (self.run, self.batch, owner),
                    ).rowcount
                )
            )
        )

    def release(self, item: str, owner: str) -> None:
        """Give ``item`` back (held by ``owner``): another consumer may take it at once."""
        self._call(
            lambda c: c.execute(
                "UPDATE skillnb_items SET owner = NULL, owner_name = NULL, until = NULL "
                "WHERE run = %s AND batch = %s AND item = %s AND owner = %s",
                (self.run, self.batch, item, owner),
            )
        )

    def renew(self, items: list[str], owner: str, lease: float) -> None:
        """Extend ``owner``'s hold on ``items`` to ``lease`` seconds from now."""
        self._call(
            lambda c: c.execute(
                "UPDATE skillnb_items SET until = now() + make_interval(secs => %s) "
                "WHERE run = %s AND batch = %s AND owner = %s "
                "AND item IN (SELECT json_array_elements_text(%s::json))",
                (lease, self.run, self.batch, owner, json.dumps(items, ensure_ascii=False)),
            )
        )
