"""One append to the team store, in one statement and one round trip (store layer).

An append is a single ``INSERT`` the client sends (prepared once per connection), so it is
one transaction: nothing is half-written. It

1. takes the run's transaction-scoped advisory lock (:data:`~skillnb.store.pg_schema.LOCK_CLASS`,
   ``hashtext(run)``), which a writer holding the run's session lock holds already, and
   which keeps every other append out until this one is durable;
2. tries the run's listen key (:data:`~skillnb.store.pg_schema.LISTEN_CLASS`) exclusively:
   when a listener holds it shared, the statement sends ``NOTIFY skillnb_changes`` (delivered
   at commit, dropped with a rollback);
3. inserts the events as ``seq = expected + 1, ...`` when event ``expected`` is there (or the
   run is new). The primary key ``(run, seq)`` is the compare-and-swap: a ``seq`` another
   writer took refuses the append, whatever the statement's snapshot saw.

The common case, one event after the first, sends its fields apart (the payload's JSON is cut
out of the journal line, so the server parses it once, into JSONB) and learns the outcome
from the inserted row count. Anything else (several events, the run's first append, which
also records the run's name, a ``batch.item_done``, which also marks the item done) sends
the lines as one JSON array. Only a refused append costs a second statement: the head and,
when it is at most :data:`MISSED_MAX` ahead, the lines the writer missed, so that catching up
asks nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.types.numeric import Int8

from skillnb.core.records import Event
from skillnb.errors import ConflictError
from skillnb.store.pg_schema import CHANNEL, LISTEN_CLASS, LOCK_CLASS

__all__ = ["MISSED_MAX", "Refused", "append_statement", "run_append"]

MISSED_MAX = 100
"""A refused append brings back the events it missed when they are at most this many."""

ITEM_DONE = "batch.item_done"
_NUL = "\\u0000"  # JSONB cannot hold a NUL character: such a payload keeps its line only
_DATA_KEY = '"data":'  # the journal line's last key (store.journal._event_json's order)

# Locks first (the subquery is evaluated before the select list that uses it), then the
# listen key; pg_notify only runs when that try fails. Every function here is volatile, so
# the planner neither drops nor reorders them. (The f-strings below put in constants only.)
_LOCKED = (
    "WITH k AS MATERIALIZED ("  # noqa: S608
    f"SELECT pg_try_advisory_xact_lock({LISTEN_CLASS}, h) "
    f"OR pg_notify('{CHANNEL}', %(run)s) IS NULL AS quiet FROM ("
    f"SELECT hashtext(%(run)s) AS h, pg_advisory_xact_lock({LOCK_CLASS}, hashtext(%(run)s)) "
    "OFFSET 0) AS l)"
)
_AFTER_HEAD = (
    "(%(after)s = 0 OR EXISTS (SELECT 1 FROM skillnb_events AS v "
    "WHERE v.run = %(run)s AND v.seq = %(after)s))"
)
ONE = (
    f"{_LOCKED} INSERT INTO skillnb_events (run, seq, type, at, data, line) "  # noqa: S608
    "SELECT %(run)s, %(after)s + 1, %(type)s, %(at)s, %(data)s::jsonb, %(line)s FROM k "
    f"WHERE {_AFTER_HEAD} ON CONFLICT (run, seq) DO NOTHING"
).encode()
"""One event after the run's first: the row count says whether it was written."""

