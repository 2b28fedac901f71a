"""Reading many runs of a team store at once, for listings (store layer).

:class:`StoreListing` reads, for a set of run names, what a listing row needs and nothing
more, through indexes of schema version 6 (:mod:`skillnb.store.postgres.schema`):

* the names: ``skillnb_runs`` (every run), or ``skillnb_asks`` (the runs with a request or
  follow-up that may wait: its size is what waits, not how many runs there are);
* each run's head and the time of its latest event: one probe of the primary key
  ``(run, seq)`` per run, newest first;
* the events a row depends on: the partial index ``skillnb_events_listing``;
* completed items per batch: counted by the server over the same index.

It opens its connection without creating or migrating anything (reading changes nothing): a
database without the skillnb tables holds no runs, and one at an older schema version is
refused with the command that upgrades it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from skillnb.core.runstate.records import RECORD_VERSION, Event, RunState
from skillnb.core.views.listing import LISTING_TYPES, fold_listing
from skillnb.errors import StoreCorrupted
from skillnb.store.postgres.rows import decode_event
from skillnb.store.postgres.schema import SCHEMA_VERSION, NewerSchemaError, OlderSchemaError
from skillnb.store.postgres.session import Conn, PgSession
from skillnb.store.sidecar.fastline import fast_event

__all__ = ["RunRead", "StoreListing"]

_TYPES = "(" + ", ".join(f"'{t}'" for t in LISTING_TYPES) + ")"
_INDEXED = "(" + ", ".join(f"'{t}'" for t in (*LISTING_TYPES, "batch.item_done")) + ")"
_HEADS = (
    "SELECT n.name, h.seq, h.at FROM unnest(%s::text[]) AS n (name) "
    "CROSS JOIN LATERAL (SELECT e.seq, e.at FROM skillnb_events AS e WHERE e.run = n.name "
    "ORDER BY e.seq DESC LIMIT 1) AS h"
)
# The IN list names a subset of the partial index's types: the planner proves it and uses it.
_EVENTS = (
    "SELECT e.run, e.seq, e.line FROM skillnb_events AS e "  # noqa: S608 - constants only
    f"WHERE e.run = ANY(%s::text[]) AND e.type IN {_TYPES} ORDER BY e.run, e.seq"
)
_DONE = (
    "SELECT e.run, count(*), "  # noqa: S608 - constants only
    "replace(e.line, '\\u0000', '\\ufffd')::jsonb -> 'data' ->> 'batch' "
    "FROM skillnb_events AS e WHERE e.run = ANY(%s::text[]) AND e.type IN "
    f"{_INDEXED} AND e.type = 'batch.item_done' GROUP BY 1, 3"
)


@dataclass
class RunRead:
    """What a listing read of one run found: its state, or why it could not be read."""

    name: str
    state: RunState | None = None
    version: int = 0
    updated_at: datetime | None = None
    done: dict[str, int] = field(default_factory=dict)
    problem: str | None = None


class StoreListing:
    """Listing reads of the team store at ``url``; close it when done."""

    def __init__(self, url: str, *, connect_timeout: int = 5) -> None:
        from skillnb.store.postgres.session import Retry

        self._session = PgSession(
            url, check_schema=False, connect_timeout=connect_timeout, retry=Retry(attempts=2)
        )
        self.location = self._session.location

    def _schema(self, conn: Conn) -> int:
        from skillnb.store.postgres.schema import current_version

        found = current_version(conn)
        if found > SCHEMA_VERSION:
            raise NewerSchemaError(self.location, found)
        if 0 < found < SCHEMA_VERSION:
            raise OlderSchemaError(self.location, found)
        return found

    def names(self, *, waiting: bool = False) -> list[str]:
        """Every run's name, or (``waiting``) the runs that may wait for a person; sorted.

        Raises:
            StoreUnavailable: the server cannot be reached.
            OlderSchemaError: the database needs ``skillnb db upgrade``.

        """

        def read(conn: Conn) -> list[str]:
            if not self._schema(conn):
                return []
            table = "skillnb_asks" if waiting else "skillnb_runs"
            column = "run" if waiting else "name"
            rows = conn.execute(
                f"SELECT DISTINCT {column} FROM {table} ORDER BY {column}"  # noqa: S608 - fixed names
            ).fetchall()
            return [str(row[0]) for row in rows]

        return self._session.run(read)

    def read(self, names: list[str]) -> Iterator[RunRead]:
        """The listing state of each run in ``names`` (a run whose rows are damaged says so)."""
        heads, lines, done = self._session.run(lambda conn: _fetch(conn, names))
        by_run: dict[str, list[tuple[int, str]]] = {}
        for run, seq, line in lines:
            by_run.setdefault(run, []).append((seq, line))
        for name in names:
            head = heads.get(name)
            if head is None:
                yield RunRead(name, problem="no events (the run was never written)")
                continue
            yield self._fold(name, head, by_run.get(name, []), done.get(name, {}))

    def _fold(
        self, name: str, head: tuple[int, datetime], lines: list[tuple[int, str]], done: Any
    ) -> RunRead:
        location = f"{self.location} run {name!r}"
        try:
            events: list[Event] = [_decoded(location, seq, line) for seq, line in lines]
            state = fold_listing(RunState(run_id=""), events, head[0], head[1])
        except (StoreCorrupted, KeyError, ValueError, TypeError) as exc:
            return RunRead(name, problem=str(exc))
        return RunRead(name, state, head[0], head[1], dict(done))

    def close(self) -> None:
        """Close the connection."""
        self._session.close()


def _decoded(location: str, seq: int, line: str) -> Event:
    """Event ``seq`` stored as ``line``: the fast path for plain events, else the full one."""
    event = fast_event(line.encode(), RECORD_VERSION)
    if event is None or event.seq != seq or (event.type == "run.created" and seq != 1):
        return decode_event(location, seq, line)  # validates, migrates, or says what is wrong
    return event


def _fetch(
    conn: Conn, names: list[str]
) -> tuple[dict[str, tuple[int, datetime]], list[tuple[str, int, str]], dict[str, dict[str, int]]]:
    heads = {str(n): (int(s), at) for n, s, at in conn.execute(_HEADS, (names,)).fetchall()}
    lines = [(str(r), int(s), str(t)) for r, s, t in conn.execute(_EVENTS, (names,)).fetchall()]
    done: dict[str, dict[str, int]] = {}
    for run, count, batch in conn.execute(_DONE, (names,)).fetchall():
        done.setdefault(str(run), {})[str(batch)] = int(count)
    return heads, lines, done