MANY = (
    f"{_LOCKED}, r AS (INSERT INTO skillnb_runs (name) SELECT %(run)s FROM k "  # noqa: S608
    "WHERE %(after)s = 0 ON CONFLICT (name) DO NOTHING), "
    "ins AS (INSERT INTO skillnb_events (run, seq, type, at, data, line) "
    "SELECT %(run)s, %(after)s + u.i, u.type, u.at::timestamptz, "
    f"CASE WHEN strpos(u.e::text, '{_NUL}') = 0 THEN (u.e -> 'data')::jsonb END, u.e::text "
    "FROM k, ROWS FROM (json_array_elements(%(events)s::json), "
    "json_array_elements_text(%(types)s::json), json_array_elements_text(%(ats)s::json)) "
    "WITH ORDINALITY AS u (e, type, at, i) "
    f"WHERE {_AFTER_HEAD} RETURNING type, data), "
    "done AS (UPDATE skillnb_items AS t SET done = true, owner = NULL, owner_name = NULL, "
    f"until = NULL FROM ins WHERE ins.type = '{ITEM_DONE}' AND t.run = %(run)s "
    "AND t.batch = ins.data ->> 'batch' AND t.item = ins.data ->> 'item') "
    "SELECT count(*) FROM ins"
).encode()
"""Any append: several events, the run's first (it records the name), an item's completion.

The lines go as one JSON array, kept as text (``json``, not ``jsonb``); types and times go
apart, since extracting a field from a ``json`` object decodes all of it, and a payload with
a NUL character (which only the line can hold) would refuse that.
"""

HEAD = (
    b"SELECT h.head, CASE WHEN h.head > %(after)s AND h.head - %(after)s <= %(most)s THEN "
    b"ARRAY(SELECT line FROM skillnb_events WHERE run = %(run)s AND seq > %(after)s "
    b"AND seq <= h.head ORDER BY seq) END "
    b"FROM (SELECT coalesce(max(seq), 0) AS head FROM skillnb_events WHERE run = %(run)s) AS h"
)
"""After a refusal: the head, and the lines after ``after`` when there are few."""


class Refused(ConflictError):
    """The append's compare-and-swap failed; nothing was written.

    Attributes:
        missed: the journal lines after the expected version, up to the head, when they are
            at most :data:`MISSED_MAX` (else ``None``).

    """

    def __init__(self, expected: int, actual: int, missed: list[str] | None) -> None:
        super().__init__(expected, actual)
        self.missed = missed


def append_statement(
    name: str, expected: int, events: Sequence[Event], lines: Sequence[str]
) -> tuple[bytes, dict[str, Any]]:
    """The statement that appends ``events`` (journal text ``lines``) after ``expected``."""
    if len(events) == 1 and expected > 0 and events[0].type != ITEM_DONE:
        line = lines[0]
        plain = _NUL not in line
        return ONE, {
            "run": name,
            "after": Int8(expected),
            "type": events[0].type,
            "at": events[0].at,
            "data": line[line.index(_DATA_KEY) + len(_DATA_KEY) : -1] if plain else None,
            "line": line,
        }
    return MANY, {
        "run": name,
        "after": Int8(expected),
        "events": "[" + ",".join(lines) + "]",
        "types": json.dumps([e.type for e in events]),
        "ats": json.dumps([e.at.isoformat() for e in events]),
    }


def run_append(
    conn: psycopg.Connection[tuple[Any, ...]],
    name: str,
    expected: int,
    events: Sequence[Event],
    lines: Sequence[str],
) -> int:
    """Append on ``conn`` (autocommit) and return the new head.

    Raises:
        Refused: the run's head is not ``expected`` (nothing was written).

    """
    written = 0
    if events:
        sql, params = append_statement(name, expected, events, lines)
        try:
            cur = conn.execute(sql, params, prepare=True)
        except pgerrors.UniqueViolation:
            pass  # another writer took one of the numbers: refused, nothing written
        else:
            written = cur.rowcount if sql is ONE else _count(cur.fetchone())
    if written == len(events) and events:
        return expected + written
    row = conn.execute(
        HEAD, {"run": name, "after": Int8(expected), "most": MISSED_MAX}, prepare=True
    ).fetchone()
    head = int(row[0]) if row else 0
    if not events and head == expected:
        return head
    missed = [str(line) for line in row[1]] if row and row[1] is not None else None
    raise Refused(expected, head, missed)


def _count(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0
